"""PSNR and SSIM: hand-computed values and the pinned definitions."""

import math

import numpy as np
import pytest
from skimage.metrics import structural_similarity

from automated.image_metrics import luma, psnr, ssim, summarize_psnr

C1 = (0.01 * 255) ** 2


def flat(value, shape=(16, 16, 3)):
    return np.full(shape, value, np.uint8)


@pytest.mark.parametrize(
    "offset, expected_db",
    [
        (10, 10 * math.log10(255**2 / 100)),  # MSE 100 -> 28.1308 dB
        (1, 10 * math.log10(255**2)),  # MSE 1 -> 48.1308 dB
        (255, 0.0),  # black vs white: MSE 255^2
    ],
)
def test_psnr_of_a_frame_off_by_a_constant(offset, expected_db):
    base = flat(0)
    assert psnr(base, base + np.uint8(offset)) == pytest.approx(expected_db)


def test_psnr_of_one_changed_pixel_channel():
    clear = flat(50, (4, 4, 3))
    masked = clear.copy()
    masked[0, 0, 0] = 66  # squared error 256 over 48 values
    assert psnr(clear, masked) == pytest.approx(10 * math.log10(255**2 / (256 / 48)))


def test_psnr_of_identical_frames_is_infinite():
    frame = np.random.default_rng(0).integers(0, 256, (20, 30, 3), dtype=np.uint8)
    assert psnr(frame, frame.copy()) == math.inf


def test_ssim_of_identical_frames_is_one():
    frame = np.random.default_rng(1).integers(0, 256, (32, 40, 3), dtype=np.uint8)
    assert ssim(frame, frame.copy()) == pytest.approx(1.0)


@pytest.mark.parametrize("a, b", [(100, 110), (0, 255), (30, 40)])
def test_ssim_of_flat_frames_is_the_luminance_term(a, b):
    # No variance: contrast and structure terms are (C2)/(C2) = 1 (Wang et al. 2004, eq. 13).
    expected = (2 * a * b + C1) / (a**2 + b**2 + C1)
    assert ssim(flat(a), flat(b)) == pytest.approx(expected)


def test_ssim_is_symmetric_and_below_one_for_noise():
    rng = np.random.default_rng(2)
    clear = rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)
    noisy = np.clip(clear + rng.normal(0, 20, clear.shape), 0, 255).astype(np.uint8)
    assert ssim(clear, noisy) == pytest.approx(ssim(noisy, clear))
    assert 0.0 < ssim(clear, noisy) < 0.99


def test_ssim_uses_bt601_luma_with_the_pinned_skimage_settings():
    rng = np.random.default_rng(3)
    clear, masked = (rng.integers(0, 256, (24, 24, 3), dtype=np.uint8) for _ in range(2))
    y_clear = 0.299 * clear[..., 0] + 0.587 * clear[..., 1] + 0.114 * clear[..., 2]
    np.testing.assert_allclose(luma(clear), y_clear)
    reference = structural_similarity(
        y_clear, luma(masked), gaussian_weights=True, sigma=1.5, use_sample_covariance=False, data_range=255
    )
    assert ssim(clear, masked) == pytest.approx(reference)


@pytest.mark.parametrize(
    "values, expected",
    [
        ([20.0, 30.0, math.inf], (25.0, 1)),
        ([math.inf, math.inf], (math.inf, 2)),
        ([12.5], (12.5, 0)),
    ],
)
def test_summarize_psnr_leaves_identical_frames_out_of_the_mean(values, expected):
    assert summarize_psnr(values) == expected


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: psnr(flat(0), flat(0, (16, 17, 3))), "frame sizes differ"),
        (lambda: psnr(flat(0).astype(np.float32), flat(0)), "clear_rgb must be uint8"),
        (lambda: ssim(flat(0, (8, 8, 3)), flat(0, (8, 8, 3))), "at least 11x11"),
        (lambda: summarize_psnr([]), "no PSNR values"),
        (lambda: summarize_psnr([math.nan]), "NaN"),
    ],
)
def test_metric_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()
