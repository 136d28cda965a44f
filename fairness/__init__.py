"""Differential performance measures (Gini, SQFR, CSQFR, LWM, MDG) as pure functions.

Source: seeds/003_f24e77013896bd33.txt ("Fairness measures for biometric quality
assessment"). Importing this package never imports Django::

    import fairness
    fairness.mean_gc_sqfr({"A": [81, 79], "B": [86, 84]})
    fairness.summarize(scores, groups=labels)  # every measure with bootstrap CIs
"""

from fairness.groups import GroupScoresError, split_by_group
from fairness.measures import (
    MEASURES,
    UndefinedMeasureError,
    all_measures,
    compute_measure,
    discard_rates,
    gini,
    low_weighted_mean,
    lwm_gc_csqfr,
    lwm_gc_sqfr,
    mdg_sqfr,
    mean_discard_gap,
    mean_gc_csqfr,
    mean_gc_sqfr,
    median_gc_sqfr,
)
from fairness.stats import bootstrap_cis, describe_groups
from fairness.summary import summarize

__all__ = [
    "MEASURES",
    "GroupScoresError",
    "UndefinedMeasureError",
    "all_measures",
    "bootstrap_cis",
    "compute_measure",
    "describe_groups",
    "discard_rates",
    "gini",
    "low_weighted_mean",
    "lwm_gc_csqfr",
    "lwm_gc_sqfr",
    "mdg_sqfr",
    "mean_discard_gap",
    "mean_gc_csqfr",
    "mean_gc_sqfr",
    "median_gc_sqfr",
    "split_by_group",
    "summarize",
]
