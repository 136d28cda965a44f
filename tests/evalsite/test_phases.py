"""Phases and runs (issue 23): blind test results, quotas, the deadline, primary runs, PDFs.

The tiny real campaign (3 GRID clips); score rows are written directly (no model run), so
every shown value is known. A *development* phase shows each team its own results; the
*test* phase is public after a release time, blind before it.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import IntegrityError, transaction
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from automated.django_app.face_models import AutomatedRun, VideoScore
from evalsite import phases, reports
from evalsite.models import (
    LeaderboardVisibility,
    MaskedVideo,
    Phase,
    ResultVisibility,
    Submission,
    SubmissionUpload,
    UploadStatus,
)
from evalsite.services import create_submission
from evalsite.uploads import receive_upload

SSIM = {"owl-test": 0.625, "bee-test": 0.125, "owl-dev": 0.875}
PDF = b"%PDF-1.4\n1 0 obj << >> endobj\ntrailer << >>\n%%EOF\n"


def _scores(run: Submission, ssim: float) -> None:
    """A completed face run with one score row per source video of the run (masked rows made directly)."""
    face_run = AutomatedRun.objects.create(submission=run, config={"stride": 5}, status="completed")
    for video in run.source_videos().order_by("name"):
        masked = MaskedVideo.objects.create(
            submission=run, source_video=video, file=f"masked/{run.pk}-{video.name}.mp4"
        )
        VideoScore.objects.create(
            run=face_run, masked_video=masked, frames_tested=15, clear_faces=15, masked_faces=15, ssim=ssim
        )


@pytest.fixture
def life_cycle(campaign):
    """Phases dev (own results at once) and test (public, released in a day); teams Owl and Bee."""
    campaign.leaderboard_visibility = LeaderboardVisibility.NAMED
    campaign.teams_may_upload = True
    campaign.save()
    dev = Phase.objects.create(campaign=campaign, name="development", order=1)
    test = Phase.objects.create(
        campaign=campaign,
        name="test",
        order=2,
        results_visibility=ResultVisibility.PUBLIC,
        results_release_at=timezone.now() + dt.timedelta(days=1),
    )
    dev.source_videos.set(campaign.source_videos.filter(name="bbaf2n"))
    runs = {
        "owl-dev": create_submission(campaign, "Team Owl", "owl-dev", phase="development"),
        "owl-test": create_submission(campaign, "Team Owl", "owl-test", phase="test"),
        "bee-test": create_submission(campaign, "Team Bee", "bee-test", phase=test),
    }
    for key, run in runs.items():
        _scores(run, SSIM[key])
    alice = User.objects.create_user("alice", password="pw-alice-123")
    runs["owl-test"].team.members.add(alice)
    organizer = User.objects.create_user("organizer", password="pw-org-123", is_staff=True)
    campaign.organizers.add(organizer)
    return {"campaign": campaign, "dev": dev, "test": test, "alice": alice, "organizer": organizer, **runs}


def _team(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _leaderboard_methods(client, campaign) -> list[str]:
    text = client.get(reverse("team:leaderboard_csv", args=[campaign.pk])).content.decode()
    return sorted(row["method"] for row in csv.DictReader(io.StringIO(text)))


def test_a_blind_test_phase_shows_its_team_nothing_until_release_then_everything(life_cycle):
    campaign, owl_test, alice = life_cycle["campaign"], life_cycle["owl-test"], life_cycle["alice"]
    client = _team(alice)
    page = client.get(reverse("team:submission", args=[owl_test.pk])).content.decode()
    release = timezone.localtime(life_cycle["test"].results_release_at, dt.UTC)
    assert f"Results of the test phase are released on {release:%Y-%m-%d %H:%M} UTC." in page
    assert "0.625" not in page and "Per-video report" not in page and "per-video" not in page
    assert "run 1 <strong>(primary)</strong>" in page
    for fmt in ("csv", "json"):
        response = client.get(reverse("team:submission_report", args=[owl_test.pk, fmt]))
        assert response.status_code == 403
        assert response.content.decode() == phases.hidden_message(life_cycle["test"])
    assert client.get(reverse("team:submission_frontier", args=[owl_test.pk, "svg"])).status_code == 404
    # The published leaderboard: the team's own development run only (test rows blind, Bee's too).
    assert _leaderboard_methods(client, campaign) == ["owl-dev"]
    # The organizer sees everything meanwhile (API report with the stored SSIM).
    api = APIClient()
    api.force_authenticate(life_cycle["organizer"])
    payload = api.get(f"/api/submissions/{owl_test.pk}/report/").json()
    assert [v["face_ssim"] for v in payload["videos"]] == [0.625] * 3
    organizer_rows = api.get(f"/api/campaigns/{campaign.pk}/leaderboard/").json()["rows"]
    assert sorted(r["method"] for r in organizer_rows) == ["bee-test", "owl-dev", "owl-test"]

    Phase.objects.filter(pk=life_cycle["test"].pk).update(results_release_at=timezone.now())  # released
    page = client.get(reverse("team:submission", args=[owl_test.pk])).content.decode()
    assert "released on" not in page and "Per-video report (3 videos)" in page and "0.625" in page
    response = client.get(reverse("team:submission_report", args=[owl_test.pk, "csv"]))
    assert response.status_code == 200
    assert response.content.decode() == reports.report_as_csv(owl_test, team=True)
    assert [r["face_ssim"] for r in csv.DictReader(io.StringIO(response.content.decode()))] == ["0.625"] * 3
    report = json.loads(client.get(reverse("team:submission_report", args=[owl_test.pk, "json"])).content)
    assert report["summary"]["method"] == "owl-test"
    # Public after release: the other team's test run appears too.
    assert _leaderboard_methods(client, campaign) == ["bee-test", "owl-dev", "owl-test"]


def test_a_hidden_phase_stays_hidden_and_an_own_team_phase_shows_no_other_team(life_cycle):
    campaign, client = life_cycle["campaign"], _team(life_cycle["alice"])
    Phase.objects.filter(pk=life_cycle["test"].pk).update(
        results_visibility=ResultVisibility.HIDDEN, results_release_at=None
    )
    response = client.get(reverse("team:submission_report", args=[life_cycle["owl-test"].pk, "csv"]))
    assert response.status_code == 403 and "the organizer has not released them" in response.content.decode()
    Phase.objects.filter(pk=life_cycle["test"].pk).update(results_visibility=ResultVisibility.TEAM)
    assert (
        client.get(reverse("team:submission_report", args=[life_cycle["owl-test"].pk, "csv"])).status_code
        == 200
    )
    assert _leaderboard_methods(client, campaign) == ["owl-dev", "owl-test"]  # Bee's test run: not public
    # The development phase's subset: one video, so the run is complete with one masked video.
    assert list(life_cycle["owl-dev"].source_videos().values_list("name", flat=True)) == ["bbaf2n"]
    assert life_cycle["owl-dev"].is_complete


def test_runs_are_numbered_per_team_and_phase_and_the_quota_refuses_the_next(life_cycle):
    test, owl = life_cycle["test"], life_cycle["owl-test"].team
    Phase.objects.filter(pk=test.pk).update(max_runs=2)
    test.refresh_from_db()
    second = phases.create_run(test, owl, "owl-test-2", description="blur, sigma 8")
    assert (life_cycle["owl-test"].run_number, second.run_number) == (1, 2)
    assert (life_cycle["owl-test"].primary, second.primary) == (True, False)
    with pytest.raises(phases.Refused, match="has entered its 2 run\\(s\\) of the test phase") as refused:
        phases.create_run(test, owl, "owl-test-3")
    assert refused.value.code == "run_quota"
    assert not Submission.objects.filter(name="owl-test-3").exists()
    # Bee's quota is its own; through the API, the refusal is a 400 naming it.
    api = APIClient()
    api.force_authenticate(life_cycle["organizer"])
    body = {"campaign": life_cycle["campaign"].pk, "team": "Team Owl", "name": "owl-test-3", "phase": "test"}
    response = api.post("/api/submissions/", body, format="json")
    assert response.status_code == 400 and "has entered its 2 run(s)" in response.json()["phase"][0]
    response = api.post(
        "/api/submissions/", {**body, "team": "Team Bee", "name": "bee-test-2"}, format="json"
    )
    assert response.status_code == 201
    assert (response.json()["run_number"], response.json()["primary"], response.json()["phase"]) == (
        2,
        False,
        "test",
    )
    with pytest.raises(CommandError, match="no phase 'final'; its phases: development, test"):
        call_command("create_submission", campaign="tiny", team="Team Bee", name="x", phase="final")


def _upload_row(run, status=UploadStatus.DONE, when=None):
    row = SubmissionUpload.objects.create(submission=run, status=status)
    if when is not None:
        SubmissionUpload.objects.filter(pk=row.pk).update(uploaded_at=when)
    return row


def test_upload_quotas_count_failed_uploads_only_when_configured(life_cycle, tmp_path):
    run, test = life_cycle["owl-test"], life_cycle["test"]
    not_a_zip = tmp_path / "notes.zip"
    not_a_zip.write_text("not a zip")
    Phase.objects.filter(pk=test.pk).update(max_uploads=2)
    run.refresh_from_db()
    _upload_row(run)
    failed = receive_upload(run, not_a_zip)  # fails as a whole, does not count
    assert (failed.status, failed.error_code) == (UploadStatus.FAILED, "not_a_zip")
    assert phases.counted_uploads(run.team, run.phase).count() == 1
    _upload_row(run)
    with pytest.raises(
        phases.Refused,
        match="has used its 2 upload\\(s\\) of the test phase \\(failed uploads do not count\\)",
    ):
        receive_upload(run, not_a_zip)
    assert SubmissionUpload.objects.filter(submission=run).count() == 3  # the refused one left no record
    # Counting failed uploads: the failed one takes the second place.
    Phase.objects.filter(pk=test.pk).update(max_uploads=2, failed_uploads_count=True)
    SubmissionUpload.objects.filter(submission=run, status=UploadStatus.DONE).first().delete()
    run.refresh_from_db()
    assert phases.counted_uploads(run.team, run.phase).count() == 2
    with pytest.raises(phases.Refused) as refused:
        receive_upload(run, not_a_zip)
    assert refused.value.code == "upload_quota"


def test_the_daily_upload_quota_counts_only_the_current_utc_day(life_cycle, tmp_path):
    run = life_cycle["owl-test"]
    Phase.objects.filter(pk=life_cycle["test"].pk).update(max_uploads_per_day=1)
    run.refresh_from_db()
    now = timezone.now()
    _upload_row(run, when=now - dt.timedelta(days=1))
    assert phases.check_upload(run, now=now) is False  # yesterday's upload does not count today
    _upload_row(run, when=now)
    tomorrow = (now.astimezone(dt.UTC) + dt.timedelta(days=1)).strftime("%Y-%m-%d 00:00 UTC")
    with pytest.raises(
        phases.Refused,
        match=f"1 upload\\(s\\) per day of the test phase \\(failed uploads do not count\\); the next day starts on {tomorrow}",
    ) as refused:
        phases.check_upload(run, now=now)
    assert refused.value.code == "daily_upload_quota"


def test_a_late_upload_is_refused_naming_the_deadline_unless_an_organizer_overrides_it(life_cycle, tmp_path):
    run, test = life_cycle["owl-test"], life_cycle["test"]
    closed = timezone.now() - dt.timedelta(hours=2)
    Phase.objects.filter(pk=test.pk).update(closes_at=closed)
    run.refresh_from_db()
    deadline = timezone.localtime(closed, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    message = f"the test phase closed on {deadline} (the submission deadline): uploads are no longer accepted"
    archive = SimpleUploadedFile("late.zip", b"PK not really a zip", content_type="application/zip")
    # The team page: the form says why, nothing is stored.
    response = _team(life_cycle["alice"]).post(reverse("team:upload", args=[run.pk]), {"file": archive})
    assert response.status_code == 200 and message in response.content.decode()
    assert not SubmissionUpload.objects.filter(submission=run).exists()
    # The API: 400 naming the deadline; with override_deadline the upload is taken and recorded late.
    api = APIClient()
    api.force_authenticate(life_cycle["organizer"])
    archive.seek(0)
    response = api.post(f"/api/submissions/{run.pk}/upload/", {"file": archive}, format="multipart")
    assert response.status_code == 400 and response.json()["file"][0]["code"] == "deadline_passed"
    assert response.json()["file"][0]["message"].startswith(message)
    archive.seek(0)
    response = api.post(
        f"/api/submissions/{run.pk}/upload/",
        {"file": archive, "override_deadline": "yes"},
        format="multipart",
    )
    assert response.json()["status"] == "failed"  # accepted for validation (then not a zip)
    upload = SubmissionUpload.objects.get(submission=run)
    assert (upload.late, upload.deadline_overridden_by) == (True, life_cycle["organizer"])
    # The command: refused with the same message; a phase not open yet names its opening.
    with pytest.raises(CommandError, match="upload refused \\(deadline_passed\\): the test phase closed on"):
        call_command("upload_submission", run.pk, str(_zip_file(tmp_path)))
    opens = timezone.now() + dt.timedelta(days=3)
    Phase.objects.filter(pk=test.pk).update(closes_at=None, opens_at=opens)
    run.refresh_from_db()
    with pytest.raises(
        phases.Refused, match=f"opens on {timezone.localtime(opens, dt.UTC):%Y-%m-%d %H:%M} UTC"
    ):
        phases.check_upload(run)


def _zip_file(tmp_path):
    path = tmp_path / "masked.zip"
    path.write_bytes(b"PK")
    return path


def test_exactly_one_primary_run_per_team_and_phase_and_a_primary_only_leaderboard(life_cycle):
    first, test = life_cycle["owl-test"], life_cycle["test"]
    second = phases.create_run(test, first.team, "owl-test-2")
    phases.set_primary(second)
    primaries = Submission.objects.filter(team=first.team, phase=test, primary=True)
    assert list(primaries.values_list("name", flat=True)) == ["owl-test-2"]
    with pytest.raises(IntegrityError), transaction.atomic():
        Submission.objects.filter(pk=first.pk).update(primary=True)  # a second primary: the database refuses
    with pytest.raises(ValueError, match="belongs to no phase"):
        phases.set_primary(create_submission(life_cycle["campaign"], "Team Owl", "no-phase"))
    client = Client()
    client.force_login(life_cycle["organizer"])
    url = reverse("leaderboard:csv", args=[life_cycle["campaign"].pk])
    every = [r["method"] for r in csv.DictReader(io.StringIO(client.get(url).content.decode()))]
    assert sorted(every) == ["bee-test", "no-phase", "owl-dev", "owl-test", "owl-test-2"]
    primary = client.get(url, {"primary": "1", "phase": "test"}).content.decode()
    assert sorted(r["method"] for r in csv.DictReader(io.StringIO(primary))) == ["bee-test", "owl-test-2"]
    response = client.get(url, {"phase": "final"})
    assert (
        response.status_code == 400
        and "no phase 'final'; its phases: development, test" in response.content.decode()
    )


def test_primary_is_read_strictly_and_an_unknown_word_is_refused_naming_it(life_cycle):
    """Issue 21: ``?primary=`` went through a loose reading (anything but 1/true/yes/on was
    "every run"), so a typo showed every run without a word; now every leaderboard channel
    reads it with evalsite.booleans.parse_boolean and answers 400 naming the field."""
    campaign, test = life_cycle["campaign"], life_cycle["test"]
    phases.set_primary(phases.create_run(test, life_cycle["owl-test"].team, "owl-test-2"))
    organizer, alice = _team(life_cycle["organizer"]), _team(life_cycle["alice"])
    api = APIClient()
    api.force_authenticate(life_cycle["organizer"])
    url = reverse("leaderboard:csv", args=[campaign.pk])
    methods = lambda params: sorted(  # noqa: E731
        r["method"] for r in csv.DictReader(io.StringIO(organizer.get(url, params).content.decode()))
    )
    assert methods({"primary": " On ", "phase": "test"}) == ["bee-test", "owl-test-2"]
    assert methods({"primary": "no", "phase": "test"}) == ["bee-test", "owl-test", "owl-test-2"]
    assert methods({"primary": "0"}) == methods({}) == ["bee-test", "owl-dev", "owl-test", "owl-test-2"]
    for word in ("maybe", "n", "2", ""):
        for client, page in [
            (organizer, reverse("leaderboard:page", args=[campaign.pk])),
            (organizer, url),
            (alice, reverse("team:leaderboard", args=[campaign.pk])),
            (alice, reverse("team:leaderboard_csv", args=[campaign.pk])),
        ]:
            response = client.get(page, {"primary": word})
            assert response.status_code == 400, (page, word)
            assert f"primary: {word!r} is not a yes/no value" in response.content.decode(), (page, word)
        for name in ("campaign-leaderboard", "campaign-leaderboard-comparisons"):
            refused = api.get(reverse(name, args=[campaign.pk]), {"primary": word})
            assert refused.status_code == 400, (name, word)
            assert refused.json()["primary"][0]["code"] == "invalid", (name, word)


def test_a_system_description_pdf_is_type_checked_and_size_limited(life_cycle, settings):
    test, bee = life_cycle["test"], life_cycle["bee-test"].team
    with pytest.raises(
        phases.Refused, match="must be a PDF \\(a file starting with %PDF-\\), got one starting with b'GIF89'"
    ) as refused:
        phases.create_run(test, bee, "bee-gif", pdf=SimpleUploadedFile("notes.pdf", b"GIF89a...."))
    assert refused.value.code == "not_a_pdf"
    settings.DEID_DESCRIPTION_PDF_MAX_BYTES = len(PDF) - 1
    with pytest.raises(phases.Refused, match=f"is {len(PDF)} bytes; at most {len(PDF) - 1} bytes") as refused:
        phases.create_run(test, bee, "bee-big", pdf=SimpleUploadedFile("notes.pdf", PDF))
    assert refused.value.code == "pdf_too_large"
    settings.DEID_DESCRIPTION_PDF_MAX_BYTES = len(PDF)
    run = phases.create_run(
        test, bee, "bee-pdf", description="face swap, 2 stages", pdf=SimpleUploadedFile("Bee notes.pdf", PDF)
    )
    assert run.description_pdf.name.startswith("descriptions/") and "Bee" not in run.description_pdf.name
    assert run.description_pdf.read() == PDF
    assert not Submission.objects.filter(name__in=["bee-gif", "bee-big"]).exists()


def test_the_demo_sets_up_a_development_and_a_blind_test_phase_once(campaign):
    from evalsite.portal.demo import ensure_phases

    now = timezone.now()
    dev, test = ensure_phases(campaign, now=now)
    assert list(dev.videos().values_list("name", flat=True)) == ["bbaf2n", "id2_vcd_swwp2s"]
    assert list(test.videos().values_list("name", flat=True)) == ["brbk7n"]
    assert (dev.results_visibility, test.results_visibility) == (
        ResultVisibility.TEAM,
        ResultVisibility.PUBLIC,
    )
    assert test.closes_at == now + dt.timedelta(days=14) and test.results_release_at == now + dt.timedelta(
        days=15
    )
    assert phases.released(dev, now) and not phases.released(test, now)
    assert phases.released(test, now + dt.timedelta(days=15))
    again = ensure_phases(campaign, now=now + dt.timedelta(days=1))  # idempotent: nothing moves
    assert [p.pk for p in again] == [dev.pk, test.pk] and again[1].closes_at == test.closes_at
    assert Phase.objects.filter(campaign=campaign).count() == 2


def test_the_admin_keeps_a_run_in_its_phase_and_team(life_cycle):
    # Moving the development run (run 1, primary) into the test phase, where Owl has its
    # run 1 and primary already, raised IntegrityError (a 500) and bypassed quota and deadline.
    owl_dev = life_cycle["owl-dev"]
    root = User.objects.create_superuser("root", password="pw-root-123")
    client = Client()
    client.force_login(root)
    url = reverse("admin:evalsite_submission_change", args=[owl_dev.pk])
    page = client.get(url)
    form = page.context["adminform"].form
    assert {"phase", "team", "campaign"}.isdisjoint(form.fields) and {"name", "description"} <= set(
        form.fields
    )
    data = {"name": "owl-dev-renamed", "description": "moved?", "baseline_method": ""}
    data["phase"], data["team"] = life_cycle["test"].pk, life_cycle["bee-test"].team_id  # ignored
    for inline in page.context["inline_admin_formsets"]:
        formset = inline.formset
        data.update({f"{formset.prefix}-{k}": v for k, v in formset.management_form.initial.items()})
        for index, row in enumerate(formset.forms):
            data[f"{formset.prefix}-{index}-id"] = row.instance.pk
            data[f"{formset.prefix}-{index}-submission"] = owl_dev.pk
    response = client.post(url, data)
    assert response.status_code == 302
    owl_dev.refresh_from_db()
    assert (owl_dev.name, owl_dev.phase.name, owl_dev.team.name, owl_dev.run_number, owl_dev.primary) == (
        "owl-dev-renamed",
        "development",
        "Team Owl",
        1,
        True,
    )
