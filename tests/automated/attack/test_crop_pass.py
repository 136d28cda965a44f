"""The attack's face crops made in the face evaluation's decoding pass (``attack.faces.CropPass``)
are the files ``video_face_crops`` writes, array for array, so the attack reads them instead
of decoding both videos again (issue 20: each file decoded once)."""

from pathlib import Path

import cv2
import numpy as np
import pytest

from automated.attack.faces import CropPass, video_face_crops
from automated.clear_side import Stopwatch
from automated.detection import MediaPipeFaceDetector
from automated.face_eval import run_frame_loop
from automated.video import VideoWriter, iter_frames

pytestmark = pytest.mark.slow
STRIDE = 5


def _masked_copy(clip: Path, out: Path, sigma: float) -> Path:
    """The clip with every frame blurred (a stand-in masking), lossless FFV1 as teams upload."""
    frames = [frame for _, frame in iter_frames(clip)]
    height, width = frames[0].shape[:2]
    with VideoWriter(out, 25, (width, height), codec="ffv1") as writer:
        for frame in frames:
            writer.write(cv2.GaussianBlur(frame, (0, 0), sigma))
    return out


def _files(folder: Path) -> dict:
    found = {}
    for path in sorted(folder.glob("*.npz")):
        with np.load(path) as stored:
            found[path.name] = {key: stored[key] for key in stored.files}
    return found


def _through_the_pass(clear, masked, cache_dir) -> None:
    with CropPass(clear, masked, stride=STRIDE, detector="mediapipe", cache_dir=cache_dir) as crops:
        run_frame_loop(clear, masked, STRIDE, [crops], Stopwatch(None))


@pytest.fixture(scope="module")
def pair(data_dir, tmp_path_factory):
    clip = data_dir / "videos" / "grid_talking_heads" / "bbaf2n.mpg"
    folder = tmp_path_factory.mktemp("crop-pass")
    return clip, _masked_copy(clip, folder / "a.mkv", 4.0), _masked_copy(clip, folder / "b.mkv", 9.0)


def test_the_pass_writes_the_files_video_face_crops_writes_and_the_attack_reads_them(pair, tmp_path):
    clear, masked, second = pair
    reference, shared = tmp_path / "reference", tmp_path / "shared"
    with MediaPipeFaceDetector() as detector:
        fresh = video_face_crops(clear, masked, stride=STRIDE, detector=detector, cache_dir=reference)
    assert not fresh.from_cache and len(fresh.frame_indices) == 15  # 75 frames, a face in each tested one
    _through_the_pass(clear, masked, shared)
    expected, written = _files(reference), _files(shared)
    assert sorted(written) == sorted(expected) and len(written) == 2  # clear_*.npz and masked_*.npz
    for name, arrays in expected.items():
        assert sorted(written[name]) == sorted(arrays)
        for key, values in arrays.items():
            assert values.dtype == written[name][key].dtype and np.array_equal(values, written[name][key]), (
                name,
                key,
            )
    with MediaPipeFaceDetector() as detector:
        read = video_face_crops(clear, masked, stride=STRIDE, detector=detector, cache_dir=shared)
    assert read.from_cache  # the attack's unit decodes nothing
    assert np.array_equal(read.masked, fresh.masked) and np.array_equal(read.boxes_xyxy, fresh.boxes_xyxy)
    assert not np.array_equal(read.masked, read.clear)  # the masked side really is the blurred copy

    # A second submission: the clear crops are cached, the pass adds only its masked ones.
    with MediaPipeFaceDetector() as detector:
        video_face_crops(clear, second, stride=STRIDE, detector=detector, cache_dir=reference)
    _through_the_pass(clear, second, shared)
    expected, written = _files(reference), _files(shared)
    assert sorted(written) == sorted(expected) and len(written) == 3
    for name, arrays in expected.items():
        for key, values in arrays.items():
            assert np.array_equal(values, written[name][key]), (name, key)


def test_nothing_is_written_when_the_pass_fails_or_is_not_needed(pair, tmp_path):
    clear, masked, _ = pair
    with pytest.raises(RuntimeError, match="decoder died"):
        with CropPass(clear, masked, stride=STRIDE, detector="mediapipe", cache_dir=tmp_path) as crops:
            for index, clear_rgb in iter_frames(clear, stride=STRIDE, end=10):
                crops.update(index, clear_rgb, clear_rgb)
            raise RuntimeError("decoder died")
    assert list(tmp_path.iterdir()) == []
    _through_the_pass(clear, masked, tmp_path)
    stamps = {path: path.stat().st_mtime_ns for path in tmp_path.iterdir()}
    _through_the_pass(clear, masked, tmp_path)  # both cached: nothing rewritten
    assert {path: path.stat().st_mtime_ns for path in tmp_path.iterdir()} == stamps
