"""Full-reference image metrics between a masked frame and its clear frame: PSNR and SSIM.

PrivHAR-Bench (seeds/004_cf13f4f759494b31.txt, section 3, "Standardized Evaluation
Toolkit") reports SSIM and PSNR between transformed and clear frames; high values mean
the masked frame still looks like the clear one (weak visual privacy).

Pinned definitions
------------------
- PSNR over all pixels and all three RGB channels of uint8 frames, peak 255:
  ``PSNR = 10 log10(255^2 / MSE)`` in dB. Identical frames (MSE = 0) give ``+inf``.
  A video's PSNR (``summarize_psnr``) is the mean of the finite per-frame values; frames
  with ``+inf`` are not averaged in but counted separately (``identical_frames``), and a
  video whose tested frames are all identical has PSNR ``+inf``.
- SSIM of Wang et al. (2004), "Image quality assessment: from error visibility to
  structural similarity", IEEE TIP 13(4), computed with
  ``skimage.metrics.structural_similarity`` on luma ``Y = 0.299 R + 0.587 G + 0.114 B``
  (ITU-R BT.601, float64, not rounded) with ``gaussian_weights=True, sigma=1.5,
  use_sample_covariance=False, data_range=255`` (K1 = 0.01, K2 = 0.03): the paper's
  11x11 Gaussian window. The mean SSIM map value is returned, in [-1, 1].

The composite privacy-utility (PU) score of PrivHAR-Bench combines SSIM with an action
accuracy; the seed gives no formula. ``automated.privacy_utility.privacy_utility_score``
implements our documented reading of it.
"""

from __future__ import annotations

import numpy as np
from skimage.metrics import structural_similarity

from .face_boxes import check_frame

PEAK = 255.0
BT601_LUMA = np.array([0.299, 0.587, 0.114])


def _check_pair(clear_rgb: np.ndarray, masked_rgb: np.ndarray) -> None:
    check_frame(clear_rgb, "clear_rgb")
    check_frame(masked_rgb, "masked_rgb")
    if clear_rgb.shape != masked_rgb.shape:
        raise ValueError(f"frame sizes differ: clear {clear_rgb.shape}, masked {masked_rgb.shape}")


def psnr(clear_rgb: np.ndarray, masked_rgb: np.ndarray) -> float:
    """Peak signal-to-noise ratio of a masked frame against its clear frame, in dB.

    Parameters
    ----------
    clear_rgb, masked_rgb : ndarray of shape (height, width, 3), dtype uint8

    Returns
    -------
    float
        ``10 log10(255^2 / MSE)``; ``+inf`` when the frames are identical.

    Raises
    ------
    ValueError
        If the frames are not uint8 RGB or their shapes differ.

    Examples
    --------
    A frame off by 10 grey levels everywhere has MSE 100, PSNR 10 log10(650.25):

    >>> import numpy as np
    >>> a = np.full((4, 4, 3), 100, np.uint8)
    >>> round(psnr(a, a + 10), 4)
    28.1308
    """
    _check_pair(clear_rgb, masked_rgb)
    mse = float(np.mean((clear_rgb.astype(np.float64) - masked_rgb.astype(np.float64)) ** 2))
    if mse == 0.0:
        return float("inf")
    return float(10.0 * np.log10(PEAK**2 / mse))


def luma(frame_rgb: np.ndarray) -> np.ndarray:
    """BT.601 luma ``0.299 R + 0.587 G + 0.114 B``, float64 of shape (height, width), [0, 255]."""
    return frame_rgb.astype(np.float64) @ BT601_LUMA


def ssim(clear_rgb: np.ndarray, masked_rgb: np.ndarray) -> float:
    """Mean structural similarity (Wang et al. 2004) of the frames' luma, in [-1, 1].

    Uses ``skimage.metrics.structural_similarity(gaussian_weights=True, sigma=1.5,
    use_sample_covariance=False, data_range=255)`` on BT.601 luma (module docstring).

    Parameters
    ----------
    clear_rgb, masked_rgb : ndarray of shape (height, width, 3), dtype uint8
        At least 11 x 11 pixels (the Gaussian window).

    Returns
    -------
    float
        1.0 for identical frames.

    Raises
    ------
    ValueError
        If the frames are not uint8 RGB, differ in shape, or are smaller than 11 x 11.

    Examples
    --------
    Two flat frames of luma 100 and 110 differ only in the luminance term,
    ``(2*100*110 + C1) / (100**2 + 110**2 + C1)`` with ``C1 = (0.01*255)**2``:

    >>> import numpy as np
    >>> round(ssim(np.full((16, 16, 3), 100, np.uint8), np.full((16, 16, 3), 110, np.uint8)), 6)
    0.995476
    """
    _check_pair(clear_rgb, masked_rgb)
    if min(clear_rgb.shape[:2]) < 11:
        raise ValueError(f"frames must be at least 11x11 pixels for SSIM, got {clear_rgb.shape[:2]}")
    return float(
        structural_similarity(
            luma(clear_rgb),
            luma(masked_rgb),
            gaussian_weights=True,
            sigma=1.5,
            use_sample_covariance=False,
            data_range=PEAK,
        )
    )


def summarize_psnr(psnr_values) -> tuple[float, int]:
    """Summarise per-frame PSNR values of one video.

    Parameters
    ----------
    psnr_values : array-like of shape (n_frames,)
        Per-frame PSNR in dB, ``+inf`` for identical frames.

    Returns
    -------
    mean_db : float
        Mean of the finite values; ``+inf`` if every frame is identical.
    identical_frames : int
        Number of ``+inf`` values (left out of the mean).

    Raises
    ------
    ValueError
        If there are no values or a value is NaN.

    Examples
    --------
    >>> summarize_psnr([20.0, 30.0, float("inf")])
    (25.0, 1)
    """
    values = np.asarray(psnr_values, dtype=np.float64).reshape(-1)
    if len(values) == 0:
        raise ValueError("no PSNR values to summarise")
    if np.any(np.isnan(values)):
        raise ValueError(f"PSNR values must not be NaN, got {values.tolist()}")
    finite = values[np.isfinite(values)]
    identical = int(len(values) - len(finite))
    return (float(finite.mean()) if len(finite) else float("inf")), identical
