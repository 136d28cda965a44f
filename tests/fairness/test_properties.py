"""Hypothesis property tests of the SQFR measures (seeds/003, eq. 1-8)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairness.measures import MEASURES, all_measures, gini, mean_discard_gap

score = st.integers(min_value=0, max_value=100).map(float)
group = st.lists(score, min_size=1, max_size=12)
group_sets = st.lists(group, min_size=2, max_size=5)


def _mapping(groups):
    return {f"g{index}": values for index, values in enumerate(groups)}


@settings(max_examples=60, deadline=None)
@given(group_sets, st.randoms(use_true_random=False))
def test_invariant_to_group_order(groups, random):
    shuffled = list(groups)
    random.shuffle(shuffled)
    assert all_measures(_mapping(shuffled)) == pytest.approx(all_measures(_mapping(groups)))


@settings(max_examples=60, deadline=None)
@given(group_sets)
def test_invariant_to_sample_order_within_groups(groups):
    reversed_groups = [list(reversed(values)) for values in groups]
    assert all_measures(_mapping(reversed_groups)) == pytest.approx(all_measures(_mapping(groups)))


@settings(max_examples=80, deadline=None)
@given(
    # Zero or at least 1e-100: a scale that underflows is no scale (Hypothesis found
    # [0, 5e-324] x 0.5 = [0, 0], Gini 1 then 0).
    st.lists(st.just(0.0) | st.floats(min_value=1e-100, max_value=1e6), min_size=2, max_size=8),
    st.floats(min_value=1e-3, max_value=1e3),
)
def test_gini_is_invariant_to_a_common_scale_factor(values, factor):
    scaled = [value * factor for value in values]
    assert gini(scaled) == pytest.approx(gini(values), abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(group_sets, st.sampled_from([2.0, 10.0, 0.5]))
def test_gc_measures_are_invariant_to_a_common_scale_factor(groups, factor):
    scaled = [[value * factor for value in values] for values in groups]
    for name in ("Mean-GC-SQFR", "Median-GC-SQFR", "Mean-GC-CSQFR", "LWM-GC-SQFR", "LWM-GC-CSQFR"):
        assert MEASURES[name](_mapping(scaled)) == pytest.approx(MEASURES[name](_mapping(groups)))
    # MDG's thresholds are in score units: scaling the step with the scores keeps it.
    assert mean_discard_gap(_mapping(scaled), step=factor) == pytest.approx(
        mean_discard_gap(_mapping(groups))
    )


@settings(max_examples=100, deadline=None)
@given(group_sets)
def test_results_are_in_the_unit_interval(groups):
    for name, value in all_measures(_mapping(groups)).items():
        assert 0.0 <= value <= 1.0, name


@settings(max_examples=60, deadline=None)
@given(group, st.integers(min_value=2, max_value=5))
def test_identical_groups_score_one(values, n_groups):
    # Identical groups: GC 0 (eq. 1) and no discard gap (eq. 7), so every SQFR is 1,
    # as in Table 9, "All have equal QSs".
    assert all_measures(_mapping([values] * n_groups)) == dict.fromkeys(MEASURES, 1.0)


@settings(max_examples=60, deadline=None)
@given(group_sets)
def test_cubed_rates_are_the_cube_of_the_rates(groups):
    measures = all_measures(_mapping(groups))
    assert measures["Mean-GC-CSQFR"] == pytest.approx(measures["Mean-GC-SQFR"] ** 3)
    assert measures["LWM-GC-CSQFR"] == pytest.approx(measures["LWM-GC-SQFR"] ** 3)


@settings(max_examples=60, deadline=None)
@given(group_sets)
def test_duplicating_every_sample_changes_nothing(groups):
    doubled = [values * 2 for values in groups]
    assert all_measures(_mapping(doubled)) == pytest.approx(all_measures(_mapping(groups)))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=1000).map(float), min_size=2, max_size=8))
def test_gini_with_correction_reaches_one_only_when_one_group_holds_everything(values):
    value = gini(values)
    assert 0.0 <= value <= 1.0
    positive = np.count_nonzero(values)
    if positive >= 2:
        assert value < 1.0
