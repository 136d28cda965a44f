"""Split per-sample scores into per-demographic-group arrays, validating them once.

Every measure in :mod:`fairness.measures` accepts scores in one of two forms:

- ``scores`` a 1-D array-like of shape ``(n_samples,)`` with ``groups=`` an array-like
  of the same length holding each sample's group label (fairlearn's
  ``sensitive_features`` style), or
- ``scores`` a mapping ``{group label: 1-D array-like of scores}`` and ``groups=None``.

Both become a ``dict[label, numpy.ndarray of float64]`` in first-appearance order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import numpy as np

NanPolicy = Literal["raise", "omit", "propagate"]
NAN_POLICIES = ("raise", "omit", "propagate")
#: Largest accepted |score|: squares (standard deviation) and sums (means, Gini) of
#: scores stay finite in float64 up to this.
MAX_ABS_SCORE = 1e150


class GroupScoresError(ValueError):
    """Scores or group labels that no measure can use (wrong shape, type or values)."""


def split_by_group(scores, *, groups=None, nan_policy: NanPolicy = "raise") -> dict:
    """Return ``{group label: float64 array of that group's scores}``.

    Parameters
    ----------
    scores : array-like of shape (n_samples,) or mapping of label -> array-like
        Per-sample scores (e.g. quality scores, per-video match rates), finite floats.
    groups : array-like of shape (n_samples,), optional
        Group label of each sample; required with array scores, forbidden with a mapping.
    nan_policy : {"raise", "omit", "propagate"}, default="raise"
        What to do with NaN scores, as in ``scipy.stats``: raise a ValueError, drop those
        samples, or keep them so the measure returns NaN. A sample without a group label
        (None/NaN label) always raises: it cannot be assigned and must not vanish silently.

    Returns
    -------
    dict
        Label -> ndarray of shape (n_group_samples,), dtype float64. A group may be empty
        (a mapping entry with no scores, or every score omitted as NaN); the measures decide
        what that means.

    Raises
    ------
    GroupScoresError
        On non-1-D or non-numeric scores (complex and date/time values included),
        infinite scores or scores beyond ``MAX_ABS_SCORE``, mismatched lengths, a missing
        or superfluous ``groups``, missing group labels, or NaN with ``nan_policy="raise"``.
    """
    # imported here: pandas is slow to import, and Django start-up imports this module
    import pandas as pd

    if nan_policy not in NAN_POLICIES:
        raise GroupScoresError(f"nan_policy must be one of {NAN_POLICIES}, got {nan_policy!r}")
    if isinstance(scores, Mapping):
        if groups is not None:
            raise GroupScoresError(
                "pass either a mapping of group -> scores or scores with groups=, not both"
            )
        per_group = {label: _as_scores(values, f"group {label!r}") for label, values in scores.items()}
    else:
        if groups is None:
            raise GroupScoresError("groups= is required when scores is not a mapping of group -> scores")
        values = _as_scores(scores, "scores")
        labels = pd.Series(np.asarray(groups, dtype=object).ravel() if np.ndim(groups) else [groups])
        if len(labels) != len(values):
            raise GroupScoresError(
                f"scores and groups have inconsistent lengths: [{len(values)}, {len(labels)}]"
            )
        missing = labels.isna().to_numpy()
        if missing.any():
            raise GroupScoresError(
                f"{int(missing.sum())} sample(s) have no group label (first at index "
                f"{int(np.flatnonzero(missing)[0])}); label or drop them first"
            )
        codes, uniques = pd.factorize(labels, sort=False)
        per_group = {label: values[codes == code] for code, label in enumerate(uniques)}
    return {label: _apply_nan_policy(values, label, nan_policy) for label, values in per_group.items()}


def _as_scores(values, what: str) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 1:
        raise GroupScoresError(f"{what} must be 1-D, got shape {array.shape}")
    if array.dtype.kind in "cmM":  # astype(float) would drop imaginary parts / count days
        raise GroupScoresError(f"{what} must be real numbers, got dtype {array.dtype}")
    try:
        array = array.astype(np.float64)
    except (TypeError, ValueError) as error:
        raise GroupScoresError(f"{what} must be numeric, got dtype {array.dtype}: {error}") from None
    if np.isinf(array).any():
        raise GroupScoresError(f"{what} contain infinite values: {array[np.isinf(array)][:5].tolist()}")
    huge = np.abs(array) > MAX_ABS_SCORE
    if huge.any():
        raise GroupScoresError(
            f"{what} contain values beyond +-{MAX_ABS_SCORE:.0e}: {array[huge][:5].tolist()}; rescale them"
        )
    return array


def _apply_nan_policy(values: np.ndarray, label, nan_policy: NanPolicy) -> np.ndarray:
    nan = np.isnan(values)
    if not nan.any():
        return values
    if nan_policy == "raise":
        raise GroupScoresError(
            f"group {label!r} has {int(nan.sum())} NaN score(s); drop them, or pass "
            "nan_policy='omit' (ignore them) or 'propagate' (return NaN)"
        )
    return values[~nan] if nan_policy == "omit" else values


def has_nan(per_group: dict) -> bool:
    """True if any group holds a NaN score (only possible with ``nan_policy="propagate"``)."""
    return any(np.isnan(values).any() for values in per_group.values())
