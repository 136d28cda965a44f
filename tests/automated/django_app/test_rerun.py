"""Re-run everything (automated/django_app/rerun.py, issue 23): a campaign re-evaluated with changed
settings; its old results flagged until the new runs replace them; provenance on every run.

The tiny real GRID campaign (3 clips) with a team's complete submission whose face run was
computed with stride 5 (rows written directly). The queueing is held back (as when no worker
took the tasks yet), so no model runs: what is checked is which runs start, with which
settings, and what the reports say meanwhile.
"""

import io
import json

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from automated.django_app import dispatch, evaluate_all
from automated.django_app.face_models import AutomatedRun, VideoScore
from evalsite import reports
from evalsite.models import MaskedVideo, Phase
from evalsite.services import create_submission
from evalsite.staleness import run_staleness

from .test_face_services import campaign  # noqa: F401  (the tiny real GRID campaign)

pytestmark = pytest.mark.django_db


@pytest.fixture
def held_queue(monkeypatch):
    queued = []
    monkeypatch.setattr(dispatch, "queue_runs", lambda runs, **options: queued.extend(runs))
    monkeypatch.setattr(dispatch, "queue", lambda run, **options: queued.append(run))
    return queued


@pytest.fixture
def evaluated(campaign):  # noqa: F811
    """A complete team submission with a completed face run of stride 5 (behaviour measured)."""
    submission = create_submission(campaign, "Team Kestrel", "kestrel-1")
    masked = [
        MaskedVideo.objects.create(
            submission=submission, source_video=video, file=f"masked/k-{video.name}.mp4"
        )
        for video in campaign.source_videos.order_by("name")
    ]
    run = AutomatedRun.objects.create(
        submission=submission,
        config={"stride": 5, "detector": "mediapipe", "behaviour": True},
        status="completed",
        finished_at=timezone.now(),
        planned_videos=[m.pk for m in masked],
        videos_total=3,
        videos_done=3,
    )
    for m in masked:
        VideoScore.objects.create(run=run, masked_video=m, frames_tested=15, clear_faces=15, ssim=0.5)
    return submission, run


def test_a_rerun_with_changed_settings_flags_the_old_results_and_starts_new_runs(evaluated, held_queue):
    submission, old = evaluated
    campaign = submission.campaign
    assert run_staleness(submission, old) == {}
    assert old.provenance["code_version"].startswith(("git ", "deid-eval "))
    assert any(m["file"].endswith("shape_predictor_68_face_landmarks.dat") for m in old.provenance["models"])

    out = io.StringIO()
    call_command("rerun_campaign", campaign=campaign.slug, options='{"face": {"stride": 10}}', stdout=out)
    campaign.refresh_from_db()
    assert campaign.evaluation_options == {"face": {"stride": 10}}
    new = AutomatedRun.objects.filter(submission=submission).exclude(pk=old.pk).get()
    assert (new.status, new.config["stride"]) == ("pending", 10) and new in held_queue
    assert (
        new.provenance["packages"]["numpy"]
        and new.provenance["code_version"] == old.provenance["code_version"]
    )
    assert "Team Kestrel / kestrel-1: face: started" in out.getvalue()
    # Until the new run completes, the reported (old) run is flagged: every video it covers.
    stale = run_staleness(submission, old)
    assert stale["settings_changed"] == ["stride: 5 (now 10)"]
    assert stale["videos"] == ["bbaf2n", "id2_vcd_swwp2s", "lwbsza"]
    assert (
        "computed with other settings than the campaign's current ones: stride: 5 (now 10)" in stale["reason"]
    )
    summary = reports.submission_summary(submission)
    assert summary["stale"] is True and summary["stale_videos"] == ["bbaf2n", "id2_vcd_swwp2s", "lwbsza"]
    report = reports.per_video_report(submission)
    assert report["stale"].tolist() == [True, True, True]
    # A second re-run starts nothing: the new face run is pending.
    outcomes = {s.pk: parts for s, parts in evaluate_all_rerun(campaign)}
    face = next(p for p in outcomes[submission.pk] if p.kind == "face")
    assert (face.state, face.run.pk) == (evaluate_all.RUNNING, new.pk)
    # Once it completes with the new settings, it is what the report shows, and current.
    AutomatedRun.objects.filter(pk=new.pk).update(status="completed", finished_at=timezone.now())
    new.refresh_from_db()
    assert run_staleness(submission, new) == {}
    face = next(p for p in dict(evaluate_all_rerun(campaign))[submission] if p.kind == "face")
    assert (face.state, face.run.pk) == (evaluate_all.UP_TO_DATE, new.pk)


def evaluate_all_rerun(campaign, **kwargs):
    from automated.django_app.rerun import rerun_campaign

    return rerun_campaign(campaign, **kwargs)


def test_a_phase_rerun_touches_only_its_runs_and_bad_options_are_refused(evaluated, held_queue):
    submission, old = evaluated
    campaign = submission.campaign
    test = Phase.objects.create(campaign=campaign, name="test")
    with pytest.raises(CommandError, match="unknown part\\(s\\) gait; parts are face, attack"):
        call_command("rerun_campaign", campaign=campaign.slug, options='{"gait": {}}')
    with pytest.raises(CommandError, match="has no phase 'final'; its phases: test"):
        call_command("rerun_campaign", campaign=campaign.slug, phase="final")
    call_command(
        "rerun_campaign",
        campaign=campaign.slug,
        phase="test",
        options='{"face": {"stride": 10}}',
        stdout=io.StringIO(),
    )
    assert held_queue == []  # the submission is in no phase: nothing started
    # The API: the permission to start runs is needed; the body changes the settings.
    organizer = User.objects.create_user("org", password="pw", is_staff=True)
    campaign.organizers.add(organizer)
    api = APIClient()
    api.force_authenticate(organizer)
    response = api.post(f"/api/campaigns/{campaign.pk}/rerun/", {"face": {"stride": 20}}, format="json")
    assert response.status_code == 403
    organizer.user_permissions.add(
        *Permission.objects.filter(codename__in=["add_automatedrun", "add_attackrun"])
    )
    api.force_authenticate(User.objects.get(pk=organizer.pk))
    response = api.post(f"/api/campaigns/{campaign.pk}/rerun/", {"face": {"stride": 20}}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["settings"] == {"face": {"stride": 20}}
    parts = {p["kind"]: p for p in body["submissions"][0]["parts"]}
    assert parts["face"]["state"] == "started" and parts["face"]["run"]["config"]["stride"] == 20
    assert test.runs.count() == 0 and json.loads(json.dumps(body))  # plain JSON


def test_the_campaign_admin_action_reruns_with_the_campaigns_settings(evaluated, held_queue, client):
    """The organizer's button (admin action on the Campaign list): the command's path with the
    campaign's stored settings; without the permission to start runs it starts nothing."""
    submission, old = evaluated
    campaign = submission.campaign
    campaign.evaluation_options = {"face": {"stride": 10}}
    campaign.save(update_fields=["evaluation_options"])
    organizer = User.objects.create_user("org", password="pw", is_staff=True)
    organizer.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_campaign", "change_campaign"])
    )
    campaign.organizers.add(organizer)
    client.force_login(organizer)
    changelist = reverse("admin:evalsite_campaign_changelist")
    assert "rerun_campaigns" in client.get(changelist).content.decode()
    form = {"action": "rerun_campaigns", "_selected_action": [campaign.pk]}
    page = client.post(changelist, form, follow=True)
    assert "You may not start automated runs" in page.content.decode() and held_queue == []
    organizer.user_permissions.add(
        *Permission.objects.filter(codename__in=["add_automatedrun", "add_attackrun"])
    )
    page = client.post(changelist, form, follow=True)
    assert page.status_code == 200
    new = AutomatedRun.objects.filter(submission=submission).exclude(pk=old.pk).get()
    assert (new.status, new.config["stride"]) == ("pending", 10) and new in held_queue
    messages = [str(m) for m in page.context["messages"]]
    assert messages == [f"{campaign}: 1 submission(s); parts 2 started."]  # face and attack, messages
