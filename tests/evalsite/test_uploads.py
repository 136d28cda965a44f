"""Uploads with a record from the first byte; damaged zips, timeouts and crashes get their codes.

Real GRID clips and real zips; damage is made by editing the zip's bytes (a flipped data
byte, a cut file, a broken directory, an unknown compression method).
"""

import io
import os
import struct
import zipfile
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from evalsite.models import MaskedVideo, SubmissionUpload
from evalsite.validation import UploadError, ingest_submission_zip, run_upload

from .conftest import GRID, make_zip


def _member_data_offset(data: bytes, name: str) -> int:
    info = zipfile.ZipFile(io.BytesIO(data)).getinfo(name)
    name_len, extra_len = struct.unpack("<HH", data[info.header_offset + 26 : info.header_offset + 30])
    return info.header_offset + 30 + name_len + extra_len


def _three_member_zip(tmp_path, masked_files, data_dir) -> Path:
    return make_zip(
        tmp_path / "team.zip",
        {
            "bbaf2n.mp4": masked_files["good_bbaf2n"],
            "brbk7n.mp4": masked_files["good_brbk7n"],
            "id2_vcd_swwp2s.mpg": data_dir / GRID / "id2_vcd_swwp2s.mpg",  # the clear clip itself passes
        },
    )


def _stored_files(media_root: Path) -> set[str]:
    return {
        str(p.relative_to(media_root))
        for folder in ("uploads", "masked")
        for p in (media_root / folder).rglob("*")
        if p.is_file()
    }


def assert_every_stored_file_has_a_row(media_root: Path) -> None:
    """Every file under the media folder's uploads/ and masked/ is a row's file."""
    referenced = set(SubmissionUpload.objects.exclude(file="").values_list("file", flat=True))
    for masked in MaskedVideo.all_versions.all():
        referenced |= {f.name for f in (masked.file, masked.web_file) if f}
    assert _stored_files(media_root) <= referenced, _stored_files(media_root) - referenced
    assert all((media_root / name).is_file() for name in referenced)


def test_bad_crc_in_the_second_member_rejects_only_that_member(
    submission, masked_files, data_dir, tmp_path, media_root
):
    archive = _three_member_zip(tmp_path, masked_files, data_dir)
    data = bytearray(archive.read_bytes())
    data[_member_data_offset(bytes(data), "brbk7n.mp4") + 5000] ^= 0xFF  # one flipped byte of its video data
    archive.write_bytes(bytes(data))
    report = ingest_submission_zip(submission, archive, web_copies=False)
    rows = {row.file: row for row in report.files}
    assert (rows["bbaf2n.mp4"].status, rows["bbaf2n.mp4"].code) == ("accepted", "accepted")
    assert rows["brbk7n.mp4"].code == "bad_crc"
    assert rows["brbk7n.mp4"].message == (
        "brbk7n.mp4: its data do not match the zip's CRC-32 checksum: the zip is damaged (changed or cut in "
        "transit?); make the zip again and upload this file"
    )
    assert rows["id2_vcd_swwp2s.mpg"].code == "accepted"  # members after the damaged one are still checked
    upload = SubmissionUpload.objects.get()
    assert (upload.status, upload.accepted_count, upload.rejected_count) == ("done", 2, 1)
    assert report.missing_videos == ["brbk7n"]
    assert sorted(MaskedVideo.objects.values_list("source_video__name", flat=True)) == [
        "bbaf2n",
        "id2_vcd_swwp2s",
    ]
    assert set(MaskedVideo.objects.values_list("upload", flat=True)) == {upload.pk}
    assert_every_stored_file_has_a_row(media_root)


def _cut(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _broken_directory(data: bytes) -> bytes:
    position = data.find(b"PK\x01\x02")  # the first central-directory entry
    return data[:position] + b"XX" + data[position + 2 :]


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (
            _cut,
            "team.zip: the zip is damaged: its central directory is cut short or unreadable "
            "(File is not a zip file). Was the transfer interrupted?",
        ),
        (
            _broken_directory,
            "team.zip: the zip is damaged: its central directory is cut short or unreadable "
            "(Bad magic number for central directory).",
        ),
    ],
)
def test_a_truncated_or_damaged_zip_fails_as_a_whole_with_damaged_zip(
    submission, masked_files, data_dir, tmp_path, media_root, damage, message
):
    archive = _three_member_zip(tmp_path, masked_files, data_dir)
    archive.write_bytes(damage(archive.read_bytes()))
    with pytest.raises(UploadError) as caught:
        ingest_submission_zip(submission, archive, web_copies=False)
    assert caught.value.code == "damaged_zip" and str(caught.value).startswith(message)
    upload = SubmissionUpload.objects.get(pk=caught.value.upload_id)
    assert (upload.status, upload.error_code) == ("failed", "damaged_zip")
    assert [(r["file"], r["code"]) for r in upload.report["files"]] == [("team.zip", "damaged_zip")]
    assert upload.report["missing_videos"] == ["bbaf2n", "brbk7n", "id2_vcd_swwp2s"]
    assert not MaskedVideo.objects.exists()
    assert _stored_files(media_root) == {upload.file.name}  # the damaged zip itself, kept with its record
    assert_every_stored_file_has_a_row(media_root)


def test_a_member_with_an_unsupported_compression_gets_extract_failed(submission, masked_files, tmp_path):
    archive = tmp_path / "odd.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zipped:
        zipped.write(masked_files["good_bbaf2n"], "bbaf2n.mp4")
    data = bytearray(archive.read_bytes())
    data[8:10] = struct.pack("<H", 99)  # compression method of the local header: 99 (AES), unknown here
    central = bytes(data).find(b"PK\x01\x02")
    data[central + 10 : central + 12] = struct.pack("<H", 99)
    archive.write_bytes(bytes(data))
    row = ingest_submission_zip(submission, archive, web_copies=False).files[0]
    assert (row.code, row.message) == (
        "extract_failed",
        "bbaf2n.mp4: cannot be extracted from the zip (That compression method is not supported)",
    )


def test_probe_and_transcode_timeouts_get_their_codes_and_store_nothing(
    submission, masked_files, tmp_path, settings, media_root
):
    archive = make_zip(tmp_path / "a.zip", {"bbaf2n.mp4": masked_files["good_bbaf2n"]})
    settings.DEID_FFMPEG_TIMEOUT_S = 0.001
    row = ingest_submission_zip(submission, archive).files[0]
    assert row.code == "probe_timeout"
    assert row.message.startswith(
        "bbaf2n.mp4: checking the video took longer than 0.001 s (DEID_FFMPEG_TIMEOUT_S)"
    )
    settings.DEID_FFMPEG_TIMEOUT_S = 300
    settings.DEID_TRANSCODE_TIMEOUT_S = 0.001
    row = ingest_submission_zip(submission, archive).files[0]
    assert (row.code, row.message) == (
        "transcode_timeout",
        "bbaf2n.mp4: making the browser copy took longer than 0.001 s (DEID_TRANSCODE_TIMEOUT_S)",
    )
    assert not MaskedVideo.all_versions.exists()
    assert_every_stored_file_has_a_row(media_root)
    assert not list((media_root / "masked").rglob("*.mp4"))


def test_a_crash_mid_upload_leaves_a_record_and_keeps_what_was_stored(
    submission, masked_files, data_dir, tmp_path, media_root, monkeypatch
):
    from evalsite import validation

    real_check = validation.check_masked_video

    def crash_on_the_second(path, source, **kwargs):
        if source.name == "brbk7n":
            raise MemoryError("simulated crash")
        return real_check(path, source, **kwargs)

    monkeypatch.setattr(validation, "check_masked_video", crash_on_the_second)
    with pytest.raises(UploadError) as caught:
        ingest_submission_zip(
            submission, _three_member_zip(tmp_path, masked_files, data_dir), web_copies=False
        )
    upload = SubmissionUpload.objects.get(pk=caught.value.upload_id)
    assert (upload.status, upload.error_code) == ("failed", "internal_error")
    assert upload.error == (
        "validation stopped on an unexpected error (MemoryError: simulated crash); "
        "the 1 file(s) accepted before it are kept"
    )
    assert [(r["file"], r["code"]) for r in upload.report["files"]] == [
        ("bbaf2n.mp4", "accepted"),
        ("team.zip", "internal_error"),
    ]
    assert MaskedVideo.objects.get().upload_id == upload.pk
    assert_every_stored_file_has_a_row(media_root)


def test_an_upload_left_processing_by_a_dead_worker_resumes_without_storing_twice(
    submission, masked_files, data_dir, tmp_path, media_root
):
    report = ingest_submission_zip(
        submission, _three_member_zip(tmp_path, masked_files, data_dir), web_copies=False
    )
    upload = SubmissionUpload.objects.get(pk=report.upload_id)
    first = MaskedVideo.objects.get(source_video__name="bbaf2n")
    # What a worker killed mid-upload leaves: the record "processing", one member's row
    # missing (not stored yet) and a file it wrote without a row.
    MaskedVideo.objects.filter(source_video__name="id2_vcd_swwp2s").delete()
    orphan = media_root / f"masked/u{upload.pk}/half-written.mp4"
    orphan.write_bytes(b"\x00" * 100)
    SubmissionUpload.objects.filter(pk=upload.pk).update(status="processing")
    out = io.StringIO()
    call_command("upload_submission", "--resume", str(upload.pk), stdout=out)
    upload.refresh_from_db()
    assert upload.status == "done" and "3 accepted, 0 rejected; submission complete" in out.getvalue()
    assert "bbaf2n.mp4: 75 frames, 360x288 (stored before the upload was interrupted)" in out.getvalue()
    assert MaskedVideo.objects.get(source_video__name="bbaf2n").pk == first.pk  # not stored twice
    assert MaskedVideo.all_versions.count() == 3 and not orphan.exists()
    assert_every_stored_file_has_a_row(media_root)
    with pytest.raises(CommandError, match=f"upload {upload.pk} is done; nothing to resume"):
        call_command("upload_submission", "--resume", str(upload.pk), stdout=io.StringIO())
    assert run_upload(upload.pk).status == "done"  # a redelivered task changes nothing
    assert MaskedVideo.all_versions.count() == 3


def test_the_cli_prints_the_record_of_a_failed_upload(submission, tmp_path):
    text = tmp_path / "notes.zip"
    text.write_text("not a zip\n")
    with pytest.raises(CommandError, match=r"upload \d+ failed \(not_a_zip\): notes.zip is not a zip file"):
        call_command("upload_submission", str(submission.pk), str(text), stdout=io.StringIO())
    assert SubmissionUpload.objects.get().status == "failed"
    with pytest.raises(CommandError, match="no such file"):
        call_command("upload_submission", str(submission.pk), str(tmp_path / "missing.zip"))
    assert SubmissionUpload.objects.count() == 1


def test_file_names_in_storage_stay_opaque(submission, masked_files, data_dir, tmp_path, media_root):
    ingest_submission_zip(
        submission, _three_member_zip(tmp_path, masked_files, data_dir), original_name="ID01.zip"
    )
    for name in _stored_files(media_root):
        assert not any(word in name.lower() for word in ("bbaf2n", "brbk7n", "swwp2s", "id01", "team")), name
    assert os.path.basename(SubmissionUpload.objects.get().file.name).endswith(".zip")


def test_deleting_a_submission_deletes_its_stored_zips_and_masked_files(
    submission, masked_files, data_dir, tmp_path, media_root, django_capture_on_commit_callbacks
):
    ingest_submission_zip(submission, _three_member_zip(tmp_path, masked_files, data_dir))
    assert len(_stored_files(media_root)) == 7  # the zip, 3 masked videos and their browser copies
    with django_capture_on_commit_callbacks(execute=True):
        submission.delete()
    assert _stored_files(media_root) == set()


def test_a_zip_never_stored_completely_fails_as_upload_incomplete_and_its_part_is_removed(
    submission, media_root
):
    from evalsite.models import UploadStatus

    # What a process killed while receiving the zip leaves: the record, and part of the file.
    upload = SubmissionUpload.objects.create(submission=submission, original_name="big.zip")
    partial = media_root / f"uploads/u{upload.pk}/abc.zip"
    partial.parent.mkdir(parents=True)
    partial.write_bytes(b"PK\x03\x04 half")
    upload = run_upload(upload.pk)
    assert (upload.status, upload.error_code) == (UploadStatus.FAILED, "upload_incomplete")
    assert (
        upload.error
        == "big.zip: the zip was not stored completely (the upload was interrupted); upload it again"
    )
    assert not partial.exists()
    assert_every_stored_file_has_a_row(media_root)
