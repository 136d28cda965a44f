"""REST API: staff only, organizers confined to their campaigns, reports in JSON and CSV."""

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from evalsite.importer import import_dataset
from evalsite.models import GalleryImage, MaskedVideo, SourceVideo

from .conftest import make_zip


@pytest.fixture
def other_campaign(campaign, tiny_dataset):
    return import_dataset(tiny_dataset, "Other", web_copies=False).campaign


def _client(user=None):
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


@pytest.fixture
def organizer(campaign):
    user = User.objects.create_user("org", password="pw", is_staff=True)
    campaign.organizers.add(user)
    return user


@pytest.mark.parametrize(
    "url", ["/api/campaigns/", "/api/identities/", "/api/source-videos/", "/api/submissions/"]
)
def test_anonymous_and_non_staff_users_are_refused(campaign, url):
    anonymous = _client().get(url)
    assert anonymous.status_code == 401 and anonymous["WWW-Authenticate"].startswith("Basic")
    rater = User.objects.create_user("rater", password="pw")
    assert _client(rater).get(url).status_code == 403


def test_organizer_sees_only_their_campaigns(organizer, campaign, other_campaign):
    client = _client(organizer)
    assert [c["name"] for c in client.get("/api/campaigns/").json()] == ["Tiny"]
    assert client.get(f"/api/campaigns/{other_campaign.pk}/").status_code == 404
    videos = client.get("/api/source-videos/").json()
    assert len(videos) == 3 and {v["campaign"] for v in videos} == {campaign.pk}
    other_video = SourceVideo.objects.filter(campaign=other_campaign).first()
    assert client.get(f"/api/source-videos/{other_video.pk}/download/").status_code == 404
    other_image = GalleryImage.objects.filter(identity__campaign=other_campaign).first()
    assert client.get(f"/api/gallery-images/{other_image.pk}/download/").status_code == 404
    superuser = User.objects.create_superuser("root", "r@example.org", "pw")
    assert len(_client(superuser).get("/api/campaigns/").json()) == 2


def test_organizer_of_another_campaign_cannot_see_or_upload_to_a_submission(
    submission, other_campaign, masked_files, tmp_path
):
    stranger = User.objects.create_user("stranger", password="pw", is_staff=True)
    other_campaign.organizers.add(stranger)
    client = _client(stranger)
    assert client.get(f"/api/submissions/{submission.pk}/").status_code == 404
    assert client.get(f"/api/submissions/{submission.pk}/report/").status_code == 404
    archive = make_zip(tmp_path / "a.zip", {"bbaf2n.mp4": masked_files["good_bbaf2n"]})
    response = client.post(
        f"/api/submissions/{submission.pk}/upload/",
        {"file": SimpleUploadedFile("a.zip", archive.read_bytes())},
        format="multipart",
    )
    assert response.status_code == 404 and not MaskedVideo.objects.exists()
    response = client.post(
        "/api/submissions/", {"campaign": submission.campaign.pk, "team": "X", "name": "m"}
    )
    assert response.status_code == 400 and "campaign" in response.json()


def test_identities_list_codes_attributes_and_staff_download_links_only(organizer, campaign):
    identities = _client(organizer).get(f"/api/identities/?campaign={campaign.slug}").json()
    assert [i["code"] for i in identities] == ["ID01", "ID02", "ID03"]
    assert identities[1]["attributes"] == {"gender_unofficial": "female"}
    link = identities[0]["gallery_images"][0]["download"]
    assert link.startswith("http://testserver/api/gallery-images/") and "/media/" not in str(identities)
    response = _client(organizer).get(link)
    assert response.status_code == 200 and response["Content-Type"] == "image/png"


def test_create_then_upload_returns_the_validation_report_and_completeness(
    organizer, campaign, masked_files, tmp_path
):
    client = _client(organizer)
    created = client.post("/api/submissions/", {"campaign": campaign.pk, "team": "Team B", "name": "blurry"})
    assert created.status_code == 201
    sid = created.json()["id"]
    archive = make_zip(
        tmp_path / "b.zip", {"bbaf2n.mp4": masked_files["good_bbaf2n"], "brbk7n.mp4": masked_files["small"]}
    )
    response = client.post(
        f"/api/submissions/{sid}/upload/",
        {"file": SimpleUploadedFile("b.zip", archive.read_bytes())},
        format="multipart",
    )
    assert response.status_code == 201
    report = response.json()
    assert [(f["file"], f["status"], f["code"]) for f in report["files"]] == [
        ("bbaf2n.mp4", "accepted", "accepted"),
        ("brbk7n.mp4", "rejected", "size_mismatch"),
    ]
    assert report["missing_videos"] == ["brbk7n", "id2_vcd_swwp2s"] and report["complete"] is False
    detail = client.get(f"/api/submissions/{sid}/").json()
    assert (detail["complete"], detail["masked_videos"], detail["source_videos"]) == (False, 1, 3)
    uploads = client.get(f"/api/submissions/{sid}/uploads/").json()
    assert uploads[0]["report"]["files"][1]["code"] == "size_mismatch"
    duplicate = client.post(
        "/api/submissions/", {"campaign": campaign.pk, "team": "Team B", "name": "blurry"}
    )
    assert duplicate.status_code == 400 and "already has a submission" in str(duplicate.json())


def test_upload_of_a_non_zip_is_a_400_with_a_code_and_its_record(organizer, submission):
    client = _client(organizer)
    response = client.post(
        f"/api/submissions/{submission.pk}/upload/",
        {"file": SimpleUploadedFile("x.zip", b"not a zip")},
        format="multipart",
    )
    assert response.status_code == 400
    body = response.json()
    assert body["file"][0]["code"] == "not_a_zip" and body["file"][0]["message"].startswith(
        "x.zip is not a zip file"
    )
    record = client.get(f"/api/submissions/{submission.pk}/uploads/{body['upload_id']}/").json()
    assert (record["status"], record["error_code"]) == ("failed", "not_a_zip")
    assert record["report"]["files"] == [
        {
            "file": "x.zip",
            "status": "rejected",
            "code": "not_a_zip",
            "message": body["file"][0]["message"],
            "video": "",
        }
    ]


def test_report_and_summaries_in_json_and_csv(organizer, submission, campaign):
    client = _client(organizer)
    report = client.get(f"/api/submissions/{submission.pk}/report/").json()
    assert report["summary"]["method"] == "method-1"
    assert [v["video"] for v in report["videos"]] == ["bbaf2n", "brbk7n", "id2_vcd_swwp2s"]
    csv_response = client.get(f"/api/submissions/{submission.pk}/report/?format=csv")
    assert csv_response["Content-Type"].startswith("text/csv")
    assert (
        csv_response.content.decode()
        .splitlines()[0]
        .startswith("video,identity_code,action,has_masked_video")
    )
    summary = client.get(f"/api/submissions/{submission.pk}/summary/").json()
    assert (summary["team"], summary["complete"], summary["source_videos"]) == ("Team A", False, 3)
    table = client.get(f"/api/campaigns/{campaign.pk}/summary/?format=csv").content.decode().splitlines()
    assert table[0].startswith(
        "submission_id,team,method,baseline_method,complete,masked_videos,source_videos"
    )
    assert table[1].startswith(f"{submission.pk},Team A,method-1,,False,0,3")


def test_with_a_broker_the_upload_answers_202_and_its_record_until_a_worker_has_validated_it(
    organizer, submission, masked_files, tmp_path, settings
):
    from evalsite.validation import run_upload

    settings.CELERY_TASK_ALWAYS_EAGER = False  # the task is queued on commit, for a worker
    client = _client(organizer)
    archive = make_zip(tmp_path / "a.zip", {"bbaf2n.mp4": masked_files["good_bbaf2n"]})
    response = client.post(
        f"/api/submissions/{submission.pk}/upload/",
        {"file": SimpleUploadedFile("a.zip", archive.read_bytes())},
        format="multipart",
    )
    assert response.status_code == 202
    body = response.json()
    assert body["status"] == "queued" and body["url"].endswith(
        f"/api/submissions/{submission.pk}/uploads/{body['upload_id']}/"
    )
    assert client.get(body["url"]).json()["status"] == "queued" and not MaskedVideo.objects.exists()
    run_upload(body["upload_id"], web_copies=False)  # what the worker runs
    record = client.get(body["url"]).json()
    assert (record["status"], record["accepted_count"]) == ("done", 1)
    assert record["report"]["files"][0]["code"] == "accepted"
