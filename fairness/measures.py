"""Differential performance measures (DPMs) of a score across demographic groups.

Implements the Sample Quality Fairness Rate (SQFR) family of
``seeds/003_f24e77013896bd33.txt`` ("Fairness measures for biometric quality
assessment", section 3): the Gini coefficient with the n/(n-1) correction (eq. 1),
Mean-/Median-GC-SQFR (eq. 2-3), the cubed CSQFR (eq. 4), the Low-Weighted-Mean (eq. 5)
with LWM-GC-SQFR / LWM-GC-CSQFR (eq. 6), and the Mean-Discard-Gap with MDG-SQFR
(eq. 7-8). Every SQFR is "higher is better": 1 means all groups are treated alike.

The paper is written for quality scores (higher = better sample). Any per-sample score
works, but Gini and LWM are not symmetric under reflection: orient a score so that
higher is the favourable direction before comparing groups.

Cases the paper leaves open, decided here (each has a test in ``tests/fairness``):

- **Identical groups, including all scores zero** (e.g. 0 % re-identification in every
  group): eq. 1 is 0/0 when every group value is 0. Every other common value gives GC 0,
  so GC is 0 there too (SQFR 1): the groups are exactly alike.
- **Fewer than two groups, an empty group**: no comparison exists, and n/(n-1) in eq. 1
  divides by zero. :class:`UndefinedMeasureError` by default; NaN with
  ``undefined="nan"`` (sklearn's ``zero_division`` style: the caller opts in).
- **Negative values**: the Gini coefficient of values that can be negative is not
  bounded by 1 and its mean can be 0 for unequal groups. A GC-based measure is therefore
  undefined (as above) when a group's summary (mean, median or LWM) is negative; negative
  single scores inside a group with a non-negative summary are used as they are. MDG
  only compares discard fractions, so it accepts any finite scores.
- **NaN scores**: ``nan_policy`` as in ``scipy.stats`` ("raise", "omit", "propagate").
- **LWM of a group whose scores all equal max(Q)**: every weight of eq. 5 is 0. The
  weighted mean of a constant group is that constant for any positive weights, so the
  LWM is max(Q) (the same rule the paper gives for min(Q) = max(Q)).
- **MDG with non-integer scores**: eq. 7 steps thresholds by 1 from min(QS)+1 to
  max(QS). We keep the step as a parameter (default 1, the paper's; use 0.01 for
  fractions in [0, 1], i.e. one percentage point) and use thresholds
  ``min + k*step`` for ``k = 1 .. floor((max - min) / step)``. A sample is discarded at
  threshold t when its score is strictly below t. When all scores are equal there is no
  threshold and no gap (MDG 0); when 0 < max - min < step the measure is undefined.
  Section 3.4 adds that "thresholds are limited to quality scores that exist in the
  demographic data set"; eq. 7 lists every step from min+1 to max, so that sentence is
  read as "within the observed range", not "only at observed values".
- **LWM weights of repeated scores**: section 3.3 accumulates the weights of multiple
  occurrences of a score; that is the same as weighting every sample by w(q).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import numpy as np

from fairness.groups import NanPolicy, has_nan, split_by_group

# pandas is imported where it is used: slow to import, and Django start-up imports this module.
if TYPE_CHECKING:
    import pandas as pd

Undefined = Literal["raise", "nan"]
MAX_THRESHOLDS = 1_000_000


class UndefinedMeasureError(ValueError):
    """The measure has no value for these groups (see the module docstring).

    Attributes
    ----------
    reason : str
        Why, without the hint on the ``undefined=`` keyword that ``str(error)`` adds for
        Python callers (reports and the command line show ``reason``).
    """

    def __init__(self, reason: str):
        super().__init__(f"{reason}; pass undefined='nan' to get NaN instead")
        self.reason = reason


def _undefined(message: str, undefined: Undefined) -> float:
    if undefined == "nan":
        return float("nan")
    if undefined != "raise":
        raise ValueError(f"undefined must be 'raise' or 'nan', got {undefined!r}")
    raise UndefinedMeasureError(message)


def _group_problem(per_group: dict) -> str | None:
    if len(per_group) < 2:
        return f"at least two groups are needed to compare, got {len(per_group)}: {list(per_group)}"
    empty = [label for label, values in per_group.items() if values.size == 0]
    if empty:
        return f"group(s) {empty} have no scores"
    return None


def gini(values, *, undefined: Undefined = "raise") -> float:
    """Gini coefficient of one value per group, with the n/(n-1) correction.

    GC = n/(n-1) * sum_i sum_j |Q_i - Q_j| / (2 n^2 mean(Q))  (seeds/003, eq. 1).

    Parameters
    ----------
    values : array-like of shape (n_groups,)
        One non-negative, finite summary per group (mean, median or LWM score).
    undefined : {"raise", "nan"}, default="raise"
        Fewer than two values, or a negative value: raise, or return NaN.

    Returns
    -------
    float
        GC in [0, 1]; 0 (the ideal) when all values are equal, including all zero; 1 when
        one group holds everything and the others are 0.

    Raises
    ------
    UndefinedMeasureError
        Fewer than two values or a negative value (unless ``undefined="nan"``).
    ValueError
        Values that are not 1-D, or not finite.

    Examples
    --------
    >>> gini([1.0, 3.0])  # 2/1 * (|1-3| + |3-1|) / (2 * 4 * 2)
    0.5
    """
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"values must be 1-D (one value per group), got shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"values must be finite, got {array.tolist()}")
    n = array.size
    if n < 2:
        return _undefined(f"the Gini coefficient needs at least two groups, got {n}", undefined)
    if (array < 0).any():
        return _undefined(
            f"the Gini coefficient needs non-negative values, got {array[array < 0].tolist()}",
            undefined,
        )
    absolute_differences = np.abs(array[:, None] - array[None, :]).sum()
    if absolute_differences == 0.0:
        return 0.0  # identical groups, also when all are 0 (module docstring)
    coefficient = (n / (n - 1)) * absolute_differences / (2.0 * n * n * array.mean())
    return float(min(coefficient, 1.0))  # only rounding can exceed 1


def _gc_sqfr(summarise, scores, groups, nan_policy, undefined, *, cube=False) -> float:
    per_group = split_by_group(scores, groups=groups, nan_policy=nan_policy)
    problem = _group_problem(per_group)
    if problem:
        return _undefined(problem, undefined)
    if has_nan(per_group):
        return float("nan")
    return _sqfr(gini(summarise(per_group), undefined=undefined), cube)


def _sqfr(gini_value: float, cube: bool) -> float:
    sqfr = 1.0 - gini_value
    return float(sqfr**3) if cube else float(sqfr)


def _means(per_group: dict) -> list[float]:
    return [float(values.mean()) for values in per_group.values()]


def _medians(per_group: dict) -> list[float]:
    return [float(np.median(values)) for values in per_group.values()]


def _sorted_medians(per_group: dict) -> list[float]:
    """``_medians`` of groups without NaN, none empty: the middle of the sorted values, or the
    mean of the two middle ones (``a + b`` halved, what ``numpy.median`` computes), without
    ``numpy.median``'s general machinery (10 times the time on a group of a few values)."""
    medians = []
    for values in per_group.values():
        ordered = np.sort(values)
        half = ordered.size // 2
        medians.append(
            float(ordered[half]) if ordered.size % 2 else float((ordered[half - 1] + ordered[half]) / 2.0)
        )
    return medians


_SCORES_DOC = """scores : array-like of shape (n_samples,) or mapping of label -> array-like
        Per-sample scores, higher = better (see :func:`fairness.groups.split_by_group`).
    groups : array-like of shape (n_samples,), optional
        Group label per sample (keyword-only); omit when ``scores`` is a mapping.
    nan_policy : {"raise", "omit", "propagate"}, default="raise"
        NaN scores: raise a ValueError, drop them, or return NaN.
    undefined : {"raise", "nan"}, default="raise"
        Fewer than two groups, an empty group or negative values: raise
        :class:`UndefinedMeasureError`, or return NaN."""

_RAISES_DOC = """Raises
    ------
    UndefinedMeasureError
        Fewer than two groups, an empty group, or (Gini-based measures) a negative group
        summary, unless ``undefined="nan"``.
    fairness.groups.GroupScoresError
        Malformed scores or groups, or NaN with ``nan_policy="raise"``
        (:func:`fairness.groups.split_by_group`)."""


def mean_gc_sqfr(
    scores, *, groups=None, nan_policy: NanPolicy = "raise", undefined: Undefined = "raise"
) -> float:
    """Mean-GC-SQFR: 1 - GC of the groups' mean scores (seeds/003, eq. 2, Table 3).

    Parameters
    ----------
    {scores}

    Returns
    -------
    float
        In [0, 1]; 1 (the ideal) when every group has the same mean score.

    {raises}

    Examples
    --------
    >>> mean_gc_sqfr({{"A": [1.0, 1.0], "B": [3.0, 3.0]}})
    0.5
    """
    return _gc_sqfr(_means, scores, groups, nan_policy, undefined)


def median_gc_sqfr(
    scores, *, groups=None, nan_policy: NanPolicy = "raise", undefined: Undefined = "raise"
) -> float:
    """Median-GC-SQFR: 1 - GC of the groups' median scores (seeds/003, eq. 3, Table 3).

    Parameters
    ----------
    {scores}

    Returns
    -------
    float
        In [0, 1]; 1 (the ideal) when every group has the same median score.

    {raises}
    """
    return _gc_sqfr(_medians, scores, groups, nan_policy, undefined)


def mean_gc_csqfr(
    scores, *, groups=None, nan_policy: NanPolicy = "raise", undefined: Undefined = "raise"
) -> float:
    """Mean-GC-CSQFR: (1 - GC of the groups' mean scores)^3 (seeds/003, eq. 4, Table 4).

    Cubing lowers the rate of biased scenarios more than that of fair ones.

    Parameters
    ----------
    {scores}

    Returns
    -------
    float
        In [0, 1]; 1 (the ideal) when every group has the same mean score.

    {raises}

    Examples
    --------
    >>> mean_gc_csqfr({{"A": [1.0], "B": [3.0]}})
    0.125
    """
    return _gc_sqfr(_means, scores, groups, nan_policy, undefined, cube=True)


def low_weighted_mean(
    scores, *, groups=None, nan_policy: NanPolicy = "raise", undefined: Undefined = "raise"
) -> dict:
    """Low-Weighted-Mean (LWM) score of each group (seeds/003, section 3.3, eq. 5).

    Each score q gets the weight w(q) = 1 - (q - min(Q)) / (max(Q) - min(Q)), where Q is
    the union of all groups' scores; a group's LWM is the w-weighted mean of its scores,
    so low scores count more.

    Parameters
    ----------
    {scores}

    Returns
    -------
    dict
        Group label -> LWM score (float, in the score's units). When min(Q) = max(Q) every
        group's LWM is that single score (as the paper says); a group whose scores all
        equal max(Q) has all weights 0 and gets LWM max(Q) (module docstring).

    {raises}

    Examples
    --------
    >>> low_weighted_mean({{"A": [0.0, 10.0], "B": [5.0, 10.0]}})  # weights 1, 0 | 0.5, 0
    {{'A': 0.0, 'B': 5.0}}
    """
    per_group = split_by_group(scores, groups=groups, nan_policy=nan_policy)
    problem = _group_problem(per_group)
    if problem:
        value = _undefined(problem, undefined)  # raises unless undefined="nan"
        return {label: value for label in per_group}
    if has_nan(per_group):
        return {label: float("nan") for label in per_group}
    return _lwm_of_checked(per_group)


def _lwm_of_checked(per_group: dict) -> dict:
    """Eq. 5 for groups already split and checked (two or more, none empty, no NaN)."""
    union = np.concatenate(list(per_group.values()))
    low, high = float(union.min()), float(union.max())
    if low == high:
        return {label: low for label in per_group}
    result = {}
    for label, values in per_group.items():
        weights = 1.0 - (values - low) / (high - low)
        total = weights.sum()
        result[label] = float((weights * values).sum() / total) if total > 0 else high
    return result


def _lwm_values(per_group: dict) -> list[float]:
    return list(low_weighted_mean(per_group).values())


def lwm_gc_sqfr(
    scores, *, groups=None, nan_policy: NanPolicy = "raise", undefined: Undefined = "raise"
) -> float:
    """LWM-GC-SQFR: 1 - GC of the groups' Low-Weighted-Mean scores (seeds/003, eq. 6).

    Parameters
    ----------
    {scores}

    Returns
    -------
    float
        In [0, 1]; 1 (the ideal) when every group has the same LWM score.

    {raises}
    """
    return _gc_sqfr(_lwm_values, scores, groups, nan_policy, undefined)


def lwm_gc_csqfr(
    scores, *, groups=None, nan_policy: NanPolicy = "raise", undefined: Undefined = "raise"
) -> float:
    """LWM-GC-CSQFR: (LWM-GC-SQFR)^3 (seeds/003, eq. 4 applied to eq. 6, Tables 6, 9).

    Parameters
    ----------
    {scores}

    Returns
    -------
    float
        In [0, 1]; 1 (the ideal) when every group has the same LWM score.

    {raises}
    """
    return _gc_sqfr(_lwm_values, scores, groups, nan_policy, undefined, cube=True)


def check_step(step: float) -> None:
    """Raise ValueError unless the MDG threshold ``step`` is a positive, finite number."""
    if not (np.isfinite(step) and step > 0):
        raise ValueError(f"step must be a positive, finite number, got {step}")


def discard_thresholds(low: float, high: float, *, step: float = 1.0) -> np.ndarray:
    """Relevant thresholds min+step, min+2*step, ... <= max (seeds/003, eq. 7; step 1 there).

    Parameters
    ----------
    low, high : float
        min(QS) and max(QS) over all groups' scores.
    step : float, default=1.0
        Threshold spacing in score units, > 0.

    Returns
    -------
    ndarray of shape (n_thresholds,), dtype float64
        Empty when ``high - low < step``.

    Raises
    ------
    ValueError
        ``step`` not positive and finite, or more than ``MAX_THRESHOLDS`` thresholds.
    """
    check_step(step)
    count = np.floor((high - low) / step + 1e-9)  # tolerate float steps like 0.1
    if count > MAX_THRESHOLDS:
        raise ValueError(
            f"step={step} gives {count:.3g} thresholds over [{low}, {high}] (limit {MAX_THRESHOLDS}); "
            "use a larger step"
        )
    count = int(count)
    return low + step * np.arange(1, count + 1, dtype=np.float64)


def discard_rates(scores, *, groups=None, step: float = 1.0, nan_policy: NanPolicy = "raise") -> pd.DataFrame:
    """Fraction of each group's samples discarded (score < t) at each relevant threshold.

    Parameters
    ----------
    scores, groups
        As in :func:`mean_discard_gap`.
    step : float, default=1.0
        Threshold spacing (:func:`discard_thresholds`).
    nan_policy : {"raise", "omit"}, default="raise"
        NaN scores: raise a ValueError or drop them.

    Returns
    -------
    pandas.DataFrame of shape (n_thresholds, n_groups)
        Index ``threshold`` (score units), one column per group, values in [0, 1]
        (seeds/003, section 3.4); NaN for an empty group.

    Raises
    ------
    ValueError
        ``nan_policy="propagate"`` (a discard rate of NaN scores does not exist), a bad
        ``step``, or malformed scores (:func:`fairness.groups.split_by_group`).
    """
    import pandas as pd

    if nan_policy == "propagate":
        raise ValueError("discard_rates needs nan_policy='raise' or 'omit', not 'propagate'")
    per_group = split_by_group(scores, groups=groups, nan_policy=nan_policy)
    thresholds, rates = _discard_matrix(per_group, step)
    return pd.DataFrame(rates.T, columns=list(per_group), index=pd.Index(thresholds, name="threshold"))


def _discard_matrix(per_group: dict, step: float) -> tuple[np.ndarray, np.ndarray]:
    """Thresholds (n_thresholds,) and discard fractions (n_groups, n_thresholds)."""
    nonempty = [values for values in per_group.values() if values.size]
    if not nonempty:
        return np.empty(0), np.empty((len(per_group), 0))
    union = np.concatenate(nonempty)
    thresholds = discard_thresholds(float(union.min()), float(union.max()), step=step)
    tolerance = 1e-9 * step  # a score equal to a threshold up to rounding is kept
    rates = np.full((len(per_group), thresholds.size), np.nan)
    for row, values in enumerate(per_group.values()):
        if values.size:
            below = np.searchsorted(np.sort(values), thresholds - tolerance, side="left")
            rates[row] = below / values.size
    return thresholds, rates


def mean_discard_gap(
    scores, *, groups=None, step: float = 1.0, nan_policy: NanPolicy = "raise", undefined: Undefined = "raise"
) -> float:
    """Mean-Discard-Gap: mean over thresholds of max - min discard fraction across groups.

    seeds/003, section 3.4, eq. 7. Only the best- and worst-treated group count at each
    threshold, so the number of groups does not matter.

    Parameters
    ----------
    {scores}
    step : float, default=1.0
        Threshold spacing in score units (eq. 7 uses 1; see the module docstring). Not
        positive and finite, or over ``MAX_THRESHOLDS`` thresholds: ValueError; a score
        range above 0 but below ``step``: undefined (no threshold).

    Returns
    -------
    float
        In [0, 1]; 0 (the ideal) when every group is discarded equally at every threshold,
        also when all scores are equal (no threshold).

    {raises}

    Examples
    --------
    >>> mean_discard_gap({{"A": [1, 2, 3], "B": [2, 3, 3]}})  # t=2: 1/3 vs 0; t=3: 2/3 vs 1/3
    0.3333333333333333
    """
    per_group = split_by_group(scores, groups=groups, nan_policy=nan_policy)
    problem = _group_problem(per_group)
    if problem:
        return _undefined(problem, undefined)
    if has_nan(per_group):
        return float("nan")
    return _mdg_of_checked(per_group, step, undefined)


def _mdg_of_checked(per_group: dict, step: float, undefined: Undefined) -> float:
    """Eq. 7 for groups already split and checked (two or more, none empty, no NaN)."""
    _, rates = _discard_matrix(per_group, step)
    if rates.shape[1] == 0:
        union = np.concatenate(list(per_group.values()))
        if union.min() == union.max():
            return 0.0
        return _undefined(
            f"the score range {union.max() - union.min()} is smaller than step={step}, so eq. 7 "
            "gives no threshold; pass a smaller step (e.g. 0.01 for fractions)",
            undefined,
        )
    gaps = rates.max(axis=0) - rates.min(axis=0)
    return float(gaps.mean())


def mdg_sqfr(
    scores, *, groups=None, step: float = 1.0, nan_policy: NanPolicy = "raise", undefined: Undefined = "raise"
) -> float:
    """MDG-SQFR = 1 - Mean-Discard-Gap (seeds/003, eq. 8, Tables 8-9).

    Parameters
    ----------
    {scores}
    step : float, default=1.0
        Threshold spacing in score units (eq. 7 uses 1; see the module docstring). Not
        positive and finite, or over ``MAX_THRESHOLDS`` thresholds: ValueError; a score
        range above 0 but below ``step``: undefined (no threshold).

    Returns
    -------
    float
        In [0, 1]; 1 (the ideal) when every group is discarded equally at every threshold.

    {raises}
    """
    gap = mean_discard_gap(scores, groups=groups, step=step, nan_policy=nan_policy, undefined=undefined)
    return 1.0 - gap


for _function in (
    mean_gc_sqfr,
    median_gc_sqfr,
    mean_gc_csqfr,
    low_weighted_mean,
    lwm_gc_sqfr,
    lwm_gc_csqfr,
    mean_discard_gap,
    mdg_sqfr,
):
    _function.__doc__ = _function.__doc__.format(scores=_SCORES_DOC, raises=_RAISES_DOC)

#: The paper's SQFR measures by their published names. Only MDG-SQFR takes ``step``;
#: :func:`compute_measure` passes it where it belongs.
MEASURES = {
    "Mean-GC-SQFR": mean_gc_sqfr,
    "Median-GC-SQFR": median_gc_sqfr,
    "Mean-GC-CSQFR": mean_gc_csqfr,
    "LWM-GC-SQFR": lwm_gc_sqfr,
    "LWM-GC-CSQFR": lwm_gc_csqfr,
    "MDG-SQFR": mdg_sqfr,
}


def compute_measure(
    name: str,
    scores,
    *,
    groups=None,
    step: float = 1.0,
    nan_policy: NanPolicy = "raise",
    undefined: Undefined = "raise",
) -> float:
    """Compute one measure of :data:`MEASURES` by name (``step`` only reaches MDG-SQFR).

    Raises
    ------
    ValueError
        Unknown ``name``, plus whatever the measure raises.
    """
    if name not in MEASURES:
        raise ValueError(f"unknown measure {name!r}; choose from {list(MEASURES)}")
    options = {"groups": groups, "nan_policy": nan_policy, "undefined": undefined}
    if name == "MDG-SQFR":
        options["step"] = step
    return MEASURES[name](scores, **options)


#: The Gini-based measures of :data:`MEASURES`: (group summary, cubed).
_GC_MEASURES = {
    "Mean-GC-SQFR": (_means, False),
    "Median-GC-SQFR": (_sorted_medians, False),
    "Mean-GC-CSQFR": (_means, True),
    "LWM-GC-SQFR": (lambda per_group: list(_lwm_of_checked(per_group).values()), False),
    "LWM-GC-CSQFR": (lambda per_group: list(_lwm_of_checked(per_group).values()), True),
}


def measures_of_checked(per_group: dict, names, *, step: float = 1.0, undefined: Undefined = "nan") -> dict:
    """``{name: compute_measure(name, per_group, step=step, undefined=undefined)}`` for groups
    that :func:`fairness.groups.split_by_group` already gave and that have no problem: two or
    more groups, none empty, no NaN (e.g. the stratified resamples of
    :func:`fairness.stats.bootstrap_cis`, drawn from such groups).

    The same arithmetic as :func:`compute_measure` on the same arrays, hence the same floats,
    without validating the groups again (medians by :func:`_sorted_medians`), and with each
    group summary (means, LWM) and its Gini coefficient computed once for the measures that
    share it (Mean-GC-SQFR and Mean-GC-CSQFR; LWM-GC-SQFR and LWM-GC-CSQFR). The measures
    are those of seeds/003, section 3, eq. 1-8 (see the module docstring).

    Parameters
    ----------
    per_group : dict of str to ndarray
        ``{group: 1-D float64 array of quality scores}``, already checked (no validation here:
        an empty group or a NaN gives a wrong value, not an error).
    names : iterable of str
        Keys of :data:`MEASURES`.
    step, undefined
        As in :func:`compute_measure`.

    Returns
    -------
    dict of str to float
        ``{name: value in [0, 1]}``, equal to :func:`compute_measure`'s to the last bit.
    """
    ginis: dict = {}
    result = {}
    for name in names:
        if name == "MDG-SQFR":
            result[name] = 1.0 - _mdg_of_checked(per_group, step, undefined)
            continue
        summarise, cube = _GC_MEASURES[name]
        kind = "lwm" if name.startswith("LWM") else summarise
        if kind not in ginis:
            ginis[kind] = gini(summarise(per_group), undefined=undefined)
        result[name] = _sqfr(ginis[kind], cube)
    return result


def all_measures(
    scores, *, groups=None, step: float = 1.0, nan_policy: NanPolicy = "raise", undefined: Undefined = "raise"
) -> dict[str, float]:
    """Every measure of :data:`MEASURES`, ``{published name: value in [0, 1]}``."""
    return {
        name: compute_measure(
            name, scores, groups=groups, step=step, nan_policy=nan_policy, undefined=undefined
        )
        for name in MEASURES
    }
