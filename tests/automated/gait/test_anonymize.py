"""Gait anonymizations Keep(legs), Keep(head), Noise(x), Motion Extraction (seeds/000, 5.6.2)."""

import mediapipe as mp
import numpy as np
import pytest

from automated.gait.anonymize import (
    add_noise,
    keep_group,
    keep_joints,
    motion_extraction,
    paper_anonymizations,
)
from automated.gait.layouts import CALGARY_KINECT, CMU_MOCAP, MEDIAPIPE_POSE


def _walk(n_frames=4, n_joints=18):
    return np.arange(n_frames * n_joints * 3, dtype=float).reshape(n_frames, n_joints, 3) + 1.0


def test_keep_legs_on_calgary_keeps_the_eight_leg_joints():
    sequence = _walk()
    out = keep_group(sequence, CALGARY_KINECT, "legs")
    np.testing.assert_array_equal(out[:, :8], sequence[:, :8])  # feet, ankles, knees, hips
    assert not out[:, 8:].any()


def test_keep_head_on_calgary_keeps_joint_11_only():
    out = keep_group(_walk()[None], CALGARY_KINECT, "head")  # a batch of one
    assert np.flatnonzero(np.abs(out[0]).sum(axis=(0, 2))).tolist() == [11]


def test_keep_group_checks_the_layout():
    with pytest.raises(ValueError, match="have 33 joints, layout 'ucalgary_kinect' has 18"):
        keep_group(_walk(n_joints=33), CALGARY_KINECT, "legs")
    with pytest.raises(KeyError, match="no group 'arms'"):
        keep_group(_walk(), CALGARY_KINECT, "arms")
    with pytest.raises(ValueError, match=r"joint indices must be in \[0, 18\)"):
        keep_joints(_walk(), [18])


def test_layouts_match_mediapipe_and_have_paper_groups():
    assert MEDIAPIPE_POSE.joint_names == tuple(p.name.lower() for p in mp.solutions.pose.PoseLandmark)
    for layout in (CALGARY_KINECT, MEDIAPIPE_POSE, CMU_MOCAP):
        assert layout.indices("legs") and layout.indices("head")


def test_noise_is_standard_normal_scaled():
    sequence = np.zeros((100, 18, 3))
    out = add_noise(sequence, 10.0, rng=np.random.default_rng(0))
    assert out.shape == sequence.shape
    assert abs(out.std() - 10.0) < 0.3 and abs(out.mean()) < 0.3  # 5400 draws: std error ~0.1
    same = add_noise(sequence, 10.0, rng=np.random.default_rng(0))
    np.testing.assert_array_equal(out, same)
    with pytest.raises(ValueError, match="noise scale must be a finite number >= 0, got -1"):
        add_noise(sequence, -1, rng=np.random.default_rng(0))


def test_motion_extraction_is_the_difference_to_the_previous_pose():
    sequence = np.array([[[0.0, 0, 0]], [[1.0, 2, 3]], [[1.0, 2, 5]]])
    out = motion_extraction(sequence)
    np.testing.assert_array_equal(out[:, 0], [[0, 0, 0], [1, 2, 3], [0, 0, 2]])
    # a walker translated in space has the same motion: the structure is removed
    np.testing.assert_array_equal(motion_extraction(sequence + 7.0), out)


def test_paper_anonymizations_keep_the_shape():
    methods = paper_anonymizations(CALGARY_KINECT, seed=1)
    assert list(methods) == [
        "Keep(legs)",
        "Keep(head)",
        "Noise(3)",
        "Noise(10)",
        "Noise(100)",
        "Motion Extraction",
    ]
    batch = np.stack([_walk(100), _walk(100)])
    for name, method in methods.items():
        assert method(batch).shape == batch.shape, name
    np.testing.assert_array_equal(methods["Noise(3)"](batch), methods["Noise(3)"](batch))
