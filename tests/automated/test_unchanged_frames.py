"""Masked frames equal to their clear frames are not measured again (``face_eval.frames_equal``).

Real GRID clip ``bbaf2n`` (speaker s1, 75 frames, tested every 5th: 15 frames, two
batches of ``BATCH_FRAMES``), masked losslessly (FFV1) three ways: ``identity`` (every
frame the clear one, as the demo's identity baseline), ``partial`` (a real Gaussian
blur of frames 22-59 only, so batches mix unchanged and changed frames) and ``blurred``
(every frame). Each is scored with the shortcut and with it switched off
(``frames_equal`` patched to False), face evaluation and behaviour in one pass; the
clear side computed in the run, and read from its caches.
"""

import math
from dataclasses import fields

import cv2
import numpy as np
import pytest

from automated import face_eval
from automated.behaviour import BehaviourPass
from automated.detection import MediaPipeFaceDetector
from automated.face_eval import evaluate_video
from automated.video import VideoWriter, iter_frames

from .face_fixtures import gallery, probe_path

pytestmark = pytest.mark.slow

#: Scores computed from embeddings: the embedder's batches differ with and without the
#: shortcut (an identical frame's probe is the clear face's embedding, not embedded again
#: beside the other faces), and the batched ResNet's float32 results move by ~2e-7 with
#: the batch (the same is true today between a first and a later submission).
EMBEDDING_TOLERANCE = 1e-5
EMBEDDING_SCORES = {"mean_genuine_distance"}


class CountingDetector(MediaPipeFaceDetector):
    """MediaPipe BlazeFace that counts the frames it is given."""

    frames = 0

    def detect(self, frame_rgb, frame_index=0):
        self.frames += 1
        return super().detect(frame_rgb, frame_index)


@pytest.fixture(scope="module")
def masked(data_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("unchanged")
    frames = [f for _, f in iter_frames(probe_path(data_dir, "bbaf2n"))]
    variants = {
        "identity": lambda t, f: f,
        "partial": lambda t, f: cv2.GaussianBlur(f, (0, 0), 6) if 22 <= t < 60 else f,
        "blurred": lambda t, f: cv2.GaussianBlur(f, (0, 0), 6),
    }
    paths = {}
    for name, mask in variants.items():
        paths[name] = folder / f"{name}.mkv"
        with VideoWriter(paths[name], 25.0, (360, 288), codec="ffv1") as writer:
            for t, frame in enumerate(frames):
                writer.write(np.ascontiguousarray(mask(t, frame)))
    return paths


def run(data_dir, masked_path, *, clear_cache=None, behaviour_cache=None):
    """(VideoEvaluation, BehaviourEvaluation, frames given to the detector)."""
    embeddings, labels = gallery(data_dir)
    clear = probe_path(data_dir, "bbaf2n")
    with (
        CountingDetector() as detector,
        BehaviourPass(clear, stride=5, cache_dir=behaviour_cache) as behaviour,
    ):
        result = evaluate_video(
            clear,
            masked_path,
            embeddings,
            labels,
            "s1",
            stride=5,
            detector=detector,
            clear_cache=clear_cache,
            observers=[behaviour],
        )
        return result, behaviour.result(), detector.frames


def assert_same_face_scores(result, reference):
    for field in fields(result):
        value, expected = getattr(result, field.name), getattr(reference, field.name)
        if field.name in EMBEDDING_SCORES:
            assert value == pytest.approx(expected, abs=EMBEDDING_TOLERANCE), field.name
        elif isinstance(value, float) and math.isnan(value):
            assert math.isnan(expected), field.name
        else:
            assert value == expected, field.name


def assert_same_behaviour(result, reference):
    assert result.metrics.keys() == reference.metrics.keys()
    for name, value in result.metrics.items():
        expected = reference.metrics[name]
        assert value == expected or (math.isnan(value) and math.isnan(expected)), name
    for name, value in vars(result.masked).items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(value, getattr(reference.masked, name), err_msg=name)


@pytest.mark.parametrize("variant, changed", [("identity", 0), ("partial", 7), ("blurred", 15)])
def test_unchanged_frames_give_the_results_of_measuring_them(
    data_dir, masked, monkeypatch, tmp_path, variant, changed
):
    """With the clear side computed in the run and read from its caches: the results of a
    run that measures every masked frame; only the changed masked frames are detected."""
    face_cache, behaviour_cache = {}, tmp_path / "behaviour"
    cold, cold_behaviour, cold_frames = run(
        data_dir, masked[variant], clear_cache=face_cache, behaviour_cache=behaviour_cache
    )
    warm, warm_behaviour, warm_frames = run(
        data_dir, masked[variant], clear_cache=face_cache, behaviour_cache=behaviour_cache
    )
    assert warm_behaviour.clear_from_cache and not cold_behaviour.clear_from_cache
    with monkeypatch.context() as patch:
        patch.setattr(face_eval, "frames_equal", lambda clear, masked: False)
        reference, reference_behaviour, reference_frames = run(data_dir, masked[variant])

    assert reference_frames == 15 + 15  # clear and masked side of every tested frame
    assert (cold_frames, warm_frames) == (15 + changed, changed)
    for result, behaviour in ((cold, cold_behaviour), (warm, warm_behaviour)):
        assert_same_face_scores(result, reference)
        assert_same_behaviour(behaviour, reference_behaviour)
    if variant == "identity":
        assert cold.ssim == 1.0 and cold.psnr_db == math.inf and cold.psnr_identical_frames == 15
        assert cold.mean_iou == 1.0 and cold.detection_failure_rate == 0.0
    else:  # a changed frame is measured: the blur shows
        assert cold.ssim < 1.0 and cold.psnr_identical_frames == 15 - changed
