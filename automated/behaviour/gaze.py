"""Gaze direction from the iris landmarks, the eye corners and lids, and the head pose.

The MediaEval 2021 task measures action preservation with a gaze estimator
(seeds/002_68b18bfdbdb94491.txt, "a deep-learning based gaze estimator"); no such model
loads offline here, so gaze is estimated geometrically from MediaPipe's iris points:

1. Per eye, the iris centre's offset from the eye centre, in units of half the eye
   width (corner to corner): horizontally along the corner line from the midpoint of the
   corners, vertically across it from the midpoint of the upper and lower lid. Both eyes
   are averaged.
2. Eyeball model: the iris centre sits on a sphere of radius 12 mm (adult eyeball) and
   the eye is 30 mm wide, so an offset ``h`` half-widths means an eye rotation of
   ``asin(h * 15 / 12)`` relative to the head (clipped at 90 degrees).
3. The eye-in-head direction is turned by the head rotation (``head_pose``) into a unit
   gaze vector in camera axes (x right, y down, z away from the camera); its yaw and
   pitch follow the head-pose conventions (yaw > 0 toward the image right, pitch > 0 up).

This is a coarse geometric estimate (no per-person calibration, eye offsets read in the
image plane): what it measures well is whether the same eye movement is still visible
after masking, which is what the clear-vs-masked angular error compares.
"""

from __future__ import annotations

import numpy as np

from .shapes import check_same_shape

# (image-left corner, image-right corner, upper lid, lower lid, iris centre) per eye.
EYES = ((33, 133, 159, 145, 468), (362, 263, 386, 374, 473))
EYE_HALF_WIDTH_MM = 15.0
EYEBALL_RADIUS_MM = 12.0


def iris_offsets(landmarks_px: np.ndarray) -> np.ndarray:
    """Iris offset (horizontal, vertical) from the eye centre, half eye widths, mean of both eyes.

    Parameters
    ----------
    landmarks_px : ndarray of shape (478, 2+), pixels
        Face mesh with iris points (``refine_landmarks=True``).

    Returns
    -------
    ndarray of shape (2,), float64
        Horizontal > 0 toward the image right, vertical > 0 toward the image bottom.

    Raises
    ------
    ValueError
        If the mesh has no iris points (fewer than 478 landmarks).
    """
    points = np.asarray(landmarks_px, np.float64)
    if points.ndim != 2 or points.shape[0] < 478 or points.shape[1] < 2:
        raise ValueError(f"gaze needs a face mesh with iris points, shape (478, 2+), got {points.shape}")
    points = points[:, :2]
    offsets = []
    for left, right, upper, lower, iris in EYES:
        axis = points[right] - points[left]
        half_width = np.linalg.norm(axis) / 2.0
        along = axis / (2.0 * half_width)
        across = np.array([-along[1], along[0]])  # the corner line turned 90 degrees: image-down
        horizontal = (points[iris] - (points[left] + points[right]) / 2.0) @ along / half_width
        vertical = (points[iris] - (points[upper] + points[lower]) / 2.0) @ across / half_width
        offsets.append((horizontal, vertical))
    return np.mean(offsets, axis=0)


def eye_in_head_angles(offsets: np.ndarray) -> np.ndarray:
    """Eye rotation (yaw, pitch) in degrees from iris offsets (eyeball model, step 2)."""
    scaled = np.clip(np.asarray(offsets, np.float64) * (EYE_HALF_WIDTH_MM / EYEBALL_RADIUS_MM), -1.0, 1.0)
    yaw, down = np.degrees(np.arcsin(scaled))
    return np.array([yaw, -down])


def direction(yaw_deg: float, pitch_deg: float) -> np.ndarray:
    """Unit vector (3,) in camera axes looking toward the camera for yaw = pitch = 0.

    The forward axis of a frontal face is -z (toward the camera); yaw turns it toward +x
    (image right), pitch toward -y (up).
    """
    yaw, pitch = np.radians(yaw_deg), np.radians(pitch_deg)
    return np.array([np.sin(yaw) * np.cos(pitch), -np.sin(pitch), -np.cos(yaw) * np.cos(pitch)])


def gaze_vector(landmarks_px: np.ndarray, head_rotation: np.ndarray) -> np.ndarray:
    """Unit gaze vector (3,) in camera axes: eye-in-head direction turned by the head rotation.

    Parameters
    ----------
    landmarks_px : ndarray of shape (478, 2+), pixels
    head_rotation : ndarray of shape (3, 3)
        Face-model to camera rotation (``head_pose.head_rotation``).
    """
    eye_yaw, eye_pitch = eye_in_head_angles(iris_offsets(landmarks_px))
    vector = np.asarray(head_rotation, np.float64) @ direction(eye_yaw, eye_pitch)
    return vector / np.linalg.norm(vector)


def vector_angles(vectors: np.ndarray) -> np.ndarray:
    """(yaw, pitch) in degrees of unit gaze vectors, shape (..., 3) -> (..., 2)."""
    v = np.asarray(vectors, np.float64)
    yaw = np.arctan2(v[..., 0], -v[..., 2])
    pitch = np.arctan2(-v[..., 1], np.hypot(v[..., 0], v[..., 2]))
    return np.degrees(np.stack([yaw, pitch], axis=-1))


def angular_error_deg(clear: np.ndarray, masked: np.ndarray) -> np.ndarray:
    """Angle between gaze vectors per frame, degrees in [0, 180].

    Parameters
    ----------
    clear, masked : array-like of shape (n, 3), unit vectors (NaN rows allowed)

    Returns
    -------
    ndarray of shape (n,), float64; exactly 0 where the vectors are equal, NaN where
    either is NaN. Uses ``atan2(|a x b|, a . b)``, accurate for small angles (``acos``
    of a dot product rounds to 1 below about 1e-8 rad and loses precision near 0).

    Raises
    ------
    ValueError
        If the two differ in shape (``"clear and masked differ in length: 5 vs 1"``).
    """
    a = np.asarray(clear, np.float64)
    b = np.asarray(masked, np.float64)
    check_same_shape("clear", a, "masked", b)
    cross = np.linalg.norm(np.cross(a, b), axis=-1)
    dot = np.sum(a * b, axis=-1)
    return np.degrees(np.arctan2(cross, dot))
