"""Behaviour evaluation throughput on one core: frames per CPU-second per model and per pass.

Each measurement runs ``automated.behaviour.evaluate_behaviour`` in a fresh subprocess
pinned to one CPU (``os.sched_setaffinity``) with OpenCV, PyTorch and BLAS/OpenMP limited
to one thread, over a real clip at stride 1 against its ``blur_face`` baseline (lossless
FFV1): GRID ``bbaf2n`` (360x288, 75 frames) and CREMA-D ``1001_DFA_ANG_XX`` (480x360,
67 frames). All models run (face mesh with irises, expression and gender classifiers,
pose, hands).

Two passes per clip, in the same process and cache folder: **cold** measures the clear
and the masked side (the first submission of a source video); **warm** reads the clear
side from the on-disk cache and measures only the masked side (every later submission).

Rows: one per model (``frames`` = frames it ran on, both sides in a cold pass; the
expression classifier only runs where the face mesh finds a face, so not on a masked
side whose faces are lost; ``frames_per_cpu_s`` = frames / CPU seconds of that model) plus ``decode`` and the
whole pass, whose ``frames`` are the tested frame pairs (``frames_per_cpu_s`` = pairs
per CPU second of the complete ``evaluate_behaviour`` call, including the frame-count
probe of both files and the comparison). Times are CPU seconds (``time.process_time``);
model loading happens before timing.

Face run rows (``pass`` = ``face only`` / ``face + behaviour``, ``stage`` = ``run:
first submission`` / ``run: later submission``): what behaviour, on by default, adds to a
face run's video (``services.FaceRunKind``: ``evaluate_video`` with a ``BehaviourPass``
observer, one decoding pass) at the run's default stride 5, with the gallery of two
identities (the clip's person from another clip, and a GRID impostor). First submission:
both clear sides (face, behaviour) computed and stored; later: both read from their cache
folders. ``cpu_s`` per video; ``vs_face_only`` = CPU time / the face-only run's at the
same stage.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CLIPS = {
    "GRID bbaf2n": "videos/grid_talking_heads/bbaf2n.mpg",
    "CREMA-D ANG": "videos/cremad/1001_DFA_ANG_XX.flv",
}
SINGLE_THREAD_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
STAGES = ("face_mesh", "expression", "attribute", "pose", "hands", "decode")


def _child(clear_path: str, masked_path: str, cache_dir: str) -> list[dict]:
    """Measure a cold and a warm pass in this (single-core) process; return the rows."""
    import time

    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    import cv2
    import torch

    cv2.setNumThreads(1)
    torch.set_num_threads(1)
    from automated.behaviour.evaluate import evaluate_behaviour
    from automated.behaviour.extractor import BehaviourExtractor

    BehaviourExtractor(attribute=True).close()  # one-off: mediapipe import, graphs, HDF5 reading
    rows = []
    for name in ("cold", "warm"):
        timings: dict = {}
        started = time.process_time()
        result = evaluate_behaviour(
            clear_path, masked_path, stride=1, cache_dir=cache_dir, attribute=True, timings=timings
        )
        total = time.process_time() - started
        pairs = result.metrics["frames_tested"]
        sides = 1 if result.clear_from_cache else 2
        for stage in STAGES:
            # decode counts loop steps (a frame pair, or one masked frame on a cache hit)
            frames = timings.get(f"{stage}_frames", 0) * (sides if stage == "decode" else 1)
            rows.append(
                {
                    "pass": name,
                    "stage": stage,
                    "frames": frames,
                    "cpu_s": timings.get(stage, 0.0),
                    "frames_per_cpu_s": frames / timings[stage] if timings.get(stage) else float("nan"),
                }
            )
        rows.append(
            {
                "pass": name,
                "stage": "whole pass",
                "frames": pairs,
                "cpu_s": total,
                "frames_per_cpu_s": pairs / total,
                "clear_from_cache": result.clear_from_cache,
                "behaviour_score": result.score,
            }
        )
    return rows


FACE_RUN_STRIDE = 5
GALLERY_STILLS = {  # identity -> (clip under DATA_DIR, frame): P01 is GRID speaker 1, as in bench_face_eval
    "P01": ("videos/grid_identity_clips/s1/bbal6n.mpg", 37),
    "other": ("videos/grid_talking_heads/sbia1a.mpg", 37),
}


def _face_run_child(clear_path: str, masked_path: str, cache_dir: str, gallery_path: str) -> list[dict]:
    """Face run's per-video work without and with behaviour, first and later submission (single core)."""
    import time

    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    import cv2
    import numpy as np
    import torch

    cv2.setNumThreads(1)
    torch.set_num_threads(1)
    from automated.behaviour.evaluate import BehaviourPass
    from automated.behaviour.extractor import BehaviourExtractor
    from automated.detection import make_face_detector
    from automated.face_eval import evaluate_video
    from automated.recognition import make_face_embedder

    gallery = np.load(gallery_path)
    embedder = make_face_embedder()
    rows = []
    with make_face_detector("mediapipe") as detector:
        extractors = (BehaviourExtractor(attribute=True), BehaviourExtractor(attribute=True))
        # untimed warm-up of every model (first inferences allocate), in a throwaway cache folder
        warm_up = BehaviourPass(clear_path, stride=25, extractors=extractors)
        evaluate_video(
            clear_path,
            masked_path,
            gallery,
            list(GALLERY_STILLS),
            "P01",
            stride=25,
            detector=detector,
            embedder=embedder,
            no_face="nan",
            observers=[warm_up],
        )
        warm_up.result()
        for label, behaviour in (("face only", False), ("face + behaviour", True)):
            folder = Path(cache_dir) / label.replace(" ", "_")
            for stage in ("run: first submission", "run: later submission"):
                started = time.process_time()
                observer = None
                if behaviour:
                    observer = BehaviourPass(
                        clear_path,
                        stride=FACE_RUN_STRIDE,
                        cache_dir=folder / "behaviour",
                        extractors=extractors,
                    )
                result = evaluate_video(
                    clear_path,
                    masked_path,
                    gallery,
                    list(GALLERY_STILLS),
                    "P01",
                    stride=FACE_RUN_STRIDE,
                    detector=detector,
                    embedder=embedder,
                    clear_cache_dir=folder / "clear_side",
                    no_face="nan",
                    observers=[observer] if observer else [],
                )
                score = observer.result().score if observer else float("nan")
                rows.append(
                    {
                        "pass": label,
                        "stage": stage,
                        "frames": result.frames_tested,
                        "cpu_s": time.process_time() - started,
                        "clear_from_cache": observer.clear_from_cache if observer else "",
                        "behaviour_score": score,
                    }
                )
        for extractor in extractors:
            extractor.close()
    for row in rows:
        row["frames_per_cpu_s"] = row["frames"] / row["cpu_s"]
        face_only = next(r for r in rows if r["pass"] == "face only" and r["stage"] == row["stage"])
        row["vs_face_only"] = row["cpu_s"] / face_only["cpu_s"]
    return rows


def _measure(clear: Path, masked: Path, cache_dir: Path, gallery: Path | None = None) -> list[dict]:
    command = [
        sys.executable,
        "-m",
        "benchmarks.bench_behaviour",
        "--child",
        str(clear),
        str(masked),
        str(cache_dir),
    ]
    if gallery is not None:
        command[3] = "--face-run-child"
        command.append(str(gallery))
    env = {**os.environ, **SINGLE_THREAD_ENV, "PYTHONWARNINGS": "ignore", "GLOG_minloglevel": "3"}
    completed = subprocess.run(
        command, capture_output=True, text=True, env=env, cwd=Path(__file__).resolve().parent.parent
    )
    if completed.returncode != 0:
        raise RuntimeError(f"benchmark child failed: {completed.stderr[-2000:]}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def run() -> list[dict]:
    """Rows for each clip: per model and whole pass, cold and warm."""
    from django.conf import settings

    from automated.anonymizers import anonymize_video

    import numpy as np

    from automated.face_eval import embed_gallery_image
    from automated.video import iter_frames

    data_dir = Path(settings.DATA_DIR)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        gallery = Path(tmp) / "gallery.npy"
        stills = [
            next(iter_frames(data_dir / clip, start=frame))[1] for clip, frame in GALLERY_STILLS.values()
        ]
        np.save(gallery, np.stack([embed_gallery_image(still) for still in stills]))
        for label, clip in CLIPS.items():
            masked = Path(tmp) / f"{Path(clip).stem}_blur_face.mkv"
            anonymize_video(data_dir / clip, masked, "blur_face", key=bytes(32))
            for row in _measure(data_dir / clip, masked, Path(tmp) / "cache"):
                rows.append({"clip": label, **row})
        clip = CLIPS["GRID bbaf2n"]
        masked = Path(tmp) / f"{Path(clip).stem}_blur_face.mkv"
        for row in _measure(data_dir / clip, masked, Path(tmp) / "face_run", gallery):
            rows.append({"clip": "GRID bbaf2n", **row})
    return rows


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
        print(json.dumps(_child(sys.argv[2], sys.argv[3], sys.argv[4])))
    elif len(sys.argv) == 6 and sys.argv[1] == "--face-run-child":
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
        print(json.dumps(_face_run_child(*sys.argv[2:6])))
    else:
        import django

        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
        django.setup()
        from benchmarks.__main__ import print_table

        print_table(run())
