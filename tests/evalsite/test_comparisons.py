"""Intervals and paired comparisons (evalsite/comparisons.py) on data whose answer is known."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalsite import comparisons
from evalsite.comparisons import (
    pooled_rate_interval,
    t_interval,
    video_bootstrap,
    video_rater_bootstrap,
)

# --- t interval --------------------------------------------------------------------------


def test_t_interval_of_a_worked_case():
    # values 1..4: mean 2.5, sd sqrt(5/3) = 1.2910, sem 0.6455, t(0.975, 3) = 3.1824 -> +-2.0543
    estimate = t_interval([1.0, 2.0, 3.0, 4.0])
    assert estimate.value == 2.5 and estimate.n == 4
    assert estimate.ci_low == pytest.approx(2.5 - 2.05426, abs=1e-5)
    assert estimate.ci_high == pytest.approx(2.5 + 2.05426, abs=1e-5)


def test_t_interval_matches_scipy_for_known_sd_and_n():
    values = np.random.default_rng(3).normal(0.4, 0.1, size=25)
    low, high = stats.t.interval(0.95, 24, loc=values.mean(), scale=stats.sem(values))
    estimate = t_interval(values)
    assert (estimate.ci_low, estimate.ci_high) == pytest.approx((low, high), rel=1e-12)
    # 90 %: a narrower interval, again scipy's
    low90, high90 = stats.t.interval(0.90, 24, loc=values.mean(), scale=stats.sem(values))
    assert (t_interval(values, confidence=0.9).ci_low, t_interval(values, confidence=0.9).ci_high) == (
        pytest.approx((low90, high90), rel=1e-12)
    )


def test_t_interval_leaves_nan_out_and_is_undefined_for_one_video():
    assert t_interval([0.2, math.nan, 0.4]).n == 2
    one = t_interval([0.7, math.nan])
    assert one.value == 0.7 and one.n == 1 and math.isnan(one.ci_low) and math.isnan(one.ci_high)
    none = t_interval([])
    assert none.n == 0 and math.isnan(none.value)
    same = t_interval([0.5, 0.5, 0.5])
    assert (same.ci_low, same.ci_high) == (0.5, 0.5)


def test_bad_confidence_is_refused():
    with pytest.raises(ValueError, match=r"confidence must be in \(0, 1\), got 95"):
        t_interval([1, 2], confidence=95)


# --- bootstrap over videos ----------------------------------------------------------------


def test_a_clearly_better_submission_has_a_difference_interval_excluding_zero():
    rng = np.random.default_rng(0)
    a = rng.normal(0.8, 0.05, size=30)
    per_video = pd.DataFrame({"A": a, "B": a - 0.3 + rng.normal(0, 0.02, size=30)})
    comparison = video_bootstrap(per_video).compare("A", "B")
    assert comparison.difference == pytest.approx(float((per_video["A"] - per_video["B"]).mean()))
    assert 0 < comparison.ci_low < 0.3 < comparison.ci_high < 0.35
    assert comparison.p_value == 0.0 and comparison.share_a_greater == 1.0 and comparison.n_videos == 30
    reverse = video_bootstrap(per_video).compare("B", "A")
    assert reverse.difference == -comparison.difference and reverse.share_a_greater == 0.0


def test_identical_submissions_differ_by_exactly_zero():
    values = np.random.default_rng(1).uniform(0, 1, size=20)
    comparison = video_bootstrap(pd.DataFrame({"A": values, "B": values})).compare("A", "B")
    assert (comparison.difference, comparison.ci_low, comparison.ci_high) == (0.0, 0.0, 0.0)
    assert comparison.p_value == 1.0 and comparison.share_a_greater == 0.5


def test_submissions_from_the_same_distribution_have_an_interval_containing_zero():
    rng = np.random.default_rng(2)
    per_video = pd.DataFrame({"A": rng.normal(0.5, 0.1, 40), "B": rng.normal(0.5, 0.1, 40)})
    comparison = video_bootstrap(per_video).compare("A", "B")
    assert comparison.ci_low < 0 < comparison.ci_high and comparison.p_value > 0.05


def test_paired_comparison_uses_only_the_videos_both_have():
    per_video = pd.DataFrame({"A": [1.0, 1.0, 5.0], "B": [0.0, 0.0, math.nan]}, index=["v1", "v2", "v3"])
    comparison = video_bootstrap(per_video).compare("A", "B")
    assert comparison.n_videos == 2 and comparison.difference == 1.0
    assert (comparison.ci_low, comparison.ci_high) == (1.0, 1.0)
    assert video_bootstrap(per_video).estimate("A").value == pytest.approx(7 / 3)


def test_bootstrap_is_seeded_and_names_unknown_submissions():
    values = np.random.default_rng(4).uniform(0, 1, size=10)
    per_video = pd.DataFrame({"A": values, "B": values[::-1]})
    first = video_bootstrap(per_video, seed=7).estimate("A")
    assert first == video_bootstrap(per_video, seed=7).estimate("A")
    assert first != video_bootstrap(per_video, seed=8).estimate("A")
    with pytest.raises(KeyError, match="no submission 'C'"):
        video_bootstrap(per_video).compare("A", "C")
    with pytest.raises(ValueError, match="no videos"):
        video_bootstrap(per_video.iloc[:0])


def test_all_pairs_lists_each_pair_once():
    per_video = pd.DataFrame({"A": [1.0, 2.0], "B": [1.0, 2.0], "C": [0.0, 1.0]})
    pairs = [(c.a, c.b) for c in video_bootstrap(per_video, n_resamples=50).all_pairs()]
    assert pairs == [("A", "B"), ("A", "C"), ("B", "C")]
    table = comparisons.comparisons_frame(video_bootstrap(per_video, n_resamples=50).all_pairs())
    assert list(table["difference"]) == [0.0, 1.0, 1.0]


# --- two-way bootstrap of human responses --------------------------------------------------


def simulated_responses(rng, *, n_videos=24, n_raters=30, per_cell=6, masked=None):
    """Responses with known accuracies: p(correct) = base[condition] + video effect + rater effect.

    Effects are uniform in [-0.1, 0.1]; each (video, condition) is rated by ``per_cell``
    raters drawn at random, so rater effects do not cancel within a video. The expected
    masking success of a submission s is base[clear] - base[s] exactly.
    """
    base = {"clear": 0.8, **(masked or {"A": 0.3, "B": 0.5})}
    video_effect = rng.uniform(-0.1, 0.1, n_videos)
    rater_effect = rng.uniform(-0.1, 0.1, n_raters)
    rows = []
    for video in range(n_videos):
        for condition, probability in base.items():
            for rater in rng.choice(n_raters, per_cell, replace=False):
                p = probability + video_effect[video] + rater_effect[rater]
                rows.append(
                    {
                        "submission": None if condition == "clear" else condition,
                        "rater": f"r{rater}",
                        "video": f"v{video:02d}",
                        "condition": "clear" if condition == "clear" else "masked",
                        "correct": bool(rng.random() < p),
                    }
                )
    return pd.DataFrame(rows)


def test_human_point_estimate_is_the_mean_of_per_video_clear_minus_masked():
    responses = pd.DataFrame(
        [
            # v1: clear 2/2 correct, A 1/2 -> 0.5; v2: clear 1/2, A 0/1 -> 0.5; mean 0.5
            (None, "r1", "v1", "clear", True),
            (None, "r2", "v1", "clear", True),
            ("A", "r1", "v1", "masked", True),
            ("A", "r2", "v1", "masked", False),
            (None, "r1", "v2", "clear", True),
            (None, "r2", "v2", "clear", False),
            ("A", "r3", "v2", "masked", False),
        ],
        columns=comparisons.HUMAN_RESPONSE_COLUMNS,
    )
    boot = video_rater_bootstrap(responses, n_resamples=200)
    assert boot.point[:, 0].tolist() == [0.5, 0.5]
    estimate = boot.estimate("A")
    assert estimate.value == 0.5 and estimate.n == 2 and estimate.method == "bootstrap: videos x raters"


def test_human_bootstrap_covers_the_true_difference_and_excludes_zero():
    responses = simulated_responses(np.random.default_rng(11), masked={"A": 0.2, "B": 0.6})
    comparison = video_rater_bootstrap(responses).compare("A", "B")
    # true masking success: A 0.8 - 0.2 = 0.6, B 0.8 - 0.6 = 0.2; difference 0.4
    assert comparison.ci_low < 0.4 < comparison.ci_high
    assert comparison.ci_low > 0 and comparison.p_value < 0.05 and comparison.share_a_greater > 0.975


def test_human_bootstrap_interval_reaches_its_coverage_over_repeated_studies():
    # 40 simulated studies: the 95 % interval of A - B must cover 0.2 in (nearly) all of them.
    covered, intervals_of_a = 0, 0
    for study in range(40):
        responses = simulated_responses(np.random.default_rng(100 + study), n_videos=16, n_raters=20)
        boot = video_rater_bootstrap(responses, n_resamples=500, seed=study)
        comparison = boot.compare("A", "B")
        covered += comparison.ci_low <= 0.2 <= comparison.ci_high
        estimate = boot.estimate("A")
        intervals_of_a += estimate.ci_low <= 0.5 <= estimate.ci_high
    # Nominal 38 of 40 (binomial(40, 0.95) < 35 has p < 0.05). The two-way bootstrap is
    # conservative (module docstring): in 100 such studies it covered 100, the video-only
    # bootstrap 92, at 1.7 times the width.
    assert covered >= 35 and intervals_of_a >= 35


def test_identical_human_responses_give_a_difference_of_zero():
    responses = simulated_responses(np.random.default_rng(5), masked={"A": 0.4})
    copy = responses[responses["condition"] == "masked"].assign(submission="B")
    comparison = video_rater_bootstrap(pd.concat([responses, copy])).compare("A", "B")
    assert (comparison.difference, comparison.ci_low, comparison.ci_high, comparison.p_value) == (0, 0, 0, 1)


def test_resampling_raters_widens_the_interval_when_raters_differ():
    # Rater effects of +-0.3 and few raters: ignoring them (one fixed rater set) understates
    # the uncertainty. With a single rater resampled there is nothing to resample: compare
    # the video x rater interval with the video-only bootstrap of the same per-video scores.
    rng = np.random.default_rng(9)
    rows = []
    rater_effect = {"r0": -0.3, "r1": 0.3, "r2": -0.25, "r3": 0.25}
    for video in range(30):
        for condition, base in (("clear", 0.6), ("A", 0.4)):
            for rater in rng.choice(list(rater_effect), 2, replace=False):
                rows.append(
                    (
                        None if condition == "clear" else "A",
                        rater,
                        f"v{video}",
                        "clear" if condition == "clear" else "masked",
                        bool(rng.random() < base + rater_effect[rater]),
                    )
                )
    responses = pd.DataFrame(rows, columns=comparisons.HUMAN_RESPONSE_COLUMNS)
    both = video_rater_bootstrap(responses).estimate("A")
    videos_only = video_bootstrap(pd.DataFrame({"A": video_rater_bootstrap(responses).point[:, 0]})).estimate(
        "A"
    )
    assert both.value == pytest.approx(videos_only.value)
    assert both.ci_high - both.ci_low > 1.2 * (videos_only.ci_high - videos_only.ci_low)


def test_human_bootstrap_rejects_malformed_responses():
    good = simulated_responses(np.random.default_rng(0), n_videos=2, n_raters=6, per_cell=2)
    with pytest.raises(ValueError, match=r"responses lack columns \['correct'\]"):
        video_rater_bootstrap(good.drop(columns="correct"))
    with pytest.raises(ValueError, match="condition must be 'clear' or 'masked', got \\['blurred'\\]"):
        video_rater_bootstrap(good.assign(condition="blurred"))
    with pytest.raises(ValueError, match="a masked response has no submission"):
        video_rater_bootstrap(good.assign(submission=None))
    with pytest.raises(ValueError, match="no responses"):
        video_rater_bootstrap(good.iloc[:0])


# --- pooled rates -------------------------------------------------------------------------


def test_pooled_rate_is_the_frame_share_and_its_interval_spans_the_video_rates():
    estimate = pooled_rate_interval([10, 0, 5], [10, 10, 10], n_resamples=4000)
    assert estimate.value == 0.5 and estimate.n == 3
    assert 0.0 <= estimate.ci_low < 0.5 < estimate.ci_high <= 1.0
    assert pooled_rate_interval([3, 3], [6, 6]).ci_low == 0.5  # no spread between videos
    assert pooled_rate_interval([0], [0]).n == 0
    with pytest.raises(ValueError, match="0 <= successes <= trials"):
        pooled_rate_interval([5], [3])


def test_one_video_gives_no_interval_and_no_p_value_instead_of_false_certainty():
    """Resampling a single video returns it every time: the interval had zero width and
    p = 0, so one video read as a 'clear' difference (reviewer's case)."""
    import math

    import pandas as pd

    from evalsite.comparisons import pooled_rate_interval, video_bootstrap

    one = video_bootstrap(pd.DataFrame({"A": [0.2], "B": [0.3]}, index=["v1"]))
    comparison = one.compare("A", "B")
    assert comparison.difference == pytest.approx(-0.1) and comparison.n_videos == 1
    assert all(math.isnan(x) for x in (comparison.ci_low, comparison.ci_high, comparison.p_value))
    estimate = one.estimate("A")
    assert (
        estimate.value == pytest.approx(0.2) and math.isnan(estimate.ci_low) and math.isnan(estimate.ci_high)
    )
    rate = pooled_rate_interval([3], [10])
    assert rate.value == pytest.approx(0.3) and rate.n == 1 and math.isnan(rate.ci_low)
    two = video_bootstrap(pd.DataFrame({"A": [0.2, 0.4], "B": [0.3, 0.6]}, index=["v1", "v2"]))
    assert not math.isnan(two.compare("A", "B").ci_low)  # two videos: defined again


# --- input types ---------------------------------------------------------------------------


def test_a_text_correct_column_is_refused_instead_of_counting_false_as_correct():
    good = simulated_responses(np.random.default_rng(0), n_videos=2, n_raters=6, per_cell=2)
    # "False".astype(bool) is True: every answer counted as correct, masking success 0.
    as_text = good.assign(correct=good["correct"].map({True: "True", False: "False"}))
    with pytest.raises(
        ValueError,
        match=r"responses\['correct'\] must be boolean or 0/1, got str values such as \['True', 'False'\]",
    ):
        video_rater_bootstrap(as_text)
    with pytest.raises(
        ValueError, match=r"responses\['correct'\] must be boolean or 0/1, got values such as \[2.0\]"
    ):
        video_rater_bootstrap(good.assign(correct=np.where(good["correct"], 2, 0)))
    with pytest.raises(
        ValueError, match=r"responses\['correct'\] must be boolean or 0/1, got values such as \[nan\]"
    ):
        video_rater_bootstrap(good.assign(correct=np.where(good["correct"], 1.0, np.nan)))
    with pytest.raises(ValueError, match=r"got NoneType values such as \[None\]"):
        video_rater_bootstrap(good.assign(correct=[None] + list(good["correct"][1:])))


def test_boolean_01_and_object_bool_correct_columns_give_the_same_scores():
    good = simulated_responses(np.random.default_rng(0), n_videos=4, n_raters=6, per_cell=3)
    expected = video_rater_bootstrap(good, n_resamples=50).point
    for correct in (
        good["correct"].astype(int),
        good["correct"].astype(float),
        good["correct"].astype(object),
    ):
        np.testing.assert_array_equal(
            video_rater_bootstrap(good.assign(correct=correct), n_resamples=50).point, expected
        )


def test_text_scores_and_counts_are_refused_by_every_public_function():
    with pytest.raises(
        ValueError, match=r"values must be numeric, got dtype <U3 values such as \['0.5', '0.7'\]"
    ):
        t_interval(["0.5", "0.7"])
    with pytest.raises(ValueError, match=r"values must be numeric, got str values such as \['0.7'\]"):
        t_interval(pd.Series([0.5, "0.7"], dtype=object))
    with pytest.raises(ValueError, match=r"successes must be numeric, got dtype <U2 values such as \['10'\]"):
        pooled_rate_interval(["10"], [10])
    with pytest.raises(ValueError, match=r"trials must be numeric, got dtype <U2 values such as \['10'\]"):
        pooled_rate_interval([10], ["10"])
    text = pd.DataFrame({"A": ["0.2", "0.4"], "B": [0.1, 0.3]}, index=["v1", "v2"])
    with pytest.raises(
        ValueError, match=r"per_video must be numeric, got str values such as \['0.2', '0.4'\]"
    ):
        video_bootstrap(text)
    # None and NaN in a numeric object column stay "no score"
    assert t_interval(pd.Series([0.5, None, 0.7], dtype=object)).value == pytest.approx(0.6)
    assert t_interval(pd.array([0.5, pd.NA, 0.7], dtype="Float64")).n == 2
