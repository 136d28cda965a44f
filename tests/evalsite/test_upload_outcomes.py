"""Uploads that store nothing fail with their own code, and every problem of a member is
listed at once (issue 21): an empty zip (``empty_zip``), a zip whose every file is
rejected (``nothing_accepted``), a byte-identical replacement (``identical_to_current``),
a resized clip for an already uploaded video (its size mismatch and that it is kept)."""

import csv
import io

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from evalsite.models import MaskedVideo, SubmissionUpload
from evalsite.spreadsheet import FORMULA_STARTS
from evalsite.validation import CODES, UPLOAD_CODES, ingest_submission_zip, report_rows_as_csv

from .conftest import make_zip


def test_an_empty_zip_fails_as_empty_zip_in_the_cli_and_the_api(submission, tmp_path):
    assert {"empty_zip", "nothing_accepted", "identical_to_current"} <= set(CODES)
    assert {"empty_zip", "nothing_accepted"} <= set(UPLOAD_CODES)
    empty = make_zip(tmp_path / "empty.zip", {"__MACOSX/._x": "meta", ".DS_Store": "x"})
    with pytest.raises(CommandError, match=r"failed \(empty_zip\): empty.zip: the zip holds no file"):
        call_command("upload_submission", str(submission.pk), str(empty), stdout=io.StringIO())
    nothing = make_zip(tmp_path / "nothing.zip", {})
    with pytest.raises(CommandError, match=r"failed \(empty_zip\)"):
        call_command("upload_submission", str(submission.pk), str(nothing), stdout=io.StringIO())
    client = APIClient()
    client.force_authenticate(User.objects.create_superuser("root", password="pw-root-123"))
    response = client.post(
        f"/api/submissions/{submission.pk}/upload/",
        {"file": SimpleUploadedFile("empty.zip", empty.read_bytes())},
        format="multipart",
    )
    assert response.status_code == 400 and response.json()["file"][0]["code"] == "empty_zip"
    assert response.json()["status"] == "failed"
    assert set(SubmissionUpload.objects.values_list("status", "error_code")) == {("failed", "empty_zip")}


def test_a_zip_whose_every_file_is_rejected_fails_as_nothing_accepted(submission, masked_files, tmp_path):
    archive = make_zip(
        tmp_path / "bad.zip",
        {"bbaf2n.mp4": masked_files["small"], "notes.txt": "x", "zzz.mp4": masked_files["short"]},
    )
    with pytest.raises(CommandError, match=r"failed \(nothing_accepted\): bad.zip: none of its 3 file"):
        call_command("upload_submission", str(submission.pk), str(archive), stdout=io.StringIO())
    upload = SubmissionUpload.objects.get()
    codes = [row["code"] for row in upload.report["files"]]
    assert codes == ["size_mismatch", "not_a_video_file", "unknown_name"]
    assert (upload.status, upload.error_code, upload.rejected_count) == ("failed", "nothing_accepted", 3)
    assert not MaskedVideo.objects.exists()


def test_a_byte_identical_replacement_is_refused_and_stores_no_copy(submission, masked_files, tmp_path):
    archive = make_zip(tmp_path / "g.zip", {"bbaf2n.mp4": masked_files["good_bbaf2n"]})
    ingest_submission_zip(submission, archive, web_copies=False)
    current = MaskedVideo.objects.get()
    for _ in range(2):
        report = ingest_submission_zip(submission, archive, replace=True, web_copies=False)
        assert (report.status, len(report.files)) == ("failed", 1)
        row = report.files[0]
        assert (row.code, row.video) == ("identical_to_current", "bbaf2n")
        assert "byte for byte the current masked video of 'bbaf2n'" in row.message
    assert MaskedVideo.all_versions.count() == 1 and MaskedVideo.objects.get().pk == current.pk


def test_a_resized_clip_for_an_uploaded_video_names_its_size_and_that_it_was_kept(
    submission, masked_files, tmp_path
):
    ingest_submission_zip(
        submission,
        make_zip(tmp_path / "g.zip", {"bbaf2n.mp4": masked_files["good_bbaf2n"]}),
        web_copies=False,
    )
    resized = make_zip(tmp_path / "s.zip", {"bbaf2n.mp4": masked_files["small"]})
    row = ingest_submission_zip(submission, resized, web_copies=False).files[0]
    assert row.code == "size_mismatch"
    assert "180x144" in row.message and "360x288" in row.message
    assert "already has a masked video in this submission; it was kept" in row.message


def test_a_zip_member_named_as_a_formula_is_text_in_the_outcome_csv(submission, masked_files, tmp_path):
    """A team names a zip member ``=HYPERLINK(...)``: the outcome CSV the organizer opens holds
    it as text (leading ``'``, OWASP "CSV Injection"); the accepted file's row is unchanged."""
    evil = '=HYPERLINK("http://x","y").mp4'
    archive = make_zip(tmp_path / "e.zip", {"bbaf2n.mp4": masked_files["good_bbaf2n"], evil: "x"})
    ingest_submission_zip(submission, archive, web_copies=False)
    text = report_rows_as_csv(SubmissionUpload.objects.get().report)
    rows = {row["video"] or row["file"]: row for row in csv.DictReader(io.StringIO(text))}
    assert rows["bbaf2n"]["file"] == "bbaf2n.mp4" and rows["bbaf2n"]["status"] == "accepted"
    cells = [row["file"] for row in rows.values()]
    assert "'" + evil in cells and evil not in cells
    assert not [cell for row in rows.values() for cell in row.values() if cell[:1] in FORMULA_STARTS]
