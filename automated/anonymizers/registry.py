"""The baseline methods by name and the video driver that applies one to a whole video.

``BASELINE_METHODS`` maps a method name to a ``BaselineMethod``; ``anonymize_video``
applies one to every frame of a video and writes a lossless FFV1 ``.mkv`` (PrivHAR-Bench,
seeds/004, section 2.A).
"""

from __future__ import annotations

import logging
import os
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..cache_files import save_npz, settings_token
from ..clear_side import file_sha256
from ..detection import MediaPipeFaceDetector, detector_key, largest_face
from ..video import VideoError, VideoInfo, VideoWriter, iter_frames, video_header
from .filters import blur_face, blur_frame, canny_edges, eye_mask, identity, pixelate_face
from .kanonymity import k_rtio, k_same_pixel
from .permutations import block_permute, frame_nonce, grid_permute
from .privacy import dp_pix, dp_samp, dp_snow, frame_rng
from .regions import face_region


logger = logging.getLogger(__name__)
#: Version of the face-track cache files (``face_track(cache_dir=...)``).
FACE_TRACK_FORMAT = 1


class NoFaceInVideoError(ValueError):
    """A face-region method was asked to mask a video in which no face is detected."""


@dataclass(frozen=True)
class FrameContext:
    """What a baseline method may use for one frame.

    Attributes
    ----------
    frame_index : int
    box_xyxy : ndarray of shape (4,) or None
        The face box in pixels (None when the method does not need it).
    eyes_xy : ndarray of shape (2, 2) or None
        Eye centres in pixels, when known.
    key : bytes
        AES key of the video (keyed methods).
    video_nonce : bytes
        8 bytes unique per (key, video), the first half of every ``frame_nonce``.
    """

    frame_index: int
    box_xyxy: np.ndarray | None = None
    eyes_xy: np.ndarray | None = None
    key: bytes = bytes(32)
    video_nonce: bytes = bytes(8)


@dataclass(frozen=True)
class BaselineMethod:
    """A named baseline: ``apply(frame_rgb, context) -> frame_rgb``; ``needs_face`` if it masks the face region."""

    name: str
    description: str
    needs_face: bool
    apply: Callable[[np.ndarray, FrameContext], np.ndarray]


def _frame_rng(context: FrameContext) -> np.random.Generator:
    return frame_rng(context.key, context.video_nonce, context.frame_index)


def _region(frame_rgb: np.ndarray, context: FrameContext):
    return face_region(context.box_xyxy, (frame_rgb.shape[1], frame_rgb.shape[0]))


BASELINE_METHODS: dict[str, BaselineMethod] = {
    method.name: method
    for method in (
        BaselineMethod("identity", "unmasked frames (worst case)", False, lambda f, c: identity(f)),
        BaselineMethod(
            "blur_face",
            "Gaussian blur sigma=15 px on the face region",
            True,
            lambda f, c: blur_face(f, _region(f, c)),
        ),
        BaselineMethod(
            "blur_frame", "Gaussian blur sigma=15 px on the whole frame", False, lambda f, c: blur_frame(f)
        ),
        BaselineMethod(
            "pixelate_face",
            "16 px pixelation of the face region",
            True,
            lambda f, c: pixelate_face(f, _region(f, c)),
        ),
        BaselineMethod(
            "eye_mask",
            "black strip over the eyes (0.625 of face height)",
            True,
            lambda f, c: eye_mask(f, c.box_xyxy, c.eyes_xy),
        ),
        BaselineMethod(
            "block_permute_fixed",
            "8x8-cell permutation of the face region, one key and permutation for all frames and videos",
            True,
            lambda f, c: grid_permute(f, _region(f, c), key=c.key),
        ),
        BaselineMethod(
            "block_permute_keyed",
            "16 px AES-CTR block permutation of the face region, fresh nonce per frame",
            True,
            lambda f, c: block_permute(
                f, _region(f, c), key=c.key, nonce=frame_nonce(c.frame_index, c.video_nonce)
            ),
        ),
        BaselineMethod("canny", "Canny edge map of the whole frame", False, lambda f, c: canny_edges(f)),
        BaselineMethod(
            "k_same_pixel",
            "k-Same-Pixel k=10: face averaged with its 9 nearest LFW background faces",
            True,
            lambda f, c: k_same_pixel(f, _region(f, c)),
        ),
        BaselineMethod(
            "dp_pix",
            "DP-Pix epsilon=2, 12 px cells, m=16: cell means + Laplace noise (b=14.2)",
            True,
            lambda f, c: dp_pix(f, _region(f, c), rng=_frame_rng(c)),
        ),
        BaselineMethod(
            "dp_snow",
            "DP-Snow d=0.01: 99% of the face pixels replaced by grey",
            True,
            lambda f, c: dp_snow(f, _region(f, c), rng=_frame_rng(c)),
        ),
        BaselineMethod(
            "dp_samp",
            "DP-Samp epsilon=5, k=24, m=12: DP pixel sampling per colour cluster, interpolated",
            True,
            lambda f, c: dp_samp(f, _region(f, c), rng=_frame_rng(c)),
        ),
        BaselineMethod(
            "k_rtio",
            "k-RTIO alpha=0.4, 18 px blocks, k=3: block-permuted overlays, fresh per frame",
            True,
            lambda f, c: k_rtio(f, _region(f, c), key=c.key, nonce=frame_nonce(c.frame_index, c.video_nonce)),
        ),
    )
}


def face_track(video_path, *, detector=None, cache_dir=None) -> tuple[np.ndarray, np.ndarray]:
    """Largest face box and eye centres in every frame, gaps filled from neighbours.

    A frame where the detector finds no face takes the box of the nearest earlier frame
    with one, or, before the first detection, of the first later frame with one: a
    masking baseline must never leave a face bare because the detector blinked.

    Parameters
    ----------
    video_path : path-like
    detector : MediaPipeFaceDetector, optional
        Default: a new ``MediaPipeFaceDetector()`` (its keypoints give the eyes).
    cache_dir : path-like, optional
        Folder keeping each track on disk (``face_track_<key>.npz``, written atomically,
        ``cache_files.save_npz``), keyed by the video's content (SHA-256) and the
        detector's settings (``detection.detector_key``): every face-region baseline masks
        the same clear videos, so a campaign's 11 such baselines detect each clear frame
        once, not 11 times (issue 20: about 0.7 CPU s per 3 s clip, detection plus
        decoding). The arrays are stored losslessly, so a cached track equals a computed
        one bit for bit; an unreadable entry is computed again.

    Returns
    -------
    boxes_xyxy : ndarray of shape (n_frames, 4), float32
    eyes_xy : ndarray of shape (n_frames, 2, 2), float32
        NaN where the detector gives no keypoints (e.g. dlib HOG).

    Raises
    ------
    NoFaceInVideoError
        If no frame of the video has a face.
    """
    own = detector is None
    detector = MediaPipeFaceDetector() if own else detector
    try:
        path = None
        if cache_dir is not None:
            key = settings_token(
                "face-track", FACE_TRACK_FORMAT, file_sha256(video_path), detector_key(detector)
            )
            path = Path(cache_dir) / f"face_track_{key}.npz"
            cached = _load_face_track(path)
            if cached is not None:
                return cached
        boxes_xyxy, eyes_xy = _detect_face_track(video_path, detector)
    finally:
        if own:
            detector.close()
    found = np.flatnonzero(~np.isnan(boxes_xyxy[:, 0]))
    if len(found) == 0:
        raise NoFaceInVideoError(f"{Path(video_path).name}: no face detected in any frame")
    # Nearest earlier detection, else the first later one.
    source = np.maximum.accumulate(np.where(~np.isnan(boxes_xyxy[:, 0]), np.arange(len(boxes_xyxy)), -1))
    source[source < 0] = found[0]
    track = boxes_xyxy[source], eyes_xy[source]
    if path is not None:
        try:
            save_npz(path, boxes_xyxy=track[0], eyes_xy=track[1])
        except OSError as error:  # a full or read-only cache folder costs time, not the result
            logger.warning("face track not cached in %s: %s", cache_dir, error)
    return track


def _detect_face_track(video_path, detector) -> tuple[np.ndarray, np.ndarray]:
    """Largest face box and its eyes per frame (NaN where none), before gaps are filled."""
    boxes, eyes = [], []
    for frame_index, frame_rgb in iter_frames(video_path):
        detections = detector.detect(frame_rgb, frame_index)
        box = largest_face(detections)
        boxes.append(box if box is not None else np.full(4, np.nan, np.float32))
        keypoints = getattr(detector, "last_keypoints_xy", None)
        if box is not None and keypoints is not None and len(keypoints) == len(detections):
            areas = np.prod(detections.boxes_xyxy[:, 2:] - detections.boxes_xyxy[:, :2], axis=1)
            eyes.append(keypoints[int(np.argmax(areas)), :2])
        else:
            eyes.append(np.full((2, 2), np.nan, np.float32))
    return np.asarray(boxes, np.float32).reshape(-1, 4), np.asarray(eyes, np.float32).reshape(-1, 2, 2)


def _load_face_track(path: Path) -> tuple[np.ndarray, np.ndarray] | None:
    """A track written by ``face_track``, or None if missing or unreadable (then recomputed)."""
    if not path.is_file():
        return None
    try:
        with np.load(path) as data:
            boxes_xyxy, eyes_xy = data["boxes_xyxy"], data["eyes_xy"]
    # zlib.error: a damaged deflate stream inside the archive (its CRC is checked only
    # after a whole member is inflated), e.g. a flipped byte of the compressed arrays
    except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as error:
        logger.warning("face track cache %s unreadable (%s): computed again", path.name, error)
        return None
    if (
        boxes_xyxy.dtype != np.float32
        or eyes_xy.dtype != np.float32
        or boxes_xyxy.shape[1:] != (4,)
        or eyes_xy.shape != (len(boxes_xyxy), 2, 2)
        or not len(boxes_xyxy)
    ):
        logger.warning("face track cache %s inconsistent: computed again", path.name)
        return None
    return boxes_xyxy, eyes_xy


def anonymize_video(
    src_path,
    dst_path,
    method: str,
    *,
    key: bytes | None = None,
    video_nonce: bytes | None = None,
    detector=None,
    face_track_cache_dir=None,
) -> VideoInfo:
    """Apply a baseline method to every frame of a video; write lossless FFV1.

    Frames are streamed (one decoded frame in memory at a time); face-region methods
    first run ``face_track`` over the video (only the boxes are kept). The source is
    decoded once more for the frames, and the output not at all: ffmpeg's raw-video
    input coded to intra-only FFV1 at the same rate writes exactly the frames it is
    given, so the frames written are the file's (issue 20: counting a 3 s clip's FFV1
    copy by decoding cost 0.3-0.6 s, a quarter of masking it).

    Parameters
    ----------
    src_path : path-like
        Clear source video.
    dst_path : path-like
        Output file, ``.mkv`` (FFV1, lossless, RGB).
    method : str
        A key of ``BASELINE_METHODS``.
    key : bytes, optional
        AES key for the block permutations (16, 24 or 32 bytes). Default: 32 fresh random
        bytes from ``os.urandom``, not stored (the permutation cannot be undone).
    video_nonce : bytes, optional
        8 bytes that make this video's per-frame nonces unique under ``key``
        (``frame_nonce``). Default: 8 fresh random bytes, so one key can mask many
        videos; pass a fixed value only to reproduce a masking.
    detector : optional
        Face detector for face-region methods (default MediaPipe).
    face_track_cache_dir : path-like, optional
        Cache folder of the face tracks (``face_track``'s ``cache_dir``): the masked frames
        are the same with or without it.

    Returns
    -------
    VideoInfo
        Of the written file: the source's decodable frames, size and fps.

    Raises
    ------
    ValueError
        On an unknown method, a ``dst_path`` not ending in ``.mkv``, or a key or
        video nonce of the wrong length; if the source's frame size changes mid-stream.
    NoFaceInVideoError
        If a face-region method finds no face in the whole video.
    automated.video.VideoError
        If the source is not a readable video or has no decodable frame.
    RuntimeError
        If the source decodes to a different number of frames the second time (the face
        track's pass), or ffmpeg fails writing.
    """
    if method not in BASELINE_METHODS:
        raise ValueError(f"unknown baseline method {method!r}; choose one of {', '.join(BASELINE_METHODS)}")
    dst_path = Path(dst_path)
    if dst_path.suffix.lower() != ".mkv":
        raise ValueError(f"baseline videos are written as lossless FFV1 .mkv, got {dst_path.name}")
    key = os.urandom(32) if key is None else bytes(key)
    if len(key) not in (16, 24, 32):
        raise ValueError(f"AES key must be 16, 24 or 32 bytes, got {len(key)}")
    video_nonce = os.urandom(8) if video_nonce is None else bytes(video_nonce)
    if len(video_nonce) != 8:
        raise ValueError(f"video_nonce must be 8 bytes, got {len(video_nonce)}")
    baseline = BASELINE_METHODS[method]
    fps, resolution_wh = video_header(src_path)
    boxes = eyes = None
    if baseline.needs_face:
        boxes, eyes = face_track(src_path, detector=detector, cache_dir=face_track_cache_dir)
    n_frames = 0
    with VideoWriter(dst_path, fps, resolution_wh, codec="ffv1") as writer:
        for frame_index, frame_rgb in iter_frames(src_path):
            if boxes is not None and frame_index >= len(boxes):
                raise RuntimeError(
                    f"{Path(src_path).name}: more frames decoded than the face track's {len(boxes)}"
                )
            context = FrameContext(frame_index, key=key, video_nonce=video_nonce)
            if boxes is not None:
                eye_pair = eyes[frame_index]
                context = FrameContext(
                    frame_index,
                    boxes[frame_index],
                    None if np.isnan(eye_pair).any() else eye_pair,
                    key,
                    video_nonce,
                )
            writer.write(baseline.apply(frame_rgb, context))
            n_frames += 1
    if n_frames == 0:
        dst_path.unlink(missing_ok=True)
        raise VideoError(f"{Path(src_path).name}: no decodable video frame")
    if boxes is not None and n_frames != len(boxes):
        raise RuntimeError(
            f"{Path(src_path).name}: {n_frames} frames decoded, the face track had {len(boxes)}"
        )
    return VideoInfo(dst_path, n_frames, fps, resolution_wh, n_frames / fps)
