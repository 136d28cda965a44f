"""Evaluate everything for a submission (automated/django_app/evaluate_all.py) from the API,
the organizer page and the admin; the progress page, its JSON and the run log.

Real face and attack runs on the tiny real GRID campaign (3 clips, 4 identities). Without a
broker (the test settings) the queued tasks run in-process, so a run started by a request
has finished when it returns; to watch progress go from 0/N to N/N, the queueing is held
back (as when no worker has picked the tasks yet) and the real per-video tasks are then
called one by one.
"""

from pathlib import Path

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from rest_framework.test import APIClient

from automated.django_app import dispatch, embedded, evaluate_all
from automated.django_app.attack_models import AttackRun
from automated.django_app.face_models import AutomatedRun
from automated.django_app.face_tasks import face_video_task
from automated.django_app.services import create_baseline_submission
from evalsite.models import Campaign

from .test_face_services import campaign  # noqa: F401  (the tiny real GRID campaign)

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

FAST_FACE = {"stride": 40}  # 2 tested frames per 75-frame clip
FAST_ATTACK = {"attackers": ["clear", "naive"], "recognizers": ["eigenfaces"], "stride": 25}
CLIPS = ["bbaf2n", "id2_vcd_swwp2s", "lwbsza"]  # the masked videos in plan order (by name)
PERMS = ["add_automatedrun", "view_automatedrun", "add_attackrun", "view_attackrun", "view_submission"]


@pytest.fixture
def submission(campaign):  # noqa: F811
    return create_baseline_submission(campaign, "identity", web_copies=False)


@pytest.fixture
def fast_defaults(monkeypatch):
    """Small runs for the callers that take the defaults (the organizer page, the admin)."""
    monkeypatch.setattr(evaluate_all, "DEFAULT_OPTIONS", {"face": FAST_FACE, "attack": FAST_ATTACK})


def _staff(name, for_campaign, perms=PERMS):
    user = User.objects.create_user(name, password="pw", is_staff=True)
    for_campaign.organizers.add(user)
    user.user_permissions.add(
        *Permission.objects.filter(content_type__app_label__in=["automated", "evalsite"], codename__in=perms)
    )
    return User.objects.get(pk=user.pk)  # fresh permission cache


@pytest.fixture
def organizer(campaign):  # noqa: F811
    return _staff("org", campaign)


def _api(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


def _web(user):
    client = Client()
    client.force_login(user)
    return client


def _evaluate(client, submission, body=None):
    return client.post(
        f"/api/submissions/{submission.pk}/evaluate/",
        {"face": FAST_FACE, "attack": FAST_ATTACK} if body is None else body,
        format="json",
    )


def test_evaluate_everything_through_the_api_and_a_second_post_starts_nothing(organizer, submission):
    client = _api(organizer)
    response = _evaluate(client, submission)
    assert response.status_code == 201, response.json()  # in-process: both finished
    body = response.json()
    assert [(p["kind"], p["state"]) for p in body["parts"]] == [("face", "started"), ("attack", "started")]
    face, attack = (p["run"] for p in body["parts"])
    assert (face["status"], face["progress"], face["config"]["stride"]) == ("completed", "3/3 videos", 40)
    assert face["config"]["behaviour"] is True
    assert (attack["status"], attack["progress"]) == ("completed", "3/3 videos")
    assert body["progress_url"].endswith(f"/organizer/automated/submission/{submission.pk}/progress/")
    face_run = AutomatedRun.objects.get(pk=face["id"])
    assert face_run.video_scores.count() == 3
    assert face_run.video_scores.filter(behaviour_score__isnull=False).count() == 3  # behaviour came with it
    attack_run = AttackRun.objects.get(pk=attack["id"])
    assert attack_run.extractions.count() == 3  # the face crops of every video, then the suite

    again = _evaluate(client, submission)
    assert again.status_code == 200, again.json()
    assert [(p["kind"], p["state"], p["run_id"]) for p in again.json()["parts"]] == [
        ("face", "up to date", face["id"]),
        ("attack", "up to date", attack["id"]),
    ]
    assert AutomatedRun.objects.count() == 1 and AttackRun.objects.count() == 1
    # Other options make the completed run out of date for that part only.
    third = _evaluate(client, submission, {"face": {"stride": 50}, "attack": FAST_ATTACK})
    assert [(p["kind"], p["state"]) for p in third.json()["parts"]] == [
        ("face", "started"),
        ("attack", "up to date"),
    ]
    assert AutomatedRun.objects.count() == 2 and AttackRun.objects.count() == 1


def test_evaluate_everything_from_the_organizer_page(organizer, submission, fast_defaults):
    client = _web(organizer)
    page = client.get(f"/organizer/{submission.campaign.pk}/").content.decode()
    action = f"/organizer/automated/submission/{submission.pk}/evaluate/"
    assert f'action="{action}"' in page and "Evaluate everything" in page
    response = client.post(action, follow=True)
    assert response.redirect_chain == [(f"/organizer/automated/submission/{submission.pk}/progress/", 302)]
    html = response.content.decode()
    face = AutomatedRun.objects.get(submission=submission)
    attack = AttackRun.objects.get(submission=submission)
    assert (face.status, face.config["stride"], attack.status, attack.config["recognizers"]) == (
        "completed",
        40,
        "completed",
        ["eigenfaces"],
    )
    assert f"face: started: face run {face.pk}: completed: 3/3 videos" in html  # the message
    assert f"face run {face.pk}" in html and f"attack run {attack.pk}" in html
    # The bars count every unit of work: the face run's 3 videos; the attack's 3 videos, its
    # cross-video folds and its summary step.
    assert html.count('<progress max="3" value="3">100%</progress>') == 1
    units = 3 + attack.folds_total + 1
    assert f'<progress max="{units}" value="{units}">100%</progress>' in html
    folds = f"{attack.folds_total}/{attack.folds_total} folds, " if attack.folds_total else ""
    assert f"3/3 videos, {folds}summary 1/1 (100%)" in html
    for n, clip in enumerate(CLIPS, start=1):
        assert f"video {n}/3 done: {clip} (2 frames tested)" in html
    assert "finished: 3/3 videos in" in html
    # The campaign page now shows both parts done; a second click starts nothing.
    page = client.get(f"/organizer/{submission.campaign.pk}/").content.decode()
    assert f"face run {face.pk}: completed" in page and f"attack run {attack.pk}: completed" in page
    html = client.post(action, follow=True).content.decode()
    assert "face: up to date" in html and "attack: up to date" in html
    assert AutomatedRun.objects.count() == 1 and AttackRun.objects.count() == 1


def test_progress_goes_from_0_to_n_and_a_double_post_starts_one_set_of_runs(
    organizer, submission, monkeypatch
):
    # As with a broker whose workers have not picked the tasks yet: runs stay pending.
    monkeypatch.setattr(dispatch, "queue_runs", lambda runs, **kw: None)
    client = _api(organizer)
    first, second = _evaluate(client, submission), _evaluate(client, submission)
    assert (first.status_code, second.status_code) == (202, 202)
    assert [p["state"] for p in first.json()["parts"]] == ["started", "started"]
    assert [p["state"] for p in second.json()["parts"]] == ["running", "running"]
    assert [p["run_id"] for p in first.json()["parts"]] == [p["run_id"] for p in second.json()["parts"]]
    assert AutomatedRun.objects.count() == 1 and AttackRun.objects.count() == 1
    run = AutomatedRun.objects.get()

    web = _web(organizer)
    url = f"/organizer/automated/submission/{submission.pk}/progress.json"

    def face_progress():
        data = web.get(url).json()
        assert data["active"] is True  # the attack run is still pending throughout
        (entry,) = [r for r in data["runs"] if r["kind"] == "face"]
        return entry

    entry = face_progress()
    assert (entry["status"], entry["videos_done"], entry["videos_total"], entry["percent"]) == (
        "pending",
        0,
        3,
        0,
    )
    assert [e["text"] for e in entry["log"]] == ["queued: 3 videos planned"]
    page = web.get(f"/organizer/automated/submission/{submission.pk}/progress/").content.decode()
    assert '<progress max="3" value="0">0%</progress>' in page and "Updating every 2 seconds" in page
    for done, masked_id in enumerate(run.planned_videos, start=1):
        face_video_task(run.pk, masked_id)  # the real per-video task, as a worker runs it
        entry = face_progress()
        assert (entry["videos_done"], entry["percent"]) == (done, round(100 * done / 3))
        assert (
            entry["log"][-1 if done < 3 else -2]["text"]
            == f"video {done}/3 done: {CLIPS[done - 1]} (2 frames tested)"
        )
    assert entry["status"] == "completed" and entry["progress"] == "3/3 videos"
    events = [e["event"] for e in entry["log"]]
    assert events == ["queued", "started", "video done", "video done", "video done", "finished"]
    assert all(e["at"] for e in entry["log"] if e["event"] in ("queued", "started", "finished"))


def test_the_log_shows_the_failed_video_and_its_reason(organizer, submission):
    broken = submission.masked_videos.get(source_video__name="id2_vcd_swwp2s")
    Path(broken.file.path).write_bytes(b"not a video at all")
    response = _evaluate(_api(organizer), submission, {"face": FAST_FACE})
    (face, attack) = response.json()["parts"]
    assert face["state"] == "started" and face["run"]["status"] == "failed"
    run = AutomatedRun.objects.get(pk=face["run_id"])
    assert "source video 'id2_vcd_swwp2s'" in run.error
    log = _web(organizer).get(f"/organizer/automated/submission/{submission.pk}/progress.json").json()
    (entry,) = [r for r in log["runs"] if r["id"] == run.pk and r["kind"] == "face"]
    texts = [e["text"] for e in entry["log"]]
    assert texts[:3] == ["queued: 3 videos planned", "started", "video 1/3 done: bbaf2n (2 frames tested)"]
    assert texts[3] == f"failed: {run.error}" and texts[4] == "not done: id2_vcd_swwp2s, lwbsza"
    assert (entry["videos_done"], entry["percent"]) == (1, 33)
    # The failed run does not cover the part: evaluating again starts a new face run.
    Path(broken.file.path).write_bytes(Path(broken.source_video.file.path).read_bytes())
    again = _evaluate(_api(organizer), submission, {"face": FAST_FACE, "attack": FAST_ATTACK})
    assert again.json()["parts"][0]["state"] == "started"
    assert again.json()["parts"][0]["run"]["status"] == "completed"


def test_the_attack_waits_for_its_inputs_and_says_why(organizer, submission):
    submission.masked_videos.get(source_video__name="lwbsza").delete()
    response = _evaluate(
        _api(organizer), submission, {"face": {**FAST_FACE, "allow_incomplete": True}, "attack": FAST_ATTACK}
    )
    assert response.status_code == 201, response.json()
    face, attack = response.json()["parts"]
    assert (face["state"], face["run"]["progress"]) == ("started", "2/2 videos")
    assert attack["state"] == "waiting" and attack["run"] is None
    assert "is incomplete: 1 of 3 source videos have no masked video (lwbsza)" in attack["detail"]
    assert attack["detail"].endswith('(/evaluate/: {"attack": {"allow_incomplete": true}})')
    assert not AttackRun.objects.exists()


@pytest.mark.parametrize(
    "body, field, message",
    [
        ({"gait": {}}, "gait", "unknown part; parts are face, attack"),
        ({"face": {"stride": 0}}, "face", "greater than or equal to 1"),
        ({"attack": {"recognizers": ["arcface"]}}, "attack", '"arcface" is not a valid choice'),
        ({"face": [5]}, "face", "JSON object"),
    ],
)
def test_bad_evaluate_requests_get_a_specific_400_and_start_nothing(
    organizer, submission, body, field, message
):
    response = _evaluate(_api(organizer), submission, body)
    assert response.status_code == 400 and message in str(response.json()[field])
    assert not AutomatedRun.objects.exists() and not AttackRun.objects.exists()


def test_another_campaigns_organizer_and_staff_without_permission_start_nothing(campaign, submission):  # noqa: F811
    other = Campaign.objects.create(name="Other", slug="other")
    stranger = _staff("stranger", other)
    assert _evaluate(_api(stranger), submission).status_code == 404
    web = _web(stranger)
    base = f"/organizer/automated/submission/{submission.pk}"
    assert [web.post(f"{base}/evaluate/").status_code, web.get(f"{base}/progress/").status_code] == [404, 404]
    assert web.get(f"{base}/progress.json").status_code == 404
    viewer = _staff("viewer", campaign, ["view_automatedrun", "view_submission", "add_automatedrun"])
    response = _evaluate(_api(viewer), submission)
    assert response.status_code == 403 and "may not start" in response.json()["detail"]
    assert _web(viewer).post(f"{base}/evaluate/").status_code == 403
    assert "Evaluate everything" not in _web(viewer).get(f"{base}/progress/").content.decode()
    assert not AutomatedRun.objects.exists() and not AttackRun.objects.exists()


def test_admin_action_evaluates_everything_and_links_the_progress(admin_client, submission, monkeypatch):
    # Pending, as before a worker picks them up.
    monkeypatch.setattr(dispatch, "queue_runs", lambda runs, **kw: None)
    response = admin_client.post(
        "/admin/evalsite/submission/",
        {"action": "evaluate_everything", "_selected_action": [submission.pk]},
        follow=True,
    )
    html = response.content.decode()
    face, attack = AutomatedRun.objects.get(), AttackRun.objects.get()
    assert f"face started: face run {face.pk}: pending: 0/3 videos" in html
    assert f"attack started: attack run {attack.pk}: pending: 0/3 videos" in html
    assert f'href="/organizer/automated/submission/{submission.pk}/progress/"' in html
    admin_client.post(
        "/admin/evalsite/submission/", {"action": "evaluate_everything", "_selected_action": [submission.pk]}
    )
    assert AutomatedRun.objects.count() == 1 and AttackRun.objects.count() == 1


def test_the_log_of_an_attack_run_whose_videos_are_done_says_the_suite_is_running(submission):
    from automated.django_app.attack_models import AttackExtraction
    from automated.django_app.run_progress import percent_done, run_log

    planned = list(submission.masked_videos.order_by("source_video__name").values_list("pk", flat=True))
    run = AttackRun.objects.create(
        submission=submission, planned_videos=planned, videos_total=3, videos_done=3, status="running"
    )
    for pk, seconds in zip(planned, [1.25, 2.5, 0.75]):
        AttackExtraction.objects.create(run=run, masked_video_id=pk, n_crops=15, extraction_s=seconds)
    texts = [event.text for event in run_log(run)]
    assert texts[1:4] == [
        "video 1/3 done: bbaf2n (15 face crops, 1.2 s)",
        "video 2/3 done: id2_vcd_swwp2s (15 face crops, 2.5 s)",
        "video 3/3 done: lwbsza (15 face crops, 0.8 s)",
    ]
    assert texts[-1].startswith("every video done; ") and texts[-1].endswith("(attack suite)")
    # 3 of its 4 units (3 videos, no fold planned, the summary step still to come): not 100 %.
    assert percent_done(run) == 75


def test_without_a_broker_the_organizer_page_runs_them_in_a_thread_and_answers_at_once(
    organizer, submission, fast_defaults, monkeypatch
):
    started = []

    class Thread:  # runs its target when the page has answered (the test's in-memory
        # database cannot be seen from another thread)
        def __init__(self, target, name, daemon):
            assert daemon and name == "automated-runs"
            self.target = target

        def start(self):
            started.append(self.target)

    monkeypatch.setattr(embedded.threading, "Thread", Thread)
    monkeypatch.setattr(embedded, "background_possible", lambda: True)
    embedded.reset()
    client = _web(organizer)
    html = client.post(
        f"/organizer/automated/submission/{submission.pk}/evaluate/", follow=True
    ).content.decode()
    face, attack = AutomatedRun.objects.get(), AttackRun.objects.get()
    assert (face.status, attack.status) == ("pending", "pending")  # the page answered first
    assert f"face: started: face run {face.pk}: pending: 0/3 videos" in html
    assert "Updating every 2 seconds" in html
    (work,) = started
    work()  # the runner thread's body: both runs, one after the other
    face.refresh_from_db(), attack.refresh_from_db()
    assert (face.status, face.progress, attack.status) == ("completed", "3/3 videos", "completed")
