"""Composite privacy-utility (PU) score of a masking: utility kept times visual privacy.

PrivHAR-Bench (seeds/004_cf13f4f759494b31.txt, sections 3-4) reports a composite PU
score that rewards "strong privacy (low SSIM) with competitive accuracy": Tier 2 (Canny
edges) 0.713, the highest, and Tier 1 (Gaussian blur) 0.177, the lowest "due to weak
visual privacy (high SSIM) despite good accuracy". The seed gives no formula. This module
is OUR READING of it, not the paper's formula:

``PU = clip((masked_accuracy / clear_accuracy) * (1 - SSIM), 0, 1)``

- utility kept: the action accuracy on masked videos relative to clear videos (1.0 =
  no loss), and
- visual privacy: ``1 - SSIM`` of masked against clear frames (``image_metrics.ssim``;
  0 = the masked frame looks like the clear one).

Check against the seed's numbers (clear 88.8 %, privacy tiers 63.1-66.5 %, so the utility
kept is 0.711-0.749): the printed 0.713 for Canny needs ``1 - SSIM`` = 0.95-1.00, i.e.
SSIM 0.00-0.05, what an edge map scores against its clear frame (we measure -0.001 to
0.001 on the CREMA-D and GRID clips); the printed 0.177 for blur needs SSIM 0.75-0.76,
plausible for a sigma = 15 blur of the person region of a 224 x 224 frame. So the reading
reproduces both values and their order for plausible SSIMs; the exact formula of the
paper's ``eval.py`` may differ (e.g. a weighting, or face-detection failure as the
privacy term).
"""

from __future__ import annotations

from numbers import Real


def privacy_utility_score(masked_accuracy: float, clear_accuracy: float, ssim: float) -> float:
    """PU score in [0, 1] (our reading of PrivHAR-Bench's composite score; module docstring).

    Parameters
    ----------
    masked_accuracy : float
        Action (utility) accuracy on masked videos, a fraction in [0, 1].
    clear_accuracy : float
        The same recogniser's accuracy on the clear videos, in (0, 1].
    ssim : float
        Mean SSIM of masked against clear frames, in [-1, 1] (``image_metrics.ssim``).

    Returns
    -------
    float
        ``(masked_accuracy / clear_accuracy) * (1 - ssim)`` clipped to [0, 1]. Clipping
        matters only when masking raises the accuracy or SSIM is negative (anti-correlated
        frames); higher is better.

    Raises
    ------
    ValueError
        Naming the value, if an accuracy is outside its range, ``clear_accuracy`` is 0,
        or ``ssim`` is outside [-1, 1] (NaN included).

    Examples
    --------
    Seed 004's accuracies (clear 88.8 %, tier 66.5 %) with an edge map's SSIM near 0 and
    a blur's near 0.76:

    >>> round(privacy_utility_score(0.665, 0.888, 0.048), 3)   # 0.74887 * 0.952
    0.713
    >>> round(privacy_utility_score(0.665, 0.888, 0.7636), 3)  # 0.74887 * 0.2364
    0.177
    >>> privacy_utility_score(0.888, 0.888, 1.0)               # unmasked: no privacy
    0.0
    """
    for name, value, low, high in (
        ("masked_accuracy", masked_accuracy, 0.0, 1.0),
        ("clear_accuracy", clear_accuracy, 0.0, 1.0),
        ("ssim", ssim, -1.0, 1.0),
    ):
        if isinstance(value, bool) or not isinstance(value, Real) or not low <= value <= high:
            raise ValueError(f"{name} must be a number in [{low:g}, {high:g}], got {value!r}")
    if clear_accuracy == 0:
        raise ValueError("clear_accuracy is 0: the utility kept (masked / clear accuracy) is undefined")
    score = (masked_accuracy / clear_accuracy) * (1.0 - ssim)
    return float(min(1.0, max(0.0, score)))
