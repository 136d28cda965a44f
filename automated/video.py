"""Video I/O: probe a file and stream its frames without loading the whole video.

Frames are yielded one at a time as ``(frame_index, frame_rgb)`` where ``frame_rgb`` is
a ``uint8`` array of shape ``(height, width, 3)`` in RGB order; skipped frames are
``grab()``-bed, not decoded. The reader is released in ``finally`` even when the
consumer stops early (STYLE.md, point 6).

Probes and transcodes have timeouts (:func:`probe_timeout_s`, :func:`transcode_timeout_s`):
a damaged or hostile file raises :class:`VideoTimeout` instead of decoding for hours.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from .checks import check_stride
from .video_timeouts import (
    DEFAULT_PROBE_TIMEOUT_S,
    DEFAULT_TRANSCODE_TIMEOUT_S,
    PROBE_TIMEOUT_ENV,
    TRANSCODE_TIMEOUT_ENV,
)


class VideoError(ValueError):
    """A file is not a readable video (missing, not a container, no decodable frame)."""


class VideoTimeout(VideoError):
    """Probing or transcoding a video took longer than its timeout.

    ``stage`` is ``"probe"`` (opening, counting or decoding frames) or ``"transcode"``
    (writing a browser copy); ``timeout_s`` is the limit in seconds.
    """

    def __init__(self, message: str, *, stage: str, timeout_s: float):
        super().__init__(message)
        self.stage, self.timeout_s = stage, timeout_s


# A damaged or hostile file can make ffmpeg (or OpenCV's ffmpeg backend) decode for hours;
# every call gets a limit. Django passes its settings; library users may set the variables
# (names and defaults: automated/video_timeouts.py, which evalsite/conf.py declares too).


def probe_timeout_s(timeout_s: float | None = None) -> float:
    """``timeout_s``, else ``$DEID_FFMPEG_TIMEOUT_S``, else 300: seconds one probe may take."""
    return float(
        timeout_s if timeout_s is not None else os.environ.get(PROBE_TIMEOUT_ENV, DEFAULT_PROBE_TIMEOUT_S)
    )


def transcode_timeout_s(timeout_s: float | None = None) -> float:
    """``timeout_s``, else ``$DEID_TRANSCODE_TIMEOUT_S``, else 1800: seconds one transcode may take."""
    return float(
        timeout_s
        if timeout_s is not None
        else os.environ.get(TRANSCODE_TIMEOUT_ENV, DEFAULT_TRANSCODE_TIMEOUT_S)
    )


@dataclass(frozen=True)
class VideoInfo:
    """Properties of a video file.

    Attributes
    ----------
    path : pathlib.Path
    frame_count : int
        Frames that actually decode (counted, not taken from the header, which can lie
        for truncated files and MPEG-1 streams).
    fps : float
        Frames per second from the container header.
    resolution_wh : tuple of (int, int)
        (width, height) in pixels.
    duration_s : float
        ``frame_count / fps`` in seconds.
    """

    path: Path
    frame_count: int
    fps: float
    resolution_wh: tuple[int, int]
    duration_s: float

    @classmethod
    def from_video_path(cls, path: str | os.PathLike, *, timeout_s: float | None = None) -> VideoInfo:
        """Open ``path``, count its decodable frames and read fps and size.

        Parameters
        ----------
        path : path-like
        timeout_s : float, optional
            Seconds the probe may take (default :func:`probe_timeout_s`).

        Raises
        ------
        VideoTimeout
            If opening or counting takes longer than ``timeout_s`` (stage ``"probe"``).
        VideoError
            If the file does not exist, is not a container OpenCV can open, or has no
            decodable frame.
        """
        path = Path(path)
        if not path.is_file():
            raise VideoError(f"video file not found: {path}")
        limit = probe_timeout_s(timeout_s)
        deadline = time.monotonic() + limit
        capture = _open_capture(path, limit)
        try:
            if not capture.isOpened():
                raise VideoError(f"{path.name}: not a readable video container")
            fps = float(capture.get(cv2.CAP_PROP_FPS) or 0.0)
            width = int(capture.get(cv2.CAP_PROP_FRAME_WIDTH))
            height = int(capture.get(cv2.CAP_PROP_FRAME_HEIGHT))
            frame_count = 0
            while capture.grab() and time.monotonic() <= deadline:
                frame_count += 1
            # Past the deadline (or OpenCV's read timeout ended grab() early): the count is
            # partial, never a silently short video.
            if time.monotonic() > deadline:
                raise VideoTimeout(
                    f"{path.name}: probing took longer than {limit:g} s ({frame_count} frames counted)",
                    stage="probe",
                    timeout_s=limit,
                )
        finally:
            capture.release()
        if frame_count == 0 or width == 0 or height == 0:
            raise VideoError(f"{path.name}: no decodable video frame")
        if fps <= 0:
            raise VideoError(f"{path.name}: frame rate missing from the container")
        return cls(path, frame_count, fps, (width, height), frame_count / fps)


def _open_capture(path: Path, timeout_s: float) -> cv2.VideoCapture:
    """``cv2.VideoCapture`` whose ffmpeg backend gives up opening/reading after ``timeout_s``."""
    ms = max(1, int(timeout_s * 1000))
    return cv2.VideoCapture(
        str(path), cv2.CAP_ANY, [cv2.CAP_PROP_OPEN_TIMEOUT_MSEC, ms, cv2.CAP_PROP_READ_TIMEOUT_MSEC, ms]
    )


def video_header(path: str | os.PathLike) -> tuple[float, tuple[int, int]]:
    """Frame rate and ``(width, height)`` from the container's header; no frame is decoded.

    Raises
    ------
    VideoError
        As :meth:`VideoInfo.from_video_path`: the file does not exist, is not a container
        OpenCV can open, or has no frame rate.
    """
    path = Path(path)
    if not path.is_file():
        raise VideoError(f"video file not found: {path}")
    capture = cv2.VideoCapture(str(path))
    try:
        if not capture.isOpened():
            raise VideoError(f"{path.name}: not a readable video container")
        fps = float(capture.get(cv2.CAP_PROP_FPS) or 0.0)
        size = (int(capture.get(cv2.CAP_PROP_FRAME_WIDTH)), int(capture.get(cv2.CAP_PROP_FRAME_HEIGHT)))
    finally:
        capture.release()
    if fps <= 0:
        raise VideoError(f"{path.name}: frame rate missing from the container")
    return fps, size


def iter_frames(
    video_path: str | os.PathLike,
    *,
    stride: int = 1,
    start: int = 0,
    end: int | None = None,
    skipped: bool = False,
) -> Iterator[tuple[int, np.ndarray | None]]:
    """Yield ``(frame_index, frame_rgb)`` for frames ``start, start+stride, ... < end``.

    Parameters
    ----------
    video_path : path-like
    stride : int, default=1
        Keep every ``stride``-th frame (frames in between are grabbed, not decoded).
    start : int, default=0
        First frame index (0-based).
    end : int or None
        Stop before this frame index; None reads to the end.
    skipped : bool, default=False
        Also yield ``(frame_index, None)`` for every frame grabbed but not kept, so that
        a caller sees how many frames the file has without decoding it a second time.

    Yields
    ------
    frame_index : int
    frame_rgb : ndarray of shape (height, width, 3), dtype uint8, RGB

    Raises
    ------
    VideoError
        If the file cannot be opened as a video.
    ValueError
        If ``stride`` is not a whole number >= 1 (:func:`automated.checks.check_stride`)
        or ``start < 0``.
    """
    check_stride(stride)
    if start < 0:
        raise ValueError(f"start must be >= 0, got {start}")
    path = Path(video_path)
    if not path.is_file():
        raise VideoError(f"video file not found: {path}")
    capture = cv2.VideoCapture(str(path))
    try:
        if not capture.isOpened():
            raise VideoError(f"{path.name}: not a readable video container")
        index = 0
        while end is None or index < end:
            wanted = index >= start and (index - start) % stride == 0
            if wanted:
                ok, frame_bgr = capture.read()
                if not ok:
                    break
                yield index, cv2.cvtColor(frame_bgr, cv2.COLOR_BGR2RGB)
            elif not capture.grab():
                break
            elif skipped and index >= start:
                yield index, None
            index += 1
    finally:
        capture.release()


#: ffmpeg's (and libavformat's) messages for broken files, in the words a team can act on:
#: (lower-case phrase in ffmpeg's message, what it means). First match wins.
FFMPEG_EXPLANATIONS: tuple[tuple[str, str], ...] = (
    (
        "moov atom not found",
        "the MP4 index (moov atom) is missing, as when a file is cut off while it is written, "
        "uploaded or copied; export the video again",
    ),
    ("invalid nal unit", "the H.264 picture data are cut off or corrupt"),
    ("ac-tex damaged", "the MPEG picture data are damaged"),
    ("end of file", "the file ends before its last frame"),
    ("partial file", "the file ends before its last frame"),
    ("truncat", "the file ends before its last frame"),
    ("invalid data found when processing input", "the data are not a video stream ffmpeg can read"),
    ("error while decoding", "some frames do not decode"),
    ("concealing", "some frames are damaged (the decoder patched them)"),
    ("no such file", "the file is missing"),
)


def explain_ffmpeg_error(text: str) -> str:
    """ffmpeg's error ``text`` in plain words, with its first line kept for reference.

    Parameters
    ----------
    text : str
        ffmpeg's standard error (or one line of it); ``[h264 @ 0x...]`` prefixes are dropped.

    Returns
    -------
    str
        ``"<explanation> (ffmpeg: '<first line>')"`` for a known message
        (:data:`FFMPEG_EXPLANATIONS`), ``"the decoder reports an error (ffmpeg: '...')"``
        otherwise; ``""`` for an empty ``text``.
    """
    lines = [re.sub(r"^(\[[^]]*\]\s*)+", "", line).strip() for line in text.splitlines()]
    lines = [line for line in lines if line]
    if not lines:
        return ""
    lowered = " ".join(lines).lower()
    meaning = next((plain for phrase, plain in FFMPEG_EXPLANATIONS if phrase in lowered), None)
    return f"{meaning or 'the decoder reports an error'} (ffmpeg: {lines[0]!r})"


def ffmpeg_executable() -> str:
    """Path of the ffmpeg binary shipped by ``imageio-ffmpeg`` (or one on PATH)."""
    try:
        import imageio_ffmpeg

        return imageio_ffmpeg.get_ffmpeg_exe()
    except (ImportError, RuntimeError):
        found = shutil.which("ffmpeg")
        if found is None:
            raise RuntimeError("ffmpeg not found: install imageio-ffmpeg") from None
        return found


class VideoWriter:
    """Write RGB frames to a video file through ffmpeg (context manager).

    ``codec="ffv1"`` (in ``.mkv``/``.avi``) is lossless, for intermediates where a metric
    must not see codec artefacts (PrivHAR-Bench, seeds/004, "lossless intermediate
    storage"); ``codec="libx264"`` (``.mp4``, yuv420p, CRF 18) plays in browsers.

    Parameters
    ----------
    path : path-like
    fps : float
        Frames per second.
    resolution_wh : tuple of (int, int)
        (width, height) in pixels; every frame must have this size.

    Raises
    ------
    ValueError
        On a frame of the wrong shape or dtype.
    RuntimeError
        If ffmpeg fails (its stderr is in the message).
    """

    def __init__(self, path, fps: float, resolution_wh: tuple[int, int], *, codec: str = "libx264"):
        self.path = Path(path)
        self.fps = float(fps)
        self.resolution_wh = (int(resolution_wh[0]), int(resolution_wh[1]))
        self.codec = codec
        self._process: subprocess.Popen | None = None

    def __enter__(self) -> VideoWriter:
        width, height = self.resolution_wh
        codec_args = {
            "libx264": [
                "-c:v",
                "libx264",
                "-preset",
                "veryfast",
                "-crf",
                "18",
                "-pix_fmt",
                "yuv420p",
                "-vf",
                "pad=ceil(iw/2)*2:ceil(ih/2)*2",
                "-movflags",
                "+faststart",
            ],
            "ffv1": ["-c:v", "ffv1", "-level", "3", "-pix_fmt", "bgr0"],
        }.get(self.codec)
        if codec_args is None:
            raise ValueError(f"codec must be 'libx264' or 'ffv1', got {self.codec!r}")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        command = [
            ffmpeg_executable(),
            "-y",
            "-loglevel",
            "error",
            "-f",
            "rawvideo",
            "-pix_fmt",
            "rgb24",
            "-s",
            f"{width}x{height}",
            "-r",
            repr(self.fps),
            "-i",
            "-",
            "-an",
            *codec_args,
            str(self.path),
        ]
        self._process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL
        )
        return self

    def write(self, frame_rgb: np.ndarray) -> None:
        """Append one frame, ``uint8`` of shape ``(height, width, 3)``, RGB."""
        width, height = self.resolution_wh
        if frame_rgb.shape != (height, width, 3) or frame_rgb.dtype != np.uint8:
            raise ValueError(
                f"frame must be uint8 of shape {(height, width, 3)}, got {frame_rgb.dtype} {frame_rgb.shape}"
            )
        assert self._process is not None and self._process.stdin is not None
        self._process.stdin.write(np.ascontiguousarray(frame_rgb).tobytes())

    def __exit__(self, exc_type, exc, tb) -> None:
        assert self._process is not None
        try:  # communicate() closes stdin (end of the frames), then waits
            _, stderr_bytes = self._process.communicate(timeout=transcode_timeout_s())
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.communicate()
            if exc_type is None:
                raise VideoTimeout(
                    f"ffmpeg took longer than {transcode_timeout_s():g} s finishing {self.path.name}",
                    stage="transcode",
                    timeout_s=transcode_timeout_s(),
                ) from None
            return
        stderr = stderr_bytes.decode(errors="replace")
        code = self._process.returncode
        if code != 0 and exc_type is None:
            raise RuntimeError(f"ffmpeg failed writing {self.path.name}: {stderr.strip()}")


def transcode_for_web(input_path, output_path, *, timeout_s: float | None = None) -> Path:
    """Transcode any video ffmpeg reads to a silent H.264 MP4 that browsers play.

    Metadata (title, comments, original names) is stripped so that no hint of the
    source reaches a rater (DESIGN.md, security stance). Audio is dropped: raters judge
    faces and actions from the picture, and a voice would both identify the person and
    give away the acted emotion of clear videos that masked videos (written without
    audio) cannot, biasing clear-minus-masked scores.

    ``timeout_s`` (default :func:`transcode_timeout_s`) bounds the ffmpeg call.

    Raises
    ------
    VideoTimeout
        If ffmpeg runs longer than ``timeout_s`` (stage ``"transcode"``; it is killed and
        the partial output removed).
    VideoError
        If ffmpeg cannot read or convert the input (its message is included).
    """
    output_path = Path(output_path)
    output_path.parent.mkdir(parents=True, exist_ok=True)
    command = [
        ffmpeg_executable(),
        "-y",
        "-loglevel",
        "error",
        "-i",
        str(input_path),
        "-map",
        "0:v:0",
        "-an",
        "-map_metadata",
        "-1",
        "-map_chapters",
        "-1",
        "-c:v",
        "libx264",
        "-preset",
        "medium",
        "-crf",
        "23",
        "-pix_fmt",
        "yuv420p",
        "-vf",
        "scale=trunc(iw/2)*2:trunc(ih/2)*2",
        "-movflags",
        "+faststart",
        str(output_path),
    ]
    limit = transcode_timeout_s(timeout_s)
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        output_path.unlink(missing_ok=True)
        raise VideoTimeout(
            f"transcoding {Path(input_path).name} took longer than {limit:g} s",
            stage="transcode",
            timeout_s=limit,
        ) from None
    if result.returncode != 0:
        raise VideoError(f"cannot transcode {Path(input_path).name}: {explain_ffmpeg_error(result.stderr)}")
    return output_path


def frames_to_web_copy(frames, output_path, *, fps: float, resolution_wh: tuple[int, int]) -> Path:
    """Frames made here (RGB uint8 of shape ``(height, width, 3)``, ``resolution_wh`` =
    (width, height)) as a browser copy coded like :func:`transcode_for_web`'s of a clip of
    that frame rate.

    The frames go losslessly through an FFV1 AVI, whose header keeps the rate as a
    fraction (30000/1001 stays 30000/1001): OpenCV's MJPG AVI writer rounded it to three
    decimals (29.97), and the copy's MP4 header then had another timescale (11988 against
    30000 at NTSC's 29.97 fps, 23.976 and 59.94 alike), which told a generated clip (an
    attention-check probe) from every recorded one without decoding a frame.

    Returns
    -------
    Path
        ``output_path``.

    Raises
    ------
    ValueError
        On a frame of the wrong shape or dtype.
    VideoError
        If ffmpeg fails or times out.
    """
    output_path = Path(output_path)
    raw = output_path.with_name(output_path.stem + "-frames.avi")
    try:
        with VideoWriter(raw, fps, resolution_wh, codec="ffv1") as writer:
            for frame in frames:
                writer.write(frame)
        return transcode_for_web(raw, output_path)
    finally:
        raw.unlink(missing_ok=True)
