"""Face detection scores of a masked video against its clear video.

MediaEval 2021 (seeds/002_68b18bfdbdb94491.txt, "computational face recognition
evaluation"): "we attempt to detect faces in the masked video, and compute the
intersection of union (IoU) score. We compute the cumulative score for IoU across tested
frames." PrivHAR-Bench (seeds/004_cf13f4f759494b31.txt, sections 3-4) reports the face
detection failure rate.

Definitions used here. A *reference frame* is a tested frame where a face is found in the
clear video (frames without a clear face have nothing to compare with and are not
scored). For each reference frame the IoU is that of the clear-frame face box with the
masked-frame box that overlaps it most, and 0 where the masked frame has no face.
"""

from __future__ import annotations

import numpy as np

from .face_boxes import FaceDetections, box_iou


def masked_frame_iou(clear_box_xyxy, masked: FaceDetections) -> float:
    """IoU of the clear-frame face box with the best-overlapping masked-frame box.

    Parameters
    ----------
    clear_box_xyxy : array-like of shape (4,)
        The evaluated face in the clear frame, pixels.
    masked : FaceDetections
        Faces found in the masked frame.

    Returns
    -------
    float
        In [0, 1]; 0.0 when the masked frame has no face.
    """
    if len(masked) == 0:
        return 0.0
    return max(box_iou(clear_box_xyxy, box) for box in masked.boxes_xyxy)


def iou_summary(frame_ious) -> tuple[float, float]:
    """Mean and cumulative (summed) IoU over reference frames.

    Parameters
    ----------
    frame_ious : array-like of shape (n_reference_frames,)
        Per-frame IoU in [0, 1] (0 where the masked frame has no face).

    Returns
    -------
    mean_iou : float
        In [0, 1].
    cumulative_iou : float
        Sum over the reference frames, in [0, n_reference_frames] (MediaEval's
        "cumulative score for IoU across tested frames").

    Raises
    ------
    ValueError
        If there is no reference frame or a value is outside [0, 1].

    Examples
    --------
    >>> iou_summary([1.0, 0.5, 0.0])
    (0.5, 1.5)
    """
    values = np.asarray(frame_ious, dtype=np.float64).reshape(-1)
    if len(values) == 0:
        raise ValueError("no reference frame (no face in the tested clear frames): IoU is undefined")
    if np.any(np.isnan(values)) or np.any(values < 0) or np.any(values > 1):
        raise ValueError(f"IoU values must be in [0, 1], got {values.tolist()}")
    return float(values.mean()), float(values.sum())


def detection_failure_rate(clear_has_face, masked_has_face) -> float:
    """Share of frames with a face in the clear video where none is found in the masked one.

    Parameters
    ----------
    clear_has_face, masked_has_face : array-like of bool, shape (n_tested_frames,)
        Whether the detector found a face in the clear / masked version of each frame.

    Returns
    -------
    float
        In [0, 1]: 1.0 means the masking defeats the detector on every reference frame.

    Raises
    ------
    ValueError
        If the arrays differ in length or no tested frame has a clear face.

    Examples
    --------
    >>> detection_failure_rate([True, True, True, False], [True, False, False, True])
    0.6666666666666666
    """
    clear = np.asarray(clear_has_face, dtype=bool).reshape(-1)
    masked = np.asarray(masked_has_face, dtype=bool).reshape(-1)
    if len(clear) != len(masked):
        raise ValueError(f"{len(clear)} clear frames but {len(masked)} masked frames")
    n_reference = int(clear.sum())
    if n_reference == 0:
        raise ValueError("no tested clear frame has a face: the detection failure rate is undefined")
    return float(np.count_nonzero(clear & ~masked) / n_reference)
