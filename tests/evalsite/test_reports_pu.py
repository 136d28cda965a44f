"""The privacy-utility (PU) column and summary of the per-video report (hand-computed)."""

import math

import pandas as pd
import pytest

from evalsite.reports import _with_pu_score, privacy_utility_summary


def _report(masked, clear, ssim):
    return pd.DataFrame(
        {"human_action_accuracy_masked": masked, "human_action_accuracy_clear": clear, "face_ssim": ssim}
    )


def test_pu_per_video_is_accuracy_ratio_times_one_minus_ssim():
    report = _with_pu_score(_report([0.5, 0.9, 0.6], [1.0, 0.9, 0.8], [0.2, 0.75, 1.0]))
    # 0.5/1.0*0.8 = 0.4; 0.9/0.9*0.25 = 0.25; unmasked frames (SSIM 1) give no privacy: 0.
    assert report["pu_score"].tolist() == pytest.approx([0.4, 0.25, 0.0])


def test_pu_is_nan_without_ratings_or_without_clear_utility():
    report = _with_pu_score(_report([None, 0.8], [1.0, 0.0], [0.5, 0.5]))
    assert math.isnan(report["pu_score"][0]) and math.isnan(report["pu_score"][1])


def test_report_without_human_columns_gets_no_pu_column():
    report = _with_pu_score(pd.DataFrame({"face_ssim": [0.3]}))
    assert "pu_score" not in report.columns
    assert privacy_utility_summary(report) is None


def test_summary_uses_means_over_videos_with_every_input():
    summary = privacy_utility_summary(_report([0.4, 0.8, None], [0.8, 0.8, 1.0], [0.1, 0.3, 0.9]))
    # means over the first two videos: 0.6 / 0.8 * (1 - 0.2) = 0.6
    assert summary["videos"] == 2
    assert summary["pu_score"] == pytest.approx(0.6)
