"""Gait attack suite on the Calgary walks (feature extraction vs training) and pose fps.

Wall times are on a shared 2-core machine (other jobs inflate them); the suite is
single-threaded. Rows 1-7: the full attack suite (6 recognizers x 6 attackers, seeds/000 sections 5.4-5.6)
on the 167 University of Calgary Kinect walks, clear and under each gait anonymization:
wall time, the part spent in feature extraction (flatten / simple, measured inside the
pipelines) and the rest (scaling, training, prediction), with the worst-case pair, the
clear / naive / parrot accuracy of SVM+flatten. Last row: MediaPipe pose extraction speed in
frames per second on one core for a demo clip (GRID 360x288).
"""

import os
import tempfile
import time
from pathlib import Path

from django.conf import settings

from automated.attack.suite import run_attack_suite, worst_case
from automated.gait import features
from automated.gait.anonymize import paper_anonymizations
from automated.gait.loaders import load_calgary
from automated.gait.pose import extract_pose_sequence
from automated.gait.suite import gait_attack_data

DEMO_CLIP = Path("videos") / "grid_talking_heads" / "bbaf2n.mpg"
_feature_seconds = [0.0]


def _timed(feature_class):
    class Timed(feature_class):
        def _transform(self, X):
            started = time.perf_counter()
            try:
                return super()._transform(X)
            finally:
                _feature_seconds[0] += time.perf_counter() - started

    Timed.__name__ = feature_class.__name__
    return Timed


def _timed_recognizers() -> dict:
    """The six gait recognizers, with their feature step timed."""
    recognizers = {}
    for name, factory in features.make_gait_recognizers().items():

        def make(factory=factory):
            pipeline = factory()
            step = pipeline.named_steps["features"]
            pipeline.steps[0] = ("features", _timed(type(step))(**step.get_params()))
            return pipeline

        recognizers[name] = make
    return recognizers


def _suite_rows() -> list[dict]:
    started = time.perf_counter()
    dataset = load_calgary(settings.DATA_DIR)  # DEID_DATA_DIR, default ../shared/data
    load_s = time.perf_counter() - started
    conditions = {"clear (identity)": lambda x: x, **paper_anonymizations(dataset.layout, seed=0)}
    rows = []
    for name, method in conditions.items():
        data = gait_attack_data(dataset, method)
        _feature_seconds[0] = 0.0
        started = time.perf_counter()
        table = run_attack_suite(data, recognizers=_timed_recognizers())
        wall = time.perf_counter() - started
        svm = table[table.recognizer == "svm+flatten"].set_index("attacker")["accuracy"]
        worst = worst_case(table)
        rows.append(
            {
                "case": name,
                "load_s": load_s,
                "suite_wall_s": wall,
                "features_s": _feature_seconds[0],
                "train_predict_s": wall - _feature_seconds[0],
                "svm+flatten clear": svm["clear"],
                "naive": svm["naive"],
                "parrot_50": svm["parrot_50"],
                "parrot": svm["parrot"],
                "worst_case": f"{worst['accuracy']:.3f} ({worst['recognizer']}, {worst['attacker']})",
                "chance": worst["chance_level"],
            }
        )
    return rows


def _pose_row() -> dict:
    clip = Path(settings.DATA_DIR) / DEMO_CLIP
    affinity = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(affinity)})  # one core
    try:
        with tempfile.TemporaryDirectory() as cache_dir:
            started = time.perf_counter()
            poses = extract_pose_sequence(clip, cache_dir=cache_dir)
            cold = time.perf_counter() - started
            started = time.perf_counter()
            extract_pose_sequence(clip, cache_dir=cache_dir)
            warm = time.perf_counter() - started
    finally:
        os.sched_setaffinity(0, affinity)
    return {
        "case": f"pose {clip.name} {poses.resolution_wh[0]}x{poses.resolution_wh[1]}",
        "frames": len(poses.frame_indices),
        "pose_fps_1core": len(poses.frame_indices) / cold,
        "pose_s": cold,
        "cached_s": warm,
        "detection_rate": poses.detection_rate,
    }


def run() -> list[dict]:
    rows = _suite_rows()
    rows.append(_pose_row())
    return rows


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
    for row in run():
        print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()})
