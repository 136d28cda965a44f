"""Head pose, gaze and EAR/MAR on synthetic landmarks with hand-computed answers."""

import math

import cv2
import numpy as np
import pytest

from automated.behaviour.gaze import (
    EYES,
    angular_error_deg,
    direction,
    eye_in_head_angles,
    gaze_vector,
    iris_offsets,
    vector_angles,
)
from automated.behaviour.head_pose import (
    MODEL_LANDMARKS,
    MODEL_POINTS_CV,
    angle_differences_deg,
    camera_matrix,
    euler_angles,
    head_pose,
    pose_error_deg,
)
from automated.behaviour.openness import (
    EYE_POINTS,
    MOUTH_CORNERS,
    MOUTH_PAIRS,
    eye_aspect_ratio,
    mouth_aspect_ratio,
)

FRAME_WH = (640, 480)


def projected_mesh(rotation: np.ndarray, distance_cm: float = 60.0) -> np.ndarray:
    """A (478, 3) mesh whose model points are the exact projections of the rotated 3-D face model."""
    rvec = cv2.Rodrigues(rotation)[0]
    image, _ = cv2.projectPoints(
        MODEL_POINTS_CV, rvec, np.array([0.0, 0.0, distance_cm]), camera_matrix(FRAME_WH), None
    )
    mesh = np.zeros((478, 3))
    mesh[MODEL_LANDMARKS, :2] = image.reshape(-1, 2)
    return mesh


def rotation_about(axis: str, degrees: float) -> np.ndarray:
    vector = {"x": [1.0, 0, 0], "y": [0, 1.0, 0], "z": [0, 0, 1.0]}[axis]
    return cv2.Rodrigues(np.radians(degrees) * np.array(vector))[0]


def test_frontal_face_has_zero_angles():
    angles, rotation = head_pose(projected_mesh(np.eye(3)), FRAME_WH)
    np.testing.assert_allclose(angles, [0, 0, 0], atol=1e-6)
    np.testing.assert_allclose(rotation, np.eye(3), atol=1e-8)


def test_yaw_is_the_nose_turning_toward_the_image_right():
    # Turning about the camera's vertical (y, pointing down) axis by -25 degrees moves the
    # nose direction (0, 0, -1) to (sin 25, 0, -cos 25): toward +x, the image right.
    mesh = projected_mesh(rotation_about("y", -25.0))
    eye_mid_x = (mesh[33, 0] + mesh[263, 0]) / 2
    assert mesh[1, 0] > eye_mid_x  # the nose tip is drawn right of the eyes' midpoint
    angles, _ = head_pose(mesh, FRAME_WH)
    np.testing.assert_allclose(angles, [25.0, 0.0, 0.0], atol=1e-4)


def test_pitch_up_and_roll_clockwise():
    # About x by -15: nose (0, 0, -1) -> (0, -sin 15, -cos 15), i.e. up (y is down): pitch +15.
    np.testing.assert_allclose(
        head_pose(projected_mesh(rotation_about("x", -15.0)), FRAME_WH)[0], [0.0, 15.0, 0.0], atol=1e-4
    )
    # About z by +10: the eye line (1, 0, 0) -> (cos 10, sin 10, 0), clockwise on screen: roll +10.
    np.testing.assert_allclose(
        head_pose(projected_mesh(rotation_about("z", 10.0)), FRAME_WH)[0], [0.0, 0.0, 10.0], atol=1e-4
    )


def test_combined_rotation_is_recovered_exactly():
    rotation = rotation_about("y", 30.0) @ rotation_about("x", -12.0) @ rotation_about("z", 7.0)
    angles, recovered = head_pose(projected_mesh(rotation), FRAME_WH)
    np.testing.assert_allclose(recovered, rotation, atol=1e-6)
    np.testing.assert_allclose(angles, euler_angles(rotation), atol=1e-4)


def test_mirrored_mesh_negates_yaw_and_roll():
    rotation = rotation_about("y", -20.0) @ rotation_about("z", 8.0)
    mesh = projected_mesh(rotation)
    mirrored = mesh.copy()
    mirrored[:, 0] = FRAME_WH[0] - mesh[:, 0]
    # the mirror swaps the person's sides: the mesh labels swap with them
    for right, left in ((33, 263), (133, 362), (234, 454)):
        mirrored[[right, left]] = mirrored[[left, right]]
    yaw, pitch, roll = head_pose(mesh, FRAME_WH)[0]
    m_yaw, m_pitch, m_roll = head_pose(mirrored, FRAME_WH)[0]
    assert yaw > 10 and m_yaw == pytest.approx(-yaw, abs=1e-4)
    assert m_roll == pytest.approx(-roll, abs=1e-4) and m_pitch == pytest.approx(pitch, abs=1e-4)


def test_pose_error_wraps_angles():
    np.testing.assert_allclose(angle_differences_deg([[179.0, 0, 10]], [[-179.0, 3, 10]]), [[2.0, 3.0, 0.0]])
    assert pose_error_deg([[179.0, 0, 10]], [[-179.0, 3, 10]])[0] == pytest.approx(5.0 / 3)
    assert pose_error_deg([[1.5, -2.0, 3.0]], [[1.5, -2.0, 3.0]])[0] == 0.0


def test_head_pose_rejects_a_mesh_without_the_model_points():
    with pytest.raises(ValueError, match="face mesh"):
        head_pose(np.zeros((100, 3)), FRAME_WH)


def eye_mesh(iris_dx: float = 0.0, iris_dy: float = 0.0) -> np.ndarray:
    """Both eyes 30 px wide (corners at x0 and x0 + 30, y 100), lids 5 px above and below."""
    mesh = np.zeros((478, 3))
    for (left, right, upper, lower, iris), x0 in zip(EYES, (100.0, 200.0)):
        mesh[left, :2], mesh[right, :2] = (x0, 100.0), (x0 + 30.0, 100.0)
        mesh[upper, :2], mesh[lower, :2] = (x0 + 15.0, 95.0), (x0 + 15.0, 105.0)
        mesh[iris, :2] = (x0 + 15.0 + iris_dx, 100.0 + iris_dy)
    return mesh


def test_iris_offsets_and_eye_angles_by_hand():
    # 3 px right of a 15 px half width: 0.2 half widths; eyeball model asin(0.2 * 15 / 12) = asin(0.25).
    np.testing.assert_allclose(iris_offsets(eye_mesh(3.0, -1.5)), [0.2, -0.1])
    np.testing.assert_allclose(
        eye_in_head_angles([0.2, -0.1]), [math.degrees(math.asin(0.25)), math.degrees(math.asin(0.125))]
    )
    yaw, pitch = vector_angles(gaze_vector(eye_mesh(3.0, 0.0), np.eye(3)))
    assert yaw == pytest.approx(math.degrees(math.asin(0.25))) and pitch == pytest.approx(0.0, abs=1e-12)


def test_gaze_combines_eye_and_head_rotation():
    head = rotation_about("y", -10.0)  # head yaw +10 (module convention)
    yaw, _ = vector_angles(gaze_vector(eye_mesh(3.0, 0.0), head))
    assert yaw == pytest.approx(10.0 + math.degrees(math.asin(0.25)))


def test_angular_error_is_exact_at_zero_and_small_angles():
    a = direction(5.0, -3.0)
    assert angular_error_deg(a[None], a[None])[0] == 0.0
    np.testing.assert_allclose(
        angular_error_deg(direction(0, 0)[None], direction(1e-6, 0)[None]), [1e-6], rtol=1e-6
    )
    np.testing.assert_allclose(angular_error_deg(direction(0, 0)[None], direction(90, 0)[None]), [90.0])


def test_eye_and_mouth_aspect_ratios_by_hand():
    mesh = np.zeros((478, 3))
    for x0, (p1, p2, p3, p4, p5, p6) in zip((0.0, 100.0), EYE_POINTS):
        mesh[p1, :2], mesh[p4, :2] = (x0, 0.0), (x0 + 30.0, 0.0)
        mesh[p2, :2], mesh[p6, :2] = (x0 + 10.0, -3.0), (x0 + 10.0, 3.0)  # 6 px apart
        mesh[p3, :2], mesh[p5, :2] = (x0 + 20.0, -2.0), (x0 + 20.0, 2.0)  # 4 px apart
    assert eye_aspect_ratio(mesh) == pytest.approx((6 + 4) / (2 * 30))
    mesh[MOUTH_CORNERS[0], :2], mesh[MOUTH_CORNERS[1], :2] = (0.0, 50.0), (40.0, 50.0)
    for (upper, lower), gap in zip(MOUTH_PAIRS, (4.0, 8.0, 6.0)):
        mesh[upper, :2], mesh[lower, :2] = (20.0, 50.0 - gap / 2), (20.0, 50.0 + gap / 2)
    assert mouth_aspect_ratio(mesh) == pytest.approx((4 + 8 + 6) / (3 * 40))
    with pytest.raises(ValueError, match="face mesh"):
        eye_aspect_ratio(np.zeros((10, 2)))


def test_a_degenerate_mesh_counts_as_no_face():
    from automated.behaviour.extractor import _face_features

    assert _face_features(np.zeros((478, 3)), FRAME_WH) is None  # every point at one place: no pose, no EAR
    mesh = projected_mesh(np.eye(3)) + eye_mesh()
    mesh[MOUTH_CORNERS[1], :2] = (40.0, 0.0)  # a mouth with a width
    face = _face_features(mesh, FRAME_WH)
    assert face is not None and all(np.isfinite(value).all() for value in face.values())


def test_angle_differences_refuse_series_of_different_lengths():
    three = [[179.0, 0, 10], [1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]
    # before: the single masked pose was broadcast against all three clear frames
    with pytest.raises(ValueError, match="^clear_ypr and masked_ypr differ in length: 3 vs 1$"):
        angle_differences_deg(three, [[-179.0, 3, 10]])
    with pytest.raises(ValueError, match="^clear_ypr and masked_ypr differ in length: 3 vs 1$"):
        pose_error_deg(three, [[-179.0, 3, 10]])
    with pytest.raises(ValueError, match="^clear and masked differ in length: 2 vs 1$"):
        angular_error_deg(np.stack([direction(0, 0), direction(90, 0)]), direction(0, 0)[None])
    assert angle_differences_deg(np.empty((0, 3)), np.empty((0, 3))).shape == (0, 3)  # no paired frame
