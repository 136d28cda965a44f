"""The "fairness" summary section built from the per-video report and identity attributes."""

import json

import pytest

from evalsite import reports
from fairness.django_app.report import (
    DEFAULT_SCORE_COLUMNS,
    fairness_section,
    score_specs,
    video_fairness,
    video_score_groups,
)


def test_fairness_section_is_registered_by_the_app():
    assert "fairness" in {name for name, _ in reports.SUMMARY_PROVIDERS}


def test_score_specs_default_and_override(settings):
    assert [s.column for s in score_specs()] == [entry["column"] for entry in DEFAULT_SCORE_COLUMNS]
    settings.FAIRNESS_SCORE_COLUMNS = [{"column": "x", "favourable": "lower"}]
    assert [s.name for s in score_specs()] == ["1 - x"]


def test_video_fairness_by_gender_hand_computed(submission, test_score):
    entry = video_fairness(submission)["1 - test_reid_rate"]
    gender = entry["by_attribute"]["gender"]
    # v3 has no score: left out. female: 1 - 0.5 twice; male: 1 - 0 twice.
    assert (gender["n_samples"], gender["n_excluded"]) == (4, 1)
    assert gender["groups"]["female"]["mean"] == 0.5 and gender["groups"]["male"]["n"] == 2
    measures = gender["measures"]
    # GC of [0.5, 1.0] = 2 * (2 * 0.5) / (2 * 4 * 0.75) = 1/3
    assert measures["Mean-GC-SQFR"]["estimate"] == pytest.approx(2 / 3)
    assert measures["Mean-GC-CSQFR"]["estimate"] == pytest.approx(8 / 27)
    # every threshold 0.51 .. 1.00 discards all female and no male videos: MDG 1
    assert measures["MDG-SQFR"]["estimate"] == pytest.approx(0.0)
    # constant groups: every resample is the data itself
    assert measures["Mean-GC-SQFR"]["ci_low"] == pytest.approx(2 / 3)


def test_unknown_attribute_values_are_left_out(submission, test_score):
    age = video_fairness(submission)["1 - test_reid_rate"]["by_attribute"]["age_band"]
    # v5 (ID04) has age "unknown", v3 no score
    assert (age["n_samples"], age["n_excluded"]) == (3, 2)
    assert set(age["groups"]) == {"20-29", "30-39"}


def test_single_group_gives_reasons_not_a_crash(submission, test_score, campaign):
    campaign.identities.filter(code__in=["ID03", "ID04"]).update(attributes={"gender": "female"})
    measures = video_fairness(submission)["1 - test_reid_rate"]["by_attribute"]["gender"]["measures"]
    assert measures["Mean-GC-SQFR"]["estimate"] is None
    assert "at least two groups" in measures["Mean-GC-SQFR"]["error"]


def test_absent_columns_are_skipped(submission, settings):
    settings.FAIRNESS_SCORE_COLUMNS = [{"column": "not_there"}]
    settings.FAIRNESS_COMPUTE_QUALITY_ON_DEMAND = False
    assert video_fairness(submission) == {}


def test_summary_json_contains_the_fairness_section(submission, test_score):
    payload = json.loads(reports.report_as_json(submission))
    section = payload["summary"]["fairness"]
    assert section["attributes"] == ["gender", "age_band"]
    assert section["scores"]["1 - test_reid_rate"]["by_attribute"]["gender"]["measures"]["Mean-GC-SQFR"][
        "estimate"
    ] == pytest.approx(2 / 3)
    assert section["face_quality"] == {"gallery": {}, "clear_video": {}}
    assert "ID01" not in json.dumps(section)  # groups only, never identity codes


def test_fairness_section_keys(submission, test_score):
    section = fairness_section(submission)
    assert set(section) == {"source", "attributes", "ideal", "scores", "face_quality", "privacy"}
    assert section["privacy"] == {}  # no attack run and no face evaluation here (test_privacy_views.py)


def test_plot_groups_come_in_the_order_of_the_table(submission, test_score, campaign):
    # first appearance (v1, v2: "woman") differs from sorted order ("man" first)
    campaign.identities.filter(code__in=["ID01", "ID02"]).update(attributes={"gender": "woman"})
    campaign.identities.filter(code__in=["ID03", "ID04"]).update(attributes={"gender": "man"})
    table = video_fairness(submission)["1 - test_reid_rate"]["by_attribute"]["gender"]["groups"]
    spec, per_group = video_score_groups(submission, "1 - test_reid_rate", "gender")
    assert list(per_group) == list(table) == ["woman", "man"]
    assert per_group["woman"].tolist() == [0.5, 0.5] and per_group["man"].tolist() == [1.0, 1.0]
