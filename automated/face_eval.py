"""Automated face evaluation of one masked video against its clear source video.

The MediaEval 2021 computational evaluation (seeds/002_68b18bfdbdb94491.txt,
"computational face recognition evaluation"): over selected frames, detect faces in the
masked video and score the IoU with the clear face, and compare masked faces with the gallery face of the person, counting matches. Added here:
the IoU as a mean over reference frames rather than MediaEval's cumulated
sum (a sum grows with the video's length, so videos and submissions of different lengths
were not comparable), the face detection failure rate, SSIM and PSNR of PrivHAR-Bench (seeds/004, section 3),
and closed-set identification among all gallery identities with its chance level
(seeds/000, closed-set identification).

Protocol of ``evaluate_video`` (frames are streamed in lockstep, never loaded whole):

1. Every ``stride``-th frame is *tested*. SSIM and PSNR compare every tested masked frame
   with its clear frame.
2. Every face detected in a tested clear frame is a person to protect. The clear faces
   are followed across tested frames as *face tracks* (``face_tracks.track_faces``: box
   overlap with the previous tested frame, embedding re-identification after cuts). The
   evaluated person is the track matching the true identity's gallery
   (``face_tracks.target_track``), not the largest face; tested frames where that track
   has a face are the *reference frames*, and detection and recognition scores of the
   person are over reference frames only.
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
6. Every face of every track (bystanders too): *detected* in the masked frame when a
   masked box overlaps it with IoU >= ``DETECTED_IOU``; *recognisable* when its probe
   (step 4) lies within ``threshold`` of its track's mean clear embedding (an attacker
   holding a clear picture of that person). A track is *leaked* when it is detected, or
   recognisable, in at least ``LEAK_SHARE`` of its tested frames: ``faces_leaked`` of
   ``n_face_tracks``.
7. A clear video with no face in any tested frame has no reference frame: detection and
   recognition scores are undefined. ``evaluate_video`` raises ``NoFaceError`` unless
   the caller asks for NaN scores (``no_face="nan"``, as the evaluation runs do).

The clear side (boxes and embeddings of every tested clear frame) is computed once per
clear video and settings and reused (``clear_side.ClearSideStore``, in memory and on
disk); masked frames are detected and embedded in batches of ``BATCH_FRAMES`` frames.
A masked frame equal to its clear frame pixel for pixel (``frames_equal``: every frame
of the ``identity`` baseline, or frames a masking leaves alone) is not measured again:
its faces are the clear frame's boxes, its probes the clear embeddings, its SSIM 1.0 and
PSNR infinite (what measuring it gives; the probes up to the embedder's batch-to-batch
float32 noise, ~2e-7).

Other per-frame measurements ride on the same decoding pass: every ``observers`` object
gets ``update(frame_index, clear_rgb, masked_rgb)`` for each tested pair (the behaviour
evaluation, ``automated.behaviour.BehaviourPass``), so a video pair is decoded once.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import zip_longest
from numbers import Real
from pathlib import Path
from typing import Literal

import numpy as np

from .checks import check_stride
from .clear_side import ClearSide, ClearSideStore, Stopwatch, clear_side_key
from .detection import FaceDetections, box_iou, largest_face, make_face_detector
from .face_tracks import target_track, track_centroids, track_faces
from .face_crop import NoFaceFoundError
from .detection_metrics import detection_failure_rate, iou_summary, masked_frame_iou
from .face_fields import (
    COUNT_FIELDS,
    DETECTED_IOU,
    LEAK_SHARE,
    METRIC_FIELDS,
    VideoEvaluation,
)
from .image_metrics import psnr, ssim, summarize_psnr
from .recognition import (
    DEFAULT_EMBEDDER,
    chance_level,
    closed_set_rank,
    identity_distances,
    make_face_embedder,
    match_rate,
)
from .video import VideoError, VideoInfo, iter_frames, video_header


class VideoPairError(ValueError):
    """A masked video does not fit its clear video (frame count or frame size differ)."""


class NoFaceError(ValueError):
    """No face is detected in any tested frame of a clear video: nothing to score against."""


#: Tested frame pairs detected and embedded per batch (memory stays flat in video length).
BATCH_FRAMES = 8


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


def frames_equal(clear_rgb: np.ndarray, masked_rgb: np.ndarray) -> bool:
    """True when a masked frame is its clear frame pixel for pixel (same shape and values).

    Every per-frame measurement of the evaluation is a function of the frame's pixels
    (detectors, embedders and the behaviour models run frame by frame, without tracking),
    so an identical masked frame is not measured again: its results are the clear frame's.
    """
    return clear_rgb.shape == masked_rgb.shape and np.array_equal(clear_rgb, masked_rgb)


def _as_detections(frame_index, boxes) -> FaceDetections:
    """Detections at known boxes (the clear frame's, for an identical masked frame); the
    scores are unknown (NaN) and unused by the evaluation."""
    boxes = np.asarray(boxes, np.float32).reshape(-1, 4)
    return FaceDetections(frame_index, boxes, np.full(len(boxes), np.nan, np.float32))


def _detect_frames(detector, frames, indices) -> list:
    """Detections of several frames: one ``detect_batch`` call where the detector has it."""
    if hasattr(detector, "detect_batch"):
        return detector.detect_batch(frames, indices)
    return [detector.detect(frame, index) for frame, index in zip(frames, indices)]


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


def check_video_headers(clear_path, masked_path) -> None:
    """The part of :func:`check_video_pair` that needs no decoding: both files open, have a
    frame rate and the same size (the frame counts are compared by :func:`iter_frame_pairs`).

    Raises
    ------
    VideoPairError
        Naming both sizes when they differ (the message of :func:`check_video_pair`).
    automated.video.VideoError
        If either file is not a readable video.
    """
    _, clear_wh = video_header(clear_path)
    _, masked_wh = video_header(masked_path)
    if clear_wh != masked_wh:
        raise VideoPairError(
            f"{Path(masked_path).name} is {masked_wh[0]}x{masked_wh[1]} pixels, its clear video "
            f"{Path(clear_path).name} is {clear_wh[0]}x{clear_wh[1]}"
        )


def iter_frame_pairs(clear_path, masked_path, *, stride: int = 1):
    """Yield ``(frame_index, clear_rgb, masked_rgb)`` of every ``stride``-th frame, decoded in lockstep.

    Every frame of both files is grabbed in step, so frame counts that differ anywhere
    (also between two tested frames) are found in this one decoding pass; the error then
    names both counts (:func:`check_video_pair`, which decodes both files again: only on
    this error).

    Raises
    ------
    VideoPairError
        If the videos decode to different frame counts (raised once the shorter one ends)
        or a frame's size differs.
    automated.video.VideoError
        If either file is not a readable video, or has no decodable frame.
    """
    pairs = zip_longest(
        iter_frames(clear_path, stride=stride, skipped=True),
        iter_frames(masked_path, stride=stride, skipped=True),
    )
    n_frames = 0
    for clear_pair, masked_pair in pairs:
        if clear_pair is None or masked_pair is None:  # one video ended early while decoding
            check_video_pair(clear_path, masked_path)  # raises, naming both counts
            raise VideoPairError(f"{masked_path} and {clear_path} decode to different frame counts")
        (frame_index, clear_rgb), (_, masked_rgb) = clear_pair, masked_pair
        n_frames += 1
        if clear_rgb is None:  # between tested frames: grabbed, counted
            continue
        if clear_rgb.shape != masked_rgb.shape:  # a size change mid-stream
            raise VideoPairError(f"frame {frame_index}: clear {clear_rgb.shape}, masked {masked_rgb.shape}")
        yield frame_index, clear_rgb, masked_rgb
    if n_frames == 0:
        raise VideoError(f"{Path(clear_path).name}: no decodable video frame")


@dataclass(frozen=True)
class EvaluationPlan:
    """The checked settings of one ``evaluate_video`` call (``plan_evaluation``).

    Attributes
    ----------
    stride : int
        Every ``stride``-th frame is tested (>= 1).
    embedder : embedder object
        ``dim``, ``embed_faces`` or ``embed`` (``recognition.make_face_embedder``).
    embedder_name : str
        Registry name, or the embedder's ``name`` or class name.
    threshold : float
        Verification threshold on the L2 embedding distance (finite, >= 0).
    gallery : ndarray of shape (k, dim), dtype float32
        Gallery embeddings of every identity, finite.
    labels : ndarray of shape (k,)
        Identity of each gallery row.
    true_identity : label
        The person in the video; one of ``labels``.
    no_face : {"raise", "nan"}
    """

    stride: int
    embedder: object
    embedder_name: str
    threshold: float
    gallery: np.ndarray
    labels: np.ndarray
    true_identity: object
    no_face: str


def plan_evaluation(
    gallery_embeddings,
    gallery_identities,
    true_identity,
    *,
    stride=5,
    embedder=DEFAULT_EMBEDDER,
    threshold=None,
    no_face="raise",
) -> EvaluationPlan:
    """Check the settings of ``evaluate_video`` before any frame is decoded; build its embedder.

    Parameters are those of ``evaluate_video`` (same meaning and defaults).

    Returns
    -------
    EvaluationPlan

    Raises
    ------
    ValueError
        If ``stride`` is not a whole number >= 1 (``checks.check_stride``), ``no_face``
        is neither "raise" nor "nan", the embedder has no documented threshold and none is
        passed, ``threshold`` is negative or not finite, the gallery arrays are empty,
        inconsistent, of another size than the embedder's or not finite, or
        ``true_identity`` is not in the gallery (closed-set identification).
    """
    check_stride(stride)
    if no_face not in ("raise", "nan"):
        raise ValueError(f"no_face must be 'raise' or 'nan', got {no_face!r}")
    embedder_name = (
        embedder if isinstance(embedder, str) else getattr(embedder, "name", "") or type(embedder).__name__
    )
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
    return EvaluationPlan(stride, embedder, embedder_name, threshold, gallery, labels, true_identity, no_face)


class _ImageQuality:
    """Observer: SSIM and PSNR of every tested frame pair (protocol step 1)."""

    def __init__(self, watch: Stopwatch):
        self.watch = watch
        self.ssims: list[float] = []
        self.psnrs: list[float] = []

    def update(self, frame_index, clear_rgb, masked_rgb) -> None:
        started = time.process_time()
        if frames_equal(clear_rgb, masked_rgb):  # what ssim and psnr return for identical frames
            self.ssims.append(1.0)
            self.psnrs.append(math.inf)
        else:
            self.ssims.append(ssim(clear_rgb, masked_rgb))
            self.psnrs.append(psnr(clear_rgb, masked_rgb))
        self.watch.add("metrics", started)


@dataclass(frozen=True)
class _MaskedFaces:
    """What the masked video gave for every clear face, in clear-side order.

    ``found_per_frame`` (n_frames,) bool: a face is found in the masked frame;
    ``ious`` (n_faces,) float64: IoU of each clear face with its best masked box;
    ``probes`` (n_faces, dim) float32: embedding of each face's probe (step 4).
    """

    found_per_frame: np.ndarray
    ious: np.ndarray
    probes: np.ndarray


class _FaceObserver:
    """Observer: detects and embeds tested frame pairs in batches of ``BATCH_FRAMES``.

    The clear side comes from ``side`` when it is stored, else it is computed here
    (``clear_side()`` after ``finish()``).
    """

    def __init__(self, detector, embedder, side: ClearSide | None, clear_name: str, watch: Stopwatch):
        self.detector, self.embedder, self.side = detector, embedder, side
        self.clear_name, self.watch = clear_name, watch
        self.rows = (
            {int(index): t for t, index in enumerate(side.frame_indices)} if side is not None else None
        )
        self.chunk: list = []
        self.found_per_frame: list[bool] = []
        self.ious: list[float] = []
        self.probes: list[np.ndarray] = []
        self.frame_indices: list[int] = []  # the clear side, when computed here
        self.clear_boxes: list[np.ndarray] = []
        self.clear_embeddings: list[np.ndarray] = []

    def update(self, frame_index, clear_rgb, masked_rgb) -> None:
        self.chunk.append((frame_index, clear_rgb, masked_rgb))
        if len(self.chunk) == BATCH_FRAMES:
            self._analyse(self.chunk)
            self.chunk = []

    def finish(self) -> _MaskedFaces:
        """Analyse the last partial batch; return the masked side of every clear face."""
        if self.chunk:
            self._analyse(self.chunk)
            self.chunk = []
        probes = np.concatenate(self.probes) if self.probes else np.zeros((0, self.embedder.dim), np.float32)
        return _MaskedFaces(np.asarray(self.found_per_frame, bool), np.asarray(self.ious, np.float64), probes)

    def clear_side(self) -> ClearSide:
        """The clear side: the stored one, or the one computed from the frames seen."""
        if self.side is not None:
            return self.side
        return ClearSide(
            np.asarray(self.frame_indices, np.int64), tuple(self.clear_boxes), tuple(self.clear_embeddings)
        )

    def _clear_boxes(self, chunk, indices) -> list:
        if self.side is None:
            return [d.boxes_xyxy for d in _detect_frames(self.detector, [c for _, c, _ in chunk], indices)]
        missing = [index for index in indices if index not in self.rows]
        if missing:
            raise ValueError(f"the stored clear side of {self.clear_name} lacks frames {missing}")
        return [self.side.boxes[self.rows[index]] for index in indices]

    def _analyse(self, chunk) -> None:
        """Detect and embed a batch of tested frame pairs (clear side only when not stored).

        A masked frame equal to its clear frame (pixel for pixel; e.g. every frame of the
        ``identity`` baseline, or a frame a masking left alone) is neither detected nor
        embedded again: the detector and embedder are functions of the pixels, so its
        faces are the clear frame's boxes and its probes the clear faces' embeddings.
        """
        started = time.process_time()
        indices = [index for index, _, _ in chunk]
        boxes = self._clear_boxes(chunk, indices)
        unchanged = [frames_equal(clear, masked) for _, clear, masked in chunk]
        changed = [t for t, same in enumerate(unchanged) if not same]
        detected = iter(
            _detect_frames(self.detector, [chunk[t][2] for t in changed], [indices[t] for t in changed])
            if changed
            else []
        )
        masked_detections = [
            _as_detections(index, frame_boxes) if same else next(detected)
            for index, frame_boxes, same in zip(indices, boxes, unchanged)
        ]
        started = self.watch.add("detect", started)
        faces = [(chunk[t][2], _probe_box(box, masked_detections[t])) for t in changed for box in boxes[t]]
        n_probes = len(faces)
        if self.side is None:
            faces += [(clear, box) for (_, clear, _), frame_boxes in zip(chunk, boxes) for box in frame_boxes]
        dim = self.embedder.dim
        embeddings = _embed_faces(self.embedder, faces) if faces else np.zeros((0, dim), np.float32)
        if self.side is None:
            splits = np.cumsum([len(b) for b in boxes])[:-1]
            clear_embeddings = np.split(np.asarray(embeddings[n_probes:], np.float32), splits)
            self.frame_indices.extend(indices)
            self.clear_boxes.extend(np.asarray(b, np.float32).reshape(-1, 4) for b in boxes)
            self.clear_embeddings.extend(clear_embeddings)
        else:
            clear_embeddings = [self.side.embeddings[self.rows[index]] for index in indices]
        probes = iter(
            np.split(embeddings[:n_probes], np.cumsum([len(boxes[t]) for t in changed], dtype=np.int64)[:-1])
        )
        self.probes.extend(clear_embeddings[t] if same else next(probes) for t, same in enumerate(unchanged))
        started = self.watch.add("embed", started)
        for frame_boxes, found in zip(boxes, masked_detections):
            self.found_per_frame.append(len(found) > 0)
            self.ious.extend(masked_frame_iou(box, found) for box in frame_boxes)
        self.watch.add("metrics", started)


def run_frame_loop(clear_path, masked_path, stride: int, observers: Sequence, watch: Stopwatch) -> None:
    """Decode two videos in lockstep and hand every tested frame pair to each observer, in order.

    Parameters
    ----------
    clear_path, masked_path : path-like
    stride : int
        Every ``stride``-th frame is tested (``iter_frame_pairs``).
    observers : sequence
        Objects with ``update(frame_index, clear_rgb, masked_rgb)`` (uint8 RGB frames of
        shape (height, width, 3)), called in this order for each tested pair.
    watch : clear_side.Stopwatch
        Decoding CPU time is added under "decode"; the observers' own time is not.

    Raises
    ------
    VideoPairError
        If the videos decode to different frame counts or sizes.
    automated.video.VideoError
        If either file is not a readable video.
    """
    started = time.process_time()
    for frame_index, clear_rgb, masked_rgb in iter_frame_pairs(clear_path, masked_path, stride=stride):
        watch.add("decode", started)
        for observer in observers:
            observer.update(frame_index, clear_rgb, masked_rgb)
        started = time.process_time()


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
    clear_cache_dir=None,
    no_face: Literal["raise", "nan"] = "raise",
    observers: Sequence = (),
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
        In-process store of clear-side analyses (``clear_side.ClearSide``: every face's
        box and embedding per tested frame), keyed by the clear file's content hash,
        stride, detector and embedder settings, so several submissions of one campaign
        detect and embed each clear frame once. The caller owns (and bounds) the dict.
    clear_cache_dir : path-like, optional
        Folder keeping the same analyses on disk (``clear_side.ClearSideStore``, atomic
        writes), shared by workers and later runs.
    no_face : {"raise", "nan"}, default="raise"
        What to do when no tested clear frame has a face (module protocol, step 7):
        raise ``NoFaceError``, or return NaN detection and recognition scores (SSIM and
        PSNR are still computed) with ``clear_faces == 0``.
    observers : sequence, optional
        Objects with ``update(frame_index, clear_rgb, masked_rgb)``, called for every
        tested frame pair in order (e.g. ``automated.behaviour.BehaviourPass``), so that
        other measurements share this decoding pass; their CPU time is not in ``timings``.

    Returns
    -------
    VideoEvaluation

    Raises
    ------
    VideoPairError
        If the videos differ in frame size (read from the headers before any frame is
        decoded) or in frame count (found in the one decoding pass, ``iter_frame_pairs``).
    NoFaceError
        If no tested clear frame has a face and ``no_face="raise"``.
    automated.video.VideoError
        If either file is missing or not a readable video.
    ValueError
        If ``true_identity`` is not in the gallery, ``stride`` is not a whole number
        >= 1, ``threshold`` is negative or not finite, or the gallery arrays are
        empty, inconsistent or not finite; all checked before any frame is decoded.
    """
    plan = plan_evaluation(
        gallery_embeddings,
        gallery_identities,
        true_identity,
        stride=stride,
        embedder=embedder,
        threshold=threshold,
        no_face=no_face,
    )
    check_video_headers(clear_path, masked_path)  # frame counts: in the decoding loop
    own_detector = isinstance(detector, str)
    detector_name = detector if own_detector else type(detector).__name__
    face_detector = make_face_detector(detector) if own_detector else detector
    watch = Stopwatch(timings)
    store = ClearSideStore(clear_cache, clear_cache_dir)
    key = None
    if clear_cache is not None or clear_cache_dir is not None:
        key = clear_side_key(clear_path, stride=stride, detector=face_detector, embedder=plan.embedder)
    stored = store.get(key) if key is not None else None
    quality = _ImageQuality(watch)
    faces = _FaceObserver(face_detector, plan.embedder, stored, Path(clear_path).name, watch)
    try:
        run_frame_loop(clear_path, masked_path, stride, [*observers, faces, quality], watch)
        masked = faces.finish()
    finally:
        if own_detector:
            face_detector.close()
    side = faces.clear_side()
    if stored is None and key is not None:
        store.put(key, side)
    started = time.process_time()
    scores = _scores(plan, side, masked, len(quality.ssims), Path(clear_path).name)
    psnr_db, identical = summarize_psnr(quality.psnrs)
    watch.add("metrics", started)
    return VideoEvaluation(
        frames_tested=len(quality.ssims),
        chance_level=chance_level(plan.labels),
        n_identities=len(np.unique(plan.labels)),
        ssim=float(np.mean(quality.ssims)),
        psnr_db=psnr_db,
        psnr_identical_frames=identical,
        stride=stride,
        detector=detector_name,
        threshold=float(plan.threshold),
        embedder=plan.embedder_name,
        **scores,
    )


def _scores(
    plan: EvaluationPlan, side: ClearSide, masked: _MaskedFaces, frames_tested: int, clear_name
) -> dict:
    """Track the clear faces, pick the person's track, score it and every track (steps 2-7)."""
    threshold = plan.threshold
    # Tracks follow the embedder's documented threshold, not a scoring threshold of the caller's.
    track_ids = track_faces(
        side.boxes, side.embeddings, threshold=getattr(plan.embedder, "threshold", threshold)
    )
    target = target_track(
        track_ids, side.embeddings, plan.gallery, plan.labels, plan.true_identity, threshold=threshold
    )
    if target is None and plan.no_face == "raise":
        raise NoFaceError(
            f"{clear_name}: no face detected in the {frames_tested} tested clear frames (stride {plan.stride}); "
            f"pass no_face='nan' to score it as undefined"
        )
    return {
        **_person_scores(track_ids, target, side.embeddings, masked, plan),
        **_track_scores(track_ids, side.embeddings, masked, threshold),
    }


#: The scores of ``_person_scores`` that are NaN without a reference frame.
PERSON_SCORES = (
    "mean_iou",
    "detection_failure_rate",
    "match_rate",
    "rank1_rate",
    "mean_rank",
    "mean_genuine_distance",
    "clear_match_rate",
    "clear_rank1_rate",
)


def _person_scores(track_ids, target, clear_embeddings, masked: _MaskedFaces, plan: EvaluationPlan) -> dict:
    """Detection and recognition scores of the target track over its frames (protocol 2-5)."""
    ids = np.concatenate(track_ids) if track_ids else np.zeros(0, np.int64)
    frame_of_face = np.repeat(np.arange(len(track_ids)), [len(i) for i in track_ids])
    clear = np.concatenate(clear_embeddings) if len(ids) else masked.probes[:0]
    rows = np.flatnonzero(ids == target) if target is not None else np.zeros(0, np.int64)
    found = masked.found_per_frame[frame_of_face[rows]]
    scores: dict = {"clear_faces": len(rows), "masked_faces": int(np.count_nonzero(found))}
    if not len(rows):
        return {**scores, **dict.fromkeys(PERSON_SCORES, math.nan)}
    scores["mean_iou"] = iou_summary(masked.ious[rows])[0]
    scores["detection_failure_rate"] = detection_failure_rate(np.ones(len(rows), bool), found)
    gallery, labels, true_identity = plan.gallery, plan.labels, plan.true_identity
    for prefix, embeddings in (("", masked.probes[rows]), ("clear_", clear[rows])):
        distances = [_genuine_distance(e, gallery, labels, true_identity) for e in embeddings]
        ranks = np.asarray([closed_set_rank(e, gallery, labels, true_identity) for e in embeddings])
        scores[f"{prefix}match_rate"] = match_rate(distances, threshold=plan.threshold)
        scores[f"{prefix}rank1_rate"] = float(np.mean(ranks == 1))
        if not prefix:
            scores["mean_rank"] = float(ranks.mean())
            scores["mean_genuine_distance"] = float(np.mean(distances))
    return scores


def _track_scores(track_ids, clear_embeddings, masked: _MaskedFaces, threshold: float) -> dict:
    """Leak counts over every face track, bystanders too (protocol step 6)."""
    ids = np.concatenate(track_ids) if track_ids else np.zeros(0, np.int64)
    if len(ids) == 0:
        return {
            "all_faces": 0,
            "n_face_tracks": 0,
            "faces_leaked": 0,
            "faces_detected": 0,
            "faces_recognisable": 0,
            "all_faces_mean_iou": math.nan,
            "all_faces_detection_failure_rate": math.nan,
        }
    centroids = track_centroids(track_ids, clear_embeddings)
    detected = masked.ious >= DETECTED_IOU
    recognisable = np.linalg.norm(masked.probes.astype(np.float64) - centroids[ids], axis=1) <= threshold
    n_tracks = len(centroids)
    frames_per_track = np.bincount(ids, minlength=n_tracks)
    track_detected = np.bincount(ids, weights=detected, minlength=n_tracks) >= LEAK_SHARE * frames_per_track
    track_recognisable = (
        np.bincount(ids, weights=recognisable, minlength=n_tracks) >= LEAK_SHARE * frames_per_track
    )
    return {
        "all_faces": len(ids),
        "n_face_tracks": n_tracks,
        "faces_leaked": int(np.count_nonzero(track_detected | track_recognisable)),
        "faces_detected": int(np.count_nonzero(track_detected)),
        "faces_recognisable": int(np.count_nonzero(track_recognisable)),
        "all_faces_mean_iou": float(masked.ious.mean()),
        "all_faces_detection_failure_rate": float(np.mean(~detected)),
    }


def embed_gallery_image(
    image_rgb: np.ndarray,
    *,
    embedder=DEFAULT_EMBEDDER,
    detector=None,
    assume_cropped: bool = False,
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
    (``COUNT_FIELDS``: frames, faces, face tracks and ``faces_leaked``) are sums.
    ``psnr_db`` is the mean of the videos' finite PSNR in dB (+inf if every
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
        elif name in COUNT_FIELDS:  # NaN only in evaluations stored before a count existed
            kept = values[~np.isnan(values)]
            summary[name] = int(kept.sum()) if len(kept) else math.nan
        else:
            kept = values[~np.isnan(values)]
            summary[name] = float(np.mean(kept)) if len(kept) else math.nan
    summary["masking_success_rank1"] = summary["clear_rank1_rate"] - summary["rank1_rate"]
    summary["masking_success_match"] = summary["clear_match_rate"] - summary["match_rate"]
    return summary
