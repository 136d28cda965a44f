"""Behaviour preservation in face runs, reports and the organizer's frontier (issue 12), on 3 real GRID clips."""

import io

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from automated import face_eval
from automated.behaviour import evaluate as behaviour_evaluate
from automated.behaviour.score import automated_pu_score
from automated.django_app import services
from automated.django_app.attack_models import AttackResult, AttackRun
from automated.django_app.face_models import AutomatedRun, VideoScore
from automated.django_app.frontier_view import frontier_points, write_frontier_files
from automated.django_app.services import create_baseline_submission, run_face_evaluation
from evalsite import reports
from evalsite.models import Campaign

from .test_face_services import campaign  # noqa: F401 (fixture: the tiny GRID campaign)

pytestmark = [pytest.mark.django_db, pytest.mark.slow]
STRIDE = 40  # 2 tested frames per clip


# Apparent gender of the fixture's GRID people (clips.csv ``apparent_gender_unofficial``).
GENDERS = {"ID01": "male", "ID03": "male", "ID07": "female"}


@pytest.fixture
def evaluated(campaign, monkeypatch):  # noqa: F811
    for identity in campaign.identities.filter(code__in=GENDERS):
        identity.attributes = {"gender": GENDERS[identity.code]}
        identity.save()
    identity = create_baseline_submission(campaign, "identity", web_copies=False)
    blurred = create_baseline_submission(campaign, "blur_frame", web_copies=False)
    # Spy on the decoding and on the behaviour passes: one decode per video pair, clear side reused.
    decoded, passes = [], []
    real_iter_frames, real_pass = face_eval.iter_frames, services._behaviour_pass

    def counting_iter_frames(path, **options):
        decoded.append(path)
        return real_iter_frames(path, **options)

    def spied_pass(clear_path, stride):
        behaviour = real_pass(clear_path, stride)
        passes.append(behaviour)
        return behaviour

    monkeypatch.setattr(face_eval, "iter_frames", counting_iter_frames)
    monkeypatch.setattr(behaviour_evaluate, "iter_frames", counting_iter_frames)
    monkeypatch.setattr(services, "_behaviour_pass", spied_pass)
    runs = {}
    for submission in (identity, blurred):
        decoded.clear()
        passes.clear()
        runs[submission.name] = run_face_evaluation(submission, stride=STRIDE)
        # the face evaluation's pass feeds behaviour: each of the 3 pairs decoded once (clear + masked)
        assert len(decoded) == 6 and len(passes) == 3
    # the second submission reuses every clear side measured for the first (CACHE_DIR/behaviour)
    assert all(p.clear_from_cache for p in passes)
    return identity, blurred, runs


def test_face_run_stores_behaviour_and_the_reports_show_it(evaluated):
    identity, blurred, runs = evaluated
    scores = list(VideoScore.objects.filter(run=runs["identity"]))
    assert len(scores) == 3 and runs["identity"].config["behaviour"] is True
    for score in scores:  # the identity baseline keeps every behaviour exactly
        assert score.behaviour_score == 1.0
        assert score.behaviour_metrics["head_pose_error_deg"] == 0.0
        assert score.behaviour_metrics["gaze_error_deg"] == 0.0
        assert score.behaviour_metrics["face_lost_rate"] == 0.0
        assert score.behaviour_metrics["frames_tested"] == 2
    blurred_scores = VideoScore.objects.filter(run=runs["blur_frame"])
    assert all(s.behaviour_score is not None and s.behaviour_score < 1.0 for s in blurred_scores)

    report = reports.per_video_report(identity).set_index("video")
    assert {
        "behaviour_score",
        "behaviour_head_pose_error_deg",
        "behaviour_face_lost_rate",
        "pu_score_automated",
    } <= set(report.columns)
    assert (report["behaviour_score"] == 1.0).all()
    assert (report["pu_score_automated"] == 0.0).all()  # 1 x (1 - SSIM 1): unmasked frames hide nothing
    blurred_report = reports.per_video_report(blurred).set_index("video")
    for score in blurred_scores:
        row = blurred_report.loc[score.masked_video.source_video.name]
        assert row["behaviour_score"] == score.behaviour_score
        assert row["pu_score_automated"] == pytest.approx(score.behaviour_score * (1 - score.ssim))

    section = reports.submission_summary(identity)["behaviour"]
    assert section["run_id"] == runs["identity"].pk and section["n_videos"] == 3
    assert section["behaviour_score"] == 1.0 and section["frames_tested"] == 6
    assert section["pu_score_automated"] == 0.0 and section["pu_score_automated_kind"].startswith("automated")
    blurred_section = reports.submission_summary(blurred)["behaviour"]
    mean = sum(s.behaviour_score for s in blurred_scores) / 3
    assert blurred_section["behaviour_score"] == pytest.approx(mean)
    assert blurred_section["pu_score_automated"] == pytest.approx(
        automated_pu_score(mean, sum(s.ssim for s in blurred_scores) / 3)
    )

    # --no-behaviour: no behaviour stored, and the report keeps the run that measured it
    call_command("evaluate", identity.pk, "--stride", str(STRIDE), "--no-behaviour", stdout=io.StringIO())
    lighter = AutomatedRun.objects.filter(submission=identity).latest("id")
    assert lighter.config["behaviour"] is False
    assert not VideoScore.objects.filter(run=lighter, behaviour_score__isnull=False).exists()
    assert reports.submission_summary(identity)["behaviour"]["run_id"] == runs["identity"].pk


def test_gender_leakage_per_video_and_per_submission(evaluated):
    identity, blurred, runs = evaluated
    report = reports.per_video_report(identity).set_index("video")
    # the identity baseline shows the attacker the clear crops: masked accuracy = clear accuracy
    assert (report["behaviour_gender_masked_accuracy"] == report["behaviour_gender_clear_accuracy"]).all()
    assert report["behaviour_gender_clear_accuracy"].between(0, 1).all()
    section = reports.submission_summary(identity)["attribute_leakage"]
    assert section["run_id"] == runs["identity"].pk and section["attribute"] == "gender"
    assert (
        section["n_videos"] == 3 and section["n_identities"] == 3 and section["n_videos_unknown_gender"] == 0
    )
    assert section["n_videos_unofficial_gender"] == 0  # official "gender" labels here
    assert section["majority_rate"] == pytest.approx(2 / 3)  # two men, one woman
    assert section["leakage_pretrained"] == section["leakage_clear"]
    assert section["leakage_pretrained"] == pytest.approx(section["pretrained_masked_accuracy"] - 2 / 3)
    # the woman's fold trains on men only and is left out; the men's folds train on both genders
    assert section["parrot_accuracy"] is not None and 0 <= section["parrot_accuracy"] <= 1
    assert section["leakage_worst"] == max(section["leakage_pretrained"], section["leakage_parrot"])
    blurred_section = reports.submission_summary(blurred)["attribute_leakage"]
    assert blurred_section["run_id"] == runs["blur_frame"].pk
    assert blurred_section["leakage_clear"] == section["leakage_clear"]  # same clear crops, cached clear side
    # the API's submission summary carries the section
    staff = User.objects.create_superuser("admin", password="pw")
    client = Client()
    client.force_login(staff)
    payload = client.get(f"/api/submissions/{blurred.pk}/summary/").json()
    assert payload["attribute_leakage"]["leakage_worst"] == blurred_section["leakage_worst"]
    assert payload["behaviour"]["behaviour_score"] == pytest.approx(
        reports.submission_summary(blurred)["behaviour"]["behaviour_score"]
    )
    headline = client.get(f"/api/submissions/{blurred.pk}/").json()["automated"]
    assert headline["gender_leakage"] == blurred_section["leakage_worst"]
    assert headline["behaviour_score"] == pytest.approx(payload["behaviour"]["behaviour_score"])
    assert headline["pu_score_automated"] == pytest.approx(payload["behaviour"]["pu_score_automated"])
    assert headline["worst_case_reidentification"] is None  # no attack run yet
    # the admin shows the automated PU score and the gender attacker's frames, not the raw samples
    score = VideoScore.objects.filter(run=runs["blur_frame"]).first()
    page = client.get(reverse("admin:automated_videoscore_change", args=[score.pk])).content.decode()
    assert "mean P(man) clear" in page and "masked_features" not in page


def _attack_run(submission, chance_normalised: dict):
    run = AttackRun.objects.create(
        submission=submission, status=AttackRun.Status.COMPLETED, finished_at=timezone.now()
    )
    for attacker, value in chance_normalised.items():
        AttackResult.objects.create(
            run=run,
            recognizer="lbph",
            attacker=attacker,
            subset_size=4,
            n_identities=4,
            n_train=10,
            n_test=10,
            accuracy=0.25 + 0.75 * value,
            chance_level=0.25,
            chance_normalised=value,
        )


def test_frontier_points_and_the_organizer_view(evaluated, campaign, tmp_path):  # noqa: F811
    identity, blurred, _ = evaluated
    png_path, svg_path = write_frontier_files(campaign, tmp_path / "reports")  # the demo's report files
    assert png_path.read_bytes().startswith(b"\x89PNG") and b"<svg" in svg_path.read_bytes()
    _attack_run(identity, {"clear": 1.0, "naive": 0.9, "parrot": 0.95})
    _attack_run(blurred, {"clear": 1.0, "naive": 0.1, "parrot": 0.4})
    points = {p.label: p for p in frontier_points(campaign)}
    assert points["identity"].reidentification == 0.95 and points["identity"].behaviour == 1.0
    assert points["blur_frame"].reidentification == 0.4  # the worst case, the clear-on-clear bound left out
    assert points["blur_frame"].kind == "baseline" and 0 <= points["blur_frame"].behaviour < 1

    organizer = User.objects.create_user("org", password="pw", is_staff=True)
    campaign.organizers.add(organizer)
    other = User.objects.create_user("other", password="pw", is_staff=True)
    Campaign.objects.create(name="Other", slug="other").organizers.add(other)
    client = Client()
    client.force_login(organizer)
    png = client.get(reverse("automated:frontier_png", args=[campaign.pk]))
    assert (
        png.status_code == 200 and png["Content-Type"] == "image/png" and png.content.startswith(b"\x89PNG")
    )
    svg = client.get(reverse("automated:frontier_svg", args=[campaign.pk]))
    assert svg["Content-Type"] == "image/svg+xml" and b"<svg" in svg.content
    assert svg["Content-Security-Policy"] == "sandbox"
    page = client.get(reverse("trials:organizer_campaign", args=[campaign.pk]))
    assert reverse("automated:frontier_png", args=[campaign.pk]) in page.content.decode()
    client.force_login(other)
    for name in ("automated:frontier_png", "automated:frontier_svg"):
        assert client.get(reverse(name, args=[campaign.pk])).status_code == 404
    client.logout()
    assert client.get(reverse("automated:frontier_png", args=[campaign.pk])).status_code == 302  # to login


def test_a_team_sees_the_frontier_of_its_own_submission_and_the_baselines_only(evaluated, campaign):  # noqa: F811
    from evalsite.models import Team
    from evalsite.services import create_submission

    identity, blurred, _ = evaluated
    own = create_submission(campaign, "Team Own", "method-own")
    rival = create_submission(campaign, "Team Rival", "method-rival")
    labels = [p.label for p in frontier_points(campaign, own=own)]
    assert labels == ["blur_frame", "identity", "Team Own: method-own"]  # never the rival's point
    member = User.objects.create_user("member", password="pw")
    Team.objects.get(name="Team Own").members.add(member)
    client = Client()
    client.force_login(member)
    png = client.get(reverse("team:submission_frontier", args=[own.pk, "png"]))
    assert png.status_code == 200 and png.content.startswith(b"\x89PNG")
    assert (
        client.get(reverse("team:submission_frontier", args=[own.pk, "svg"]))["Content-Type"]
        == "image/svg+xml"
    )
    assert client.get(reverse("team:submission_frontier", args=[own.pk, "gif"])).status_code == 404
    assert client.get(reverse("team:submission_frontier", args=[rival.pk, "png"])).status_code == 404
    assert client.get(reverse("automated:frontier_png", args=[campaign.pk])).status_code == 302  # staff only
    page = client.get(reverse("team:submission", args=[own.pk])).content.decode()
    # Behaviour measured but no attack run yet: the points table, and no blank figure.
    assert 'id="frontier-points"' in page and "No point to draw yet" in page
    assert reverse("team:submission_frontier", args=[own.pk, "png"]) not in page
    assert "method-rival" not in page and "Team Rival" not in page
