"""Human scores on hand-computed cases: Wilson intervals, hits/false alarms, kappa."""

import math

import pandas as pd
import pytest

from trials import scoring


def wilson_by_hand(k, n, z=1.959963984540054):
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [
        (7, 10, 0.396778, 0.892209),
        (10, 10, 0.722467, 1.0),
        (0, 10, 0.0, 0.277533),
        (1, 2, 0.094531, 0.905469),
    ],
)
def test_wilson_interval_matches_hand_computation(k, n, low, high):
    got = scoring.wilson_interval(k, n)
    assert got == pytest.approx((low, high), abs=1e-6)
    assert got == pytest.approx(wilson_by_hand(k, n), abs=1e-9)


def test_wilson_interval_is_nan_without_trials():
    low, high = scoring.wilson_interval(0, 0)
    assert math.isnan(low) and math.isnan(high)


def rows(video, condition, task, outcomes):
    """outcomes: list of (choice, correct, target_present)."""
    return [
        {
            "rater": f"r{i}",
            "video": video,
            "condition": condition,
            "task": task,
            "choice": choice,
            "correct": correct,
            "target_present": present,
        }
        for i, (choice, correct, present) in enumerate(outcomes)
    ]


@pytest.fixture
def responses():
    data = (
        # v1 clear: 4 present (3 hits), 1 absent correctly rejected -> 4/5 correct
        rows("v1", "clear", "identity", [("2", True, True)] * 3 + [("4", False, True), ("0", True, False)])
        # v1 masked: 2 present (1 hit), 2 absent (1 false alarm) -> 2/4 correct
        + rows(
            "v1",
            "masked",
            "identity",
            [("1", True, True), ("0", False, True), ("3", False, False), ("0", True, False)],
        )
        + rows("v1", "clear", "action", [("talking", True, True)] * 4)
        + rows("v1", "masked", "action", [("talking", True, True)] * 3 + [("eating", False, True)])
        + rows("v2", "masked", "identity", [("5", True, True)])
    )
    return pd.DataFrame(data)


def test_identification_scores_count_hits_and_false_alarms(responses):
    scores = scoring.identification_scores(responses)
    clear, masked = scores.loc[("v1", "clear")], scores.loc[("v1", "masked")]
    assert (clear["n"], clear["n_correct"], clear["accuracy"]) == (5, 4, 0.8)
    assert (clear["hits"], clear["hit_rate"], clear["false_alarms"], clear["false_alarm_rate"]) == (
        3,
        0.75,
        0,
        0.0,
    )
    assert (masked["hits"], masked["hit_rate"]) == (1, 0.5)
    assert (masked["false_alarms"], masked["false_alarm_rate"]) == (1, 0.5)
    assert (clear["ci_low"], clear["ci_high"]) == pytest.approx(wilson_by_hand(4, 5))
    assert math.isnan(scores.loc[("v2", "masked"), "false_alarm_rate"])  # no target-absent trial


def test_per_video_scores_give_masking_success_and_action_loss(responses):
    # Both are clear accuracy - masked accuracy (seeds/002, sections 4.3 and 5).
    per_video = scoring.per_video_scores(responses)
    assert per_video.loc["v1", "human_id_accuracy_clear"] == 0.8
    assert per_video.loc["v1", "human_id_accuracy_masked"] == 0.5
    assert per_video.loc["v1", "human_masking_success"] == pytest.approx(0.3)
    assert per_video.loc["v1", "human_action_loss"] == pytest.approx(1.0 - 0.75)  # 4/4 clear, 3/4 masked
    assert "action_preservation" not in per_video
    assert math.isnan(per_video.loc["v2", "human_masking_success"])  # no clear responses for v2


def test_summary_averages_per_video_differences(responses):
    summary = scoring.summary_scores(responses)
    assert summary["masking_success"] == pytest.approx(0.3)
    assert summary["action_loss"] == pytest.approx(0.25)
    assert summary["n_videos_both_conditions"] == 1
    assert summary["id_accuracy_masked"] == pytest.approx(3 / 5)  # pooled over v1 and v2
    assert summary["id_ci_masked"] == pytest.approx(list(wilson_by_hand(3, 5)))


def test_fleiss_kappa_of_action_labels_matches_hand_computation():
    # Table (videos x labels) [[2, 0], [0, 2], [1, 1]]: P-bar = 2/3, P-e = 1/2 -> kappa = 1/3.
    data = pd.DataFrame(
        rows("a", "clear", "action", [("talk", True, True)] * 2)
        + rows("b", "clear", "action", [("eat", False, True)] * 2)
        + rows("c", "clear", "action", [("talk", True, True), ("eat", False, True)])
    )
    agreement = scoring.action_agreement(data, "clear")
    assert agreement == {"fleiss_kappa": pytest.approx(1 / 3), "n_videos": 3, "raters_per_video": 2}


def test_fleiss_kappa_uses_only_videos_with_the_common_rater_count():
    data = pd.DataFrame(
        rows("a", "clear", "action", [("talk", True, True)] * 2)
        + rows("b", "clear", "action", [("eat", False, True)] * 2)
        + rows("c", "clear", "action", [("talk", True, True)] * 3)
    )
    agreement = scoring.action_agreement(data, "clear")
    assert agreement["n_videos"] == 2 and agreement["fleiss_kappa"] == pytest.approx(1.0)


def test_bad_frames_are_rejected_by_name():
    with pytest.raises(ValueError, match=r"responses lack columns \['target_present'\]"):
        scoring.identification_scores(pd.DataFrame(columns=scoring.REQUIRED_COLUMNS[:-1]))
    bad = pd.DataFrame(rows("v", "blurred", "identity", [("1", True, True)]))
    with pytest.raises(ValueError, match="condition must be 'clear' or 'masked', got \\['blurred'\\]"):
        scoring.per_video_scores(bad)


def test_action_accuracy_beside_the_majority_rate_and_chance_corrected():
    # 8 masked action responses on 8 videos: 6 talking, 2 eating; all right but one eating.
    truths = ["talking"] * 6 + ["eating"] * 2
    choices = ["talking"] * 6 + ["eating", "talking"]
    frame = pd.DataFrame(
        {
            "rater": [f"r{i}" for i in range(8)],
            "video": [f"v{i}" for i in range(8)],
            "condition": "masked",
            "task": "action",
            "choice": choices,
            "correct": [c == t for c, t in zip(choices, truths)],
            "target_present": True,
            "truth": truths,
        }
    )
    summary = scoring.summary_scores(frame)
    assert summary["action_accuracy_masked"] == pytest.approx(7 / 8)
    assert summary["action_majority_rate_masked"] == pytest.approx(6 / 8)  # always "talking"
    # (7/8 - 6/8) / (1 - 6/8) = 0.5: halfway from always-"talking" to always right.
    assert summary["action_chance_corrected_masked"] == pytest.approx(0.5)
    # Always answering "talking" scores 6/8 = 75 %, but 0 chance-corrected.
    always = frame.assign(choice="talking", correct=[t == "talking" for t in truths])
    assert scoring.summary_scores(always)["action_chance_corrected_masked"] == pytest.approx(0.0)
    assert scoring.chance_corrected(0.5, 1.0) != scoring.chance_corrected(0.5, 1.0)  # NaN
    assert math.isnan(summary["action_majority_rate_clear"])  # no clear responses


def test_identity_chance_as_served_averages_one_over_the_options_shown():
    frame = pd.DataFrame(
        rows("v1", "masked", "identity", [("1", True, True), ("0", False, True), ("2", False, True)])
    ).assign(n_faces=[5, 5, 4], truth=["1", "3", "1"])
    # (1/6 + 1/6 + 1/5) / 3: two 5-face lineups and one of 4 faces (+ "not present" each).
    expected = (1 / 6 + 1 / 6 + 1 / 5) / 3
    assert scoring.summary_scores(frame)["id_chance_as_served_masked"] == pytest.approx(expected)
    assert scoring.per_video_scores(frame).loc["v1", "human_id_chance_as_served_masked"] == pytest.approx(
        expected
    )
