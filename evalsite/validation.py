"""Validate masked videos against their clear source videos and ingest a submission zip.

Rules (also in README.md, "Submissions"):

- **Name**: a masked file is matched to the source video whose name equals the file's
  stem, ignoring case and extension (``BBAF2N.mp4`` -> source ``bbaf2n``). Folders inside
  the zip are ignored (``team/bbaf2n.mp4`` is fine). Accepted extensions:
  ``VIDEO_SUFFIXES``. A name matching no source video is rejected with the closest names.
- **Container and frames**: the file must open as a video and every frame must decode:
  ffmpeg must decode the video stream without an error and the decoded frame count must
  reach the count the container header announces (otherwise: truncated or damaged).
- **Frame count**: exactly the source's decoded frame count (``FRAME_COUNT_TOLERANCE``
  = 0): the automated metrics pair masked frame *i* with clear frame *i*.
- **Size**: exactly the source's (width, height) in pixels.
- **Duration**: within one source frame period (``1 / fps`` seconds) of the source's
  duration, so the frame rate must match too.
- **Duplicates**: two members with the same video name in one zip are both rejected
  (which one is meant is unknown).
- **No silent overwrite**: a source video that already has a masked video in this
  submission is rejected (``already_uploaded``) unless ``replace=True`` is asked for.
  A replacement drops the old file's automated scores (they are recomputable) but is
  refused (``in_use``) once the old file has human ratings.

Every file gets a row with a stable ``code`` (``CODES``); good files are stored even
when others are rejected. Zip members are never extracted to the path they name (a
member is streamed to a private temporary file), and members with absolute or ``..``
paths are rejected (zip-slip).
"""
from __future__ import annotations

import csv
import difflib
import io
import re
import shutil
import subprocess
import tempfile
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath

import cv2
from django.db import transaction
from django.db.models.deletion import Collector

from automated.video import VideoError, VideoInfo, ffmpeg_executable

from .models import MaskedVideo, SubmissionUpload, delete_stored

VIDEO_SUFFIXES = {".mp4", ".m4v", ".mov", ".mkv", ".avi", ".webm", ".mpg", ".mpeg", ".flv"}
FRAME_COUNT_TOLERANCE = 0  # frames
MAX_MEMBER_BYTES = 2 * 1024**3  # a masked clip larger than 2 GiB is refused (zip bombs)
CODES = {
    "accepted": "stored as the masked video of its source video",
    "replaced": "stored, replacing the earlier masked video (replace was requested)",
    "ignored": "folder or operating-system metadata file (e.g. __MACOSX/, .DS_Store)",
    "unsafe_path": "absolute path or '..' in the member name",
    "not_a_video_file": "extension is not one of the accepted video extensions",
    "file_too_large": "member larger than MAX_MEMBER_BYTES",
    "unknown_name": "no source video has this name",
    "duplicate_in_zip": "several members carry the same video name",
    "already_uploaded": "the source video already has a masked video; replace not requested",
    "in_use": "replace refused: the stored masked video already has human ratings",
    "unreadable_container": "the file does not open as a video container",
    "no_decodable_frames": "the container opens but no frame decodes",
    "truncated": "the video is cut short or damaged: not every frame decodes",
    "frame_count_mismatch": "frame count differs from the source video",
    "size_mismatch": "width x height differs from the source video",
    "duration_mismatch": "duration differs from the source video by more than one frame",
}


class MaskedVideoError(ValueError):
    """A masked video fails a check; ``code`` is one of ``CODES``."""

    def __init__(self, code: str, message: str):
        assert code in CODES, code
        self.code = code
        super().__init__(message)


class UploadError(ValueError):
    """The upload as a whole is unusable (e.g. not a zip file)."""

    code = "not_a_zip"


@dataclass(frozen=True)
class SourceSpec:
    """What a masked video must match: the clear video's decoded properties."""

    name: str
    frame_count: int
    resolution_wh: tuple[int, int]
    fps: float
    duration_s: float


def _decode_errors(path: Path) -> str:
    """First error ffmpeg reports while decoding the video stream ('' if none)."""
    result = subprocess.run(
        [ffmpeg_executable(), "-nostdin", "-v", "error", "-i", str(path), "-map", "0:v:0", "-f", "null", "-"],
        capture_output=True, text=True, timeout=600,
    )
    # Drop ffmpeg's "[h264 @ 0x55...]" prefixes: the rest is the readable reason.
    lines = [re.sub(r"^(\[[^]]*\]\s*)+", "", line).strip() for line in result.stderr.splitlines()]
    lines = [line for line in lines if line]
    return lines[0] if lines else ("" if result.returncode == 0 else f"ffmpeg exit code {result.returncode}")


def _header_frame_count(path: Path) -> int:
    capture = cv2.VideoCapture(str(path))
    try:
        return int(capture.get(cv2.CAP_PROP_FRAME_COUNT) or 0)
    finally:
        capture.release()


def check_masked_video(path, source: SourceSpec, *, display_name: str | None = None) -> VideoInfo:
    """Check one masked video file against its source video.

    Parameters
    ----------
    path : path-like
        The masked video file.
    source : SourceSpec
        Decoded properties of the clear video.
    display_name : str, optional
        Name used in messages (default: the file name).

    Returns
    -------
    VideoInfo
        The masked video's properties (frames, fps, size, duration).

    Raises
    ------
    MaskedVideoError
        With code ``unreadable_container``, ``no_decodable_frames``, ``truncated``,
        ``frame_count_mismatch``, ``size_mismatch`` or ``duration_mismatch``.
    """
    path = Path(path)
    shown = display_name or path.name
    try:
        info = VideoInfo.from_video_path(path)
    except VideoError as error:
        text = str(error)
        if "no decodable" in text or "frame rate" in text:
            raise MaskedVideoError(
                "no_decodable_frames", f"{shown}: the container opens but no video frame decodes ({text})"
            ) from error
        raise MaskedVideoError(
            "unreadable_container",
            f"{shown}: not a readable video file (is it really a video? OpenCV/ffmpeg cannot open it)",
        ) from error
    header_frames = _header_frame_count(path)
    decode_error = _decode_errors(path)
    if decode_error or header_frames > info.frame_count + FRAME_COUNT_TOLERANCE:
        detail = f"ffmpeg reports '{decode_error}'" if decode_error else "the stream ends early"
        raise MaskedVideoError(
            "truncated",
            f"{shown}: the video is truncated or damaged: {detail}; "
            f"{info.frame_count} frames decode (header announces {header_frames}, "
            f"the source has {source.frame_count})",
        )
    if abs(info.frame_count - source.frame_count) > FRAME_COUNT_TOLERANCE:
        raise MaskedVideoError(
            "frame_count_mismatch",
            f"{shown}: {info.frame_count} frames, but source video '{source.name}' has "
            f"{source.frame_count}; masked videos must keep every frame",
        )
    if tuple(info.resolution_wh) != tuple(source.resolution_wh):
        raise MaskedVideoError(
            "size_mismatch",
            f"{shown}: {info.resolution_wh[0]}x{info.resolution_wh[1]} pixels, but source video "
            f"'{source.name}' is {source.resolution_wh[0]}x{source.resolution_wh[1]}",
        )
    tolerance_s = 1.0 / source.fps
    if abs(info.duration_s - source.duration_s) > tolerance_s:
        raise MaskedVideoError(
            "duration_mismatch",
            f"{shown}: {info.duration_s:.3f} s at {info.fps:.3f} fps, but source video "
            f"'{source.name}' lasts {source.duration_s:.3f} s at {source.fps:.3f} fps "
            f"(tolerance {tolerance_s:.3f} s)",
        )
    return info


@dataclass
class FileResult:
    """One zip member's outcome."""

    file: str
    status: str  # accepted | rejected | ignored
    code: str
    message: str
    video: str = ""


@dataclass
class ValidationReport:
    """Per-file results of one upload plus the submission's missing source videos."""

    submission_id: int
    files: list[FileResult] = field(default_factory=list)
    missing_videos: list[str] = field(default_factory=list)
    complete: bool = False
    upload_id: int | None = None

    @property
    def accepted(self) -> list[FileResult]:
        return [f for f in self.files if f.status == "accepted"]

    @property
    def rejected(self) -> list[FileResult]:
        return [f for f in self.files if f.status == "rejected"]

    def to_dict(self) -> dict:
        return {
            "submission_id": self.submission_id,
            "upload_id": self.upload_id,
            "accepted": len(self.accepted),
            "rejected": len(self.rejected),
            "complete": self.complete,
            "missing_videos": list(self.missing_videos),
            "files": [asdict(f) for f in self.files],
        }


def report_rows_as_csv(report: dict) -> str:
    """A stored report (``ValidationReport.to_dict()``) as CSV: one row per file, then
    one ``missing`` row per source video still without a masked video."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=["file", "video", "status", "code", "message"])
    writer.writeheader()
    for row in report.get("files", []):
        writer.writerow({k: row.get(k, "") for k in writer.fieldnames})
    for name in report.get("missing_videos", []):
        writer.writerow({"file": "", "video": name, "status": "missing", "code": "missing_video",
                         "message": f"no valid masked video for source video '{name}' yet"})
    return buffer.getvalue()


def _is_system_member(path: PurePosixPath) -> bool:
    return "__MACOSX" in path.parts or path.name.startswith("._") or path.name in {".DS_Store", "Thumbs.db"}


def _source_spec(source) -> SourceSpec:
    """Decoded properties of a SourceVideo (probed and saved once if not stored yet)."""
    if not source.frame_count:
        info = VideoInfo.from_video_path(source.file.path)
        source.frame_count, source.fps, source.duration_s = info.frame_count, info.fps, info.duration_s
        source.width, source.height = info.resolution_wh
        source.save(update_fields=["frame_count", "fps", "duration_s", "width", "height"])
    return SourceSpec(source.name, source.frame_count, (source.width, source.height), source.fps, source.duration_s)


def ingest_submission_zip(
    submission, zip_path, *, replace: bool = False, uploaded_by=None, original_name: str = "",
    web_copies: bool = True,
) -> ValidationReport:
    """Validate every member of a zip of masked videos and store the good ones.

    Parameters
    ----------
    submission : Submission
    zip_path : path-like
        The uploaded zip file.
    replace : bool, default=False
        Replace masked videos already stored for the same source videos; without it,
        such files are rejected (``already_uploaded``) and the stored ones kept.
    uploaded_by : User, optional
        Recorded with the upload.
    original_name : str
        The zip's name as uploaded (for the organizer's records).
    web_copies : bool, default=True
        Also store a browser-playable H.264 copy of each accepted file.

    Returns
    -------
    ValidationReport
        One row per member; also saved as a :class:`SubmissionUpload`.

    Raises
    ------
    UploadError
        If ``zip_path`` is not a zip file.
    """
    zip_path = Path(zip_path)
    if not zipfile.is_zipfile(zip_path):
        raise UploadError(f"{original_name or zip_path.name} is not a zip file")
    sources = {s.name.lower(): s for s in submission.campaign.source_videos.all()}
    existing = {m.source_video_id: m for m in submission.masked_videos.all()}
    report = ValidationReport(submission.pk)

    with zipfile.ZipFile(zip_path) as archive, tempfile.TemporaryDirectory() as tmp:
        candidates = []
        infolist = archive.infolist()
        for member in infolist:
            path = PurePosixPath(member.filename.replace("\\", "/"))
            result = _screen_member(member, path, sources)
            if result is not None:
                report.files.append(result)
            else:
                candidates.append((member, path))
        stems = [p.stem.lower() for _, p in candidates]
        for member, path in candidates:
            source = sources[path.stem.lower()]
            if stems.count(path.stem.lower()) > 1:
                others = [m.filename for m, p in candidates if p.stem.lower() == path.stem.lower() and m is not member]
                report.files.append(FileResult(
                    member.filename, "rejected", "duplicate_in_zip",
                    f"{member.filename}: the zip holds other files for video '{source.name}' "
                    f"({', '.join(others)}); keep only one", source.name))
                continue
            if source.pk in existing and not replace:
                report.files.append(FileResult(
                    member.filename, "rejected", "already_uploaded",
                    f"{member.filename}: video '{source.name}' already has a masked video in this "
                    "submission; it was kept. Upload again with 'replace' to overwrite it.", source.name))
                continue
            in_use = _human_rating_rows(existing[source.pk]) if source.pk in existing else 0
            if in_use:
                report.files.append(FileResult(
                    member.filename, "rejected", "in_use",
                    f"{member.filename}: the stored masked video of '{source.name}' is already used in "
                    f"{in_use} human rating row(s); it was kept (replacing it would delete them)", source.name))
                continue
            local = Path(tmp) / f"member{len(report.files)}{path.suffix.lower()}"
            with archive.open(member) as reader, local.open("wb") as writer:
                shutil.copyfileobj(reader, writer)
            try:
                info = check_masked_video(local, _source_spec(source), display_name=member.filename)
            except MaskedVideoError as error:
                report.files.append(FileResult(member.filename, "rejected", error.code, str(error), source.name))
                continue
            replaced = _store(submission, source, local, path.name, info, existing.get(source.pk), web_copies)
            code = "replaced" if replaced else "accepted"
            message = f"{member.filename}: {info.frame_count} frames, {info.resolution_wh[0]}x{info.resolution_wh[1]}"
            report.files.append(FileResult(member.filename, "accepted", code, message + ("; replaced the earlier file" if replaced else ""), source.name))

    order = {m.filename: i for i, m in enumerate(infolist)}
    report.files.sort(key=lambda f: order.get(f.file, 0))
    report.missing_videos = list(submission.missing_source_videos().order_by("name").values_list("name", flat=True))
    report.complete = not report.missing_videos
    upload = SubmissionUpload.objects.create(
        submission=submission, uploaded_by=uploaded_by, original_name=original_name or zip_path.name,
        replace=replace, accepted_count=len(report.accepted), rejected_count=len(report.rejected),
        report={},
    )
    report.upload_id = upload.pk
    upload.report = report.to_dict()
    upload.save(update_fields=["report"])
    return report


def _screen_member(member: zipfile.ZipInfo, path: PurePosixPath, sources: dict) -> FileResult | None:
    """Name-level checks; None when the member is a candidate masked video."""
    name = member.filename
    if member.is_dir() or _is_system_member(path):
        return FileResult(name, "ignored", "ignored", f"{name}: folder or system file, ignored")
    if path.is_absolute() or ".." in path.parts or (path.parts and ":" in path.parts[0]):
        return FileResult(name, "rejected", "unsafe_path", f"{name}: absolute paths and '..' are not allowed in a zip")
    if path.suffix.lower() not in VIDEO_SUFFIXES:
        return FileResult(name, "rejected", "not_a_video_file",
                          f"{name}: '{path.suffix or 'no extension'}' is not a video extension "
                          f"({', '.join(sorted(VIDEO_SUFFIXES))})")
    if member.file_size > MAX_MEMBER_BYTES:
        return FileResult(name, "rejected", "file_too_large",
                          f"{name}: {member.file_size} bytes is more than the limit of {MAX_MEMBER_BYTES}")
    if path.stem.lower() not in sources:
        close = difflib.get_close_matches(path.stem.lower(), list(sources), n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(repr(sources[c].name) for c in close)}?" if close else ""
        return FileResult(name, "rejected", "unknown_name",
                          f"{name}: no source video is named '{path.stem}'{hint}")
    return None


def _human_rating_rows(masked) -> int:
    """Rows outside evalsite/automated that deleting ``masked`` would cascade to.

    Automated scores are recomputable and may go with a replaced file; human ratings
    (the trials app) are not, so their presence blocks a replacement.
    """
    collector = Collector(using=masked._state.db or "default")
    collector.collect([masked])
    kept_apps = {"evalsite", "automated"}
    count = sum(len(objs) for model, objs in collector.data.items() if model._meta.app_label not in kept_apps)
    count += sum(qs.count() for qs in collector.fast_deletes if qs.model._meta.app_label not in kept_apps)
    return count


def _store(submission, source, local: Path, upload_name: str, info: VideoInfo, old, web_copies: bool) -> bool:
    """Save an accepted file as the MaskedVideo of ``source``; True if one was replaced."""
    masked = MaskedVideo(submission=submission, source_video=source)
    stored = masked.store_video(local, info, name=upload_name, web_copy=web_copies)
    try:
        with transaction.atomic():
            if old is not None:
                # Scores of the old file are stale: deleting the row cascades to them.
                old_files = [f.name for f in (old.file, old.web_file) if f]
                old.delete()
                transaction.on_commit(lambda: [old.file.storage.delete(n) for n in old_files])
            masked.save()
    except Exception:
        delete_stored(stored)
        raise
    return old is not None
