"""Resampling and centring of skeleton sequences (seeds/000, section 5.3)."""

import numpy as np
import pytest

from automated.gait.sequences import center_on_root, check_sequences, resample


def _ramp(n_frames, n_joints=2):
    """Sequence whose every coordinate equals the frame index."""
    return np.arange(n_frames, dtype=float)[:, None, None] * np.ones((1, n_joints, 3))


def test_resample_is_linear_interpolation_over_time():
    out = resample(_ramp(3), 5)
    assert out.shape == (5, 2, 3)
    np.testing.assert_allclose(out[:, 0, 0], [0.0, 0.5, 1.0, 1.5, 2.0])


def test_resample_120_to_100_keeps_ends_and_interpolates_between():
    sequence = np.random.default_rng(0).normal(size=(120, 18, 3))
    out = resample(sequence, 100)
    np.testing.assert_allclose(out[0], sequence[0])
    np.testing.assert_allclose(out[-1], sequence[-1])
    # output frame 50 is at input time 50 * 119 / 99 = 60.1010...
    t = 50 * 119 / 99
    expected = sequence[60] + (t - 60) * (sequence[61] - sequence[60])
    np.testing.assert_allclose(out[50], expected, atol=1e-12)


def test_resample_batch_and_dtype():
    batch = np.stack([_ramp(120), 2 * _ramp(120)]).astype(np.float32)
    out = resample(batch, 100)
    assert out.shape == (2, 100, 2, 3) and out.dtype == np.float32
    np.testing.assert_allclose(out[1, -1], 238.0)


@pytest.mark.parametrize(
    "sequence, n_frames, message",
    [
        (np.zeros((1, 2, 3)), 100, "cannot resample a sequence of 1 frame"),
        (np.zeros((5, 2, 3)), 1, "n_frames must be >= 2, got 1"),
        (np.zeros((5, 2, 2)), 100, r"must have shape \(n_frames, n_joints, 3\), got \(5, 2, 2\)"),
        (np.full((5, 2, 3), np.nan), 100, "NaN or infinite"),
    ],
)
def test_resample_bad_input(sequence, n_frames, message):
    with pytest.raises(ValueError, match=message):
        resample(sequence, n_frames)


def test_center_on_root_puts_the_root_mean_at_the_origin():
    sequence = np.array([[[1.0, 2.0, 3.0], [3.0, 2.0, 1.0], [10.0, 10.0, 10.0]]])
    out = center_on_root(sequence, [0, 1])
    np.testing.assert_allclose(out[0], [[-1, 0, 1], [1, 0, -1], [8, 8, 8]])
    with pytest.raises(ValueError, match="root_indices must be non-empty"):
        center_on_root(sequence, [3])


def test_check_sequences_rejects_a_single_sequence():
    with pytest.raises(ValueError, match=r"\(n_sequences, n_frames, n_joints, 3\), got \(5, 2, 3\)"):
        check_sequences(np.zeros((5, 2, 3)))
