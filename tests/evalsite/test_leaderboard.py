"""The campaign leaderboard (evalsite/portal/leaderboard.py, leaderboard_views.py) on hand-made rows.

The campaign is the tiny real dataset (3 source videos); every stored score is chosen
here, so each figure, interval and comparison is worked out in the test.
"""

from __future__ import annotations

import csv
import io
import math

import numpy as np
import pandas as pd
import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape
from scipy import stats

from automated.django_app.attack_models import AttackResult, AttackRun, AttackVideoResult
from automated.django_app.attack_report import attack_section
from automated.django_app.face_models import AutomatedRun, VideoScore
from evalsite import reports
from evalsite.portal import leaderboard
from evalsite.models import MaskedVideo, Submission, Team
from evalsite.services import create_submission
from trials.models import Item, Rater, RatingSession, Response, Trial, TrialKind

# Per-video automated scores, in video-name order (bbaf2n, brbk7n, id2_vcd_swwp2s).
DETECTION_FAILURE = {"A": [0.9, 0.8, 1.0], "B": [0.6, 0.5, 0.7], "blur_face": [0.1, 0.2, 0.3]}
SSIM = {"A": [0.30, 0.35, 0.40], "B": [0.30, 0.35, 0.40], "blur_face": [0.8, 0.85, 0.9]}
BEHAVIOUR = {"A": [0.5, 0.6, 0.7], "B": [0.8, 0.9, 0.85], "blur_face": [0.95, 0.9, 1.0]}
LEAKED = {"A": [0, 0, 1], "B": [1, 2, 1], "blur_face": [2, 2, 2]}  # of 2 face tracks per video
# Human identity trials: clear all correct; masked correct answers per video out of 4 raters.
MASKED_ID_CORRECT = {"A": [0, 0, 1], "B": [2, 2, 3], "blur_face": [4, 4, 4]}
MASKED_ACTION_CORRECT = {"A": [4, 4, 4], "B": [2, 3, 2], "blur_face": [4, 4, 4]}


def _respond(rater, video, masked_video, task, correct):
    item, _ = Item.objects.get_or_create(
        campaign=rater.campaign,
        source_video=video,
        masked_video=masked_video,
        task=task,
        defaults={"target_count": 4},
    )
    session = rater.session
    trial = Trial.objects.create(
        session=session,
        position=session.trials.count(),
        kind=TrialKind.ITEM,
        task=task,
        item=item,
        source_video=video,
        correct_choice="1",
    )
    Response.objects.create(
        trial=trial, choice="1" if correct else "2", correct=correct, response_time_ms=1500
    )


def build_leaderboard_campaign(campaign, *, attack=True):
    """Teams A and B and the blur_face baseline, every score of :data:`DETECTION_FAILURE` etc."""
    organizer = User.objects.create_user("lb-organizer", password="pw-lb-organizer", is_staff=True)
    campaign.organizers.add(organizer)
    videos = list(campaign.source_videos.order_by("name"))
    submissions = {
        "A": create_submission(campaign, "Team Aurora", "method-a"),
        "B": create_submission(campaign, "Team Borealis", "method-b"),
        "blur_face": create_submission(campaign, "Baselines", "blur_face"),
    }
    Submission.objects.filter(pk=submissions["blur_face"].pk).update(baseline_method="blur_face")
    submissions["blur_face"].refresh_from_db()
    raters = []
    for index in range(5):
        rater = Rater.objects.create(campaign=campaign, participant_code=f"lb-rater-{index}")
        RatingSession.objects.create(rater=rater, campaign=campaign)
        raters.append(rater)
    raters[4].excluded = True  # an excluded rater's answers (all wrong) must not count
    raters[4].save()
    for video in videos:
        for rater in raters[:4]:
            _respond(rater, video, None, "identity", True)
            _respond(rater, video, None, "action", True)
        _respond(raters[4], video, None, "identity", False)
    for key, submission in submissions.items():
        run = AutomatedRun.objects.create(
            submission=submission,
            config={"stride": 5, "behaviour": True},
            status="completed",
            finished_at=timezone.now(),
        )
        for i, video in enumerate(videos):
            masked = MaskedVideo.objects.create(
                submission=submission, source_video=video, file=f"masked/{submission.pk}-{video.name}.mp4"
            )
            VideoScore.objects.create(
                run=run,
                masked_video=masked,
                frames_tested=15,
                clear_faces=15,
                masked_faces=15,
                detection_failure_rate=DETECTION_FAILURE[key][i],
                ssim=SSIM[key][i],
                n_face_tracks=2,
                faces_leaked=LEAKED[key][i],
                behaviour_score=BEHAVIOUR[key][i],
                behaviour_metrics={"behaviour_score": BEHAVIOUR[key][i]},
            )
            for r, rater in enumerate(raters[:4]):
                _respond(rater, video, masked, "identity", r < MASKED_ID_CORRECT[key][i])
                _respond(rater, video, masked, "action", r < MASKED_ACTION_CORRECT[key][i])
            _respond(raters[4], video, masked, "identity", True)
        if attack:
            _attack_rows(submission, videos, {"A": 0.2, "B": 0.6, "blur_face": 1.0}[key])
    return organizer, submissions


def _attack_rows(submission, videos, accuracy):
    """A completed attack run whose worst case (lbph x parrot) re-identifies ``accuracy`` of 30 frames."""
    run = AttackRun.objects.create(
        submission=submission,
        config={"attackers": ["clear", "naive", "parrot"], "recognizers": ["lbph"]},
        status="completed",
        finished_at=timezone.now(),
    )
    for attacker, value in (("clear", 1.0), ("naive", accuracy / 2), ("parrot", accuracy)):
        AttackResult.objects.create(
            run=run,
            recognizer="lbph",
            attacker=attacker,
            subset_size=3,
            n_identities=3,
            n_train=60,
            n_test=30,
            accuracy=value,
            chance_level=1 / 3,
            chance_normalised=(value - 1 / 3) / (2 / 3),
        )
    for video in videos:  # 10 test frames per video, the same share each
        AttackVideoResult.objects.create(run=run, source_video=video, n_test=10, accuracy=accuracy)


@pytest.fixture
def board(campaign, settings):
    # Scripted raters far from a real crowd: the pooled per-rater test (trials.integrity)
    # would flag the always-right one; these tests check the figures' arithmetic.
    settings.TRIALS_OUTLIER_ALPHA = 1e-12
    organizer, submissions = build_leaderboard_campaign(campaign)
    return campaign, organizer, submissions


def _row(frame, method):
    return frame[frame["method"] == method].iloc[0]


# --- the table ----------------------------------------------------------------------------


def test_automated_figures_are_video_means_with_scipy_t_intervals(board):
    campaign, _, _ = board
    frame = leaderboard.leaderboard_frame(campaign)
    assert list(frame.columns) == leaderboard.leaderboard_columns()
    for method, key in (("method-a", "A"), ("method-b", "B"), ("blur_face", "blur_face")):
        row = _row(frame, method)
        for column, values in (
            ("face_detection_failure_rate", DETECTION_FAILURE[key]),
            ("ssim", SSIM[key]),
            ("behaviour_score", BEHAVIOUR[key]),
        ):
            low, high = stats.t.interval(0.95, 2, loc=np.mean(values), scale=stats.sem(values))
            low, high = max(low, -1.0 if column == "ssim" else 0.0), min(high, 1.0)  # clipped to the range
            assert row[column] == pytest.approx(np.mean(values)), column
            assert (row[f"{column}_ci_low"], row[f"{column}_ci_high"]) == pytest.approx((low, high)), column
            assert row[f"{column}_n"] == 3
    a = _row(frame, "method-a")
    assert a["faces_leaked"] == pytest.approx(1 / 6) and (a["faces_leaked_count"], a["face_tracks"]) == (1, 6)
    # Video shares 0, 0, 1/2 with 2 tracks each: a resample of 3 videos draws the leaky one k
    # times (k = 0 has probability 8/27 > 2.5 %, k = 3 has 1/27 > 2.5 %), pooled rate k / 6.
    assert (a["faces_leaked_ci_low"], a["faces_leaked_ci_high"]) == pytest.approx((0.0, 0.5))
    assert a["faces_leaked_n"] == 3


def test_baselines_are_reference_rows_listed_last(board):
    frame = leaderboard.leaderboard_frame(board[0])
    assert list(frame["method"]) == ["method-a", "method-b", "blur_face"]
    assert list(frame["reference"]) == [False, False, True]
    assert list(frame["team"]) == ["Team Aurora", "Team Borealis", "Baselines"]


def test_human_figures_match_the_report_and_leave_excluded_raters_out(board):
    campaign, _, submissions = board
    frame = leaderboard.leaderboard_frame(campaign)
    # clear accuracy 1 on every video; masked A 0, 0, 1/4 -> masking success mean (1 + 1 + 3/4) / 3
    expected = {"method-a": (1 + 1 + 0.75) / 3, "method-b": (0.5 + 0.5 + 0.25) / 3, "blur_face": 0.0}
    for method, value in expected.items():
        row = _row(frame, method)
        assert row["human_masking_success"] == pytest.approx(value)
        assert row["human_masking_success_n"] == 3 and row["human_raters"] == 4
        assert row["human_masking_success_ci_low"] <= value <= row["human_masking_success_ci_high"]
    for key, submission in submissions.items():
        human = reports.submission_summary(submission)["human"]
        row = _row(frame, submission.name)
        assert row["human_masking_success"] == pytest.approx(human["masking_success"])
        assert row["human_action_loss"] == pytest.approx(human["action_loss"])
    assert _row(frame, "method-b")["human_action_loss"] == pytest.approx((0.5 + 0.25 + 0.5) / 3)
    baseline = _row(frame, "blur_face")
    # every rater always right, clear and masked: no resample can move it
    assert (baseline["human_masking_success_ci_low"], baseline["human_masking_success_ci_high"]) == (0.0, 0.0)


def test_reidentification_is_the_attack_worst_case_with_its_protocol(board):
    campaign, _, submissions = board
    frame = leaderboard.leaderboard_frame(campaign)
    for key, accuracy in (("A", 0.2), ("B", 0.6), ("blur_face", 1.0)):
        row = _row(frame, submissions[key].name)
        section = attack_section(submissions[key])
        assert row["reidentification"] == pytest.approx(section["worst_case_chance_normalised"])
        assert row["reidentification"] == pytest.approx((accuracy - 1 / 3) / (2 / 3))
        # every test video re-identified at the same share: the bootstrap cannot move it
        assert row["reidentification_ci_low"] == pytest.approx(row["reidentification"])
        assert row["reidentification_ci_high"] == pytest.approx(row["reidentification"])
        assert row["reidentification_n"] == 3
        assert row["reidentification_protocol"] in (leaderboard.CROSS_VIDEO, leaderboard.WITHIN_VIDEO)


def test_cross_video_summaries_give_their_interval_over_folds():
    section = {
        "protocol": "cross_video",
        "worst_case_chance_normalised": 0.4,
        "chance_level": 0.2,
        "worst_case_ci_low": 0.36,
        "worst_case_ci_high": 0.68,
        "n_tested_videos": 7,
    }
    estimate, label = leaderboard._reidentification(section, attack_per_video=None)
    assert label == leaderboard.CROSS_VIDEO
    assert (estimate.value, estimate.ci_low, estimate.ci_high, estimate.n) == pytest.approx(
        (0.4, 0.2, 0.6, 7)
    )


def test_a_submission_not_yet_evaluated_has_empty_figures(campaign):
    create_submission(campaign, "Team Late", "method-late")
    frame = leaderboard.leaderboard_frame(campaign)
    row = frame.iloc[0]
    for key in leaderboard.HEADLINE_KEYS:
        assert math.isnan(row[key]) and row[f"{key}_n"] == 0, key
    assert row["reidentification_protocol"] == ""


# --- anonymisation ------------------------------------------------------------------------


def test_anonymised_leaderboard_names_only_the_viewers_team_and_the_baselines(board):
    campaign, _, submissions = board
    frame = leaderboard.leaderboard_frame(campaign, anonymise_teams=True, viewer_team=submissions["B"].team)
    assert list(frame["team"]) == ["Team Borealis", "Anonymised team A", "Baselines"]
    assert list(frame["method"]) == ["method-b", "A1", "blur_face"]
    assert list(frame["own_team"]) == [True, False, False]
    assert frame["submission_id"].isna().tolist() == [False, True, False]
    assert "Aurora" not in frame.to_csv() and "method-a" not in frame.to_csv()
    # the anonymised row still carries team A's figures
    assert frame.iloc[1]["face_detection_failure_rate"] == pytest.approx(0.9)


# --- paired comparisons -------------------------------------------------------------------


def test_a_clearly_better_submission_is_called_better_and_identical_ones_are_not(board):
    campaign, _, _ = board
    table = leaderboard.comparison_frame(campaign, "face_detection_failure_rate")
    pair = table[(table["a"] == "Team Aurora: method-a") & (table["b"] == "Team Borealis: method-b")].iloc[0]
    # A - B = 0.3 on every video: the bootstrap interval is exactly [0.3, 0.3]
    assert pair["difference"] == pytest.approx(0.3)
    assert (pair["ci_low"], pair["ci_high"]) == pytest.approx((0.3, 0.3))
    assert pair["p_value"] == 0.0 and pair["n_videos"] == 3
    assert pair["verdict"] == "Team Aurora: method-a better"
    same = leaderboard.comparison_frame(campaign, "ssim")  # A and B have identical SSIM
    pair = same[(same["a"] == "Team Aurora: method-a") & (same["b"] == "Team Borealis: method-b")].iloc[0]
    assert (pair["difference"], pair["ci_low"], pair["ci_high"], pair["p_value"]) == (0.0, 0.0, 0.0, 1.0)
    assert pair["verdict"] == "no clear difference (interval contains 0)"
    lower = leaderboard.comparison_frame(campaign, "reidentification")
    pair = lower[(lower["a"] == "Team Aurora: method-a") & (lower["b"] == "Baselines: blur_face")].iloc[0]
    assert pair["difference"] == pytest.approx(-1.2) and pair["verdict"] == "Team Aurora: method-a better"


def test_human_comparison_of_a_and_the_baseline_excludes_zero(board):
    table = leaderboard.comparison_frame(board[0], "human_masking_success")
    assert len(table) == 3 and set(table["method"]) == {"bootstrap: videos x raters"}
    pair = table[(table["a"] == "Team Aurora: method-a") & (table["b"] == "Baselines: blur_face")].iloc[0]
    assert pair["difference"] == pytest.approx(2.75 / 3)
    assert pair["ci_low"] > 0 and pair["verdict"] == "Team Aurora: method-a better"


def test_unknown_figures_are_refused_by_name(board):
    with pytest.raises(ValueError, match="unknown leaderboard figure 'psnr'; known: human_masking_success"):
        leaderboard.comparison_frame(board[0], "psnr")


# --- pages and API --------------------------------------------------------------------------


def _client(user):
    client = Client()
    client.force_login(user)
    return client


def test_organizer_page_shows_table_comparisons_frontier_and_bars(board):
    campaign, organizer, submissions = board
    client = _client(organizer)
    page = client.get(reverse("leaderboard:page", args=[campaign.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert "Team Aurora" in html and "reference" in html and 'id="leaderboard-table"' in html
    assert reverse("automated:frontier_svg", args=[campaign.pk]) in html
    assert reverse("leaderboard:video_bars", args=[campaign.pk, submissions["A"].pk]) in html
    assert "Paired comparisons: Human masking success" in html
    chosen = client.get(
        reverse("leaderboard:page", args=[campaign.pk]),
        {"compare": "face_detection_failure_rate", "submission": submissions["B"].pk},
    ).content.decode()
    assert "Paired comparisons: Face detection failure" in chosen and "Team Aurora: method-a better" in chosen
    assert reverse("leaderboard:video_bars", args=[campaign.pk, submissions["B"].pk]) in chosen
    assert client.get(reverse("leaderboard:page", args=[campaign.pk]), {"compare": "psnr"}).status_code == 400


def test_a_baseline_at_one_says_why_wherever_the_figures_sit_side_by_side(board):
    """Issue 21: every baseline's re-identification reads 1.00; the organizer's and the team's
    leaderboards and the baseline's attack run page say why, beside the figures; a team's
    submission (0.20) gets no such note."""
    from evalsite.dictionary import BASELINE_NOTE
    from evalsite.models import Campaign, LeaderboardVisibility

    campaign, organizer, submissions = board
    Campaign.objects.filter(pk=campaign.pk).update(leaderboard_visibility=LeaderboardVisibility.NAMED)
    member = User.objects.create_user("lb-aurora", password="pw-lb-aurora")
    submissions["A"].team.members.add(member)
    note = '<p class="baseline-note" id="baseline-note">' + escape(BASELINE_NOTE) + "</p>"
    pages = {
        "organizer": _client(organizer).get(reverse("leaderboard:page", args=[campaign.pk])),
        "team": _client(member).get(reverse("team:leaderboard", args=[campaign.pk])),
    }
    for name, response in pages.items():
        html = response.content.decode()
        assert response.status_code == 200 and html.count(note) == 1, name
        # The baseline's row links its 1.00 to the note; the teams' rows do not.
        table = html.split('id="leaderboard-table"', 1)[1].split("</table>", 1)[0]
        body = table.split("<tr")[2:]  # the heading's row first
        rows = {row.split('<span class="team">', 1)[1].split("<", 1)[0]: row for row in body}
        assert '<a href="#baseline-note">why 1.00?</a>' in rows["Baselines"], name
        assert "why 1.00?" not in rows["Team Aurora"] + rows["Team Borealis"], name
    assert "parrot attacker" in BASELINE_NOTE and "A False Sense of Privacy" in BASELINE_NOTE
    runs = {key: AttackRun.objects.get(submission=s) for key, s in submissions.items()}
    attack_page = _client(organizer).get(reverse("automated:attack_run_report", args=[runs["blur_face"].pk]))
    assert attack_page.status_code == 200
    assert f'<p id="baseline-note">{escape(BASELINE_NOTE)}</p>' in attack_page.content.decode()
    team_run = _client(organizer).get(reverse("automated:attack_run_report", args=[runs["A"].pk]))
    assert team_run.status_code == 200 and "baseline-note" not in team_run.content.decode()


def test_the_default_per_video_figure_is_of_a_submission_with_figures(board):
    """Issue 21: the first submission listed (teams by name) has nothing evaluated yet; its
    per-video figure would be a broken image, so the page shows the first one with figures."""
    campaign, organizer, submissions = board
    empty = create_submission(campaign, "Team Aardvark", "method-empty")  # sorts first, no run
    assert leaderboard.campaign_scores(campaign).submissions[0] == empty
    html = _client(organizer).get(reverse("leaderboard:page", args=[campaign.pk])).content.decode()
    assert "Per video: Team Aurora: method-a" in html
    assert reverse("leaderboard:video_bars", args=[campaign.pk, submissions["A"].pk]) in html
    assert reverse("leaderboard:video_bars", args=[campaign.pk, empty.pk]) not in html
    # Chosen by hand it is still offered (the organizer asked for it).
    chosen = _client(organizer).get(reverse("leaderboard:page", args=[campaign.pk]), {"submission": empty.pk})
    assert "Per video: Team Aardvark: method-empty" in chosen.content.decode()


def test_csv_download_and_bars_png(board):
    campaign, organizer, submissions = board
    client = _client(organizer)
    response = client.get(reverse("leaderboard:csv", args=[campaign.pk]))
    assert response["Content-Type"].startswith("text/csv") and "attachment" in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [r["method"] for r in rows] == ["method-a", "method-b", "blur_face"]
    assert float(rows[0]["face_detection_failure_rate"]) == pytest.approx(0.9)
    # rounded to 4 decimals (0.9 - t(0.975, 2) x 0.1 / sqrt(3)); counts stay whole
    assert rows[0]["face_detection_failure_rate_ci_low"] == "0.6516"
    assert (rows[0]["human_raters"], rows[0]["face_tracks"], rows[0]["submission_id"]) == (
        "4",
        "6",
        str(submissions["A"].pk),
    )
    pairs = client.get(
        reverse("leaderboard:csv", args=[campaign.pk]), {"table": "comparisons", "compare": "ssim"}
    )
    assert next(csv.reader(io.StringIO(pairs.content.decode())))[:3] == ["a", "b", "difference"]
    png = client.get(reverse("leaderboard:video_bars", args=[campaign.pk, submissions["A"].pk]))
    assert (
        png.status_code == 200
        and png["Content-Type"] == "image/png"
        and png.content[:8] == b"\x89PNG\r\n\x1a\n"
    )


def test_api_answers_json_and_csv(board):
    campaign, organizer, _ = board
    client = _client(organizer)
    body = client.get(reverse("campaign-leaderboard", args=[campaign.pk])).json()
    assert [c["key"] for c in body["columns"]] == list(leaderboard.HEADLINE_KEYS)
    assert [r["method"] for r in body["rows"]] == ["method-a", "method-b", "blur_face"]
    assert body["rows"][0]["face_detection_failure_rate"] == pytest.approx(0.9)
    text = client.get(reverse("campaign-leaderboard", args=[campaign.pk]), {"format": "csv"}).content.decode()
    assert text.splitlines()[0].startswith("submission_id,team,method,reference")
    url = reverse("campaign-leaderboard-comparisons", args=[campaign.pk])
    pairs = client.get(url, {"figure": "face_detection_failure_rate"}).json()
    assert (
        pairs["figure"] == "face_detection_failure_rate"
        and pairs["better"] == "higher"
        and len(pairs["rows"]) == 3
    )
    refused = client.get(url, {"figure": "nope"})
    assert refused.status_code == 400 and refused.json()["figure"][0]["code"] == "unknown_figure"
    header = client.get(url, {"figure": "ssim", "format": "csv"}).content.decode().splitlines()[0]
    assert header == "a,b,difference,ci_low,ci_high,p_value,share_a_greater,n_videos,method,verdict"


def test_another_organizer_and_non_staff_get_nothing(board):
    campaign, _, submissions = board
    other = User.objects.create_user("lb-other", password="pw-other-1", is_staff=True)
    member = User.objects.create_user("lb-member", password="pw-member-1")
    urls = [
        reverse("leaderboard:page", args=[campaign.pk]),
        reverse("leaderboard:csv", args=[campaign.pk]),
        reverse("leaderboard:video_bars", args=[campaign.pk, submissions["A"].pk]),
        reverse("campaign-leaderboard", args=[campaign.pk]),
        reverse("campaign-leaderboard-comparisons", args=[campaign.pk]),
    ]
    for url in urls:
        response = _client(other).get(url)
        assert response.status_code == 404 and b"Aurora" not in response.content, url
        assert _client(member).get(url).status_code in (302, 403), url


def test_a_campaign_without_submissions_has_an_empty_leaderboard(campaign):
    organizer = User.objects.create_user("lb-empty", password="pw-lb-empty", is_staff=True)
    campaign.organizers.add(organizer)
    assert leaderboard.leaderboard_frame(campaign).empty
    assert leaderboard.comparison_frame(campaign, "ssim").empty
    page = _client(organizer).get(reverse("leaderboard:page", args=[campaign.pk]))
    assert page.status_code == 200 and "No submissions yet." in page.content.decode()
    assert _client(organizer).get(reverse("campaign-leaderboard", args=[campaign.pk])).json()["rows"] == []


def test_a_real_team_cannot_take_a_name_that_passes_for_an_anonymised_one(campaign):
    """A team named like an anonymised label would sit beside the anonymised rows and be
    taken for one of them (or make one of them look named): the prefix is reserved."""
    from django.core.exceptions import ValidationError

    from evalsite.models import Team

    for name in ("Anonymised team A", "  anonymised TEAM b"):
        with pytest.raises(ValueError, match="reserved for anonymised leaderboards"):
            create_submission(campaign, name, "method-x")
        with pytest.raises(ValidationError, match="reserved"):
            Team(campaign=campaign, name=name).full_clean()
    assert not Team.objects.filter(name__istartswith="anonymised").exists()
    create_submission(campaign, "Team Anonymous Driver", "method-y")  # only the exact prefix is reserved


def test_team_and_run_names_starting_with_a_formula_character_are_text_in_the_csv(board):
    """Team ``@Aurora`` with run ``+method-a``: the CSV download shows both as text (leading
    ``'``, OWASP "CSV Injection"); figures stay numbers, a negative difference a negative float."""
    campaign, organizer, submissions = board
    Team.objects.filter(pk=submissions["A"].team_id).update(name="@Aurora")
    Submission.objects.filter(pk=submissions["A"].pk).update(name="+method-a")
    client = _client(organizer)
    text = client.get(reverse("leaderboard:csv", args=[campaign.pk])).content.decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert (rows[0]["team"], rows[0]["method"]) == ("'@Aurora", "'+method-a")
    assert float(rows[0]["face_detection_failure_rate"]) == pytest.approx(0.9)
    pairs = client.get(
        reverse("leaderboard:csv", args=[campaign.pk]), {"table": "comparisons", "compare": "ssim"}
    ).content.decode()
    parsed = pd.read_csv(io.StringIO(pairs))
    assert parsed["a"].tolist() == ["'@Aurora: +method-a", "'@Aurora: +method-a", "Team Borealis: method-b"]
    # SSIM 0.35 - 0.35 and 0.35 - 0.85 (video means): negative figures stay negative floats.
    assert parsed["difference"].dtype == float and parsed["difference"].tolist() == [0.0, -0.5, -0.5]
