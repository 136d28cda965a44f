"""Eye openness (EAR) and mouth openness (MAR) from face-mesh landmarks.

Eye aspect ratio (Soukupova and Cech, "Real-Time Eye Blink Detection using Facial
Landmarks", CVWW 2016, eq. 1) over six points per eye, p1 and p4 the corners, p2, p3 on
the upper lid and p6, p5 below them on the lower lid:

    EAR = (|p2 - p6| + |p3 - p5|) / (2 |p1 - p4|)

It is about constant while the eye is open and falls toward 0 when it closes (blinks,
drowsiness). Mouth aspect ratio: the same form over the inner lip contour, three
vertical pairs over the corner-to-corner width:

    MAR = (|u1 - l1| + |u2 - l2| + |u3 - l3|) / (3 |corner_left - corner_right|)

0 with the lips closed, growing with speech and yawning. Both are ratios of lengths,
so they do not depend on the face's size in the frame. The mesh indices are the
six-point eye sets commonly used with MediaPipe FaceMesh and its inner-lip pairs.
"""

from __future__ import annotations

import numpy as np

# p1 .. p6 of Soukupova and Cech per eye (MediaPipe FaceMesh indices).
EYE_POINTS = ((33, 160, 158, 133, 153, 144), (362, 385, 387, 263, 373, 380))
MOUTH_CORNERS = (78, 308)
MOUTH_PAIRS = ((82, 87), (13, 14), (312, 317))


def _distance(points: np.ndarray, a: int, b: int) -> np.float64:
    # numpy scalars: a zero width gives inf/NaN (the caller rejects it), not ZeroDivisionError
    return np.linalg.norm(points[a, :2] - points[b, :2])


def eye_aspect_ratio(landmarks_px: np.ndarray) -> float:
    """EAR (dimensionless, ~0.25-0.35 open, -> 0 closed), mean of both eyes.

    Parameters
    ----------
    landmarks_px : ndarray of shape (468+, 2+), pixels

    Raises
    ------
    ValueError
        If the mesh has fewer than 468 points.
    """
    points = _mesh(landmarks_px)
    ratios = [
        (_distance(points, p2, p6) + _distance(points, p3, p5)) / (2.0 * _distance(points, p1, p4))
        for p1, p2, p3, p4, p5, p6 in EYE_POINTS
    ]
    return float(np.mean(ratios))


def mouth_aspect_ratio(landmarks_px: np.ndarray) -> float:
    """MAR (dimensionless, 0 closed, ~0.3-0.6 wide open) of the inner lips.

    Raises
    ------
    ValueError
        If the mesh has fewer than 468 points.
    """
    points = _mesh(landmarks_px)
    vertical = sum(_distance(points, upper, lower) for upper, lower in MOUTH_PAIRS)
    return float(vertical / (3.0 * _distance(points, *MOUTH_CORNERS)))


def _mesh(landmarks_px: np.ndarray) -> np.ndarray:
    points = np.asarray(landmarks_px, np.float64)
    if points.ndim != 2 or points.shape[0] < 468 or points.shape[1] < 2:
        raise ValueError(f"landmarks_px must be a face mesh of shape (468+, 2+), got {points.shape}")
    return points
