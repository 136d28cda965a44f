"""Automated face evaluation of one masked video against its clear source video.

The MediaEval 2021 computational evaluation (seeds/002_68b18bfdbdb94491.txt,
"computational face recognition evaluation"): over selected frames, detect faces in the
masked video and score the IoU with the clear face (cumulated over tested frames), and
compare masked faces with the gallery face of the person, counting matches. Added here:
the face detection failure rate, SSIM and PSNR of PrivHAR-Bench (seeds/004, section 3),
and closed-set identification among all gallery identities with its chance level
(seeds/000, closed-set identification).

Protocol of ``evaluate_video`` (frames are streamed in lockstep, never loaded whole):

1. Every ``stride``-th frame is *tested*. SSIM and PSNR compare every tested masked frame
   with its clear frame.
2. The largest face found in the clear frame is the evaluated person. Tested frames
   with a clear face are *reference frames*; detection and recognition scores are over
   reference frames only.
3. Detection: IoU of the clear box with the best-overlapping masked box (0 if none);
   failure = no face found in the masked frame.
4. Recognition (the attacker): the probe is the masked face at the masked box that
   overlaps the clear box, or, where the detector finds none, at the clear box itself,
   so that a masking that only defeats the detector is not credited with hiding the
   identity. Its embedding is compared with the gallery: a *match* when its distance to
   the true identity's nearest gallery image is <= ``threshold`` (genuine comparison),
   and its closed-set rank among all gallery identities.
5. The same recognition on the clear frames gives the clear (unmasked) reference, so
   masking success = clear rate - masked rate (seeds/002, section 4.3).
6. A clear video with no face in any tested frame has no reference frame: detection and
   recognition scores are undefined. ``evaluate_video`` raises ``NoFaceError`` unless
   the caller asks for NaN scores (``no_face="nan"``, as the evaluation runs do).
"""
from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from itertools import zip_longest
from numbers import Integral, Real
from pathlib import Path
from typing import Literal

import numpy as np

from .detection import FaceDetections, box_iou, detector_key, largest_face, make_face_detector
from .face_crop import NoFaceFoundError
from .detection_metrics import detection_failure_rate, iou_summary, masked_frame_iou
from .image_metrics import psnr, ssim, summarize_psnr
from .recognition import (
    DEFAULT_EMBEDDER, chance_level, closed_set_rank, identity_distances, make_face_embedder, match_rate,
)
from .video import VideoInfo, iter_frames


class VideoPairError(ValueError):
    """A masked video does not fit its clear video (frame count or frame size differ)."""


class NoFaceError(ValueError):
    """No face is detected in any tested frame of a clear video: nothing to score against."""


@dataclass(frozen=True)
class VideoEvaluation:
    """Every automated face metric of one masked video (rates are fractions in [0, 1]).

    Attributes
    ----------
    frames_tested : int
        Frames compared (every ``stride``-th frame).
    clear_faces : int
        Tested frames with a face in the clear video (reference frames).
    masked_faces : int
        Reference frames where a face is found in the masked video.
    mean_iou, cumulative_iou : float
        Mean and sum of the per-reference-frame IoU (0 where the masked frame has no
        face); NaN when ``clear_faces == 0``.
    detection_failure_rate : float
        ``1 - masked_faces / clear_faces``; NaN when ``clear_faces == 0``.
    match_rate : float
        Share of reference frames whose masked face matches the true identity's gallery
        at ``threshold`` (verification); NaN when ``clear_faces == 0``.
    rank1_rate, mean_rank : float
        Closed-set identification of the masked face among ``n_identities``: share of
        rank-1 hits and the mean rank (1 = best); NaN when ``clear_faces == 0``.
    mean_genuine_distance : float
        Mean L2 distance of the masked face to the true identity's gallery.
    clear_match_rate, clear_rank1_rate : float
        The same on the clear frames (unmasked reference); NaN when ``clear_faces == 0``.
    chance_level : float
        1 / ``n_identities``: the rank-1 rate of guessing.
    n_identities : int
    ssim : float
        Mean SSIM over tested frames, in [-1, 1] (``image_metrics.ssim``).
    psnr_db : float
        Mean finite PSNR over tested frames in dB; +inf if every tested frame is
        identical (``image_metrics.summarize_psnr``).
    psnr_identical_frames : int
        Tested frames identical to the clear frame (PSNR +inf, not in the mean).
    stride : int
    detector : str
    threshold : float
    embedder : str
        Registry name of the embedder (``recognition.EMBEDDERS``) or its class name.
    """

    frames_tested: int
    clear_faces: int
    masked_faces: int
    mean_iou: float
    cumulative_iou: float
    detection_failure_rate: float
    match_rate: float
    rank1_rate: float
    mean_rank: float
    mean_genuine_distance: float
    clear_match_rate: float
    clear_rank1_rate: float
    chance_level: float
    n_identities: int
    ssim: float
    psnr_db: float
    psnr_identical_frames: int
    stride: int
    detector: str
    threshold: float
    embedder: str = DEFAULT_EMBEDDER

    def as_dict(self) -> dict:
        """Plain dict of all fields."""
        return asdict(self)


#: Settings recorded with every evaluation (not metrics).
SETTING_FIELDS = ("stride", "detector", "threshold", "embedder")
METRIC_FIELDS = tuple(f.name for f in fields(VideoEvaluation) if f.name not in SETTING_FIELDS)


class _Stopwatch:
    """Accumulates CPU seconds per stage into a caller's dict (for the benchmark).

    ``time.process_time`` (CPU time of this process) rather than wall time, so that other
    processes on a shared machine do not inflate the figures.
    """

    def __init__(self, into: dict | None):
        self.into = into

    def add(self, stage: str, since: float) -> float:
        now = time.process_time()
        if self.into is not None:
            self.into[stage] = self.into.get(stage, 0.0) + now - since
        return now


def _genuine_distance(embedding, gallery_embeddings, gallery_identities, true_identity) -> float:
    identities, distances = identity_distances(embedding, gallery_embeddings, gallery_identities)
    return float(distances[np.flatnonzero(identities == true_identity)[0]])


def _embed_faces(embedder, faces) -> np.ndarray:
    """``embedder.embed_faces(faces)``, or one ``embed`` call per face for an embedder without it."""
    if hasattr(embedder, "embed_faces"):
        return embedder.embed_faces(faces)
    return np.concatenate([embedder.embed(image, np.asarray(box)[None]) for image, box in faces])


def _probe_box(clear_box: np.ndarray, masked: FaceDetections) -> np.ndarray:
    """Masked box overlapping the clear face most, else the clear box (protocol step 4)."""
    best, best_iou = clear_box, 0.0
    for box in masked.boxes_xyxy:
        iou = box_iou(clear_box, box)
        if iou > best_iou:
            best, best_iou = box, iou
    return best


def _clear_cache_key(clear_path, stride: int, detector, embedder) -> tuple:
    """File identity (path, size, mtime), stride, detector and embedder settings."""
    path = Path(clear_path).resolve()
    stat = path.stat()
    embedder_key = embedder.cache_key() if hasattr(embedder, "cache_key") else type(embedder).__qualname__
    return (str(path), stat.st_size, stat.st_mtime_ns, stride, detector_key(detector), embedder_key)


def check_video_pair(clear_path, masked_path) -> VideoInfo:
    """Check that two videos have the same frame count and size; return the clear one's info.

    Raises
    ------
    VideoPairError
        Naming both values when the frame counts or sizes differ.
    automated.video.VideoError
        If either file is not a readable video.
    """
    clear = VideoInfo.from_video_path(clear_path)
    masked = VideoInfo.from_video_path(masked_path)
    if clear.frame_count != masked.frame_count:
        raise VideoPairError(
            f"{masked.path.name} has {masked.frame_count} frames, its clear video {clear.path.name} has "
            f"{clear.frame_count}"
        )
    if clear.resolution_wh != masked.resolution_wh:
        raise VideoPairError(
            f"{masked.path.name} is {masked.resolution_wh[0]}x{masked.resolution_wh[1]} pixels, its clear video "
            f"{clear.path.name} is {clear.resolution_wh[0]}x{clear.resolution_wh[1]}"
        )
    return clear


def evaluate_video(
    clear_path,
    masked_path,
    gallery_embeddings: np.ndarray,
    gallery_identities: Sequence,
    true_identity,
    *,
    stride: int = 5,
    detector="mediapipe",
    embedder=DEFAULT_EMBEDDER,
    threshold: float | None = None,
    timings: dict | None = None,
    clear_cache: dict | None = None,
    no_face: Literal["raise", "nan"] = "raise",
) -> VideoEvaluation:
    """Score one masked video against its clear video and the gallery (module protocol).

    Parameters
    ----------
    clear_path, masked_path : path-like
        The clear source video and its masked version (same frame count and size).
    gallery_embeddings : ndarray of shape (k, dim), float32
        Gallery embeddings of ALL identities of the campaign (``embed_gallery_image``)
        by the same embedder: ``dim = embedder.dim`` columns, finite values.
    gallery_identities : array-like of shape (k,)
        Identity label of each gallery embedding.
    true_identity : label
        The person in the video; must be in ``gallery_identities``.
    stride : int, default=5
        Test every ``stride``-th frame (frames 0, stride, 2*stride, ...); a whole number >= 1.
    detector : str or detector object, default="mediapipe"
        A ``make_face_detector`` name (created and closed here) or a detector instance.
    embedder : str or embedder object, default=recognition.DEFAULT_EMBEDDER
        A ``recognition.make_face_embedder`` name or an embedder instance (``dim`` and
        ``embed_faces``, or ``embed`` for one image; ``threshold`` if none is passed).
        The clear and masked faces of a frame are embedded in one batch.
    threshold : float, optional
        Verification threshold on the embedding distance, finite and >= 0 (match when
        distance <= threshold, ``recognition.match_rate``); default the embedder's
        documented threshold (0.6 for dlib's ResNet).
    timings : dict, optional
        If given, CPU seconds (``time.process_time``) spent per stage are added to it
        under "decode", "detect", "embed" and "metrics" (benchmarks/bench_face_eval.py).
    clear_cache : dict, optional
        Keeps the clear-frame analysis (face box and embedding per tested frame) between
        calls, keyed by the clear file (path, size, modification time), stride and
        detector settings, so several submissions of one campaign detect and embed each
        clear frame once. The caller owns (and bounds) the dict.
    no_face : {"raise", "nan"}, default="raise"
        What to do when no tested clear frame has a face (module protocol, step 6):
        raise ``NoFaceError``, or return NaN detection and recognition scores (SSIM and
        PSNR are still computed) with ``clear_faces == 0``.

    Returns
    -------
    VideoEvaluation

    Raises
    ------
    VideoPairError
        If the videos differ in frame count or frame size.
    NoFaceError
        If no tested clear frame has a face and ``no_face="raise"``.
    automated.video.VideoError
        If either file is missing or not a readable video.
    ValueError
        If ``true_identity`` is not in the gallery, ``stride`` is not a whole number
        >= 1, ``threshold`` is negative or not finite, or the gallery arrays are
        empty, inconsistent or not finite; all checked before any frame is decoded.
    """
    if isinstance(stride, bool) or not isinstance(stride, Integral) or stride < 1:
        raise ValueError(f"stride must be a whole number >= 1, got {stride!r}")
    if no_face not in ("raise", "nan"):
        raise ValueError(f"no_face must be 'raise' or 'nan', got {no_face!r}")
    embedder_name = embedder if isinstance(embedder, str) else getattr(embedder, "name", "") or type(embedder).__name__
    embedder = make_face_embedder(embedder) if isinstance(embedder, str) else embedder
    if threshold is None:
        if not hasattr(embedder, "threshold"):
            raise ValueError(f"{embedder_name} has no documented threshold: pass threshold=")
        threshold = embedder.threshold
    if isinstance(threshold, bool) or not isinstance(threshold, Real) or not 0 <= threshold < math.inf:
        raise ValueError(f"threshold must be a finite L2 distance >= 0, got {threshold!r}")
    labels = np.asarray(gallery_identities)
    gallery = np.asarray(gallery_embeddings, dtype=np.float32)
    if gallery.ndim != 2 or len(gallery) != len(labels) or len(labels) == 0:
        raise ValueError(
            f"gallery_embeddings must be (k, d) with k = len(gallery_identities) > 0, got {gallery.shape} "
            f"and {len(labels)} identities"
        )
    if gallery.shape[1] != embedder.dim:
        raise ValueError(
            f"gallery_embeddings must have {embedder.dim} columns (the embedder's size), got {gallery.shape}"
        )
    bad_rows = np.flatnonzero(~np.isfinite(gallery).all(axis=1))
    if len(bad_rows):
        raise ValueError(f"gallery_embeddings hold NaN or infinite values in rows {bad_rows.tolist()}")
    if not np.any(labels == true_identity):
        raise ValueError(f"true identity {true_identity!r} is not in the gallery (closed-set identification)")
    check_video_pair(clear_path, masked_path)
    own_detector = isinstance(detector, str)
    detector_name = detector if own_detector else type(detector).__name__
    face_detector = make_face_detector(detector) if own_detector else detector
    watch = _Stopwatch(timings)
    clear_frames: dict = {}
    if clear_cache is not None:
        clear_frames = clear_cache.setdefault(_clear_cache_key(clear_path, stride, face_detector, embedder), {})

    frame_ious, clear_found, masked_found = [], [], []
    masked_distances, masked_ranks, clear_distances, clear_ranks = [], [], [], []
    ssims, psnrs = [], []
    try:
        pairs = zip_longest(iter_frames(clear_path, stride=stride), iter_frames(masked_path, stride=stride))
        started = time.process_time()
        for clear_pair, masked_pair in pairs:
            started = watch.add("decode", started)
            if clear_pair is None or masked_pair is None:  # one video ended early while decoding
                raise VideoPairError(f"{masked_path} and {clear_path} decode to different frame counts")
            (frame_index, clear_rgb), (_, masked_rgb) = clear_pair, masked_pair
            if clear_rgb.shape != masked_rgb.shape:  # a size change mid-stream
                raise VideoPairError(f"frame {frame_index}: clear {clear_rgb.shape}, masked {masked_rgb.shape}")
            cached = clear_frames.get(frame_index)
            if cached is None:
                clear_box = largest_face(face_detector.detect(clear_rgb, frame_index))
            else:
                clear_box, clear_embedding = cached
            masked_detections = face_detector.detect(masked_rgb, frame_index)
            started = watch.add("detect", started)
            if clear_box is not None:
                faces = [(masked_rgb, _probe_box(clear_box, masked_detections))]
                if cached is None:
                    faces.append((clear_rgb, clear_box))
                embeddings = _embed_faces(embedder, faces)  # one batch for both faces
                masked_embedding = embeddings[0]
                if cached is None:
                    clear_embedding = embeddings[1]
            clear_frames[frame_index] = (clear_box, clear_embedding if clear_box is not None else None)
            started = watch.add("embed", started)
            ssims.append(ssim(clear_rgb, masked_rgb))
            psnrs.append(psnr(clear_rgb, masked_rgb))
            if clear_box is not None:
                frame_ious.append(masked_frame_iou(clear_box, masked_detections))
                clear_found.append(True)
                masked_found.append(len(masked_detections) > 0)
                for embedding, distances, ranks in zip(
                    (masked_embedding, clear_embedding), (masked_distances, clear_distances), (masked_ranks, clear_ranks),
                ):
                    distances.append(_genuine_distance(embedding, gallery, labels, true_identity))
                    ranks.append(closed_set_rank(embedding, gallery, labels, true_identity))
            started = watch.add("metrics", started)
    finally:
        if own_detector:
            face_detector.close()

    n_reference = len(frame_ious)
    if n_reference == 0 and no_face == "raise":
        raise NoFaceError(
            f"{Path(clear_path).name}: no face detected in the {len(ssims)} tested clear frames (stride {stride}); "
            f"pass no_face='nan' to score it as undefined"
        )
    nan = math.nan
    if n_reference:
        mean_iou, cumulative_iou = iou_summary(frame_ious)
        failure = detection_failure_rate(clear_found, masked_found)
        masked_rank_array, clear_rank_array = np.asarray(masked_ranks), np.asarray(clear_ranks)
        recognition = dict(
            match_rate=match_rate(masked_distances, threshold=threshold),
            rank1_rate=float(np.mean(masked_rank_array == 1)),
            mean_rank=float(masked_rank_array.mean()),
            mean_genuine_distance=float(np.mean(masked_distances)),
            clear_match_rate=match_rate(clear_distances, threshold=threshold),
            clear_rank1_rate=float(np.mean(clear_rank_array == 1)),
        )
    else:
        mean_iou = cumulative_iou = failure = nan
        recognition = dict.fromkeys(
            ("match_rate", "rank1_rate", "mean_rank", "mean_genuine_distance", "clear_match_rate", "clear_rank1_rate"),
            nan,
        )
    psnr_db, identical = summarize_psnr(psnrs)
    return VideoEvaluation(
        frames_tested=len(ssims),
        clear_faces=n_reference,
        masked_faces=int(np.count_nonzero(masked_found)),
        mean_iou=mean_iou,
        cumulative_iou=cumulative_iou,
        detection_failure_rate=failure,
        chance_level=chance_level(labels),
        n_identities=len(np.unique(labels)),
        ssim=float(np.mean(ssims)),
        psnr_db=psnr_db,
        psnr_identical_frames=identical,
        stride=stride,
        detector=detector_name,
        threshold=float(threshold),
        embedder=embedder_name,
        **recognition,
    )


def embed_gallery_image(
    image_rgb: np.ndarray, *, embedder=DEFAULT_EMBEDDER, detector=None, assume_cropped: bool = False,
) -> np.ndarray:
    """Embedding of the face in a gallery still.

    The largest detected face is embedded in place. MediaPipe finds the face even in
    tight internal-face crops (DESIGN.md: gallery images are cropped to the internal
    face), so a still without a detected face is an error, not silently a face.

    Parameters
    ----------
    image_rgb : ndarray of shape (height, width, 3), dtype uint8, RGB
    embedder : str or embedder object, default=recognition.DEFAULT_EMBEDDER
        A ``recognition.make_face_embedder`` name or an embedder instance.
    detector : detector object, optional
        Default: a MediaPipe detector created and closed here.
    assume_cropped : bool, default=False
        If no face is detected, embed the whole still as the face box (for stills known
        to be face crops that the detector misses) instead of raising.

    Returns
    -------
    ndarray of shape (dim,), dtype float32
        ``dim = embedder.dim``.

    Raises
    ------
    automated.face_crop.NoFaceFoundError
        (a ValueError) naming the image size, if no face is detected and not
        ``assume_cropped``.
    """
    embedder = make_face_embedder(embedder) if isinstance(embedder, str) else embedder
    own = detector is None
    detector = make_face_detector("mediapipe") if own else detector
    try:
        box = largest_face(detector.detect(image_rgb))
    finally:
        if own:
            detector.close()
    if box is not None:
        return embedder.embed(image_rgb, box[None])[0]
    if assume_cropped:
        return embedder.embed_crop(image_rgb)
    height, width = image_rgb.shape[:2]
    raise NoFaceFoundError(
        f"no face found in the {width}x{height} gallery image (pass assume_cropped=True for a face crop)"
    )


def summarize(evaluations: Iterable[VideoEvaluation]) -> dict:
    """Per-submission summary of video evaluations scored against one gallery.

    Rates, IoU, ranks, distances and SSIM are means over videos (each video weighs the
    same), leaving out videos where the metric is NaN (no reference frame). Counts
    (``frames_tested``, ``clear_faces``, ``masked_faces``, ``psnr_identical_frames``)
    and ``cumulative_iou`` are sums, so ``cumulative_iou`` stays MediaEval's
    "cumulative score for IoU across tested frames" (seeds/002) over the whole
    submission. ``psnr_db`` is the mean of the videos' finite PSNR in dB (+inf if every
    video is identical to its source); ``n_identities`` and ``chance_level`` are the
    gallery's (the same for every video).

    Returns
    -------
    dict
        One entry per ``METRIC_FIELDS`` name, plus ``n_videos``, ``masking_success_rank1``
        (clear rank-1 rate - masked rank-1 rate) and ``masking_success_match`` (clear
        match rate - masked match rate), fractions in [-1, 1]. An entry is NaN when no
        video defines it.

    Raises
    ------
    ValueError
        If ``evaluations`` is empty, or the videos were scored against galleries of
        different sizes (their rank-1 rates and chance levels are not comparable) or
        with different embedders or thresholds (their match rates are not comparable).
    """
    evaluations = list(evaluations)
    if not evaluations:
        raise ValueError("no video evaluations to summarise")
    gallery_sizes = sorted({e.n_identities for e in evaluations})
    if len(gallery_sizes) > 1:
        raise ValueError(f"the videos were scored against galleries of different sizes: {gallery_sizes}")
    recognisers = sorted({(e.embedder, e.threshold) for e in evaluations})
    if len(recognisers) > 1:
        raise ValueError(f"the videos were scored with different embedders or thresholds: {recognisers}")
    summary: dict = {"n_videos": len(evaluations)}
    for name in METRIC_FIELDS:
        values = np.asarray([getattr(e, name) for e in evaluations], dtype=np.float64)
        if name == "psnr_db":
            finite = values[np.isfinite(values)]
            summary[name] = float(finite.mean()) if len(finite) else math.inf
        elif name == "n_identities":
            summary[name] = gallery_sizes[0]
        elif name in ("frames_tested", "clear_faces", "masked_faces", "psnr_identical_frames"):
            summary[name] = int(values.sum())
        else:
            kept = values[~np.isnan(values)]
            reduce = np.sum if name == "cumulative_iou" else np.mean
            summary[name] = float(reduce(kept)) if len(kept) else math.nan
    summary["masking_success_rank1"] = summary["clear_rank1_rate"] - summary["rank1_rate"]
    summary["masking_success_match"] = summary["clear_match_rate"] - summary["match_rate"]
    return summary
