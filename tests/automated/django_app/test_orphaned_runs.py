"""Runs without a broker (the embedded default) across server restarts, and what the web answers (issue 21).

- A run left PENDING or RUNNING by a process that is gone (a real subprocess, killed) is
  resumed by the next progress view: its units left undone are executed, the done ones
  kept; a run whose owner is alive is left to it.
- ``POST /api/submissions/<id>/evaluate/`` and the admin's "Run face evaluation" answer
  "up to date" for a current submission and start nothing; with new work they answer at
  once ("started", the runs pending) and the work goes to a thread.
- The progress bar counts every unit: an attack run at 1/7 folds is below 100 %.

The tiny real GRID campaign (3 clips, 4 identities); a face run of 2 tested frames per clip.
"""

from __future__ import annotations

import io
import subprocess
import sys
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from automated.django_app import dispatch, embedded, lifecycle, processes
from automated.django_app.attack_models import AttackRun
from automated.django_app.face_models import AutomatedRun, VideoScore
from automated.django_app.face_tasks import face_video_task
from automated.django_app.run_progress import Units
from automated.django_app.services import create_baseline_submission

from .test_face_services import campaign  # noqa: F401  (the tiny real GRID campaign)

pytestmark = pytest.mark.django_db

POLL = '<span id="poll-state" aria-live="polite">'  # the page's "is anything running" line
PERMS = ["add_automatedrun", "view_automatedrun", "add_attackrun", "view_attackrun", "view_submission"]


@pytest.fixture
def submission(campaign):  # noqa: F811
    return create_baseline_submission(campaign, "identity", web_copies=False)


@pytest.fixture
def organizer(campaign):  # noqa: F811
    user = User.objects.create_user("org", password="pw", is_staff=True)
    campaign.organizers.add(user)
    user.user_permissions.add(
        *Permission.objects.filter(content_type__app_label__in=["automated", "evalsite"], codename__in=PERMS)
    )
    return User.objects.get(pk=user.pk)


def _web(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def sleeper():
    """A real child process (owner string, Popen); killed at the end if the test did not."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield processes.owner_of(child.pid), child
    child.kill()
    child.wait()


def test_owner_strings_name_live_and_dead_processes(sleeper):
    owner, child = sleeper
    host, boot, pid, ticks = owner.split()
    assert int(pid) == child.pid and ticks.isdigit() and boot != "-"
    assert processes.alive(owner) is True
    assert processes.alive(processes.this_process()) is True
    # The same pid with another start time is another process (a reused id), not the owner.
    assert processes.alive(f"{host} {boot} {pid} {int(ticks) + 1}") is False
    assert processes.alive(f"{host} another-boot {pid} {ticks}") is False  # rebooted since
    assert processes.alive(f"elsewhere.example {boot} {pid} {ticks}") is None  # cannot tell
    assert processes.alive("garbage") is False
    child.kill()
    child.wait()
    assert processes.alive(owner) is False


@pytest.mark.slow
def test_a_run_left_running_by_a_killed_process_is_resumed_by_the_progress_view(
    organizer, submission, sleeper
):
    owner, child = sleeper
    run = dispatch.create_run("face", submission, stride=40)
    assert run.owner == processes.this_process()  # no broker: this process executes it
    first = run.planned_videos[0]
    assert face_video_task(run.pk, first)  # one video done, as before the restart
    AutomatedRun.objects.filter(pk=run.pk).update(owner=owner)  # the (still live) server process
    score = VideoScore.objects.get(run=run)
    web = _web(organizer)
    url = f"/organizer/automated/submission/{submission.pk}/progress/"

    # While its owner lives, the run is its owner's: nothing is resumed, the page follows it.
    html = web.get(url).content.decode()
    run.refresh_from_db()
    assert (run.status, run.progress, run.owner) == ("running", "1/3 videos", owner)
    assert f"{POLL}Updating every 2 seconds&hellip;</span>" in html
    assert lifecycle.orphans(AutomatedRun) == []

    child.kill()  # the server process stops mid-run
    child.wait()
    assert [r.pk for r in lifecycle.orphans(AutomatedRun)] == [run.pk]
    html = web.get(url).content.decode()
    run.refresh_from_db()
    # Resumed here (no thread in the tests: the in-memory database), the done video kept.
    assert (run.status, run.progress, run.owner) == ("completed", "3/3 videos", processes.this_process())
    assert VideoScore.objects.filter(run=run).count() == 3
    assert VideoScore.objects.get(run=run, masked_video_id=first).pk == score.pk
    assert run.deliveries == {**{f"video:{pk}": 1 for pk in run.planned_videos}, "resumed": 1}
    assert "resumed once: the process running it had stopped (server restart?)" in html
    assert f"{POLL}No run is active.</span>" in html
    assert lifecycle.orphans(AutomatedRun) == []


def test_a_pending_run_of_a_dead_process_is_resumed_at_the_first_request(
    submission, settings, sleeper, no_execution
):
    """The ``request_started`` receiver: once per process, every orphan of every submission."""
    executed, _ = no_execution
    owner, child = sleeper
    run = dispatch.create_run("face", submission, stride=40)
    AutomatedRun.objects.filter(pk=run.pk).update(owner=owner)
    child.kill()
    child.wait()
    settings.DEID_RESUME_RUNS_ON_START = True
    dispatch._resumed_at_start.clear()
    Client().get("/")  # any first request of the process
    run.refresh_from_db()
    assert (run.status, run.owner, run.deliveries) == ("pending", processes.this_process(), {"resumed": 1})
    assert executed == [run.pk]  # handed to this process's executor
    AutomatedRun.objects.filter(pk=run.pk).update(owner=owner)  # orphaned again
    Client().get("/")  # not the first request any more: left to the pages
    assert executed == [run.pk] and AutomatedRun.objects.get(pk=run.pk).owner == owner
    # The command that would start its twin resumes it instead of refusing "already pending".
    out = io.StringIO()
    call_command("evaluate", str(submission.pk), "--stride", "40", "--no-wait", stdout=out)
    assert out.getvalue().startswith(f"run {run.pk} of {submission}: pending (0/3 videos)")
    assert executed == [run.pk, run.pk] and AutomatedRun.objects.count() == 1
    assert AutomatedRun.objects.get(pk=run.pk).deliveries == {"resumed": 2}
    # A run without an owner (left "running" before runs had owners): nobody else would run
    # it without a broker, so it is resumed once it is over a minute old.
    AutomatedRun.objects.filter(pk=run.pk).update(owner="", status="running")
    assert dispatch.recover(submission) == [] and len(executed) == 2  # just created: being started
    AutomatedRun.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(minutes=2))
    assert [r.pk for r in dispatch.recover(submission)] == [run.pk] and len(executed) == 3
    assert AutomatedRun.objects.get(pk=run.pk).owner == processes.this_process()


@pytest.fixture
def no_execution(monkeypatch):
    """Records every run this process would execute and every thread it would start."""
    executed, threads = [], []

    class Thread:
        def __init__(self, **kwargs):
            threads.append(kwargs)

        def start(self):
            pass

    monkeypatch.setattr(lifecycle, "execute_inline", lambda kind, run: executed.append(run.pk))
    monkeypatch.setattr(embedded.threading, "Thread", Thread)
    embedded.reset()
    yield executed, threads
    embedded.reset()  # the stand-in thread never drained its queue


def test_evaluate_answers_at_once_and_an_up_to_date_submission_starts_nothing(
    organizer, submission, no_execution, monkeypatch
):
    executed, threads = no_execution
    monkeypatch.setattr(embedded, "background_possible", lambda: True)  # a file database
    client = APIClient()
    client.force_authenticate(organizer)
    response = client.post(f"/api/submissions/{submission.pk}/evaluate/", {}, format="json")
    assert response.status_code == 202, response.json()
    parts = response.json()["parts"]
    assert [(p["kind"], p["state"], p["run"]["status"]) for p in parts] == [
        ("face", "started", "pending"),
        ("attack", "started", "pending"),
    ]
    assert parts[0]["detail"] == f"face run {parts[0]['run_id']}: pending: 0/3 videos"
    # One thread for both runs, face first; nothing executed in the request.
    assert [t["name"] for t in threads] == [embedded.THREAD_NAME] and executed == []

    # Once they completed (their plans and options are the current ones; the decision reads
    # no result row), every way to start them again answers "up to date" and starts nothing.
    face, attack = AutomatedRun.objects.get(), AttackRun.objects.get()
    for run in (face, attack):
        type(run).objects.filter(pk=run.pk).update(
            status="completed", videos_done=run.videos_total, finished_at=timezone.now()
        )
    AttackRun.objects.filter(pk=attack.pk).update(folds_done=attack.folds_total)
    response = client.post(f"/api/submissions/{submission.pk}/evaluate/", {}, format="json")
    assert response.status_code == 200, response.json()
    assert [(p["kind"], p["state"], p["run_id"]) for p in response.json()["parts"]] == [
        ("face", "up to date", face.pk),
        ("attack", "up to date", attack.pk),
    ]
    runs = client.post(f"/api/submissions/{submission.pk}/runs/", {"kind": "face"}, format="json")
    assert runs.status_code == 200 and (runs.json()["state"], runs.json()["id"]) == ("up to date", face.pk)
    page = _web(User.objects.create_superuser("root", password="pw")).post(
        "/admin/evalsite/submission/",
        {"action": "run_face_evaluation", "_selected_action": [submission.pk]},
        follow=True,
    )
    assert f"up to date: run {face.pk} completed (3/3 videos)" in page.content.decode()
    assert (AutomatedRun.objects.count(), AttackRun.objects.count()) == (1, 1)
    assert len(threads) == 1 and executed == []


def test_progress_counts_every_unit_an_attack_at_1_of_7_folds_is_below_100(organizer, submission):
    planned = list(submission.masked_videos.order_by("source_video__name").values_list("pk", flat=True))
    run = AttackRun.objects.create(
        submission=submission,
        planned_videos=planned,
        videos_total=3,
        videos_done=3,
        folds_total=7,
        folds_done=1,
        status="running",
    )
    data = _web(organizer).get(f"/organizer/automated/submission/{submission.pk}/progress.json").json()
    (entry,) = [r for r in data["runs"] if r["id"] == run.pk]
    # 3 videos + 1 fold of 3 videos + 7 folds + the summary: 4/11.
    assert (entry["units_done"], entry["units_total"], entry["percent"]) == (4, 11, 36)
    assert entry["units_text"] == "3/3 videos, 1/7 folds, summary 0/1"
    html = _web(organizer).get(f"/organizer/automated/submission/{submission.pk}/progress/").content.decode()
    assert '<progress max="11" value="4">36%</progress>' in html
    assert "3/3 videos, 1/7 folds, summary 0/1 (36%)" in html
    # Rounding never shows 100 % before the last unit.
    assert (Units(199, 200, "").percent, Units(200, 200, "").percent, Units(0, 0, "").percent) == (99, 100, 0)
