"""Student's t interval of a mean: the one implementation of the project.

Used for a submission's mean over videos (``evalsite.comparisons.t_interval``) and for
the mean attack accuracy over cross-validation folds
(``automated.attack.crossvideo.fold_interval``). Django-free and a leaf.
"""

from __future__ import annotations

import math

import numpy as np


def student_t_interval(values, confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean of ``values`` with Student's t interval: ``mean +- t * sd / sqrt(n)``.

    ``t = t_{(1 + confidence) / 2, n - 1}`` (``scipy.stats.t.ppf``), ``sd`` the sample
    standard deviation (ddof 1): the interval of
    ``scipy.stats.t.interval(confidence, n - 1, mean, sd / sqrt(n))`` (Student 1908,
    "The probable error of a mean", Biometrika 6(1)). The values are taken as they are:
    callers leave out or refuse NaN first.

    Parameters
    ----------
    values : array-like of float, shape (n,)
        n >= 1 finite numbers (e.g. one score per video, or one accuracy per fold).
    confidence : float in (0, 1), default=0.95

    Returns
    -------
    (mean, low, high) : tuple of float
        ``low`` and ``high`` are NaN for fewer than 2 values, and equal to ``mean`` when
        every value is the same.

    Raises
    ------
    ValueError
        If ``confidence`` is not in (0, 1), or ``values`` is empty or not
        one-dimensional.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 1 or len(values) == 0:
        raise ValueError(f"values must be a non-empty 1-D array, got shape {values.shape}")
    mean = float(values.mean())
    if len(values) < 2:
        return mean, math.nan, math.nan
    from scipy import stats  # imported here: slow to import, and most importers never call this

    half = float(
        stats.t.ppf((1 + confidence) / 2, len(values) - 1) * values.std(ddof=1) / math.sqrt(len(values))
    )
    return mean, mean - half, mean + half
