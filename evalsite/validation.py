"""Validate masked videos against their clear source videos and ingest a submission zip.

Rules (also in docs/submissions.md, with the codes table generated from ``CODES``):

- **Name**: a masked file is matched to the source video whose name equals the file's
  stem, ignoring case and extension (``BBAF2N.mp4`` -> source ``bbaf2n``). Folders inside
  the zip are ignored (``team/bbaf2n.mp4`` is fine). Accepted extensions:
  ``VIDEO_SUFFIXES``. A name matching no source video is rejected with the closest names.
- **Zip**: an upload that is not a zip (``not_a_zip``), whose central directory is
  cut short or damaged (``damaged_zip``) or that holds more entries than
  ``DEID_UPLOAD_MAX_ZIP_ENTRIES`` (``too_many_entries``) fails as a whole; a member whose
  data fail their CRC-32 (``bad_crc``), that cannot be extracted (``extract_failed``), is
  larger than ``MAX_MEMBER_BYTES`` (``file_too_large``) or expands to more than
  ``DEID_UPLOAD_MAX_COMPRESSION_RATIO`` times its compressed size (``compression_ratio_too_high``,
  checked on the zip's directory before extracting; members up to ``RATIO_EXEMPT_BYTES``
  are exempt) is rejected alone, the other members are still checked.
- **Container and frames**: the file must open as a video and every frame must decode:
  ffmpeg must decode the video stream without an error and the decoded frame count must
  reach the count the container header announces (otherwise: truncated or damaged).
  The file is decoded once: that one ffmpeg pass gives the errors and the frame count.
  Probing is bounded by ``DEID_FFMPEG_TIMEOUT_S`` (``probe_timeout``), the browser copy
  by ``DEID_TRANSCODE_TIMEOUT_S`` (``transcode_timeout``).
- **Frame count**: exactly the source's decoded frame count (``FRAME_COUNT_TOLERANCE``
  = 0): the automated metrics pair masked frame *i* with clear frame *i*.
- **Size**: exactly the source's (width, height) in pixels.
- **Duration**: within one source frame period (``1 / fps`` seconds) of the source's
  duration, so the frame rate must match too.
- **Duplicates**: two members with the same video name in one zip are both rejected
  (which one is meant is unknown).
- **No silent overwrite**: a source video that already has a masked video in this
  submission is rejected (``already_uploaded``) unless ``replace=True`` is asked for.
  A replacement keeps the old row and file, marked superseded (responses and scores
  stay attached to what was rated or scored; results that used it are reported stale),
  and stores the new file as the current masked video (``replaced``).

Lifecycle: :func:`create_upload` stores the zip inside a new
:class:`~evalsite.models.SubmissionUpload` row (nothing is stored before its record
exists), then :func:`run_upload` (the body of ``evalsite.tasks.validate_upload_task``)
validates it: ``queued`` -> ``processing`` -> ``done`` / ``failed``. The report is saved
after every member, and masked files stored by an upload carry its id, so an upload
stopped mid-way (a killed worker) shows how far it got and resumes without storing
anything twice.

Every file gets a row with a stable ``code`` (``CODES``); good files are stored even
when others are rejected. Zip members are never extracted to the path they name (a
member is streamed to a private temporary file), and members with absolute or ``..``
paths are rejected (zip-slip).
"""

from __future__ import annotations

import difflib
import filecmp
import io
import logging
import lzma
import re
import subprocess
import tempfile
import zipfile
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath

import cv2
from django.conf import settings
from django.core.files import File
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from automated.video import VideoError, VideoInfo, VideoTimeout, explain_ffmpeg_error, ffmpeg_executable

from .models import MaskedVideo, Submission, SubmissionUpload, UploadStatus, delete_stored
from .signals import masked_video_replaced
from .spreadsheet import SafeDictWriter
from .storage import local_path, store_video

logger = logging.getLogger("deid.uploads")

VIDEO_SUFFIXES = {".mp4", ".m4v", ".mov", ".mkv", ".avi", ".webm", ".mpg", ".mpeg", ".flv"}
FRAME_COUNT_TOLERANCE = 0  # frames
MAX_MEMBER_BYTES = 2 * 1024**3  # a masked clip larger than 2 GiB is refused (zip bombs)
#: Members expanding to at most this many bytes are exempt from the compression-ratio limit
#: (``DEID_UPLOAD_MAX_COMPRESSION_RATIO``): a small file cannot be a bomb.
RATIO_EXEMPT_BYTES = 1024**2
CODES = {
    "accepted": "stored as the masked video of its source video",
    "replaced": "stored as the current masked video; the earlier one is kept, superseded (replace was requested)",
    "ignored": "folder or operating-system metadata file (e.g. __MACOSX/, .DS_Store)",
    "not_a_zip": "the upload is not a zip archive",
    "damaged_zip": "the zip's central directory is cut short or damaged (e.g. an interrupted transfer)",
    "too_many_entries": "the zip holds more entries (files and folders) than DEID_UPLOAD_MAX_ZIP_ENTRIES",
    "upload_incomplete": "the zip was not stored completely (the upload was interrupted)",
    "internal_error": "validation stopped on an unexpected error; the members before it keep their rows",
    "unsafe_path": "absolute path or '..' in the member name",
    "not_a_video_file": "extension is not one of the accepted video extensions",
    "file_too_large": "member larger than MAX_MEMBER_BYTES",
    "compression_ratio_too_high": (
        "member expands to more than DEID_UPLOAD_MAX_COMPRESSION_RATIO times its compressed size (zip bomb?)"
    ),
    "unknown_name": "no source video has this name",
    "duplicate_in_zip": "several members carry the same video name",
    "already_uploaded": "the source video already has a masked video; replace not requested",
    "identical_to_current": "replace asked for, but the file is byte for byte the current masked video",
    "empty_zip": "the zip holds no video file (only folders or system files, or nothing)",
    "nothing_accepted": "no file of the zip was accepted (each file's row says why)",
    "bad_crc": "the member's data do not match its CRC-32 checksum (damaged zip)",
    "extract_failed": "the member cannot be extracted (encrypted, unsupported compression or corrupt data)",
    "unreadable_container": "the file does not open as a video container",
    "no_decodable_frames": "the container opens but no frame decodes",
    "truncated": "the video is cut short or damaged: not every frame decodes",
    "probe_timeout": "checking the video took longer than DEID_FFMPEG_TIMEOUT_S",
    "frame_count_mismatch": "frame count differs from the source video",
    "size_mismatch": "width x height differs from the source video",
    "duration_mismatch": "duration differs from the source video by more than one frame",
    "transcode_timeout": "making the browser copy took longer than DEID_TRANSCODE_TIMEOUT_S",
    "transcode_failed": "ffmpeg could not make the browser copy",
}
#: Codes that fail the upload as a whole (no member is looked at, or, for ``empty_zip`` and
#: ``nothing_accepted``, none was stored: the members' rows say why).
UPLOAD_CODES = (
    "not_a_zip",
    "damaged_zip",
    "too_many_entries",
    "upload_incomplete",
    "internal_error",
    "empty_zip",
    "nothing_accepted",
)
#: Upload codes whose members were each looked at (their rows say why none was stored).
STORED_NOTHING = ("empty_zip", "nothing_accepted")


class MaskedVideoError(ValueError):
    """A masked video fails a check; ``code`` is one of ``CODES``.

    ``problems`` lists every ``(code, message)`` found at once (:func:`compare_with_source`
    checks frames, size and duration together); ``code`` is the first one's.
    """

    def __init__(self, code: str, message: str, problems: list[tuple[str, str]] | None = None):
        assert code in CODES, code
        self.code = code
        self.problems = problems or [(code, message)]
        super().__init__(message)

    @classmethod
    def all_of(cls, problems: list[tuple[str, str]], shown: str) -> MaskedVideoError:
        """One error naming every problem: the first message whole, the others after it
        without the repeated ``"<shown>: "``."""
        code, first = problems[0]
        rest = [message.removeprefix(f"{shown}: ") for _, message in problems[1:]]
        return cls(code, "; ".join([first, *rest]), problems)


class UploadError(ValueError):
    """The upload as a whole is unusable; ``code`` is one of ``UPLOAD_CODES``."""

    def __init__(self, message: str, code: str = "not_a_zip"):
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class SourceSpec:
    """What a masked video must match: the clear video's decoded properties."""

    name: str
    frame_count: int
    resolution_wh: tuple[int, int]
    fps: float
    duration_s: float


def _decode(path: Path, timeout_s: float) -> tuple[int, str]:
    """Decode the first video stream once with ffmpeg: (frames decoded, errors reported).

    Every decoded frame counts (``-fps_mode passthrough``: none dropped or repeated), the
    count OpenCV's ``grab()`` loop (:meth:`automated.video.VideoInfo.from_video_path`) gives
    and the evaluation reads frame by frame: equal on every clip of the shared data (GRID
    MPEG-1, CREMA-D FLV) and on the H.264 and FFV1 files the masking writes. The errors
    are one per line without ffmpeg's ``[h264 @ 0x55...]`` prefixes ('' if none).

    Raises
    ------
    automated.video.VideoTimeout
        If decoding takes longer than ``timeout_s`` (ffmpeg is killed).
    """
    try:
        result = subprocess.run(
            [
                ffmpeg_executable(),
                "-nostdin",
                "-nostats",
                "-v",
                "error",
                "-progress",
                "pipe:1",
                "-i",
                str(path),
                "-map",
                "0:v:0",
                "-fps_mode",
                "passthrough",
                "-f",
                "null",
                "-",
            ],
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired:
        raise VideoTimeout(
            f"decoding took longer than {timeout_s:g} s", stage="probe", timeout_s=timeout_s
        ) from None
    counts = re.findall(r"^frame=(\d+)$", result.stdout, flags=re.MULTILINE)
    # Drop ffmpeg's "[h264 @ 0x55...]" prefixes: the rest is the readable reason.
    lines = [re.sub(r"^(\[[^]]*\]\s*)+", "", line).strip() for line in result.stderr.splitlines()]
    lines = [line for line in lines if line]
    errors = (
        "\n".join(lines)
        if lines
        else ("" if result.returncode == 0 else f"ffmpeg exit code {result.returncode}")
    )
    return (int(counts[-1]) if counts else 0), errors


def _header(path: Path, timeout_s: float) -> tuple[float, tuple[int, int], int] | None:
    """(fps, (width, height), frame count the header announces) without decoding; None if
    OpenCV cannot open the file as a video."""
    if not path.is_file():
        return None
    ms = max(1, int(timeout_s * 1000))
    capture = cv2.VideoCapture(str(path), cv2.CAP_ANY, [cv2.CAP_PROP_OPEN_TIMEOUT_MSEC, ms])
    try:
        if not capture.isOpened():
            return None
        size = (int(capture.get(cv2.CAP_PROP_FRAME_WIDTH)), int(capture.get(cv2.CAP_PROP_FRAME_HEIGHT)))
        return (
            float(capture.get(cv2.CAP_PROP_FPS) or 0.0),
            size,
            int(capture.get(cv2.CAP_PROP_FRAME_COUNT) or 0),
        )
    finally:
        capture.release()


def check_masked_video(
    path, source: SourceSpec, *, display_name: str | None = None, timeout_s: float | None = None
) -> VideoInfo:
    """Check one masked video file against its source video, decoding it once.

    The container header (OpenCV, nothing decoded) gives the frame rate, size and the frame
    count it announces; one ffmpeg decode of the video stream gives the frames that decode
    and any decoding error (:func:`_decode`).

    Parameters
    ----------
    path : path-like
        The masked video file.
    source : SourceSpec
        Decoded properties of the clear video.
    display_name : str, optional
        Name used in messages (default: the file name).
    timeout_s : float, optional
        Seconds opening the header and the decode may each take; default
        ``settings.DEID_FFMPEG_TIMEOUT_S``.

    Returns
    -------
    VideoInfo
        The masked video's properties (frames, fps, size, duration).

    Raises
    ------
    MaskedVideoError
        With code ``unreadable_container``, ``no_decodable_frames``, ``truncated``,
        ``probe_timeout``, or ``frame_count_mismatch``, ``size_mismatch`` and / or
        ``duration_mismatch`` (every one found, :func:`compare_with_source`).
    """
    path = Path(path)
    shown = display_name or path.name
    limit = float(timeout_s if timeout_s is not None else settings.DEID_FFMPEG_TIMEOUT_S)
    try:
        header = _header(path, limit)
        frame_count, decode_error = _decode(path, limit)
    except VideoTimeout as error:
        raise MaskedVideoError(
            "probe_timeout",
            f"{shown}: checking the video took longer than {limit:g} s (DEID_FFMPEG_TIMEOUT_S); "
            "is it much longer or larger than its source video, or damaged?",
        ) from error
    if header is None:
        raise MaskedVideoError(
            "unreadable_container",
            f"{shown}: not a readable video file: "
            + (explain_ffmpeg_error(decode_error) or "is it really a video? OpenCV/ffmpeg cannot open it"),
        )
    fps, resolution_wh, header_frames = header
    if frame_count == 0 or 0 in resolution_wh:
        raise MaskedVideoError(
            "no_decodable_frames",
            f"{shown}: the container opens but no video frame decodes ({path.name}: no decodable video frame)",
        )
    if fps <= 0:
        raise MaskedVideoError(
            "no_decodable_frames",
            f"{shown}: the container opens but no video frame decodes "
            f"({path.name}: frame rate missing from the container)",
        )
    if decode_error or header_frames > frame_count + FRAME_COUNT_TOLERANCE:
        detail = explain_ffmpeg_error(decode_error) if decode_error else "the stream ends early"
        raise MaskedVideoError(
            "truncated",
            f"{shown}: the video is truncated or damaged: {detail}; "
            f"{frame_count} frames decode (header announces {header_frames}, "
            f"the source has {source.frame_count})",
        )
    info = VideoInfo(path, frame_count, fps, resolution_wh, frame_count / fps)
    compare_with_source(info.frame_count, info.resolution_wh, info.fps, info.duration_s, source, shown=shown)
    return info


def compare_with_source(
    frame_count: int, resolution_wh, fps: float, duration_s: float, source: SourceSpec, *, shown: str
) -> None:
    """Check a masked video's probed properties against its source video's.

    Every mismatch is found before raising, so a team fixes them in one round (issue 21: a
    resized, cut clip showed its size only after the frame count was fixed). A duration
    that the missing or extra frames explain at the source's frame rate is no second
    problem. Also used to re-check stored masked videos when their clear video is replaced.

    Raises
    ------
    MaskedVideoError
        ``frame_count_mismatch``, ``size_mismatch`` and / or ``duration_mismatch`` (in that
        order; ``code`` the first, ``problems`` all), naming ``shown`` and both values.
    """
    problems = []
    frames_differ = abs(frame_count - source.frame_count) > FRAME_COUNT_TOLERANCE
    if frames_differ:
        problems.append(
            (
                "frame_count_mismatch",
                f"{shown}: {frame_count} frames, but source video '{source.name}' has "
                f"{source.frame_count}; masked videos must keep every frame",
            )
        )
    if tuple(resolution_wh) != tuple(source.resolution_wh):
        problems.append(
            (
                "size_mismatch",
                f"{shown}: {resolution_wh[0]}x{resolution_wh[1]} pixels, but source video "
                f"'{source.name}' is {source.resolution_wh[0]}x{source.resolution_wh[1]}",
            )
        )
    tolerance_s = 1.0 / source.fps
    rate_differs = abs(duration_s - frame_count / source.fps) > tolerance_s
    if abs(duration_s - source.duration_s) > tolerance_s and (rate_differs or not frames_differ):
        problems.append(
            (
                "duration_mismatch",
                f"{shown}: {duration_s:.3f} s at {fps:.3f} fps, but source video "
                f"'{source.name}' lasts {source.duration_s:.3f} s at {source.fps:.3f} fps "
                f"(tolerance {tolerance_s:.3f} s)",
            )
        )
    if problems:
        raise MaskedVideoError.all_of(problems, shown)


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
    status: str = UploadStatus.QUEUED  # of the upload: queued | processing | done | failed

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
            "status": self.status,
            "accepted": len(self.accepted),
            "rejected": len(self.rejected),
            "complete": self.complete,
            "missing_videos": list(self.missing_videos),
            "files": [asdict(f) for f in self.files],
        }

    @classmethod
    def from_upload(cls, upload: SubmissionUpload) -> ValidationReport:
        """The report stored in ``upload`` (as far as validation got)."""
        data = upload.report or {}
        return cls(
            upload.submission_id,
            [FileResult(**row) for row in data.get("files", [])],
            list(data.get("missing_videos", [])),
            bool(data.get("complete", False)),
            upload.pk,
            upload.status,
        )


def report_rows_as_csv(report: dict) -> str:
    """A stored report (``ValidationReport.to_dict()``) as CSV: one row per file, then
    one ``missing`` row per source video still without a masked video. The file names come
    from the team's zip, so every cell is made spreadsheet-safe (:mod:`evalsite.spreadsheet`)."""
    buffer = io.StringIO()
    writer = SafeDictWriter(buffer, fieldnames=["file", "video", "status", "code", "message"])
    writer.writeheader()
    for row in report.get("files", []):
        writer.writerow({k: row.get(k, "") for k in writer.fieldnames})
    for name in report.get("missing_videos", []):
        writer.writerow(
            {
                "file": "",
                "video": name,
                "status": "missing",
                "code": "missing_video",
                "message": f"no valid masked video for source video '{name}' yet",
            }
        )
    return buffer.getvalue()


def _is_system_member(path: PurePosixPath) -> bool:
    return "__MACOSX" in path.parts or path.name.startswith("._") or path.name in {".DS_Store", "Thumbs.db"}


def source_spec(source) -> SourceSpec:
    """Decoded properties of a SourceVideo (probed and saved once if not stored yet)."""
    if not source.frame_count:
        with local_path(source.file) as path:
            info = VideoInfo.from_video_path(path, timeout_s=settings.DEID_FFMPEG_TIMEOUT_S)
        source.frame_count, source.fps, source.duration_s = info.frame_count, info.fps, info.duration_s
        source.width, source.height = info.resolution_wh
        source.save(update_fields=["frame_count", "fps", "duration_s", "width", "height"])
    return SourceSpec(
        source.name, source.frame_count, (source.width, source.height), source.fps, source.duration_s
    )


def _screen_member(member: zipfile.ZipInfo, path: PurePosixPath, sources: dict) -> FileResult | None:
    """Name-level checks; None when the member is a candidate masked video."""
    name = member.filename
    if member.is_dir() or _is_system_member(path):
        return FileResult(name, "ignored", "ignored", f"{name}: folder or system file, ignored")
    if path.is_absolute() or ".." in path.parts or (path.parts and ":" in path.parts[0]):
        return FileResult(
            name, "rejected", "unsafe_path", f"{name}: absolute paths and '..' are not allowed in a zip"
        )
    if path.suffix.lower() not in VIDEO_SUFFIXES:
        return FileResult(
            name,
            "rejected",
            "not_a_video_file",
            f"{name}: '{path.suffix or 'no extension'}' is not a video extension "
            f"({', '.join(sorted(VIDEO_SUFFIXES))})",
        )
    if member.file_size > MAX_MEMBER_BYTES:
        return FileResult(
            name,
            "rejected",
            "file_too_large",
            f"{name}: {member.file_size} bytes is more than the limit of {MAX_MEMBER_BYTES}",
        )
    if _ratio_too_high(member.file_size, member.compress_size):
        return FileResult(name, "rejected", "compression_ratio_too_high", _ratio_message(member))
    if path.stem.lower() not in sources:
        close = difflib.get_close_matches(path.stem.lower(), list(sources), n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(repr(sources[c].name) for c in close)}?" if close else ""
        return FileResult(
            name, "rejected", "unknown_name", f"{name}: no source video is named '{path.stem}'{hint}"
        )
    return None


# --- the upload lifecycle ----------------------------------------------------------------


def create_upload(
    submission, zip_file, *, original_name: str = "", replace: bool = False, uploaded_by=None
) -> SubmissionUpload:
    """Create the upload's record, then store the zip in it (status ``queued``).

    Parameters
    ----------
    submission : Submission
    zip_file : path-like or binary file object
        The uploaded zip (e.g. Django's ``UploadedFile``); not checked here.
    original_name : str
        The zip's name as uploaded (default: the path's name).
    replace : bool, default=False
        Replace masked videos already stored for the same source videos.
    uploaded_by : User, optional

    Returns
    -------
    SubmissionUpload
        ``queued`` with its ``file``; or ``failed`` (``upload_incomplete``) if storing the
        zip failed, with any partial file removed. Validate it with :func:`run_upload`.
    """
    upload = create_upload_record(
        submission, zip_file, original_name=original_name, replace=replace, uploaded_by=uploaded_by
    )
    store_upload_zip(upload, zip_file)
    return upload


def create_upload_record(
    submission, zip_file, *, original_name: str = "", replace: bool = False, uploaded_by=None
) -> SubmissionUpload:
    """The upload's record alone (status ``queued``, no file yet): what the phase quotas
    count (:func:`evalsite.phases.counted_uploads`). Parameters as :func:`create_upload`."""
    if isinstance(zip_file, (str, Path)):
        original_name = original_name or Path(zip_file).name
    return SubmissionUpload.objects.create(
        submission=submission,
        uploaded_by=uploaded_by,
        original_name=original_name[:255],
        replace=replace,
        status=UploadStatus.QUEUED,
    )


def store_upload_zip(upload: SubmissionUpload, zip_file) -> SubmissionUpload:
    """Store ``zip_file`` (path-like or binary file object) in the record made by
    :func:`create_upload_record`; on failure the record becomes ``failed``
    (``upload_incomplete``) with any partial file removed. Returns ``upload``."""
    submission = upload.submission
    try:
        if isinstance(zip_file, (str, Path)):
            with open(zip_file, "rb") as handle:
                upload.file.save(Path(zip_file).name, File(handle), save=False)
        else:
            upload.file.save(upload.original_name or "upload.zip", File(zip_file), save=False)
        upload.save(update_fields=["file"])
    except Exception as error:  # disk full, client gone: the record says so
        logger.exception("upload %s: storing the zip failed", upload.pk)
        _delete_folder(f"uploads/u{upload.pk}")
        upload.file = ""
        _fail(
            upload,
            ValidationReport(submission.pk, upload_id=upload.pk),
            "upload_incomplete",
            f"{upload.original_name or 'the zip'}: could not be stored ({type(error).__name__}: {error}); "
            "upload it again",
        )
    return upload


def run_upload(upload_id: int, *, web_copies: bool = True) -> SubmissionUpload | None:
    """Validate a stored upload and store its good members (body of the Celery task).

    Claims the upload (``queued`` -> ``processing``) under a row lock; an upload left
    ``processing`` by a stopped worker is resumed: members it already stored are kept
    (reported again, not stored twice) and files it left without a row are removed. A
    ``done`` or ``failed`` upload is left as it is (a redelivered task does nothing).
    An unexpected error fails the upload with ``internal_error`` and its message.

    Returns
    -------
    SubmissionUpload or None
        The upload as stored afterwards (None if it does not exist).
    """
    with transaction.atomic():
        upload = SubmissionUpload.objects.select_for_update().filter(pk=upload_id).first()
        if upload is None or upload.status in (UploadStatus.DONE, UploadStatus.FAILED):
            return upload
        resumed = upload.status == UploadStatus.PROCESSING
        upload.status, upload.started_at, upload.error, upload.error_code = (
            UploadStatus.PROCESSING,
            timezone.now(),
            "",
            "",
        )
        upload.save(update_fields=["status", "started_at", "error", "error_code"])
    report = ValidationReport(upload.submission_id, upload_id=upload.pk, status=UploadStatus.PROCESSING)
    try:
        if resumed:
            _remove_unreferenced(upload)
        _process(upload, report, web_copies=web_copies)
    except Exception as error:
        logger.exception("upload %s: validation stopped", upload.pk)
        _fail(
            upload,
            report,
            "internal_error",
            f"validation stopped on an unexpected error ({type(error).__name__}: {error}); "
            f"the {len(report.accepted)} file(s) accepted before it are kept",
        )
    upload.refresh_from_db()
    return upload


def ingest_submission_zip(
    submission,
    zip_path,
    *,
    replace: bool = False,
    uploaded_by=None,
    original_name: str = "",
    web_copies: bool = True,
) -> ValidationReport:
    """Record, validate and store a zip of masked videos now, in this process.

    :func:`create_upload` then :func:`run_upload` (the site's views and commands queue
    ``evalsite.tasks.validate_upload_task`` instead).

    Parameters
    ----------
    submission : Submission
    zip_path : path-like
        The uploaded zip file.
    replace : bool, default=False
        Replace masked videos already stored for the same source videos (the old ones
        are kept, superseded); without it, such files are rejected
        (``already_uploaded``) and the stored ones kept.
    uploaded_by : User, optional
        Recorded with the upload.
    original_name : str
        The zip's name as uploaded (for the organizer's records).
    web_copies : bool, default=True
        Also store a browser-playable H.264 copy of each accepted file.

    Returns
    -------
    ValidationReport
        One row per member; also saved in the :class:`SubmissionUpload`. An upload that
        stored nothing (:data:`STORED_NOTHING`: ``empty_zip``, ``nothing_accepted``) is
        returned too, with ``status`` ``"failed"`` and a last row for the zip (the command
        and the API answer it as a failure).

    Raises
    ------
    FileNotFoundError
        If ``zip_path`` does not exist (no record is made).
    UploadError
        If the zip could not be read as a whole (``not_a_zip``, ``damaged_zip``, ...); its
        record is kept (``error.upload_id``).
    """
    zip_path = Path(zip_path)
    if not zip_path.is_file():
        raise FileNotFoundError(f"no such file: {zip_path}")
    upload = create_upload(
        submission, zip_path, original_name=original_name, replace=replace, uploaded_by=uploaded_by
    )
    upload = run_upload(upload.pk, web_copies=web_copies)
    if upload.error_code not in STORED_NOTHING:
        raise_if_failed(upload)
    return ValidationReport.from_upload(upload)


def raise_if_failed(upload: SubmissionUpload) -> None:
    """Raise :class:`UploadError` (with ``code`` and ``upload_id``) for a failed upload."""
    if upload.status == UploadStatus.FAILED:
        error = UploadError(upload.error, upload.error_code or "internal_error")
        error.upload_id = upload.pk
        raise error


def _process(upload: SubmissionUpload, report: ValidationReport, *, web_copies: bool) -> None:
    name = upload.original_name or "the zip"
    if not upload.file:
        _delete_folder(f"uploads/u{upload.pk}")  # a partial zip written before the process died
        _fail(
            upload,
            report,
            "upload_incomplete",
            f"{name}: the zip was not stored completely (the upload was interrupted); upload it again",
        )
        return
    with upload.file.open("rb") as handle:
        try:
            archive = _open_zip(handle, name)
        except UploadError as error:
            _fail(upload, report, error.code, str(error))
            return
        with archive, tempfile.TemporaryDirectory() as tmp:
            _ingest_members(upload, archive, Path(tmp), report, web_copies)
    members = [row for row in report.files if row.code != "ignored"]
    if not members:
        _fail(
            upload,
            report,
            "empty_zip",
            f"{name}: the zip holds no file to check (only folders or system files)",
        )
        return
    if not report.accepted:
        _fail(
            upload,
            report,
            "nothing_accepted",
            f"{name}: none of its {len(members)} file(s) was accepted "
            f"({', '.join(sorted({row.code for row in members}))}); each file's row says why",
        )
        return
    _finish(upload, report)


def _ratio_too_high(expanded: int, compressed: int) -> bool:
    """True if ``expanded`` bytes from ``compressed`` exceed ``DEID_UPLOAD_MAX_COMPRESSION_RATIO``
    (members up to ``RATIO_EXEMPT_BYTES`` are exempt)."""
    limit = settings.DEID_UPLOAD_MAX_COMPRESSION_RATIO
    return expanded > RATIO_EXEMPT_BYTES and expanded > limit * max(compressed, 1)


def _ratio_message(member: zipfile.ZipInfo) -> str:
    ratio = member.file_size / max(member.compress_size, 1)
    return (
        f"{member.filename}: expands from {member.compress_size} to {member.file_size} bytes "
        f"({ratio:.0f} times), more than the limit of {settings.DEID_UPLOAD_MAX_COMPRESSION_RATIO} times (DEID_UPLOAD_MAX_COMPRESSION_RATIO); a video hardly "
        "compresses, so this looks like a zip bomb: zip the masked video files as they are"
    )


def _open_zip(handle, name: str) -> zipfile.ZipFile:
    """Open the zip; ``not_a_zip``, ``damaged_zip`` or ``too_many_entries`` as :class:`UploadError`."""
    head = handle.read(4)
    handle.seek(0)
    try:
        archive = zipfile.ZipFile(handle)
    except (zipfile.BadZipFile, EOFError, ValueError) as error:
        if head.startswith(b"PK"):  # a zip's signature, but its directory is unreadable
            raise UploadError(
                f"{name}: the zip is damaged: its central directory is cut short or unreadable ({error}). "
                "Was the transfer interrupted? Make the zip again and upload it.",
                "damaged_zip",
            ) from error
        raise UploadError(
            f"{name} is not a zip file (upload one zip of masked videos)", "not_a_zip"
        ) from error
    limit, entries = settings.DEID_UPLOAD_MAX_ZIP_ENTRIES, len(archive.infolist())
    if entries > limit:
        archive.close()
        raise UploadError(
            f"{name}: the zip holds {entries} entries (files and folders), more than the limit of {limit} "
            "(DEID_UPLOAD_MAX_ZIP_ENTRIES); a submission needs one video file per source video: "
            "zip only the masked videos",
            "too_many_entries",
        )
    return archive


def _ingest_members(
    upload, archive: zipfile.ZipFile, tmp: Path, report: ValidationReport, web_copies: bool
) -> None:
    submission = upload.submission
    sources = {s.name.lower(): s for s in submission.source_videos()}
    infolist = archive.infolist()
    order = {m.filename: i for i, m in enumerate(infolist)}
    candidates = []
    for member in infolist:
        path = PurePosixPath(member.filename.replace("\\", "/"))
        result = _screen_member(member, path, sources)
        if result is not None:
            report.files.append(result)
        else:
            candidates.append((member, path))
    stems = [p.stem.lower() for _, p in candidates]
    for index, (member, path) in enumerate(candidates):
        source = sources[path.stem.lower()]
        if stems.count(path.stem.lower()) > 1:
            others = [
                m.filename for m, p in candidates if p.stem.lower() == path.stem.lower() and m is not member
            ]
            row = FileResult(
                member.filename,
                "rejected",
                "duplicate_in_zip",
                f"{member.filename}: the zip holds other files for video '{source.name}' "
                f"({', '.join(others)}); keep only one",
                source.name,
            )
        else:
            row = _ingest_member(
                upload, archive, member, path, source, tmp / f"member{index}{path.suffix.lower()}", web_copies
            )
        report.files.append(row)
        report.files.sort(key=lambda f: order.get(f.file, 0))
        _save_progress(upload, report)


def _ingest_member(
    upload, archive, member, path: PurePosixPath, source, local: Path, web_copies: bool
) -> FileResult:
    name = member.filename
    mine = MaskedVideo.all_versions.filter(upload=upload, source_video=source).first()
    if mine is not None:  # stored by this upload before it was interrupted
        return _accepted(name, mine, resumed=True)
    current = MaskedVideo.objects.filter(submission=upload.submission, source_video=source).first()
    kept = current is not None and not upload.replace
    try:
        _extract(archive, member, local)
        if current is not None and upload.replace:
            with local_path(current.file) as stored:
                if filecmp.cmp(local, stored, shallow=False):
                    raise MaskedVideoError(
                        "identical_to_current",
                        f"{name}: byte for byte the current masked video of '{source.name}'; nothing replaced",
                    )
        # Checked even when it would not be stored (already uploaded): every problem at once.
        info = check_masked_video(local, source_spec(source), display_name=name)
        if kept:
            return _already_uploaded(name, source)
        masked = _store(upload, source, local, path.name, info, web_copies)
    except MaskedVideoError as error:
        message = str(error)
        if kept:  # the file's own problem first, then that it would not replace the current one
            message += " " + _already_uploaded(name, source).message.removeprefix(f"{name}: ")
        return FileResult(name, "rejected", error.code, message, source.name)
    finally:
        local.unlink(missing_ok=True)
    return _accepted(name, masked)


def _accepted(name: str, masked: MaskedVideo, *, resumed: bool = False) -> FileResult:
    replaced = MaskedVideo.all_versions.filter(superseded_by=masked).exists()
    message = f"{name}: {masked.frame_count} frames, {masked.width}x{masked.height}"
    if replaced:
        message += "; now the current masked video, the earlier one is kept as superseded"
    if resumed:
        message += " (stored before the upload was interrupted)"
    return FileResult(
        name, "accepted", "replaced" if replaced else "accepted", message, masked.source_video.name
    )


def _already_uploaded(name: str, source) -> FileResult:
    return FileResult(
        name,
        "rejected",
        "already_uploaded",
        f"{name}: video '{source.name}' already has a masked video in this submission; it was kept. "
        "Upload again with 'replace' to replace it.",
        source.name,
    )


def _extract(archive: zipfile.ZipFile, member: zipfile.ZipInfo, local: Path) -> None:
    """Stream one member to ``local``; ``bad_crc``, ``extract_failed`` or ``file_too_large``.

    (zipfile stops a member's output at the directory's size, so the compression ratio
    checked on the directory by :func:`_screen_member` bounds what is written here.)
    """
    copied = 0
    with local.open("wb") as writer:
        for chunk in _member_chunks(archive, member):
            copied += len(chunk)
            if copied > MAX_MEMBER_BYTES:  # the header's size can lie
                raise MaskedVideoError(
                    "file_too_large", f"{member.filename}: more than the limit of {MAX_MEMBER_BYTES} bytes"
                )
            writer.write(chunk)


def _member_chunks(archive: zipfile.ZipFile, member: zipfile.ZipInfo):
    """The member's data in 1 MiB chunks; reading errors become ``MaskedVideoError``."""
    name = member.filename
    try:
        with archive.open(member) as reader:
            while chunk := reader.read(1 << 20):
                yield chunk
    except zipfile.BadZipFile as error:
        if "CRC" in str(error):  # zipfile checks the CRC-32 once the member is read to its end
            raise MaskedVideoError(
                "bad_crc",
                f"{name}: its data do not match the zip's CRC-32 checksum: the zip is damaged "
                "(changed or cut in transit?); make the zip again and upload this file",
            ) from error
        raise MaskedVideoError(
            "extract_failed", f"{name}: cannot be extracted from the zip ({error})"
        ) from error
    except (zlib.error, lzma.LZMAError, OSError, EOFError, NotImplementedError, RuntimeError) as error:
        # corrupt compressed data (bz2 raises OSError), a cut member, an unsupported
        # compression method, a password-protected member
        raise MaskedVideoError(
            "extract_failed", f"{name}: cannot be extracted from the zip ({error})"
        ) from error


def _store(upload, source, local: Path, upload_name: str, info: VideoInfo, web_copies: bool) -> MaskedVideo:
    """Save an accepted file as the current MaskedVideo of ``source``, superseding any earlier one.

    Files are stored first (outside the transaction: transcoding is slow), then the rows
    change in one transaction under the submission's row lock, so a resumed or duplicated
    run of the same upload never stores a member twice and two uploads replacing the same
    video one after the other each find the other's file current.

    Raises
    ------
    MaskedVideoError
        ``transcode_timeout`` / ``transcode_failed`` (browser copy), or
        ``already_uploaded`` when another upload stored this video meanwhile and replace
        was not asked for. Nothing is left in storage then.
    """
    masked = MaskedVideo(submission=upload.submission, source_video=source, upload=upload)
    try:
        stored = store_video(masked, local, info, name=upload_name, web_copy=web_copies)
    except VideoTimeout as error:
        raise MaskedVideoError(
            "transcode_timeout",
            f"{upload_name}: making the browser copy took longer than {error.timeout_s:g} s "
            "(DEID_TRANSCODE_TIMEOUT_S)",
        ) from error
    except VideoError as error:
        raise MaskedVideoError("transcode_failed", f"{upload_name}: {error}") from error
    try:
        with transaction.atomic():
            list(Submission.objects.select_for_update().filter(pk=upload.submission_id).values_list("pk"))
            earlier = MaskedVideo.all_versions.filter(upload=upload, source_video=source).first()
            if earlier is not None:  # a duplicated run of this upload got here first
                delete_stored(stored)
                return earlier
            old = (
                MaskedVideo.objects.select_for_update()
                .filter(submission=upload.submission, source_video=source)
                .first()
            )
            if old is not None and not upload.replace:
                raise MaskedVideoError("already_uploaded", _already_uploaded(upload_name, source).message)
            if old is not None:
                MaskedVideo.all_versions.filter(pk=old.pk).update(current=False, superseded_at=timezone.now())
            masked.save()
            if old is not None:
                MaskedVideo.all_versions.filter(pk=old.pk).update(superseded_by=masked)
                old.refresh_from_db()
                masked_video_replaced.send(sender=MaskedVideo, old=old, new=masked)
    except Exception:
        delete_stored(stored)
        raise
    return masked


def _save_progress(upload: SubmissionUpload, report: ValidationReport) -> None:
    report.status = UploadStatus.PROCESSING
    SubmissionUpload.objects.filter(pk=upload.pk).update(
        report=report.to_dict(), accepted_count=len(report.accepted), rejected_count=len(report.rejected)
    )


def _finish(upload: SubmissionUpload, report: ValidationReport) -> None:
    submission = upload.submission
    report.missing_videos = list(
        submission.missing_source_videos().order_by("name").values_list("name", flat=True)
    )
    report.complete = not report.missing_videos
    report.status = UploadStatus.DONE
    SubmissionUpload.objects.filter(pk=upload.pk).update(
        status=UploadStatus.DONE,
        finished_at=timezone.now(),
        report=report.to_dict(),
        accepted_count=len(report.accepted),
        rejected_count=len(report.rejected),
    )


def _fail(upload: SubmissionUpload, report: ValidationReport, code: str, message: str) -> None:
    """Mark the upload failed as a whole: a report row for the zip itself (unless its members'
    rows say why: :data:`STORED_NOTHING`), plus the error."""
    assert code in UPLOAD_CODES, code
    if code not in STORED_NOTHING:
        report.files.append(FileResult(upload.original_name or "upload", "rejected", code, message))
    report.missing_videos = list(
        upload.submission.missing_source_videos().order_by("name").values_list("name", flat=True)
    )
    report.complete = not report.missing_videos
    report.status = UploadStatus.FAILED
    SubmissionUpload.objects.filter(pk=upload.pk).update(
        status=UploadStatus.FAILED,
        error_code=code,
        error=message,
        finished_at=timezone.now(),
        file=upload.file.name or "",
        report=report.to_dict(),
        accepted_count=len(report.accepted),
        rejected_count=len(report.rejected),
    )


def _remove_unreferenced(upload: SubmissionUpload) -> None:
    """Delete files in the upload's masked folder that no row references (a crash's leftovers)."""
    storage = MaskedVideo._meta.get_field("file").storage
    folder = f"masked/u{upload.pk}"
    try:
        _, names = storage.listdir(folder)
    except FileNotFoundError:
        return
    for filename in names:
        name = f"{folder}/{filename}"
        if not MaskedVideo.all_versions.filter(Q(file=name) | Q(web_file=name)).exists():
            logger.warning("upload %s: removing %s, stored before a crash without its row", upload.pk, name)
            storage.delete(name)


def _delete_folder(folder: str) -> None:
    storage = SubmissionUpload._meta.get_field("file").storage
    try:
        _, names = storage.listdir(folder)
    except FileNotFoundError:
        return
    for filename in names:
        storage.delete(f"{folder}/{filename}")
