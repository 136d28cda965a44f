"""Head pose (yaw, pitch, roll in degrees) from face-mesh landmarks and a 3-D face model.

The 2-D mesh points of rigid parts of the face (eye corners, nose, forehead, the face's
sides near the ears; never the jaw, lips or brows, which move when a person talks or
frowns) are matched to the same points of MediaPipe's canonical 3-D face model, and
``cv2.solvePnP`` finds the rotation of the model that projects onto them (perspective
n-point pose estimation). Camera: a pinhole with focal length equal to the frame width
(about a 53 degree horizontal field of view, a common webcam/dashcam value) and the
principal point at the frame centre; no lens distortion. The camera is unknown, so the
angles are approximate in absolute terms; the same camera model is used for the clear
and the masked frame, so their difference is what a masking changed.

Model points: vertices of ``canonical_face_model.obj`` (MediaPipe,
``mediapipe/modules/face_geometry/data/``, Apache-2.0; vertex i is mesh landmark i,
centimetres, x toward the image right of a frontal face, y up, z toward the camera).
They are converted here to OpenCV's camera axes (x right, y down, z away from the
camera), so a frontal face has the identity rotation.

Angle conventions (camera view, degrees): ``yaw`` > 0 when the nose points toward the
image right, ``pitch`` > 0 when it points up, ``roll`` > 0 when the eye line turns
clockwise in the image. A horizontally mirrored frame negates yaw and roll and keeps
pitch.
"""

from __future__ import annotations

import cv2
import numpy as np

from .shapes import check_same_shape

# landmark: canonical model vertex (cm, MediaPipe axes: x right, y up, z toward the camera)
CANONICAL_POINTS = {
    1: (0.000000, -1.126865, 7.475604),  # nose tip
    2: (0.000000, -2.089024, 6.058267),  # below the nose (subnasale)
    6: (0.000000, 2.473255, 5.788627),  # nose bridge
    168: (0.000000, 3.271027, 5.236015),  # between the eyes
    10: (0.000000, 8.261778, 4.481535),  # top of the forehead
    33: (-4.445859, 2.663991, 3.173422),  # right eye, outer corner
    133: (-1.856432, 2.585245, 3.757904),  # right eye, inner corner
    362: (1.856432, 2.585245, 3.757904),  # left eye, inner corner
    263: (4.445859, 2.663991, 3.173422),  # left eye, outer corner
    234: (-7.664182, 0.673132, -2.435867),  # right side of the face, near the ear
    454: (7.664182, 0.673132, -2.435867),  # left side of the face, near the ear
}
MODEL_LANDMARKS = np.array(list(CANONICAL_POINTS), dtype=np.intp)
# OpenCV camera axes: y down, z away from the camera.
MODEL_POINTS_CV = np.array(list(CANONICAL_POINTS.values()), np.float64) * np.array([1.0, -1.0, -1.0])


def camera_matrix(frame_wh: tuple[int, int]) -> np.ndarray:
    """Pinhole intrinsics (3, 3) float64: focal length = frame width, principal point at the centre."""
    width, height = frame_wh
    return np.array([[width, 0.0, width / 2.0], [0.0, width, height / 2.0], [0.0, 0.0, 1.0]])


def head_rotation(landmarks_px: np.ndarray, frame_wh: tuple[int, int]) -> np.ndarray:
    """Rotation (3, 3) float64 from face-model axes to camera axes (``cv2.solvePnP``, iterative).

    Parameters
    ----------
    landmarks_px : ndarray of shape (478, 3) or (468+, 2+), pixels
        Face mesh (``landmarks.FaceMeshModel.landmarks``); only x and y are used.
    frame_wh : (int, int)
        Frame width and height in pixels.

    Raises
    ------
    ValueError
        If the landmarks do not hold the model points, or solvePnP finds no pose.
    """
    points = np.asarray(landmarks_px, np.float64)
    if points.ndim != 2 or points.shape[0] <= MODEL_LANDMARKS.max() or points.shape[1] < 2:
        raise ValueError(f"landmarks_px must be a face mesh of shape (478, 3), got {points.shape}")
    image_points = np.ascontiguousarray(points[MODEL_LANDMARKS, :2])
    # Start from a frontal face 60 cm away so the iterative solver never lands behind the camera.
    rvec, tvec = np.zeros((3, 1)), np.array([[0.0], [0.0], [60.0]])
    ok, rvec, _ = cv2.solvePnP(
        MODEL_POINTS_CV,
        image_points,
        camera_matrix(frame_wh),
        None,
        rvec,
        tvec,
        useExtrinsicGuess=True,
        flags=cv2.SOLVEPNP_ITERATIVE,
    )
    if not ok:
        raise ValueError("solvePnP found no head pose for these landmarks")
    return cv2.Rodrigues(rvec)[0]


def euler_angles(rotation: np.ndarray) -> np.ndarray:
    """(yaw, pitch, roll) in degrees of a face rotation (module conventions), float64 shape (3,).

    ``yaw`` and ``pitch`` are the direction of the face's forward axis (the nose
    direction, model -z) in the camera frame; ``roll`` is the image angle of the face's
    x axis (the eye line).
    """
    forward = rotation @ np.array([0.0, 0.0, -1.0])
    across = rotation @ np.array([1.0, 0.0, 0.0])
    yaw = np.arctan2(forward[0], -forward[2])
    pitch = np.arctan2(-forward[1], np.hypot(forward[0], forward[2]))
    roll = np.arctan2(across[1], across[0])
    return np.degrees([yaw, pitch, roll])


def head_pose(landmarks_px: np.ndarray, frame_wh: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Head pose of one face: ((yaw, pitch, roll) degrees shape (3,), rotation (3, 3)).

    See ``head_rotation`` for parameters and errors.
    """
    rotation = head_rotation(landmarks_px, frame_wh)
    return euler_angles(rotation), rotation


def angle_differences_deg(clear_ypr: np.ndarray, masked_ypr: np.ndarray) -> np.ndarray:
    """Absolute yaw, pitch and roll differences, degrees, wrapped so 179 and -179 are 2 apart.

    Parameters
    ----------
    clear_ypr, masked_ypr : array-like of shape (n, 3), degrees

    Returns
    -------
    ndarray of shape (n, 3), float64 in [0, 180]; NaN where either side is NaN.

    Raises
    ------
    ValueError
        If the two differ in shape (``"clear_ypr and masked_ypr differ in length: 5 vs 1"``).
    """
    clear_ypr, masked_ypr = np.asarray(clear_ypr, np.float64), np.asarray(masked_ypr, np.float64)
    check_same_shape("clear_ypr", clear_ypr, "masked_ypr", masked_ypr)
    diff = masked_ypr - clear_ypr
    return np.abs((diff + 180.0) % 360.0 - 180.0)


def pose_error_deg(clear_ypr: np.ndarray, masked_ypr: np.ndarray) -> np.ndarray:
    """Head pose error per frame: mean absolute yaw, pitch and roll difference, degrees, shape (n,)."""
    return angle_differences_deg(clear_ypr, masked_ypr).mean(axis=-1)
