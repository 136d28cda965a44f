"""MediaPipe pose time series from real clips, with the per-video cache."""

import numpy as np
import pytest

from automated.gait import pose
from automated.gait.layouts import MEDIAPIPE_POSE
from automated.gait.sequences import resample
from automated.video import VideoError, VideoWriter

pytestmark = pytest.mark.slow
GRID_CLIP = "videos/grid_talking_heads/bbaf2n.mpg"  # 75 frames, 360x288, head and shoulders
CREMA_CLIP = "videos/cremad/1001_DFA_NEU_XX.flv"  # 480x360


@pytest.fixture(scope="module")
def grid_poses(data_dir, tmp_path_factory):
    cache = tmp_path_factory.mktemp("pose_cache")
    return cache, pose.extract_pose_sequence(data_dir / GRID_CLIP, cache_dir=cache, stride=3)


def test_grid_clip_has_plausible_landmarks(grid_poses):
    _, poses = grid_poses
    assert poses.frame_indices.tolist() == list(range(0, 75, 3))
    assert poses.landmarks_xyz.shape == (25, 33, 3) and poses.landmarks_xyz.dtype == np.float32
    assert poses.resolution_wh == (360, 288) and poses.fps == pytest.approx(25.0)
    assert poses.detection_rate == 1.0
    xy = poses.landmarks_xyz[..., :2]
    names = MEDIAPIPE_POSE.joint_names
    nose, left_sh, right_sh = (xy[:, names.index(n)] for n in ("nose", "left_shoulder", "right_shoulder"))
    assert np.all(nose[:, 1] < np.minimum(left_sh[:, 1], right_sh[:, 1]))  # image y grows downwards
    # the person's left shoulder is on the image's right (frontal view), the nose between
    assert np.all((right_sh[:, 0] < nose[:, 0]) & (nose[:, 0] < left_sh[:, 0]))
    assert np.all((xy[:, names.index("nose")] > 0.2) & (xy[:, names.index("nose")] < 0.8))


def test_only_head_and_shoulders_are_visible_in_a_talking_head_clip(grid_poses):
    _, poses = grid_poses
    visibility = poses.mean_visibility()
    visible = {n for n, v in visibility.items() if v > 0.5}
    assert visible == set(MEDIAPIPE_POSE.groups["visible_head_and_shoulders"])
    assert max(visibility[n] for n in MEDIAPIPE_POSE.groups["legs"]) < 0.1


def test_second_extraction_is_read_from_the_cache(grid_poses, data_dir, monkeypatch):
    cache, first = grid_poses
    assert len(list(cache.glob("*.npz"))) == 1

    def no_model(*args, **kwargs):
        raise AssertionError("the pose model ran although the cache holds this video")

    monkeypatch.setattr(pose, "_new_pose_estimator", no_model)
    second = pose.extract_pose_sequence(data_dir / GRID_CLIP, cache_dir=cache, stride=3)
    np.testing.assert_array_equal(second.landmarks_xyz, first.landmarks_xyz)
    np.testing.assert_array_equal(second.detected, first.detected)
    # another stride is another cache entry: the model must run
    with pytest.raises(AssertionError, match="the pose model ran"):
        pose.extract_pose_sequence(data_dir / GRID_CLIP, cache_dir=cache, stride=4)


def test_cremad_clip_as_a_paper_length_time_series(data_dir, tmp_path):
    sequence = pose.pose_time_series(
        data_dir / CREMA_CLIP, cache_dir=tmp_path, stride=4, coordinates="pixels"
    )
    assert sequence.shape == (100, 33, 3) and sequence.dtype == np.float32
    poses = pose.extract_pose_sequence(data_dir / CREMA_CLIP, cache_dir=tmp_path, stride=4)  # cached
    assert poses.resolution_wh == (480, 360)
    np.testing.assert_allclose(sequence, resample(poses.pixels_xyz(), 100), rtol=1e-6)
    nose_y = sequence[:, MEDIAPIPE_POSE.indices(["nose"])[0], 1]
    shoulders_y = sequence[:, MEDIAPIPE_POSE.indices("shoulders"), 1].mean(axis=1)
    assert np.all(shoulders_y - nose_y > 50)  # pixels
    with pytest.raises(ValueError, match="coordinates must be one of"):
        pose.pose_time_series(data_dir / CREMA_CLIP, cache_dir=tmp_path, stride=4, coordinates="metres")


def test_missing_detections_are_interpolated_over_time():
    values = np.array([[0.0], [0.0], [2.0], [0.0], [6.0]])
    detected = np.array([False, True, True, False, True])
    filled = pose._interpolate_missing(values, detected, np.array([0, 1, 2, 3, 4]))
    np.testing.assert_allclose(filled[:, 0], [0.0, 0.0, 2.0, 4.0, 6.0])


def test_missing_video_raises(tmp_path):
    with pytest.raises(VideoError, match="video file not found"):
        pose.extract_pose_sequence(tmp_path / "nope.mp4", cache_dir=tmp_path)


def test_video_without_a_person_raises(tmp_path):
    path = tmp_path / "empty.mkv"
    with VideoWriter(path, 25.0, (64, 48), codec="ffv1") as writer:
        for _ in range(3):
            writer.write(np.full((48, 64, 3), 128, dtype=np.uint8))
    with pytest.raises(pose.NoPoseDetectedError, match="no person detected in 3 frames"):
        pose.extract_pose_sequence(path, cache_dir=tmp_path / "cache")
