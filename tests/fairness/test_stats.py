"""Per-group descriptive statistics and stratified bootstrap intervals."""

import math

import numpy as np
import pytest

from fairness.measures import UndefinedMeasureError, mean_gc_sqfr
from fairness.stats import bootstrap_cis, describe_groups, stratified_resamples


def test_describe_groups_hand_computed():
    table = describe_groups([1, 2, 3, 4, 10, 10], groups=["a", "a", "a", "a", "b", "b"])
    assert list(table.index) == ["a", "b"]
    a = table.loc["a"]
    assert (a["n"], a["mean"], a["median"], a["q1"], a["q3"], a["min"], a["max"]) == (
        4,
        2.5,
        2.5,
        1.75,
        3.25,
        1,
        4,
    )
    assert a["std"] == pytest.approx(np.sqrt(5 / 3))  # ddof=1: sum of squares 5 over 3
    assert table.loc["b", "std"] == 0.0


def test_describe_groups_single_and_empty_group():
    table = describe_groups({"one": [7.0], "none": []})
    assert table.loc["one", "n"] == 1 and math.isnan(table.loc["one", "std"])
    assert table.loc["none", "n"] == 0 and math.isnan(table.loc["none", "mean"])


def test_stratified_resamples_keep_every_group_and_its_size():
    per_group = {"big": np.arange(50.0), "single": np.array([3.0])}
    for resample in stratified_resamples(per_group, n_resamples=200, random_state=1):
        assert resample["big"].size == 50 and set(resample["big"]) <= set(range(50))
        assert resample["single"].tolist() == [3.0]


def test_bootstrap_is_seeded_and_brackets_the_estimate():
    rng = np.random.default_rng(7)
    scores = {"a": rng.normal(80, 5, 60).round(), "b": rng.normal(86, 5, 40).round(), "c": [75.0]}
    first = bootstrap_cis(scores, n_resamples=300, random_state=3)
    again = bootstrap_cis(scores, n_resamples=300, random_state=3)
    other = bootstrap_cis(scores, n_resamples=300, random_state=4)
    assert first == again
    assert first["MDG-SQFR"] != other["MDG-SQFR"]
    interval = first["Mean-GC-SQFR"]
    assert interval.estimate == pytest.approx(mean_gc_sqfr(scores))
    assert interval.low <= interval.estimate <= interval.high
    assert interval.high - interval.low < 0.05
    assert interval.n_undefined == 0 and interval.n_resamples == 300


def test_bootstrap_of_constant_groups_is_a_point():
    interval = bootstrap_cis({"a": [5.0, 5.0], "b": [10.0]}, measures=["Mean-GC-SQFR"], n_resamples=50)
    ci = interval["Mean-GC-SQFR"]
    # GC of [5, 10] = 2 * 10 / (2 * 4 * 7.5) = 1/3
    assert ci.estimate == ci.low == ci.high == pytest.approx(2 / 3)


def test_bootstrap_counts_resamples_where_mdg_is_undefined():
    # Range 1 = step: defined on the data; a resample of {0, 0.5} and {0.5} has range 0.5
    # < step (undefined) while one with 0 and 1 is defined.
    scores = {"a": [0.0, 0.5], "b": [0.5, 1.0]}
    ci = bootstrap_cis(scores, measures=["MDG-SQFR"], n_resamples=200, random_state=0)["MDG-SQFR"]
    assert 0 < ci.n_undefined < 200
    assert 0.0 <= ci.low <= ci.high <= 1.0


def test_bootstrap_bad_arguments():
    scores = {"a": [1.0, 2.0], "b": [3.0]}
    with pytest.raises(ValueError, match="n_resamples must be a positive integer, got 0"):
        bootstrap_cis(scores, n_resamples=0)
    with pytest.raises(ValueError, match="confidence_level must be in \\(0, 1\\), got 95"):
        bootstrap_cis(scores, confidence_level=95)
    with pytest.raises(ValueError, match="unknown measure\\(s\\) \\['Gini'\\]"):
        bootstrap_cis(scores, measures=["Gini"])
    with pytest.raises(ValueError, match="propagate"):
        bootstrap_cis(scores, nan_policy="propagate")
    with pytest.raises(UndefinedMeasureError, match="at least two groups"):
        bootstrap_cis({"a": [1.0, 2.0]})
