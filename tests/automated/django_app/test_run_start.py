"""Starting automated runs from the REST API and the admin, and following their progress.

Without a broker (the test settings) the queued tasks run in-process, so a started run is
complete when the request returns; on real workers: tests/ops/test_celery_runs.py.
"""

from pathlib import Path

import pytest
from django.contrib.auth.models import Permission, User
from django.core.files import File
from rest_framework.test import APIClient

from automated.django_app.attack_models import AttackFold, AttackRun
from automated.django_app.face_models import AutomatedRun
from automated.django_app.services import create_baseline_submission
from evalsite.models import Campaign, Identity, SourceVideo

from .test_face_services import campaign  # noqa: F401  (the tiny real GRID campaign)

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


@pytest.fixture
def submission(campaign):  # noqa: F811
    return create_baseline_submission(campaign, "identity", web_copies=False)


def _staff(name, for_campaign, *perms):
    user = User.objects.create_user(name, password="pw", is_staff=True)
    for_campaign.organizers.add(user)
    user.user_permissions.add(
        *Permission.objects.filter(content_type__app_label__in=["automated", "evalsite"], codename__in=perms)
    )
    return User.objects.get(pk=user.pk)  # fresh permission cache


def _client(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def organizer(campaign):  # noqa: F811
    return _staff(
        "org",
        campaign,
        "add_automatedrun",
        "view_automatedrun",
        "add_attackrun",
        "view_attackrun",
        "view_submission",
    )


def test_organizer_starts_a_face_run_through_the_api_and_follows_it(organizer, submission):
    client = _client(organizer)
    response = client.post(
        f"/api/submissions/{submission.pk}/runs/", {"kind": "face", "stride": 40}, format="json"
    )
    assert response.status_code == 201, response.json()  # in-process: already finished
    run = response.json()
    assert (run["kind"], run["status"], run["videos_done"], run["videos_total"]) == (
        "face",
        "completed",
        3,
        3,
    )
    assert run["config"] == {
        "stride": 40,
        "detector": "mediapipe",
        "embedder": "dlib_resnet",
        "threshold": 0.6,
        "behaviour": True,
    }
    assert run["error"] == ""
    assert AutomatedRun.objects.get(pk=run["id"]).video_scores.count() == 3
    assert (
        AutomatedRun.objects.get(pk=run["id"]).video_scores.filter(behaviour_score__isnull=True).count() == 0
    )
    listed = client.get(f"/api/submissions/{submission.pk}/runs/").json()
    assert [(r["id"], r["kind"], r["progress"]) for r in listed] == [(run["id"], "face", "3/3 videos")]


# A second clip of two identities (their gallery clips), so the attack has cross-video folds.
SECOND_CLIPS = {"ID01": "grid_identity_clips/s1/bbal6n.mpg", "ID03": "grid_talking_heads/pwij3p.mpg"}


@pytest.fixture
def two_video_submission(campaign, data_dir):  # noqa: F811
    """The identity baseline of the tiny campaign plus SECOND_CLIPS: 5 videos, ID07 with one."""
    for code, clip in SECOND_CLIPS.items():
        video = SourceVideo(
            campaign=campaign,
            identity=Identity.objects.get(campaign=campaign, code=code),
            name=Path(clip).stem,
            action="talking",
        )
        with (data_dir / "videos" / clip).open("rb") as handle:
            video.file.save(Path(clip).name, File(handle), save=True)
    return create_baseline_submission(campaign, "identity", web_copies=False)


def test_an_attack_run_started_through_the_api_lists_beside_face_runs(organizer, two_video_submission):
    submission = two_video_submission
    client = _client(organizer)
    face = client.post(
        f"/api/submissions/{submission.pk}/runs/", {"kind": "face", "stride": 40}, format="json"
    )
    attack = client.post(
        f"/api/submissions/{submission.pk}/runs/",
        {"kind": "attack", "attackers": ["clear", "naive"], "recognizers": ["eigenfaces"], "stride": 25},
        format="json",
    )
    assert attack.status_code == 201, attack.json()
    assert (attack.json()["status"], attack.json()["progress"]) == ("completed", "5/5 videos")
    run = AttackRun.objects.get(pk=attack.json()["id"])
    # Leave one video out over the 4 clips of ID01 and ID03 (ID07's one clip only trains),
    # one stored fold each; one cross-video row per recognizer x attacker.
    assert run.extractions.count() == 5
    assert run.folds_total == run.folds_done == AttackFold.objects.filter(run=run).count() == 4
    assert sorted(pk for fold in run.planned_folds for pk in fold) == sorted(
        submission.masked_videos.exclude(source_video__identity__code="ID07").values_list("pk", flat=True)
    )
    accuracy = dict(run.results.values_list("attacker", "accuracy"))
    assert sorted(accuracy) == ["clear", "naive"] and run.results.count() == 1 * 2
    # Masked = clear: the naive attacker (trained on clear, tested on masked) is the clear bound.
    assert accuracy["naive"] == accuracy["clear"]
    # The within-video table is stored apart: every video split in time, same pairs.
    assert sorted(row["attacker"] for row in run.scene_memorisation) == ["clear", "naive"]
    listed = client.get(f"/api/submissions/{submission.pk}/runs/").json()
    assert [(r["kind"], r["id"]) for r in listed] == [("attack", run.pk), ("face", face.json()["id"])]


@pytest.mark.parametrize(
    "body, field, message",
    [
        ({}, "kind", "choose one of face, attack; got None"),
        ({"kind": "gait"}, "kind", "choose one of face, attack; got 'gait'"),
        ({"kind": "face", "stride": 0}, "stride", "greater than or equal to 1"),
        ({"kind": "face", "stride": "five"}, "stride", "valid integer"),
        ({"kind": "face", "strides": 5}, "strides", "unknown option; known: stride, detector"),
        ({"kind": "face", "detector": "yolo"}, "detector", '"yolo" is not a valid choice'),
        ({"kind": "attack", "recognizers": ["arcface"]}, "recognizers", '"arcface" is not a valid choice'),
        ({"kind": "attack", "attackers": ["clear"]}, "detail", "no attack on the masking"),
        ({"kind": "attack", "seed": -1}, "seed", "greater than or equal to 0"),
    ],
)
def test_bad_run_requests_get_a_specific_400_and_create_nothing(organizer, submission, body, field, message):
    response = _client(organizer).post(f"/api/submissions/{submission.pk}/runs/", body, format="json")
    assert response.status_code == 400
    assert message in str(response.json()[field])
    assert not AutomatedRun.objects.exists() and not AttackRun.objects.exists()


def test_a_run_request_body_must_be_a_json_object(organizer, submission):
    client = _client(organizer)
    response = client.post(f"/api/submissions/{submission.pk}/runs/", ["face"], format="json")
    assert response.status_code == 400 and "JSON object" in response.json()["detail"]
    form = client.post(f"/api/submissions/{submission.pk}/runs/", {"kind": "face"})  # multipart
    assert form.status_code == 415


def test_organizer_of_another_campaign_can_neither_start_nor_list_runs(submission, tiny_other_campaign):
    stranger = _staff("stranger", tiny_other_campaign, "add_automatedrun", "view_automatedrun")
    client = _client(stranger)
    assert (
        client.post(f"/api/submissions/{submission.pk}/runs/", {"kind": "face"}, format="json").status_code
        == 404
    )
    assert client.get(f"/api/submissions/{submission.pk}/runs/").status_code == 404
    assert not AutomatedRun.objects.exists()


@pytest.fixture
def tiny_other_campaign(db):
    return Campaign.objects.create(name="Other", slug="other")


def test_staff_without_the_add_permission_cannot_start_a_run(campaign, submission):  # noqa: F811
    viewer = _staff("viewer", campaign, "view_automatedrun", "view_submission")
    response = _client(viewer).post(
        f"/api/submissions/{submission.pk}/runs/", {"kind": "face"}, format="json"
    )
    assert response.status_code == 403 and "may not start" in response.json()["detail"]
    assert not AutomatedRun.objects.exists()


def test_admin_action_starts_runs_and_the_run_list_shows_progress(admin_client, submission):
    changelist = "/admin/evalsite/submission/"
    response = admin_client.post(
        changelist, {"action": "run_face_evaluation", "_selected_action": [submission.pk]}, follow=True
    )
    run = AutomatedRun.objects.get(submission=submission)
    assert run.status == AutomatedRun.Status.COMPLETED and run.progress == "3/3 videos"
    assert f"run {run.pk} completed (3/3 videos)" in response.content.decode()
    assert "Follow their progress" in response.content.decode()
    page = admin_client.get(f"/admin/automated/automatedrun/?id__in={run.pk}")
    assert page.status_code == 200 and "3/3 videos" in page.content.decode()
    # An incomplete submission is refused with the reason; nothing is created for it.
    incomplete = create_baseline_submission(submission.campaign, "blur_frame", web_copies=False)
    incomplete.masked_videos.first().delete()
    response = admin_client.post(
        changelist, {"action": "run_attack_suite", "_selected_action": [incomplete.pk]}, follow=True
    )
    assert "is incomplete" in response.content.decode() and not AttackRun.objects.exists()


def test_a_face_run_through_the_api_without_a_threshold_takes_its_embedders_own():
    """The API's options carry no threshold of their own: an ArcFace run given only its
    embedder gets ArcFace's documented threshold, not dlib's 0.6 (which on ArcFace's unit
    vectors would accept far fewer genuine pairs)."""
    from automated.django_app.api import FaceRunOptions
    from automated.django_app.services import _run_config
    from automated.recognition import embedder_spec

    checked = FaceRunOptions(data={"embedder": "arcface"})
    assert checked.is_valid(), checked.errors
    assert "threshold" not in checked.validated_data
    config = _run_config(
        checked.validated_data["stride"],
        checked.validated_data["detector"],
        checked.validated_data.get("threshold"),
        checked.validated_data["embedder"],
    )
    assert config["threshold"] == pytest.approx(embedder_spec("arcface").threshold) == pytest.approx(1.2**0.5)
    given = FaceRunOptions(data={"embedder": "arcface", "threshold": 0.9})
    assert given.is_valid() and given.validated_data["threshold"] == 0.9
