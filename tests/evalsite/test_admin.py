"""Admin: changelists, permission-checked thumbnails, zip upload flow, report downloads."""

import pytest
from django.contrib.auth.models import Permission, User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from evalsite.models import GalleryImage, MaskedVideo, SubmissionUpload

from .conftest import make_zip

MODELS = [
    "campaign",
    "identity",
    "galleryimage",
    "sourcevideo",
    "team",
    "submission",
    "maskedvideo",
    "submissionupload",
]


@pytest.fixture
def admin_client_(client, db):
    client.force_login(User.objects.create_superuser("boss", "boss@example.org", "pw"))
    return client


def _organizer(name, campaign=None):
    user = User.objects.create_user(name, password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="evalsite"))
    if campaign is not None:
        campaign.organizers.add(user)
    return user


@pytest.mark.parametrize("model", MODELS)
def test_every_catalogue_changelist_renders(admin_client_, campaign, model):
    assert admin_client_.get(reverse(f"admin:evalsite_{model}_changelist")).status_code == 200


def test_identity_page_shows_thumbnails_through_the_staff_view(admin_client_, campaign):
    image = GalleryImage.objects.get(identity__code="ID02")
    page = admin_client_.get(
        reverse("admin:evalsite_identity_change", args=[image.identity.pk])
    ).content.decode()
    url = reverse("evalsite_staff:gallery_image", args=[image.token])
    assert f'src="{url}"' in page and "/media/" not in page
    response = admin_client_.get(url)
    assert response.status_code == 200 and response["Content-Type"] == "image/png"


def test_thumbnail_is_refused_to_anonymous_and_to_another_campaigns_organizer(client, campaign):
    url = reverse("evalsite_staff:gallery_image", args=[GalleryImage.objects.first().token])
    assert client.get(url).status_code == 302  # to the login page
    client.force_login(_organizer("other"))
    assert client.get(url).status_code == 404
    client.force_login(_organizer("mine", campaign))
    assert client.get(url).status_code == 200


def test_upload_flow_reports_each_file_and_keeps_the_good_one(
    admin_client_, submission, masked_files, tmp_path
):
    upload_url = reverse("admin:evalsite_submission_upload", args=[submission.pk])
    page = admin_client_.get(upload_url)
    assert page.status_code == 200 and "id2_vcd_swwp2s" in page.content.decode()
    archive = make_zip(
        tmp_path / "team.zip",
        {"bbaf2n.mp4": masked_files["good_bbaf2n"], "brbk7.mp4": masked_files["good_brbk7n"]},
    )
    response = admin_client_.post(
        upload_url, {"file": SimpleUploadedFile("team.zip", archive.read_bytes())}, follow=True
    )
    upload = SubmissionUpload.objects.get()
    assert response.redirect_chain[-1][0] == reverse(
        "admin:evalsite_submissionupload_change", args=[upload.pk]
    )
    html = response.content.decode()
    assert "unknown_name" in html and "did you mean &#x27;brbk7n&#x27;?" in html
    assert "incomplete: 2 source video(s) missing: brbk7n, id2_vcd_swwp2s" in html
    assert "1 file(s) accepted, 1 rejected" in html
    assert MaskedVideo.objects.get().source_video.name == "bbaf2n"
    change = admin_client_.get(
        reverse("admin:evalsite_submission_change", args=[submission.pk])
    ).content.decode()
    assert "incomplete: 1/3 source videos have a valid masked video" in change


@pytest.mark.parametrize(
    ("name", "content", "code", "message"),
    [
        ("masked.mp4", b"\x00\x00", "not_a_zip", "masked.mp4 is not a zip file"),
        (
            "fake.zip",
            b"PK\x03\x04 cut short",
            "damaged_zip",
            "fake.zip: the zip is damaged: its central directory",
        ),
    ],
)
def test_a_file_that_is_not_a_readable_zip_gets_a_failed_record_with_its_code(
    admin_client_, submission, name, content, code, message
):
    response = admin_client_.post(
        reverse("admin:evalsite_submission_upload", args=[submission.pk]),
        {"file": SimpleUploadedFile(name, content)},
        follow=True,
    )
    upload = SubmissionUpload.objects.get()
    assert (upload.status, upload.error_code) == ("failed", code) and upload.error.startswith(message)
    assert upload.file.storage.open(upload.file.name).read() == content  # the upload itself is kept
    assert response.redirect_chain[-1][0] == reverse(
        "admin:evalsite_submissionupload_change", args=[upload.pk]
    )
    html = response.content.decode()
    assert f"failed ({code})" in html and f"<code>{code}</code>" in html


def test_report_and_validation_report_downloads(admin_client_, submission, masked_files, tmp_path):
    from evalsite.validation import ingest_submission_zip

    ingest_submission_zip(
        submission, make_zip(tmp_path / "a.zip", {"bbaf2n.mp4": masked_files["short"]}), web_copies=False
    )
    csv_response = admin_client_.get(reverse("admin:evalsite_submission_report", args=[submission.pk, "csv"]))
    assert csv_response["Content-Type"].startswith("text/csv")
    assert "attachment" in csv_response["Content-Disposition"]
    lines = csv_response.content.decode().splitlines()
    assert lines[0].startswith("video,identity_code,action,has_masked_video")
    assert lines[1].startswith("bbaf2n,ID01,talking,False")
    json_response = admin_client_.get(
        reverse("admin:evalsite_submission_report", args=[submission.pk, "json"])
    )
    assert json_response.json()["summary"]["complete"] is False
    upload = SubmissionUpload.objects.get()
    validation = admin_client_.get(
        reverse("admin:evalsite_submissionupload_download", args=[upload.pk, "csv"])
    )
    assert "bbaf2n.mp4,bbaf2n,rejected,frame_count_mismatch" in validation.content.decode()


def test_organizer_of_another_campaign_cannot_upload_or_download(client, submission):
    client.force_login(_organizer("other"))
    assert client.get(reverse("admin:evalsite_submission_upload", args=[submission.pk])).status_code == 404
    assert (
        client.get(reverse("admin:evalsite_submission_report", args=[submission.pk, "csv"])).status_code
        == 404
    )
    changelist = client.get(reverse("admin:evalsite_submission_changelist")).content.decode()
    assert "method-1" not in changelist


def test_non_staff_user_is_sent_to_login(client, submission):
    client.force_login(User.objects.create_user("rater", password="pw"))
    response = client.get(reverse("admin:evalsite_submission_report", args=[submission.pk, "csv"]))
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


@pytest.mark.parametrize("model", ["sourcevideo", "galleryimage", "maskedvideo"])
def test_change_pages_with_files_render_without_public_media_urls(
    admin_client_, submission, masked_files, tmp_path, model
):
    from evalsite.validation import ingest_submission_zip

    ingest_submission_zip(
        submission,
        make_zip(tmp_path / "a.zip", {"bbaf2n.mp4": masked_files["good_bbaf2n"]}),
        web_copies=False,
    )
    obj = {
        "sourcevideo": lambda: submission.campaign.source_videos.first(),
        "galleryimage": GalleryImage.objects.first,
        "maskedvideo": MaskedVideo.objects.first,
    }[model]()
    response = admin_client_.get(reverse(f"admin:evalsite_{model}_change", args=[obj.pk]))
    assert response.status_code == 200 and "/staff/" in response.content.decode()


def test_the_organizer_picker_offers_staff_users_only(admin_client_, campaign):
    """Issue 21: a team member's account (no staff flag) cannot be made an organizer from the admin."""
    staff = User.objects.create_user("picker-staff", password="pw-picker-staff", is_staff=True)
    member = User.objects.create_user("picker-team-member", password="pw-picker-member")
    response = admin_client_.get(reverse("admin:evalsite_campaign_change", args=[campaign.pk]))
    assert response.status_code == 200
    choices = {str(user) for user in response.context["adminform"].form.fields["organizers"].queryset}
    assert staff.username in choices
    assert member.username not in choices
    assert all(u.is_staff for u in response.context["adminform"].form.fields["organizers"].queryset)


def test_the_html_report_is_linked_beside_the_csv_and_json_downloads(client, submission):
    """Issue 21: organizers had the CSV and JSON only; the admin's submission tools and the
    organizer campaign page link the HTML report (each figure with its meaning) beside them."""
    client.force_login(_organizer("report-organizer", submission.campaign))
    page = reverse("leaderboard:report", args=[submission.pk])
    tools = client.get(reverse("admin:evalsite_submission_change", args=[submission.pk])).content.decode()
    assert (
        f'<a href="{page}">Report page</a> | '
        f'<a href="{reverse("admin:evalsite_submission_report", args=[submission.pk, "csv"])}">Report CSV</a> | '
        f'<a href="{reverse("admin:evalsite_submission_report", args=[submission.pk, "json"])}">Report JSON</a>'
    ) in tools
    campaign_page = client.get(reverse("trials:organizer_campaign", args=[submission.campaign.pk]))
    html = campaign_page.content.decode()
    api = reverse("submission-report", args=[submission.pk])
    assert f'<a href="{page}">report</a>' in html
    assert f'<a href="{api}?format=csv">CSV</a>' in html and f'<a href="{api}?format=json">JSON</a>' in html
    report = client.get(page)
    assert report.status_code == 200 and "method-1" in report.content.decode()
    assert client.get(f"{api}?format=json").json()["summary"]["method"] == "method-1"
