"""Face boxes: the per-frame detection result, box helpers and the frame check.

The shared base of the face detectors (``automated.detection``, the registry and the
MediaPipe/dlib detectors; ``automated.insightface_backend``, SCRFD) and of everything
that handles their boxes. A leaf module: it imports neither.

Boxes are always ``boxes_xyxy``: float32 arrays of shape ``(n, 4)`` holding
``[x1, y1, x2, y2]`` in pixels of the original frame; "no face" is shape ``(0, 4)``, never
None (STYLE.md, points 5 and 7).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class FaceDetections:
    """Faces found in one frame.

    Attributes
    ----------
    frame_index : int
        0-based index of the frame in its video.
    boxes_xyxy : ndarray of shape (n, 4), dtype float32
        ``[x1, y1, x2, y2]`` in pixels of the original frame, ``x2 >= x1``, ``y2 >= y1``.
    scores : ndarray of shape (n,), dtype float32
        Detector confidence per box (mediapipe: [0, 1]; dlib HOG: SVM margin, unbounded).

    Raises
    ------
    ValueError
        If the arrays have the wrong shape or dtype, or their lengths differ.
    """

    frame_index: int
    boxes_xyxy: np.ndarray
    scores: np.ndarray

    def __post_init__(self) -> None:
        boxes, scores = self.boxes_xyxy, self.scores
        if not isinstance(boxes, np.ndarray) or boxes.ndim != 2 or boxes.shape[1] != 4:
            shape = getattr(boxes, "shape", type(boxes).__name__)
            raise ValueError(f"boxes_xyxy must be an ndarray of shape (n, 4), got {shape}")
        if boxes.dtype != np.float32:
            raise ValueError(f"boxes_xyxy must be float32, got {boxes.dtype}")
        if not isinstance(scores, np.ndarray) or scores.ndim != 1 or scores.dtype != np.float32:
            shape = getattr(scores, "shape", type(scores).__name__)
            raise ValueError(f"scores must be a float32 ndarray of shape (n,), got {shape}")
        if len(scores) != len(boxes):
            raise ValueError(f"{len(boxes)} boxes but {len(scores)} scores")
        if np.any(boxes[:, 2] < boxes[:, 0]) or np.any(boxes[:, 3] < boxes[:, 1]):
            raise ValueError(f"boxes_xyxy must have x2 >= x1 and y2 >= y1, got {boxes.tolist()}")

    @classmethod
    def empty(cls, frame_index: int) -> FaceDetections:
        """No face in frame ``frame_index``: boxes of shape (0, 4), scores of shape (0,)."""
        return cls(frame_index, np.zeros((0, 4), np.float32), np.zeros((0,), np.float32))

    def __len__(self) -> int:
        return len(self.boxes_xyxy)


def xywh_to_xyxy(boxes_xywh: np.ndarray) -> np.ndarray:
    """Convert ``[x, y, width, height]`` boxes to ``[x1, y1, x2, y2]``.

    Parameters
    ----------
    boxes_xywh : array-like of shape (n, 4) or (4,)

    Returns
    -------
    boxes_xyxy : ndarray of the same shape, dtype float32
    """
    boxes = np.asarray(boxes_xywh, dtype=np.float32).copy()
    boxes[..., 2] += boxes[..., 0]
    boxes[..., 3] += boxes[..., 1]
    return boxes


def box_iou(a_xyxy, b_xyxy) -> float:
    """Intersection over union of two boxes, in [0, 1].

    Parameters
    ----------
    a_xyxy, b_xyxy : array-like of shape (4,)
        ``[x1, y1, x2, y2]`` in pixels.

    Returns
    -------
    float
        Area of the intersection divided by area of the union; 0.0 for disjoint boxes
        and when both boxes have zero area.

    Raises
    ------
    ValueError
        If either box does not have shape (4,).

    Examples
    --------
    >>> box_iou([0, 0, 2, 2], [1, 1, 3, 3])  # intersection 1, union 4 + 4 - 1
    0.14285714285714285
    """
    a = np.asarray(a_xyxy, dtype=np.float64)
    b = np.asarray(b_xyxy, dtype=np.float64)
    if a.shape != (4,) or b.shape != (4,):
        raise ValueError(f"boxes must have shape (4,), got {a.shape} and {b.shape}")
    inter_w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    inter_h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    intersection = inter_w * inter_h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - intersection
    return float(intersection / union) if union > 0 else 0.0


def largest_face(detections: FaceDetections) -> np.ndarray | None:
    """Box of the largest face by area, shape (4,) float32, or None when there is none.

    The evaluated person is the largest face in the frame (as PrivHAR-Bench processes
    "only the largest detected person", seeds/004_cf13f4f759494b31.txt, section 2.C).
    """
    if len(detections) == 0:
        return None
    boxes = detections.boxes_xyxy
    areas = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    return boxes[int(np.argmax(areas))].copy()


def check_frame(frame_rgb, name: str = "frame_rgb") -> None:
    """Refuse anything but an RGB frame: ndarray of shape (height, width, 3), dtype uint8.

    The one frame check of the science core (detectors, anonymizers, landmark models,
    image metrics).

    Parameters
    ----------
    frame_rgb : object
        The value to check.
    name : str, default="frame_rgb"
        How the error message calls it.

    Raises
    ------
    ValueError
        ``"<name> must be uint8 of shape (height, width, 3), got <dtype> <shape>"`` for
        anything else (a non-array, another dtype, another number of dimensions or
        channels).
    """
    if (
        not isinstance(frame_rgb, np.ndarray)
        or frame_rgb.ndim != 3
        or frame_rgb.shape[2] != 3
        or frame_rgb.dtype != np.uint8
    ):
        raise ValueError(
            f"{name} must be uint8 of shape (height, width, 3), got "
            f"{getattr(frame_rgb, 'dtype', type(frame_rgb).__name__)} {getattr(frame_rgb, 'shape', '')}"
        )


def clip_boxes(boxes_xyxy: np.ndarray, width: int, height: int) -> np.ndarray:
    """Boxes clipped to a ``width`` x ``height`` frame.

    Parameters
    ----------
    boxes_xyxy : array-like of n * 4 numbers
        ``[x1, y1, x2, y2]`` in pixels (any shape that reshapes to (n, 4)).
    width, height : int
        Frame size in pixels.

    Returns
    -------
    ndarray of shape (n, 4), dtype float32
        A new array; x in [0, width], y in [0, height].
    """
    boxes = np.asarray(boxes_xyxy).astype(np.float32).reshape(-1, 4)
    boxes[:, [0, 2]] = np.clip(boxes[:, [0, 2]], 0, width)
    boxes[:, [1, 3]] = np.clip(boxes[:, [1, 3]], 0, height)
    return boxes


class Detector:
    """Base of the face detectors: context-manager plumbing (``with`` closes the detector).

    Subclasses implement ``detect(frame_rgb, frame_index=0) -> FaceDetections`` and
    override ``close()`` where they hold resources.
    """

    def close(self) -> None:  # pragma: no cover - overridden where resources exist
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
