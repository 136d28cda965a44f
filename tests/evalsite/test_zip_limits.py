"""Zip-bomb limits of an upload: entries per zip and compression ratio per member.

Found by the hostile test of issue 13: a 0.9 MB zip expanding to 3 x 300 MB was extracted
and probed (4 s of work), and a zip of 30,000 entries was accepted (a report row each).
"""

from __future__ import annotations

import zipfile

import pytest

from evalsite.models import MaskedVideo, SubmissionUpload
from evalsite.validation import RATIO_EXEMPT_BYTES, UploadError, ingest_submission_zip

MIB = 1024**2


def _deflated(path, members: dict[str, bytes | object]):
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            if isinstance(data, bytes):
                archive.writestr(name, data)
            else:
                archive.write(data, name)
    return path


def test_members_expanding_far_beyond_their_compressed_size_are_rejected_unextracted(
    submission, masked_files, tmp_path
):
    zeros = bytes(20 * MIB)  # deflates about 1000 times
    archive = _deflated(
        tmp_path / "bomb.zip",
        {"brbk7n.mp4": zeros, "id2_vcd_swwp2s.mp4": zeros, "bbaf2n.mp4": masked_files["good_bbaf2n"]},
    )
    sizes = {i.filename: (i.compress_size, i.file_size) for i in zipfile.ZipFile(archive).infolist()}
    assert sizes["brbk7n.mp4"][1] == 20 * MIB and sizes["brbk7n.mp4"][0] * 100 < 20 * MIB
    report = ingest_submission_zip(submission, archive, web_copies=False)
    rows = {row.file: row for row in report.files}
    for name in ("brbk7n.mp4", "id2_vcd_swwp2s.mp4"):
        compressed = sizes[name][0]
        assert (rows[name].status, rows[name].code) == ("rejected", "compression_ratio_too_high")
        assert rows[name].message == (
            f"{name}: expands from {compressed} to {20 * MIB} bytes ({20 * MIB / compressed:.0f} times), "
            "more than the limit of 100 times (DEID_UPLOAD_MAX_COMPRESSION_RATIO); a video hardly "
            "compresses, so this looks like a zip bomb: zip the masked video files as they are"
        )
    # A real (compressed) video deflates hardly at all and is accepted from the same zip.
    assert sizes["bbaf2n.mp4"][0] > 0.9 * sizes["bbaf2n.mp4"][1]
    assert rows["bbaf2n.mp4"].code == "accepted"
    assert list(MaskedVideo.objects.values_list("source_video__name", flat=True)) == ["bbaf2n"]


def test_the_ratio_limit_spares_small_members_and_follows_its_setting(submission, tmp_path, settings):
    archive = _deflated(
        tmp_path / "edge.zip",
        {"bbaf2n.mp4": bytes(RATIO_EXEMPT_BYTES), "brbk7n.mp4": bytes(RATIO_EXEMPT_BYTES + 1)},
    )
    codes = {row.file: row.code for row in ingest_submission_zip(submission, archive, web_copies=False).files}
    # 1 MiB of zeros is not a bomb (it is just not a video); one byte more is judged by its ratio.
    assert codes == {"bbaf2n.mp4": "unreadable_container", "brbk7n.mp4": "compression_ratio_too_high"}
    compressed = zipfile.ZipFile(archive).getinfo("brbk7n.mp4").compress_size
    settings.DEID_UPLOAD_MAX_COMPRESSION_RATIO = (RATIO_EXEMPT_BYTES + 1) // compressed + 1  # just above
    again = ingest_submission_zip(submission, archive, web_copies=False).files
    assert {row.file: row.code for row in again} == {
        "bbaf2n.mp4": "unreadable_container",
        "brbk7n.mp4": "unreadable_container",
    }


def test_a_zip_with_more_entries_than_the_limit_fails_as_a_whole(submission, tmp_path, settings):
    archive = tmp_path / "many.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for i in range(30_000):
            zipped.writestr(f"junk/{i}.txt", b"")
    with pytest.raises(UploadError) as caught:
        ingest_submission_zip(submission, archive, original_name="many.zip", web_copies=False)
    assert caught.value.code == "too_many_entries"
    assert str(caught.value) == (
        "many.zip: the zip holds 30000 entries (files and folders), more than the limit of 2000 "
        "(DEID_UPLOAD_MAX_ZIP_ENTRIES); a submission needs one video file per source video: "
        "zip only the masked videos"
    )
    upload = SubmissionUpload.objects.get(pk=caught.value.upload_id)
    assert (upload.status, upload.error_code) == ("failed", "too_many_entries")
    assert [(r["file"], r["code"]) for r in upload.report["files"]] == [("many.zip", "too_many_entries")]


def test_the_entry_limit_counts_folders_and_is_inclusive(submission, masked_files, tmp_path, settings):
    settings.DEID_UPLOAD_MAX_ZIP_ENTRIES = 3
    members = {"team/": b"", "team/bbaf2n.mp4": masked_files["good_bbaf2n"], "team/.DS_Store": b"x"}
    archive = _deflated(tmp_path / "three.zip", members)
    codes = [row.code for row in ingest_submission_zip(submission, archive, web_copies=False).files]
    assert codes == ["ignored", "accepted", "ignored"]
    archive = _deflated(tmp_path / "four.zip", {**members, "team/notes.txt": b"hello"})
    with pytest.raises(UploadError, match="holds 4 entries .* more than the limit of 3") as caught:
        ingest_submission_zip(submission, archive, web_copies=False)
    assert caught.value.code == "too_many_entries"
