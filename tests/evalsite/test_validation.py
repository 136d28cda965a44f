"""Submission validation on real clips: every bad upload gets its own code and message."""

import re

import numpy as np
import pytest

from evalsite import validation
from evalsite.models import MaskedVideo, SubmissionUpload
from evalsite.validation import (
    CODES,
    MaskedVideoError,
    SourceSpec,
    UploadError,
    check_masked_video,
    ingest_submission_zip,
    report_rows_as_csv,
)

from .conftest import make_zip

BBAF2N = SourceSpec("bbaf2n", 75, (360, 288), 25.0, 3.0)


@pytest.mark.parametrize(
    ("variant", "code", "fragment"),
    [
        ("text", "unreadable_container", "not a readable video file"),
        ("truncated", "truncated", "Invalid NAL unit size"),
        (
            "truncated_mpg",
            "truncated",
            "truncated or damaged: the MPEG picture data are damaged (ffmpeg: 'ac-tex damaged",
        ),
        ("short", "frame_count_mismatch", "70 frames, but source video 'bbaf2n' has 75"),
        ("small", "size_mismatch", "180x144 pixels, but source video 'bbaf2n' is 360x288"),
        ("slow", "duration_mismatch", "3.750 s at 20.000 fps, but source video 'bbaf2n' lasts 3.000 s"),
    ],
)
def test_each_bad_file_gets_its_specific_code_and_message(masked_files, variant, code, fragment):
    with pytest.raises(MaskedVideoError, match=re.escape(fragment)) as caught:
        check_masked_video(masked_files[variant], BBAF2N)
    assert caught.value.code == code


def test_every_mismatch_of_a_file_is_reported_at_once(data_dir, masked_files, tmp_path, submission):
    """Issue 21: a clip cut short, resized and re-timed was refused for its frame count only;
    its size and duration showed one retry at a time. Now all three, in one message."""
    from automated.video import VideoWriter, iter_frames

    frames = [f[::2, ::2] for _, f in iter_frames(data_dir / "videos/grid_talking_heads/bbaf2n.mpg")][:50]
    path = tmp_path / "bbaf2n.mp4"
    with VideoWriter(path, 20.0, (180, 144)) as writer:
        for frame in frames:
            writer.write(np.ascontiguousarray(frame))
    with pytest.raises(MaskedVideoError) as caught:
        check_masked_video(path, BBAF2N)
    assert caught.value.code == "frame_count_mismatch"
    assert [code for code, _ in caught.value.problems] == [
        "frame_count_mismatch",
        "size_mismatch",
        "duration_mismatch",
    ]
    assert str(caught.value) == (
        "bbaf2n.mp4: 50 frames, but source video 'bbaf2n' has 75; masked videos must keep every frame; "
        "180x144 pixels, but source video 'bbaf2n' is 360x288; "
        "2.500 s at 20.000 fps, but source video 'bbaf2n' lasts 3.000 s at 25.000 fps (tolerance 0.040 s)"
    )
    # The upload's row: the first code, every message.
    archive = make_zip(tmp_path / "m.zip", {"bbaf2n.mp4": path})
    row = ingest_submission_zip(submission, archive, web_copies=False).files[0]
    assert (row.status, row.code, row.message) == ("rejected", "frame_count_mismatch", str(caught.value))
    # Frames cut at the source's rate: the shorter duration follows from them, no second problem.
    with pytest.raises(MaskedVideoError) as short:
        check_masked_video(masked_files["short"], BBAF2N)
    assert [code for code, _ in short.value.problems] == ["frame_count_mismatch"] and "lasts" not in str(
        short.value
    )


def test_ffmpeg_errors_are_explained_in_words_and_no_raw_line_reaches_stderr(masked_files, tmp_path, capfd):
    # before: "not a readable video file (is it really a video? ...)" on the page, and OpenCV's
    # "[mov,mp4,m4a,3gp,3g2,mj2 @ 0x...] moov atom not found" printed on the upload's output
    good = masked_files["good_bbaf2n"].read_bytes()
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(good[: good.index(b"moov") - 4])  # the MP4 index cut off
    capfd.readouterr()
    with pytest.raises(MaskedVideoError) as caught:
        check_masked_video(cut, BBAF2N)
    assert caught.value.code == "unreadable_container"
    assert str(caught.value) == (
        "cut.mp4: not a readable video file: the MP4 index (moov atom) is missing, as when a file is cut "
        "off while it is written, uploaded or copied; export the video again (ffmpeg: 'moov atom not found')"
    )
    assert capfd.readouterr().err == ""


def test_good_file_passes_and_reports_its_properties(masked_files):
    info = check_masked_video(masked_files["good_bbaf2n"], BBAF2N)
    assert (info.frame_count, info.resolution_wh, info.fps) == (75, (360, 288), 25.0)


def test_one_decode_gives_opencvs_frame_count_on_every_container_the_demo_meets(
    data_dir, masked_files, tmp_path, monkeypatch
):
    """The frame count comes from the one ffmpeg decode; it must be what OpenCV's grab loop
    counts (what the evaluation reads): GRID MPEG-1, CREMA-D FLV, H.264 MP4 and FFV1 MKV."""
    from automated.video import VideoInfo, VideoWriter, iter_frames

    ffv1 = tmp_path / "inverted.mkv"
    with VideoWriter(ffv1, 25.0, (360, 288), codec="ffv1") as writer:
        for _, frame in iter_frames(data_dir / "videos/grid_talking_heads/bbaf2n.mpg"):
            writer.write(255 - frame)
    files = [
        data_dir / "videos/grid_talking_heads/bbaf2n.mpg",
        data_dir / "videos/cremad/1001_DFA_ANG_XX.flv",
        masked_files["good_bbaf2n"],
        ffv1,
    ]
    expected = [VideoInfo.from_video_path(path) for path in files]
    assert expected[0].frame_count == 75
    # Checked against themselves as sources: everything passes, and nothing decodes twice.
    runs, grabs = [], []
    real_run, real_probe = validation.subprocess.run, VideoInfo.from_video_path
    monkeypatch.setattr(validation.subprocess, "run", lambda *a, **k: runs.append(a) or real_run(*a, **k))
    monkeypatch.setattr(VideoInfo, "from_video_path", lambda *a, **k: grabs.append(a) or real_probe(*a, **k))
    for path, info in zip(files, expected, strict=True):
        spec = SourceSpec(path.stem, info.frame_count, info.resolution_wh, info.fps, info.duration_s)
        checked = check_masked_video(path, spec)
        assert (checked.frame_count, checked.fps, checked.resolution_wh) == (
            info.frame_count,
            info.fps,
            info.resolution_wh,
        )
    assert (len(runs), grabs) == (len(files), [])  # one ffmpeg decode per file, no OpenCV count


def _rows(report):
    return {row.file: row for row in report.files}


def test_zip_keeps_good_files_and_rejects_bad_ones_with_specific_messages(submission, masked_files, tmp_path):
    archive = make_zip(
        tmp_path / "upload.zip",
        {
            "team-a/BBAF2N.mp4": masked_files["good_bbaf2n"],  # folder and case are ignored
            "brbk7m.mp4": masked_files["good_brbk7n"],  # wrong name
            "id2_vcd_swwp2s.mp4": masked_files["text"],
            "README.txt": "notes",
            "__MACOSX/._BBAF2N.mp4": "junk",
            "../escape.mp4": "zip slip",
        },
    )
    report = ingest_submission_zip(submission, archive)
    rows = _rows(report)
    assert rows["team-a/BBAF2N.mp4"].status == "accepted" and rows["team-a/BBAF2N.mp4"].video == "bbaf2n"
    assert rows["brbk7m.mp4"].code == "unknown_name"
    assert (
        rows["brbk7m.mp4"].message == "brbk7m.mp4: no source video is named 'brbk7m'; did you mean 'brbk7n'?"
    )
    assert rows["id2_vcd_swwp2s.mp4"].code == "unreadable_container"
    assert rows["README.txt"].code == "not_a_video_file"
    assert rows["__MACOSX/._BBAF2N.mp4"].status == "ignored"
    assert rows["../escape.mp4"].code == "unsafe_path"
    assert all(row.code in CODES for row in report.files)
    # Missing videos are listed; the one good file is stored under an opaque name.
    assert report.missing_videos == ["brbk7n", "id2_vcd_swwp2s"] and not report.complete
    stored = MaskedVideo.objects.get()
    assert stored.source_video.name == "bbaf2n" and stored.frame_count == 75
    assert "bbaf2n" not in stored.file.name.lower()
    assert not (tmp_path.parent / "escape.mp4").exists()


def test_missing_video_makes_the_submission_incomplete_until_uploaded(submission, masked_files, tmp_path):
    first = ingest_submission_zip(
        submission,
        make_zip(
            tmp_path / "a.zip",
            {"bbaf2n.mp4": masked_files["good_bbaf2n"], "brbk7n.mp4": masked_files["good_brbk7n"]},
        ),
    )
    assert first.missing_videos == ["id2_vcd_swwp2s"] and not submission.is_complete
    assert list(submission.missing_source_videos().values_list("name", flat=True)) == ["id2_vcd_swwp2s"]


def test_duplicate_names_in_one_zip_are_both_rejected(submission, masked_files, tmp_path):
    report = ingest_submission_zip(
        submission,
        make_zip(
            tmp_path / "d.zip",
            {"a/bbaf2n.mp4": masked_files["good_bbaf2n"], "b/bbaf2n.mkv": masked_files["good_bbaf2n"]},
        ),
    )
    assert [row.code for row in report.files] == ["duplicate_in_zip", "duplicate_in_zip"]
    assert "b/bbaf2n.mkv" in report.files[0].message
    assert not MaskedVideo.objects.exists()


def test_no_silent_overwrite_unless_replace_is_asked_and_replace_keeps_the_old_file(
    submission, masked_files, tmp_path
):
    archive = make_zip(tmp_path / "g.zip", {"bbaf2n.mp4": masked_files["good_bbaf2n"]})
    ingest_submission_zip(submission, archive)
    original = MaskedVideo.objects.get()
    again = ingest_submission_zip(submission, archive)
    assert again.files[0].code == "already_uploaded"
    assert "it was kept" in again.files[0].message
    assert MaskedVideo.objects.get().file.name == original.file.name
    # Another file (the very same bytes would be refused as identical_to_current).
    other = make_zip(tmp_path / "o.zip", {"bbaf2n.mp4": masked_files["good_brbk7n"]})
    replaced = ingest_submission_zip(submission, other, replace=True)
    assert replaced.files[0].code == "replaced" and replaced.files[0].status == "accepted"
    new = MaskedVideo.objects.get()  # the one current masked video of bbaf2n
    assert new.file.name != original.file.name and new.upload_id == replaced.upload_id
    original = MaskedVideo.all_versions.get(pk=original.pk)
    assert (original.current, original.superseded_by_id) == (False, new.pk) and original.superseded_at
    assert original.file.storage.exists(original.file.name)  # kept: ratings and scores point at it
    assert submission.masked_videos.count() == 1 and MaskedVideo.all_versions.count() == 2


def test_rejected_replacement_keeps_the_stored_file(submission, masked_files, tmp_path):
    ingest_submission_zip(
        submission, make_zip(tmp_path / "g.zip", {"bbaf2n.mp4": masked_files["good_bbaf2n"]})
    )
    original = MaskedVideo.objects.get()
    report = ingest_submission_zip(
        submission, make_zip(tmp_path / "b.zip", {"bbaf2n.mp4": masked_files["short"]}), replace=True
    )
    assert report.files[0].code == "frame_count_mismatch"
    assert MaskedVideo.objects.get().pk == original.pk and original.file.storage.exists(original.file.name)


def test_each_upload_stores_its_report(submission, masked_files, tmp_path):
    report = ingest_submission_zip(
        submission,
        make_zip(tmp_path / "r.zip", {"bbaf2n.mp4": masked_files["small"]}),
        original_name="team.zip",
    )
    upload = SubmissionUpload.objects.get()
    assert upload.pk == report.upload_id and upload.original_name == "team.zip"
    assert (upload.accepted_count, upload.rejected_count) == (0, 1)
    assert upload.report["files"][0]["code"] == "size_mismatch"
    csv_text = report_rows_as_csv(upload.report)
    assert csv_text.splitlines()[0] == "file,video,status,code,message"
    assert "missing,missing_video" in csv_text


def test_a_file_that_is_not_a_zip_is_refused_with_a_record(submission, masked_files):
    with pytest.raises(UploadError, match="is not a zip file") as caught:
        ingest_submission_zip(submission, masked_files["good_bbaf2n"])
    assert caught.value.code == "not_a_zip"
    upload = SubmissionUpload.objects.get(pk=caught.value.upload_id)
    assert (upload.status, upload.error_code, upload.report["files"][0]["code"]) == (
        "failed",
        "not_a_zip",
        "not_a_zip",
    )
