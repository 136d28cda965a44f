"""Issue 22 in the product: the declared attacker, linkability with intervals and by group,
identity over time, in the attack summary, per-video report, leaderboard and attack page.

The tiny real campaign (3 source videos, its identities) with a completed attack run whose
stored figures are made here from hand-made scores and predictions by the same functions a
run's summary step calls (``attack_privacy``), so every figure is known; no model runs.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from automated.attack.verification import curve_record, evaluate_verification
from automated.django_app import attack_privacy
from automated.django_app.attack_models import AttackResult, AttackRun, AttackVideoResult
from automated.django_app.attack_service import attack_summary
from evalsite import reports
from evalsite.portal import leaderboard

pytestmark = pytest.mark.django_db


def _verification(codes, groups):
    """Probes of the first half of ``codes`` match their gallery (0.9 vs 0.1-0.4), the rest do not."""
    rng = np.random.default_rng(1)
    labels = np.repeat(codes, 4)
    gallery = np.array(codes)
    scores = rng.uniform(0.0, 0.5, (len(labels), len(codes)))
    same = labels[:, None] == gallery[None, :]
    strong = np.isin(labels, codes[: len(codes) // 2])[:, None] & same
    scores[strong] = 0.9
    result = evaluate_verification(scores, labels, gallery)
    return result, curve_record(result, n_resamples=50)


@pytest.fixture
def attacked(campaign, submission):
    organizer = User.objects.create_user("ap-organizer", password="pw", is_staff=True)
    campaign.organizers.add(organizer)
    identities = list(campaign.identities.order_by("code"))
    codes = [i.code for i in identities]
    for index, identity in enumerate(identities):
        identity.attributes = {**(identity.attributes or {}), "gender": "f" if index % 2 else "m"}
        identity.save()
    videos = list(campaign.source_videos.order_by("name"))
    result, record = _verification(codes, None)
    # Predictions over 4 identities: lbph right on d*, eigenfaces right on t*.
    rows = []
    for identity in ["d1", "t1", "t2", "t3"]:
        for _ in range(5):
            rows += [
                ("lbph", "parrot", identity, identity == "d1"),
                ("eigenfaces", "parrot", identity, identity != "d1"),
                ("lbph", "naive", identity, False),
            ]
    predictions = pd.DataFrame(rows, columns=["recognizer", "attacker", "identity", "correct"])
    declared = attack_privacy.declared_figures(predictions, {"seed": 0})
    temporal = {
        "per_video": {
            v.name: {
                "consistency_masked": 0.98,
                "consistency_clear": 0.99,
                "flicker_masked": 2.0 + k,
                "flicker_clear": 1.0,
                "flicker_relative": 2.0 + k,
                "n_frames": 10,
            }
            for k, v in enumerate(videos)
        },
        "linking": {
            "eer": 0.1,
            "d_sys": 0.6,
            "n_mated": 40,
            "n_non_mated": 200,
            "p_eer": 0.01,
            "p_d_sys": 0.01,
            "chance_d_sys_median": 0.2,
            "chance_eer_median": 0.5,
            "above_chance": True,
        },
    }
    run = AttackRun.objects.create(
        submission=submission,
        config={"attackers": ["clear", "naive", "parrot"], "recognizers": ["lbph", "eigenfaces"]},
        status="completed",
        finished_at=timezone.now(),
        verification={"dlib_resnet": record},
        privacy={
            "declared": declared,
            "linkability_by_group": attack_privacy.group_figures(
                result, {i.code: i.attributes for i in identities}, ["gender"]
            ),
            "temporal": temporal,
        },
    )
    for recognizer, attacker, value in (
        ("lbph", "clear", 1.0),
        ("lbph", "naive", 0.0),
        ("lbph", "parrot", 0.25),
        ("eigenfaces", "parrot", 0.75),
    ):
        AttackResult.objects.create(
            run=run,
            recognizer=recognizer,
            attacker=attacker,
            subset_size=4,
            n_identities=4,
            n_train=20,
            n_test=20,
            accuracy=value,
            chance_level=0.25,
            chance_normalised=(value - 0.25) / 0.75,
        )
    for video in videos:
        AttackVideoResult.objects.create(run=run, source_video=video, n_test=10, accuracy=0.75)
    return run, organizer, codes, declared, record


def test_declared_figures_are_chosen_on_development_identities(attacked):
    from automated.attack.declared import split_development

    _, _, _, declared, _ = attacked
    split = split_development(["d1", "t1", "t2", "t3"], seed=0)
    # 4 identities: a 30 % development part rounds to 2 (at least 2), tested the other 2.
    assert (declared["n_development_identities"], declared["n_tested_identities"]) == (2, 2)
    assert sorted(declared["per_identity"]) == list(split.tested)
    # lbph is right on d1 only, eigenfaces on every other identity: on development
    # identities lbph scores (d1 among them) / 2 and eigenfaces the rest (ties: first row, lbph).
    expected = "lbph" if "d1" in split.development else "eigenfaces"
    assert declared["declared_recognizer"] == expected
    truth = {i: float((i == "d1") == (expected == "lbph")) for i in split.tested}
    assert declared["per_identity"] == truth
    assert declared["accuracy"] == pytest.approx(np.mean(list(truth.values())))
    assert declared["n_pairs"] == 3  # lbph x parrot, eigenfaces x parrot, lbph x naive


def test_attack_summary_has_the_declared_headline_linkability_and_time(attacked, submission):
    run, _, codes, declared, record = attacked
    summary = attack_summary(run)
    assert summary["declared_accuracy"] == declared["accuracy"]
    assert summary["declared_ci_low"] <= summary["declared_accuracy"] <= summary["declared_ci_high"]
    assert summary["worst_case_n_pairs"] == 3
    assert summary["verification"]["dlib_resnet"]["linkability_ci_low"] == record["linkability_ci_low"]
    assert summary["temporal_consistency"] == pytest.approx(0.98)
    assert summary["flicker"] == pytest.approx(3.0)  # 2, 3, 4 over the three videos
    assert (summary["linking_linkability"], summary["linking_above_chance"]) == (0.6, True)
    groups = summary["linkability_by_group"]["gender"]
    assert set(groups) == {"f", "m"} and sum(g["n_identities"] for g in groups.values()) == len(codes)
    team = reports.submission_summary(submission, team=True)["attack"]
    assert "declared_per_identity" not in team and "declared_accuracy" in team
    text = json.dumps(team["linkability_by_group"])
    assert not any(f'"{code}"' in text for code in codes)
    report = reports.per_video_report(submission)
    assert report["attack_temporal_consistency"].tolist() == [0.98] * 3
    assert report["attack_flicker"].tolist() == [2.0, 3.0, 4.0]


def test_leaderboard_shows_declared_linkability_and_linking(attacked, campaign):
    _, _, _, declared, record = attacked
    row = leaderboard.leaderboard_frame(campaign).iloc[0]
    normalise = lambda a: (a - 0.25) / 0.75  # noqa: E731
    assert row["declared_reidentification"] == pytest.approx(normalise(declared["accuracy"]))
    assert row["declared_reidentification_ci_high"] == pytest.approx(normalise(declared["ci_high"]))
    assert row["declared_reidentification_n"] == 2
    assert row["linkability"] == pytest.approx(record["linkability"])
    assert row["linkability_ci_low"] == pytest.approx(record["linkability_ci_low"])
    assert row["linkability_n"] == record["n_probe_identities"]
    assert row["linking_linkability"] == 0.6 and row["linking_linkability_n"] == 40
    assert row["declared_attack"] == f"{declared['declared_recognizer']} x parrot"
    assert row["reidentification_pairs"] == 3
    cells = leaderboard.table_context(leaderboard.leaderboard_frame(campaign))["rows"][0]["cells"]
    notes = {c["key"]: c["note"] for c in cells}
    assert (
        notes["reidentification"] == "max of 3 pairs"
        and notes["declared_reidentification"] == row["declared_attack"]
    )


def test_attack_page_shows_declared_linkability_time_and_the_score_plot(attacked, client):
    run, organizer, _, declared, _ = attacked
    client.force_login(organizer)
    text = client.get(f"/organizer/automated/attack-run/{run.pk}/").content.decode()
    assert 'id="declared"' in text and "the maximum of 3 pairs tried" in text
    assert 'id="linkability"' in text and 'id="linkability-by-group"' in text and "(small group)" in text
    assert 'id="linking"' in text and 'id="temporal"' in text
    png = client.get(f"/organizer/automated/attack-run/{run.pk}/linkability/dlib_resnet.png")
    assert png.status_code == 200 and png.content.startswith(b"\x89PNG")
    assert client.get(f"/organizer/automated/attack-run/{run.pk}/linkability/nope.png").status_code == 404


def test_comparing_on_the_declared_figure_lists_no_pairs(attacked, campaign, client):
    """The declared figure has no per-video values (its bootstrap is over identities): the
    comparison table is empty, not a KeyError (before: 500 on ``?compare=`` of it)."""
    _, organizer, _, _, _ = attacked
    assert leaderboard.comparison_frame(campaign, "declared_reidentification").empty
    client.force_login(organizer)
    page = client.get(f"/organizer/{campaign.pk}/leaderboard/?compare=declared_reidentification")
    assert page.status_code == 200
