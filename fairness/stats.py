"""Per-group descriptive statistics and bootstrap confidence intervals for the measures.

The bootstrap is stratified: each resample draws, within every group, as many samples
(with replacement) as that group has. Groups therefore keep their sizes and can never
come out empty, and the group proportions stay those of the data, as for the DPMs of
ISO/IEC 19795-10 computed on a fixed demographic composition. Intervals are percentile
intervals (Efron's). ``scipy.stats.bootstrap`` does the same resampling for several
samples but rejects a sample with a single observation, which small campaigns have (a
group with one video); so the resampling here is plain numpy with a seeded Generator.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from fairness.groups import NanPolicy, split_by_group
from fairness.measures import MEASURES, compute_measure, measures_of_checked

# pandas is imported where it is used: slow to import, and Django start-up imports this module.
if TYPE_CHECKING:
    import pandas as pd

DESCRIBE_COLUMNS = ["n", "mean", "std", "min", "q1", "median", "q3", "max"]


def describe_groups(scores, *, groups=None, nan_policy: NanPolicy = "raise") -> pd.DataFrame:
    """Per-group sample count, mean, standard deviation and quartiles.

    Parameters
    ----------
    scores : array-like of shape (n_samples,) or mapping of label -> array-like
        As in :func:`fairness.groups.split_by_group`.
    groups : array-like of shape (n_samples,), optional
        Group label per sample.
    nan_policy : {"raise", "omit", "propagate"}, default="raise"
        NaN scores (``"omit"`` drops them before counting ``n``).

    Returns
    -------
    pandas.DataFrame of shape (n_groups, 8)
        Index: group label; columns ``n`` (int), ``mean``, ``std`` (sample standard
        deviation, ddof=1; NaN for one sample), ``min``, ``q1``, ``median``, ``q3``,
        ``max`` (quartiles by linear interpolation, numpy's default), in score units.
        An empty group has n 0 and NaN elsewhere.
    """
    import pandas as pd

    rows = {}
    for label, values in split_by_group(scores, groups=groups, nan_policy=nan_policy).items():
        if values.size == 0:
            rows[label] = {"n": 0}
            continue
        q1, median, q3 = np.percentile(values, [25, 50, 75])
        rows[label] = {
            "n": values.size,
            "mean": values.mean(),
            "std": values.std(ddof=1) if values.size > 1 else np.nan,
            "min": values.min(),
            "q1": q1,
            "median": median,
            "q3": q3,
            "max": values.max(),
        }
    table = pd.DataFrame.from_dict(rows, orient="index", columns=DESCRIBE_COLUMNS)
    table["n"] = table["n"].astype(int)
    table.index.name = "group"
    return table


@dataclass(frozen=True)
class ConfidenceInterval:
    """A measure's value on the data with its stratified-bootstrap percentile interval.

    Attributes
    ----------
    estimate : float
        The measure on the full data.
    low, high : float
        Interval bounds (NaN when no resample gave a value).
    confidence_level : float
        In (0, 1), e.g. 0.95.
    n_resamples : int
        Resamples drawn.
    n_undefined : int
        Resamples on which the measure was undefined (e.g. MDG when a resample's score
        range is below the threshold step); they are left out of the percentiles.
    """

    estimate: float
    low: float
    high: float
    confidence_level: float
    n_resamples: int
    n_undefined: int

    def as_dict(self) -> dict:
        return {
            "estimate": self.estimate,
            "ci_low": self.low,
            "ci_high": self.high,
            "confidence_level": self.confidence_level,
            "n_resamples": self.n_resamples,
            "n_undefined": self.n_undefined,
        }


def stratified_resamples(per_group: dict, *, n_resamples: int, random_state=0):
    """Yield ``n_resamples`` mappings label -> resampled scores, each group resampled within.

    Parameters
    ----------
    per_group : dict
        Label -> ndarray of shape (n_group_samples,) (all non-empty).
    n_resamples : int
        Number of resamples, >= 1.
    random_state : int or numpy.random.Generator, default=0
        Seed for ``numpy.random.default_rng``; the same seed gives the same resamples.
    """
    rng = np.random.default_rng(random_state)
    for _ in range(n_resamples):
        yield {
            label: values[rng.integers(0, values.size, values.size)] for label, values in per_group.items()
        }


def bootstrap_cis(
    scores,
    *,
    groups=None,
    measures=None,
    step: float = 1.0,
    n_resamples: int = 1000,
    confidence_level: float = 0.95,
    random_state=0,
    nan_policy: NanPolicy = "raise",
) -> dict[str, ConfidenceInterval]:
    """Stratified-bootstrap percentile confidence interval of each measure.

    All measures are computed on the same resamples.

    Parameters
    ----------
    scores : array-like of shape (n_samples,) or mapping of label -> array-like
        As in :func:`fairness.groups.split_by_group`.
    groups : array-like of shape (n_samples,), optional
        Group label per sample.
    measures : list of str, optional
        Names from :data:`fairness.measures.MEASURES` (default: all of them).
    step : float, default=1.0
        MDG threshold step (score units).
    n_resamples : int, default=1000
        Bootstrap resamples, >= 1.
    confidence_level : float, default=0.95
        In (0, 1).
    random_state : int or numpy.random.Generator, default=0
        Seed; results are reproducible for a given seed.
    nan_policy : {"raise", "omit"}, default="raise"
        NaN scores (``"propagate"`` would make every interval NaN and is refused).

    Returns
    -------
    dict
        Measure name -> :class:`ConfidenceInterval`.

    Raises
    ------
    ValueError
        Bad ``n_resamples``, ``confidence_level`` or ``nan_policy``, an unknown measure,
        or whatever the measure raises on the full data (e.g.
        :class:`fairness.measures.UndefinedMeasureError` for a single group).
    """
    if int(n_resamples) != n_resamples or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer, got {n_resamples}")
    if not 0.0 < confidence_level < 1.0:
        raise ValueError(f"confidence_level must be in (0, 1), got {confidence_level}")
    if nan_policy == "propagate":
        raise ValueError("nan_policy='propagate' makes every interval NaN; use 'raise' or 'omit'")
    per_group = split_by_group(scores, groups=groups, nan_policy=nan_policy)
    functions = _measure_functions(measures, step)
    estimates = {name: function(per_group, "raise") for name, function in functions.items()}
    draws = {name: np.empty(int(n_resamples)) for name in functions}
    # The estimates passed, so the groups are two or more, none empty, without NaN; so is
    # every stratified resample of them, which is measured without checking them again.
    for index, resample in enumerate(
        stratified_resamples(per_group, n_resamples=int(n_resamples), random_state=random_state)
    ):
        for name, value in measures_of_checked(resample, functions, step=step, undefined="nan").items():
            draws[name][index] = value
    tail = 50.0 * (1.0 - confidence_level)
    result = {}
    for name, values in draws.items():
        defined = values[~np.isnan(values)]
        low, high = np.percentile(defined, [tail, 100.0 - tail]) if defined.size else (np.nan, np.nan)
        result[name] = ConfidenceInterval(
            estimate=float(estimates[name]),
            low=float(low),
            high=float(high),
            confidence_level=float(confidence_level),
            n_resamples=int(n_resamples),
            n_undefined=int(values.size - defined.size),
        )
    return result


def _measure_functions(measures, step: float) -> dict[str, Callable]:
    """Name -> f(per_group, undefined) -> float."""
    if measures is None:
        measures = list(MEASURES)
    unknown = [name for name in measures if name not in MEASURES]
    if unknown:
        raise ValueError(f"unknown measure(s) {unknown}; choose from {list(MEASURES)}")
    return {
        name: (
            lambda per_group, undefined, name=name: compute_measure(
                name, per_group, step=step, undefined=undefined
            )
        )
        for name in measures
    }
