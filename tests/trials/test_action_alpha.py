"""Krippendorff's alpha (nominal) of action labels beside Fleiss' kappa (issue 23), by hand."""

import math

import numpy as np
import pandas as pd
import pytest

from trials import scoring

from .test_scoring import rows


def _labels(video, labels):
    return rows(video, "clear", "action", [(label, True, True) for label in labels])


def test_alpha_matches_the_coincidence_matrix_by_hand_and_keeps_videos_with_other_rater_counts():
    # Videos (talk, talk), (eat, eat), (talk, eat): coincidences o_tt = 2, o_ee = 2, o_te = o_et = 1,
    # n_t = n_e = 3, n = 6: D_o = 2/6, D_e = 2 * 3 * 3 / (6 * 5) = 0.6, alpha = 1 - (1/3)/0.6 = 4/9.
    data = pd.DataFrame(
        _labels("a", ["talk"] * 2) + _labels("b", ["eat"] * 2) + _labels("c", ["talk", "eat"])
    )
    alpha = scoring.action_alpha(data, "clear")
    assert alpha["krippendorff_alpha"] == pytest.approx(4 / 9)
    assert (alpha["n_videos"], alpha["n_responses"]) == (3, 6)
    # Fleiss' kappa on the same table: 1/3 (tests/trials/test_scoring.py).
    assert scoring.action_agreement(data, "clear")["fleiss_kappa"] == pytest.approx(1 / 3)
    # A fourth video with three labels (talk x3): Fleiss drops it (other rater count), alpha keeps it:
    # o_tt = 2 + 6/2 = 5, o_ee = 2, o_te = o_et = 1, n_t = 6, n_e = 3, n = 9:
    # D_o = 2/9, D_e = 2 * 6 * 3 / (9 * 8) = 0.5, alpha = 1 - (2/9)/0.5 = 5/9.
    # A video with one response only is unpairable and left out.
    more = pd.concat(
        [data, pd.DataFrame(_labels("d", ["talk"] * 3) + _labels("e", ["eat"]))], ignore_index=True
    )
    alpha = scoring.action_alpha(more, "clear")
    assert alpha["krippendorff_alpha"] == pytest.approx(5 / 9)
    assert (alpha["n_videos"], alpha["n_responses"]) == (4, 9)
    assert scoring.action_agreement(more, "clear")["n_videos"] == 3


def test_the_bootstrap_interval_brackets_alpha_and_is_seeded():
    rng = np.random.default_rng(7)
    labels = ["talk", "eat", "cough"]
    records = []
    for index in range(30):  # 30 videos, 3-6 raters each, 80 % agree with the video's label
        truth = labels[index % 3]
        n = int(rng.integers(3, 7))
        records += _labels(
            f"v{index:02d}", [truth if rng.random() < 0.8 else labels[(index + 1) % 3] for _ in range(n)]
        )
    data = pd.DataFrame(records)
    first = scoring.action_alpha(data, "clear")
    assert first == scoring.action_alpha(data, "clear")  # same seed, same interval
    assert first["ci_low"] < first["krippendorff_alpha"] < first["ci_high"]
    assert 0.3 < first["krippendorff_alpha"] < 0.9 and first["n_videos"] == 30


def test_alpha_is_nan_with_one_label_or_one_video_and_in_the_summary():
    one_label = pd.DataFrame(_labels("a", ["talk"] * 2) + _labels("b", ["talk"] * 3))
    assert math.isnan(scoring.action_alpha(one_label, "clear")["krippendorff_alpha"])
    one_video = pd.DataFrame(_labels("a", ["talk", "eat"]))
    assert scoring.action_alpha(one_video, "clear")["n_videos"] == 1
    assert math.isnan(scoring.action_alpha(one_video, "clear")["ci_low"])
    data = pd.DataFrame(
        _labels("a", ["talk"] * 2) + _labels("b", ["eat"] * 2) + _labels("c", ["talk", "eat"])
    )
    summary = scoring.summary_scores(data)
    assert summary["action_alpha_clear"]["krippendorff_alpha"] == pytest.approx(4 / 9)
    assert summary["action_alpha_masked"]["n_videos"] == 0
