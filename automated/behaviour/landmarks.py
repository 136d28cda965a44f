"""Offline MediaPipe landmark models: face mesh with irises, body pose, hands.

All three are mediapipe 0.10.21's legacy ``solutions`` graphs, whose models ship in the
wheel (no download): ``face_mesh`` with ``refine_landmarks=True`` (468 mesh points plus
10 iris points, 478 in all), ``pose`` with ``model_complexity=1`` (33 body landmarks;
complexities 0 and 2 try to download their models) and ``hands`` (21 points per hand).

Every model runs in ``static_image_mode`` (detection on every frame, no tracking), so a
frame's landmarks depend on that frame alone: the clear and masked videos are measured
under the same conditions, the result does not depend on which frames were tested
before, and the same frame always gives the same landmarks (the identity baseline
scores exactly 0 error).

Coordinates are returned in pixels of the frame: ``x`` right, ``y`` down; mesh depth
``z`` is in the same pixel scale as ``x`` (MediaPipe's normalised ``z`` times the width).
"""

from __future__ import annotations

import numpy as np

from ..face_boxes import check_frame
from ..native_logs import QuietStart

# FaceMesh landmark indices (the person's right eye is on the image left in a frontal view).
RIGHT_IRIS_CENTRE, LEFT_IRIS_CENTRE = 468, 473
N_FACE_LANDMARKS = 478
N_POSE_LANDMARKS = 33
N_HAND_LANDMARKS = 21
HAND_SIDES = ("Left", "Right")  # MediaPipe handedness labels, in this order in every array


class _Model:
    """Context-manager plumbing: ``close()`` releases the mediapipe graph."""

    _graph = None

    def close(self) -> None:
        if self._graph is not None:
            self._graph.close()
            self._graph = None

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class FaceMeshModel(_Model):
    """MediaPipe FaceMesh with iris refinement, one face (the most confident).

    Parameters
    ----------
    min_confidence : float, default=0.5
        Minimum face detection confidence in [0, 1].
    """

    def __init__(self, min_confidence: float = 0.5):
        from mediapipe.python.solutions import face_mesh

        self.min_confidence = float(min_confidence)
        self._graph = QuietStart(
            lambda: face_mesh.FaceMesh(
                static_image_mode=True,
                refine_landmarks=True,
                max_num_faces=1,
                min_detection_confidence=self.min_confidence,
            )
        )

    def landmarks(self, frame_rgb: np.ndarray) -> np.ndarray | None:
        """Face mesh of one frame.

        Parameters
        ----------
        frame_rgb : ndarray of shape (height, width, 3), dtype uint8, RGB

        Returns
        -------
        ndarray of shape (478, 3), float64, pixels (x, y, z), or None when no face is found.

        Raises
        ------
        ValueError
            If ``frame_rgb`` is not uint8 (height, width, 3).
        """
        check_frame(frame_rgb)
        height, width = frame_rgb.shape[:2]
        result = self._graph.process(np.ascontiguousarray(frame_rgb))
        if not result.multi_face_landmarks:
            return None
        points = np.array([(p.x, p.y, p.z) for p in result.multi_face_landmarks[0].landmark], np.float64)
        return points * np.array([width, height, width])

    def settings(self) -> str:
        """Model and every parameter that changes the landmarks (for cache keys)."""
        import mediapipe

        return f"mediapipe-{mediapipe.__version__}-facemesh-iris-static-conf{self.min_confidence!r}"


class PoseModel(_Model):
    """MediaPipe Pose (``model_complexity=1``, the only offline one), one person.

    Parameters
    ----------
    min_confidence : float, default=0.5
        Minimum person detection confidence in [0, 1].
    """

    def __init__(self, min_confidence: float = 0.5):
        from mediapipe.python.solutions import pose

        self.min_confidence = float(min_confidence)
        self._graph = QuietStart(
            lambda: pose.Pose(
                static_image_mode=True,
                model_complexity=1,
                enable_segmentation=False,
                min_detection_confidence=self.min_confidence,
            )
        )

    def landmarks(self, frame_rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """Body landmarks of one frame.

        Returns
        -------
        (xy, visibility) or None when no person is found
            ``xy``: ndarray of shape (33, 2), float64, pixels; ``visibility``: shape (33,),
            float64 in [0, 1] (the model's probability that the point is visible in the frame).

        Raises
        ------
        ValueError
            If ``frame_rgb`` is not uint8 (height, width, 3).
        """
        check_frame(frame_rgb)
        height, width = frame_rgb.shape[:2]
        result = self._graph.process(np.ascontiguousarray(frame_rgb))
        if result.pose_landmarks is None:
            return None
        points = result.pose_landmarks.landmark
        xy = np.array([(p.x * width, p.y * height) for p in points], np.float64)
        return xy, np.array([p.visibility for p in points], np.float64)

    def settings(self) -> str:
        import mediapipe

        return f"mediapipe-{mediapipe.__version__}-pose-c1-static-conf{self.min_confidence!r}"


class HandsModel(_Model):
    """MediaPipe Hands, up to two hands, indexed by handedness ("Left", "Right").

    Parameters
    ----------
    min_confidence : float, default=0.5
        Minimum palm detection confidence in [0, 1].
    """

    def __init__(self, min_confidence: float = 0.5):
        from mediapipe.python.solutions import hands

        self.min_confidence = float(min_confidence)
        self._graph = QuietStart(
            lambda: hands.Hands(
                static_image_mode=True,
                max_num_hands=2,
                model_complexity=1,
                min_detection_confidence=self.min_confidence,
            )
        )

    def landmarks(self, frame_rgb: np.ndarray) -> np.ndarray:
        """Hand landmarks of one frame.

        Returns
        -------
        ndarray of shape (2, 21, 2), float64, pixels
            Row 0 the hand MediaPipe labels "Left", row 1 "Right"; NaN where that hand is
            not found (if both detections get the same label, the more confident one is kept).

        Raises
        ------
        ValueError
            If ``frame_rgb`` is not uint8 (height, width, 3).
        """
        check_frame(frame_rgb)
        height, width = frame_rgb.shape[:2]
        out = np.full((2, N_HAND_LANDMARKS, 2), np.nan)
        result = self._graph.process(np.ascontiguousarray(frame_rgb))
        if not result.multi_hand_landmarks:
            return out
        best = [-1.0, -1.0]
        for hand, handedness in zip(result.multi_hand_landmarks, result.multi_handedness):
            label = handedness.classification[0]
            side = HAND_SIDES.index(label.label)
            if label.score > best[side]:
                best[side] = label.score
                out[side] = [(p.x * width, p.y * height) for p in hand.landmark]
        return out

    def settings(self) -> str:
        import mediapipe

        return f"mediapipe-{mediapipe.__version__}-hands-c1-static-conf{self.min_confidence!r}"
