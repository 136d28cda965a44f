"""Measures of seeds/003_f24e77013896bd33.txt: paper tables, hand-computed cases, edge cases."""

import math

import numpy as np
import pytest

from fairness.groups import GroupScoresError
from fairness.measures import (
    UndefinedMeasureError,
    all_measures,
    discard_rates,
    discard_thresholds,
    gini,
    low_weighted_mean,
    lwm_gc_csqfr,
    lwm_gc_sqfr,
    mdg_sqfr,
    mean_discard_gap,
    mean_gc_csqfr,
    mean_gc_sqfr,
    median_gc_sqfr,
    measures_of_checked,
)


def _as_groups(values):
    """One single-sample group per value: the group mean/median is that value."""
    return {label: [value] for label, value in zip("ABCDE", values)}


# Table 3 (Tables 1 and 2 give the group means and medians).
@pytest.mark.parametrize(
    ("means", "medians", "mean_sqfr", "median_sqfr"),
    [
        ((81.3, 85.3, 86.1), (82, 85.5, 85), 0.98, 0.99),  # Q1, slightly biased
        ((76.6, 89.4, 90.2), (77, 90, 90), 0.95, 0.95),  # Q2, strongly biased
    ],
)
def test_table_3_mean_and_median_gc_sqfr(means, medians, mean_sqfr, median_sqfr):
    assert round(mean_gc_sqfr(_as_groups(means)), 2) == mean_sqfr
    assert round(median_gc_sqfr(_as_groups(medians)), 2) == median_sqfr


@pytest.mark.parametrize(
    ("means", "sqfr", "csqfr"),
    [
        ((35, 95, 89), 0.73, 0.38),  # one group exhibits strong bias
        ((67, 82, 89), 0.91, 0.75),  # one group exhibits slight bias (the text says 0.74)
        ((30, 50, 95), 0.63, 0.25),  # all groups receive different QS
        ((84, 89, 87), 0.98, 0.94),  # all groups receive similar QS
    ],
)
def test_table_4_mean_gc_sqfr_and_csqfr(means, sqfr, csqfr):
    assert round(mean_gc_sqfr(_as_groups(means)), 2) == sqfr
    assert round(mean_gc_csqfr(_as_groups(means)), 2) == csqfr


@pytest.mark.parametrize(
    ("means", "sqfr", "csqfr"),
    [
        ((31.4, 84.4, 84.9, 85.2, 86.8), 0.85, 0.61),  # one has strong bias
        ((31.1, 26.7, 85, 85.1, 87.1), 0.72, 0.38),  # two have strong bias
        ((79.1, 85.6, 85, 85.1, 86.9), 0.98, 0.94),  # one has slight bias
        ((76, 77.5, 85.6, 86.9, 85.8), 0.96, 0.89),  # two have slight bias
        ((85.7, 87.5, 85.6, 86.6, 86.5), 0.99, 0.98),  # all have similar QSs
        ((87.5, 87.5, 87.5, 87.5, 87.5), 1.0, 1.0),  # all have equal QSs
        ((87.5, 72.2, 25, 14.3, 47.3), 0.61, 0.22),  # all have different QSs
    ],
)
def test_table_9_mean_based_columns(means, sqfr, csqfr):
    assert round(mean_gc_sqfr(_as_groups(means)), 2) == sqfr
    assert round(mean_gc_csqfr(_as_groups(means)), 2) == csqfr


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([1.0, 3.0], 0.5),  # 2/1 * (2 + 2) / (2 * 4 * 2)
        ([0.0, 5.0], 1.0),  # one group holds everything: the corrected maximum
        ([0.0, 0.0, 6.0], 1.0),  # 3/2 * (4 * 6) / (2 * 9 * 2)
        ([1.0, 2.0, 3.0], 1 / 3),  # 3/2 * 8 / (2 * 9 * 2)
        ([4.0, 4.0, 4.0, 4.0], 0.0),
    ],
)
def test_gini_hand_computed(values, expected):
    assert gini(values) == pytest.approx(expected)


def test_gini_correction_is_n_over_n_minus_1():
    # Uncorrected GC of [1, 3] is 4 / 16 = 0.25; eq. 1 multiplies by n/(n-1) = 2.
    assert gini([1.0, 3.0]) == pytest.approx(2 * 0.25)


def test_samples_form_and_mapping_form_agree():
    scores = [1, 2, 3, 2, 3, 3]
    groups = ["a", "a", "a", "b", "b", "b"]
    mapping = {"a": [1, 2, 3], "b": [2, 3, 3]}
    assert all_measures(scores, groups=groups) == pytest.approx(all_measures(mapping))


def test_mean_and_median_gc_sqfr_hand_computed():
    # means 2 and 8/3: GC = 2 * (2/3 * 2) / (2 * 4 * 7/3) = 1/7; medians 2 and 3: GC = 0.2
    scores = {"a": [1, 2, 3], "b": [2, 3, 3]}
    assert mean_gc_sqfr(scores) == pytest.approx(6 / 7)
    assert mean_gc_csqfr(scores) == pytest.approx((6 / 7) ** 3)
    assert median_gc_sqfr(scores) == pytest.approx(0.8)


def test_low_weighted_mean_hand_computed():
    # Q = {0, 2, 4, 4, 8}: w = 1 - q/8 -> 1, 0.75, 0.5, 0.5, 0
    # a: (0*1 + 4*0.5) / (1 + 0.5) = 4/3; b: (2*0.75 + 4*0.5 + 8*0) / 1.25 = 2.8
    lwm = low_weighted_mean({"a": [0, 4], "b": [2, 4, 8]})
    assert lwm == pytest.approx({"a": 4 / 3, "b": 2.8})
    # LWM-GC-SQFR = 1 - 2 * (2 * 1.4667) / (2 * 4 * 2.0667)
    gc = 2 * (2 * (2.8 - 4 / 3)) / (2 * 4 * ((4 / 3 + 2.8) / 2))
    assert lwm_gc_sqfr({"a": [0, 4], "b": [2, 4, 8]}) == pytest.approx(1 - gc)
    assert lwm_gc_csqfr({"a": [0, 4], "b": [2, 4, 8]}) == pytest.approx((1 - gc) ** 3)


def test_low_weighted_mean_weights_come_from_the_union_of_groups():
    # Alone, b = [2, 4] would weigh 2 fully and 4 not at all (LWM 2); with a's 0 and 8
    # in Q, w(2) = 0.75 and w(4) = 0.5, so LWM(b) = (1.5 + 2) / 1.25 = 2.8.
    assert low_weighted_mean({"a": [0, 8], "b": [2, 4]})["b"] == pytest.approx(2.8)


def test_low_weighted_mean_penalises_a_low_tail_the_mean_hides():
    # Same mean 5; a has a low tail, so its LWM is lower (the point of section 3.3).
    lwm = low_weighted_mean({"a": [1, 6, 6, 7], "b": [4, 5, 5, 6]})
    assert lwm["a"] < lwm["b"]
    assert mean_gc_sqfr({"a": [1, 6, 6, 7], "b": [4, 5, 5, 6]}) == 1.0
    assert lwm_gc_sqfr({"a": [1, 6, 6, 7], "b": [4, 5, 5, 6]}) < 1.0


def test_lwm_of_a_group_at_the_maximum_is_the_maximum():
    # b's scores all equal max(Q) = 10: weights all 0; decided: LWM(b) = 10.
    assert low_weighted_mean({"a": [0, 10], "b": [10, 10]}) == {"a": 0.0, "b": 10.0}
    assert lwm_gc_sqfr({"a": [0, 10], "b": [10, 10]}) == pytest.approx(0.0)  # GC of [0, 10] is 1


def test_lwm_with_a_single_score_value_is_that_score():
    # min(Q) = max(Q): the paper's own rule, the single score is the output.
    assert low_weighted_mean({"a": [7, 7], "b": [7]}) == {"a": 7.0, "b": 7.0}
    assert lwm_gc_sqfr({"a": [7, 7], "b": [7]}) == 1.0


def test_discard_thresholds_follow_eq_7():
    np.testing.assert_array_equal(discard_thresholds(3.0, 7.0), [4, 5, 6, 7])
    np.testing.assert_allclose(discard_thresholds(0.0, 0.3, step=0.1), [0.1, 0.2, 0.3])
    assert discard_thresholds(0.0, 0.5).size == 0


def test_mean_discard_gap_hand_computed():
    # thresholds 2, 3; discard (< t): t=2 a 1/3, b 0; t=3 a 2/3, b 1/3 -> gaps 1/3, 1/3
    scores = {"a": [1, 2, 3], "b": [2, 3, 3]}
    table = discard_rates(scores)
    np.testing.assert_allclose(table.to_numpy(), [[1 / 3, 0], [2 / 3, 1 / 3]])
    assert mean_discard_gap(scores) == pytest.approx(1 / 3)
    assert mdg_sqfr(scores) == pytest.approx(2 / 3)


def test_mean_discard_gap_uses_only_the_extreme_groups():
    # Adding a middle group changes nothing (section 4: groups in between are ignored).
    two = {"a": [1, 1, 5], "c": [5, 5, 5]}
    three = {**two, "b": [1, 5, 5]}
    assert mean_discard_gap(two) == mean_discard_gap(three) == pytest.approx(2 / 3)


def test_mean_discard_gap_counts_scores_equal_to_the_threshold_as_kept():
    # a score of exactly 0.3 at threshold 0.1 + 2 * 0.1 (= 0.30000000000000004) is kept
    scores = {"a": [0.1, 0.3], "b": [0.3, 0.3]}
    np.testing.assert_allclose(discard_rates(scores, step=0.1)["a"], [0.5, 0.5])


def test_mdg_with_non_integer_scores_needs_a_step_within_the_range():
    fractions = {"a": [0.0, 0.5], "b": [0.25, 0.75]}
    with pytest.raises(UndefinedMeasureError, match="smaller than step=1.0"):
        mdg_sqfr(fractions)
    assert math.isnan(mdg_sqfr(fractions, undefined="nan"))
    # step 0.25: thresholds 0.25, 0.5, 0.75; a discards 1/2, 1/2, 1; b 0, 1/2, 1/2
    assert mean_discard_gap(fractions, step=0.25) == pytest.approx((0.5 + 0 + 0.5) / 3)


def test_mdg_with_non_integer_scores_on_a_coarse_scale():
    # Scores 0.5 .. 2.7 with the paper's step 1: thresholds 1.5, 2.5 only.
    scores = {"a": [0.5, 1.5, 2.7], "b": [1.6, 2.6, 2.7]}
    np.testing.assert_allclose(discard_rates(scores).index, [1.5, 2.5])
    # t=1.5: a 1/3, b 0; t=2.5: a 2/3, b 1/3
    assert mean_discard_gap(scores) == pytest.approx(1 / 3)


def test_mdg_accepts_negative_scores_and_is_shift_invariant():
    scores = {"a": [1, 2, 3], "b": [2, 3, 3]}
    shifted = {label: [value - 10 for value in values] for label, values in scores.items()}
    assert mean_discard_gap(shifted) == pytest.approx(mean_discard_gap(scores))


def test_all_scores_zero_is_perfectly_fair():
    # e.g. 0 % re-identification in every group: every measure is 1.
    zeros = {"female": [0.0, 0.0, 0.0], "male": [0.0, 0.0]}
    assert gini([0.0, 0.0]) == 0.0
    assert all_measures(zeros) == dict.fromkeys(all_measures(zeros), 1.0)


def test_identical_groups_score_one_everywhere():
    same = {"a": [60, 70, 80, 90], "b": [90, 80, 70, 60]}
    assert all_measures(same) == dict.fromkeys(all_measures(same), 1.0)


@pytest.mark.parametrize(
    "measure", [mean_gc_sqfr, median_gc_sqfr, mean_gc_csqfr, lwm_gc_sqfr, lwm_gc_csqfr, mdg_sqfr]
)
def test_fewer_than_two_groups_is_undefined(measure):
    with pytest.raises(
        UndefinedMeasureError, match=r"at least two groups are needed to compare, got 1: \['a'\]"
    ):
        measure({"a": [1.0, 2.0]})
    assert math.isnan(measure({"a": [1.0, 2.0]}, undefined="nan"))
    with pytest.raises(UndefinedMeasureError, match="got 0"):
        measure([], groups=[])


def test_gini_of_one_value_is_undefined():
    with pytest.raises(UndefinedMeasureError, match="at least two groups, got 1"):
        gini([5.0])
    assert math.isnan(gini([5.0], undefined="nan"))


@pytest.mark.parametrize("measure", [mean_gc_sqfr, lwm_gc_sqfr, mdg_sqfr])
def test_an_empty_group_is_undefined(measure):
    with pytest.raises(UndefinedMeasureError, match=r"group\(s\) \['b'\] have no scores"):
        measure({"a": [1.0, 2.0], "b": []})
    assert math.isnan(measure({"a": [1.0, 2.0], "b": []}, undefined="nan"))


def test_low_weighted_mean_of_an_empty_group_is_undefined():
    with pytest.raises(UndefinedMeasureError, match="have no scores"):
        low_weighted_mean({"a": [1.0], "b": []})
    lwm = low_weighted_mean({"a": [1.0], "b": []}, undefined="nan")
    assert list(lwm) == ["a", "b"] and all(math.isnan(value) for value in lwm.values())


def test_negative_values_make_gini_measures_undefined():
    scores = {"a": [-1.0, 1.0], "b": [2.0, 3.0]}
    with pytest.raises(UndefinedMeasureError, match=r"non-negative values, got \[-0.5\]"):
        mean_gc_sqfr({"a": [-2.0, 1.0], "b": [2.0, 3.0]})  # group means -0.5 and 2.5
    with pytest.raises(UndefinedMeasureError, match=r"non-negative values, got \[-1.0\]"):
        gini([-1.0, 1.0])
    assert math.isnan(mean_gc_sqfr({"a": [-3.0, 1.0], "b": [2.0]}, undefined="nan"))
    assert 0.0 <= mdg_sqfr(scores) <= 1.0


def test_nan_policy():
    with_nan = {"a": [1.0, np.nan, 3.0], "b": [2.0, 3.0, 3.0]}
    with pytest.raises(GroupScoresError, match="group 'a' has 1 NaN score"):
        mean_gc_sqfr(with_nan)
    assert mean_gc_sqfr(with_nan, nan_policy="omit") == pytest.approx(6 / 7)
    assert math.isnan(mean_gc_sqfr(with_nan, nan_policy="propagate"))
    assert math.isnan(mdg_sqfr(with_nan, nan_policy="propagate"))
    # omitting every score of a group leaves it empty: undefined
    with pytest.raises(UndefinedMeasureError, match="have no scores"):
        mean_gc_sqfr({"a": [np.nan], "b": [1.0]}, nan_policy="omit")


@pytest.mark.parametrize(
    ("scores", "groups", "message"),
    [
        ([1, 2], ["a"], r"inconsistent lengths: \[2, 1\]"),
        ([1, 2], None, "groups= is required"),
        ([1, 2], ["a", None], "1 sample\\(s\\) have no group label"),
        ([[1, 2]], ["a"], "must be 1-D"),
        (["x", "y"], ["a", "b"], "must be numeric"),
        ([1, np.inf], ["a", "b"], "infinite"),
    ],
)
def test_bad_input_raises_a_specific_value_error(scores, groups, message):
    with pytest.raises(GroupScoresError, match=message):
        mean_gc_sqfr(scores, groups=groups)


def test_bad_options_raise():
    with pytest.raises(ValueError, match="step must be a positive"):
        mdg_sqfr({"a": [1, 2], "b": [3]}, step=0)
    with pytest.raises(ValueError, match="nan_policy must be one of"):
        mdg_sqfr({"a": [1, 2], "b": [3]}, nan_policy="drop")
    with pytest.raises(ValueError, match="undefined must be 'raise' or 'nan'"):
        mean_gc_sqfr({"a": [1]}, undefined=0.0)
    with pytest.raises(ValueError, match="limit"):
        mdg_sqfr({"a": [0, 1], "b": [1]}, step=1e-7)
    with pytest.raises(GroupScoresError, match="not both"):
        mean_gc_sqfr({"a": [1]}, groups=["a"])


def test_lwm_of_scores_piled_at_the_extremes_is_the_minimum():
    # Rates are often 0 or 1 per video: eq. 5 gives max(Q) weight 0, so a group with one
    # min(Q) value and otherwise max(Q) values has LWM min(Q) (seen on the demo's
    # detection failure rates: LWM-GC-SQFR 0 while Mean-GC-SQFR is 0.96).
    lwm = low_weighted_mean({"a": [0.0, 1.0, 1.0, 1.0], "b": [0.5, 1.0, 1.0]})
    assert lwm == {"a": 0.0, "b": 0.5}
    assert lwm_gc_sqfr({"a": [0.0, 1.0, 1.0, 1.0], "b": [0.5, 1.0, 1.0]}) == pytest.approx(0.0)


# Tables 6 and 8 from the group summaries of Tables 5 and 7 (Table 5 also gives each
# group's LWM, so the LWM rows of Table 6 follow from eq. 1 and 6).
@pytest.mark.parametrize(
    ("values", "sqfr", "digits"),
    [
        ((81.95, 82.5), 0.997, 3),  # Table 6, Mean-GC-SQFR (Table 5 means)
        ((81.5, 82.5), 0.994, 3),  # Table 6, Median-GC-SQFR (Table 5 medians)
        ((75.4, 81.4), 0.962, 3),  # Table 6, LWM-GC-SQFR (Table 5 LWM values)
        ((72.3, 83.7, 90.4), 0.93, 2),  # Table 8, Mean-GC-SQFR (Table 7 means)
        ((72, 83.5, 90), 0.93, 2),  # Table 8, Median-GC-SQFR (Table 7 medians)
    ],
)
def test_tables_6_and_8_from_the_published_group_summaries(values, sqfr, digits):
    assert round(1 - gini(values), digits) == sqfr


def test_table_6_lwm_gc_csqfr_from_the_published_lwm_values():
    # 0.8895 from the LWM values as printed (rounded to 0.1); the paper's unrounded ones give 0.889.
    assert (1 - gini([75.4, 81.4])) ** 3 == pytest.approx(0.889, abs=1e-3)


def test_undefined_measure_error_keeps_the_reason_apart_from_the_python_hint():
    with pytest.raises(UndefinedMeasureError) as caught:
        mean_gc_sqfr({"a": [1.0]})
    assert caught.value.reason == "at least two groups are needed to compare, got 1: ['a']"
    assert str(caught.value).endswith("pass undefined='nan' to get NaN instead")


@pytest.mark.parametrize(
    ("scores", "message"),
    [
        ([1 + 2j, 2.0], "must be real numbers, got dtype complex128"),
        (
            np.array(["2020-01-01", "2020-01-02"], dtype="datetime64[D]"),
            "must be real numbers, got dtype datetime64",
        ),
        ([1e200, 2.0], r"beyond \+-1e\+150: \[1e\+200\]"),
        ([-1e300, 2.0], r"beyond \+-1e\+150: \[-1e\+300\]"),
    ],
)
def test_scores_that_would_be_silently_mangled_or_overflow_are_refused(scores, message):
    with pytest.raises(GroupScoresError, match=message):
        mean_gc_sqfr(scores, groups=["a", "b"])


def test_large_but_representable_scores_work_without_overflow(recwarn):
    scores = {"a": [1e149, 3e149], "b": [2e149, 2e149]}
    assert mean_gc_sqfr(scores) == 1.0
    assert mdg_sqfr(scores, step=1e148) == pytest.approx(1 - 10 / 20)  # a: 1/2 below t <= 2e149
    assert not [warning for warning in recwarn if issubclass(warning.category, RuntimeWarning)]


def test_too_many_thresholds_message_is_readable():
    with pytest.raises(ValueError, match=r"step=1.0 gives 1e\+100 thresholds over \[0.0, 1e\+100\] \(limit"):
        mdg_sqfr({"a": [0.0, 1e100], "b": [5.0]})


def test_discard_rates_refuses_nan_propagation():
    with pytest.raises(ValueError, match="nan_policy='raise' or 'omit', not 'propagate'"):
        discard_rates({"a": [1.0, np.nan], "b": [2.0]}, nan_policy="propagate")


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ([[1.0, 2.0]], r"must be 1-D \(one value per group\), got shape \(1, 2\)"),
        ([1.0, np.nan], r"must be finite, got \[1.0, nan\]"),
    ],
)
def test_gini_refuses_malformed_values(values, message):
    with pytest.raises(ValueError, match=message):
        gini(values)


def test_low_weighted_mean_propagates_nan_to_every_group():
    lwm = low_weighted_mean({"a": [1.0, np.nan], "b": [3.0]}, nan_policy="propagate")
    assert list(lwm) == ["a", "b"] and all(math.isnan(value) for value in lwm.values())


def test_lwm_accumulates_the_weights_of_repeated_scores():
    # Q = {0, 4, 4, 8}: w(0) = 1, w(4) = 0.5 twice -> accumulated 1.0, w(8) = 0
    # a: (0 * 1 + 4 * 1.0) / (1 + 1.0) = 2
    assert low_weighted_mean({"a": [0, 4, 4], "b": [8]})["a"] == pytest.approx(2.0)


@pytest.mark.parametrize(
    "kind", ["fractions", "percent points", "integers", "with negatives", "one constant"]
)
def test_measures_of_checked_are_the_measures_to_the_last_bit(kind):
    """The bootstrap's unchecked path (``measures_of_checked``) gives the floats of
    ``compute_measure`` itself, on groups of odd and even sizes (medians of two middles),
    ties, negative group summaries (undefined: NaN) and a constant group."""
    rng = np.random.default_rng(
        ["fractions", "percent points", "integers", "with negatives", "one constant"].index(kind)
    )
    step = 1.0 if kind == "integers" else 0.01
    names = ["Mean-GC-SQFR", "Median-GC-SQFR", "Mean-GC-CSQFR", "LWM-GC-SQFR", "LWM-GC-CSQFR", "MDG-SQFR"]
    for _ in range(40):
        groups = {}
        for label in "ABCD"[: int(rng.integers(2, 5))]:
            n = int(rng.integers(1, 10))
            groups[label] = {
                "fractions": rng.random(n),
                "percent points": np.round(rng.random(n), 2),
                "integers": rng.integers(0, 8, n).astype(float),
                "with negatives": rng.normal(0.1, 1.0, n),
                "one constant": np.full(n, 0.5) if label == "A" else rng.random(n),
            }[kind]
        fast = measures_of_checked(groups, names, step=step, undefined="nan")
        measures = all_measures(groups, step=step, undefined="nan")
        for name in names:
            slow = measures[name]
            assert np.array_equal(fast[name], slow, equal_nan=True), (name, groups)
            assert type(fast[name]) is type(slow) is float
