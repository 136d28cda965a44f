"""One strict reading of yes/no values (evalsite.booleans, issue 21): forms, the API, the
organizer page's buttons and settings all take true/false, 1/0, yes/no, on/off in any case
and refuse anything else with the field's name; none of them reads "0" or "no" as true."""

import pytest
from django.contrib.auth.models import Permission, User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from evalsite.booleans import NotABoolean, parse_boolean
from evalsite.forms import SubmissionZipForm
from evalsite.models import MaskedVideo

from .conftest import make_zip


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("true", True), ("TRUE", True), ("1", True), ("yes", True), ("On", True), (" on ", True),
        (True, True), (1, True),
        ("false", False), ("False", False), ("0", False), ("no", False), ("OFF", False),
        (False, False), (0, False),
    ],
)  # fmt: skip
def test_parse_boolean_accepts_the_four_word_pairs_in_any_case(value, expected):
    assert parse_boolean(value, "replace") is expected


@pytest.mark.parametrize("value", ["n", "y", "t", "f", "2", "", "maybe", None, 2, [], "truee"])
def test_parse_boolean_refuses_anything_else_naming_the_field(value):
    with pytest.raises(NotABoolean) as caught:
        parse_boolean(value, "replace")
    assert str(caught.value).startswith(f"replace: {value!r} is not a yes/no value")


@pytest.mark.parametrize(
    ("sent", "expected"),
    [(None, False), ("", False), ("on", True), ("0", False), ("no", False), ("off", False)],
)
def test_the_upload_form_reads_replace_strictly(sent, expected):
    data = {} if sent is None else {"replace": sent}
    form = SubmissionZipForm(data, {"file": SimpleUploadedFile("a.zip", b"x")})
    assert form.is_valid(), form.errors
    assert form.cleaned_data["replace"] is expected


@pytest.fixture
def organizer(campaign):
    user = User.objects.create_user("org", password="pw-123456", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label__in=["evalsite", "trials"]))
    campaign.organizers.add(user)
    return user


def _upload(client, submission, archive, replace):
    data = {"file": SimpleUploadedFile("a.zip", archive.read_bytes())}
    if replace is not None:
        data["replace"] = replace
    return client.post(f"/api/submissions/{submission.pk}/upload/", data, format="multipart")


def test_api_upload_replace_no_0_off_do_not_replace_and_n_is_a_400(
    organizer, submission, masked_files, tmp_path
):
    client = APIClient()
    client.force_authenticate(organizer)
    first = make_zip(tmp_path / "a.zip", {"bbaf2n.mp4": masked_files["good_bbaf2n"]})
    assert _upload(client, submission, first, None).status_code == 201
    stored = MaskedVideo.objects.get(submission=submission, current=True)
    other = make_zip(tmp_path / "b.zip", {"bbaf2n.mp4": masked_files["good_brbk7n"]})
    for word in ("0", "no", "off", "False", "NO"):
        response = _upload(client, submission, other, word)
        assert response.status_code in (201, 400), response.content
        assert [f["code"] for f in response.json()["files"]] == ["already_uploaded"], word
    assert MaskedVideo.objects.filter(submission=submission).count() == 1
    assert MaskedVideo.objects.get(submission=submission, current=True).pk == stored.pk
    refused = _upload(client, submission, other, "n")
    assert refused.status_code == 400
    body = refused.json()
    assert list(body) == ["replace"] and "'n' is not a yes/no value" in body["replace"][0]["message"]
    assert MaskedVideo.objects.filter(submission=submission).count() == 1
    replaced = _upload(client, submission, other, "ON")
    assert [f["code"] for f in replaced.json()["files"]] == ["replaced"]
    assert MaskedVideo.objects.get(submission=submission, current=True).pk != stored.pk


def test_api_rating_open_refuses_a_non_boolean_naming_the_field(organizer, campaign):
    client = APIClient()
    client.force_authenticate(organizer)
    for word in ("n", "maybe", "t"):
        response = client.post(f"/api/campaigns/{campaign.pk}/rating/", {"open": word}, format="json")
        assert response.status_code == 400 and list(response.json()) == ["open"], word
    closed = client.post(f"/api/campaigns/{campaign.pk}/rating/", {"open": "no"}, format="json")
    assert closed.json() == {"rating_open": False}


def test_automated_run_options_refuse_a_non_boolean_naming_the_field(organizer, submission):
    client = APIClient()
    client.force_authenticate(User.objects.create_superuser("root", password="pw-123456"))
    response = client.post(
        f"/api/submissions/{submission.pk}/runs/", {"kind": "face", "allow_incomplete": "n"}, format="json"
    )
    assert response.status_code == 400 and list(response.json()) == ["allow_incomplete"]


def test_organizer_page_buttons_refuse_a_non_boolean(organizer, campaign):
    client = Client()
    client.force_login(organizer)
    url = reverse("trials:organizer_rating", args=[campaign.pk])
    assert client.post(url, {"open": "maybe"}).status_code == 400
    assert client.post(url, {}).status_code == 400
    assert client.post(url, {"open": "0"}).status_code == 302
    campaign.refresh_from_db()
    assert campaign.rating_open is False
