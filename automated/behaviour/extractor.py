"""Per-frame behaviour features of one video, one tested frame at a time.

``BehaviourExtractor.update(frame_rgb)`` runs the models on one frame and appends a row;
``features()`` returns the rows as a ``BehaviourFeatures``. One extractor per video side
(clear, masked): the caller decodes the frames (e.g. in the same loop as the face
evaluation) and hands each tested frame to both sides' extractors, then calls
``compare.compare(clear, masked)``.

Per frame: face mesh with irises -> head pose, gaze, EAR, MAR and the face box; the
face crop -> expression probabilities; body pose; hands; optionally the gender
classifier on the crop at an *attribute box* (the attribute-inference attacker; by
default the frame's own face box; ``evaluate`` passes the clear frame's box for the
masked side).
"""

from __future__ import annotations

import time

import numpy as np

from .face_classifier import expression_classifier, gender_classifier, mesh_box
from .features import BehaviourFeatures
from .gaze import gaze_vector
from .head_pose import head_pose
from ..face_boxes import check_frame
from .landmarks import FaceMeshModel, HandsModel, PoseModel
from .openness import eye_aspect_ratio, mouth_aspect_ratio

FEATURE_VERSION = 1  # bump when a feature's definition changes (invalidates cached clear sides)


def _face_features(mesh: np.ndarray, frame_wh: tuple[int, int]) -> dict | None:
    """Head pose, gaze, EAR, MAR and face box of a mesh; None if any is undefined.

    A degenerate mesh (coincident eye corners, no head pose) counts as no face, so that
    every face feature of a row is defined or none is.
    """
    try:
        ypr, rotation = head_pose(mesh, frame_wh)
        with np.errstate(divide="ignore", invalid="ignore"):
            face = dict(
                head_pose_deg=ypr,
                gaze_vector=gaze_vector(mesh, rotation),
                ear=eye_aspect_ratio(mesh),
                mar=mouth_aspect_ratio(mesh),
                face_box=mesh_box(mesh),
            )
    except (ValueError, ZeroDivisionError):
        return None
    return face if all(np.isfinite(value).all() for value in face.values()) else None


class BehaviourExtractor:
    """Run the behaviour models frame by frame (context manager; ``close()`` frees the graphs).

    Parameters
    ----------
    body : bool, default=True
        Run MediaPipe Pose.
    hands : bool, default=True
        Run MediaPipe Hands.
    expression : bool, default=True
        Run the expression classifier on the face crop.
    attribute : bool, default=False
        Run the gender classifier (attribute-inference attacker) on the crop at the
        attribute box.
    models_dir : path-like, optional
        Folder holding ``face_classification/`` (default ``$DEID_MODELS_DIR`` or
        ``../shared/models``).
    timings : dict, optional
        CPU seconds (``time.process_time``) per model are added under "face_mesh",
        "expression", "attribute", "pose" and "hands", and the number of frames each
        model ran on under "<model>_frames" (benchmarks/bench_behaviour.py).

    Raises
    ------
    FileNotFoundError
        If a requested classifier's weights are missing.
    """

    def __init__(
        self,
        *,
        body: bool = True,
        hands: bool = True,
        expression: bool = True,
        attribute: bool = False,
        models_dir=None,
        timings: dict | None = None,
    ):
        self.timings = timings
        self._mesh = FaceMeshModel()
        self._pose = PoseModel() if body else None
        self._hands = HandsModel() if hands else None
        self._expression = expression_classifier(models_dir) if expression else None
        self._attribute = gender_classifier(models_dir) if attribute else None
        self._rows: list[dict] = []
        self._frame_wh: tuple[int, int] | None = None

    @property
    def settings(self) -> str:
        """Every model and parameter that changes the features (for cache keys and checks)."""
        parts = [f"features-v{FEATURE_VERSION}", self._mesh.settings()]
        for name, model in (("pose", self._pose), ("hands", self._hands)):
            parts.append(model.settings() if model else f"no-{name}")
        for name, model in (("expression", self._expression), ("attribute", self._attribute)):
            parts.append(model.settings if model else f"no-{name}")
        return "|".join(parts)

    def _clock(self, stage: str, since: float, ran: bool) -> float:
        now = time.process_time()
        if self.timings is not None and ran:
            self.timings[stage] = self.timings.get(stage, 0.0) + now - since
            self.timings[f"{stage}_frames"] = self.timings.get(f"{stage}_frames", 0) + 1
        return now

    def update(self, frame_rgb: np.ndarray, frame_index: int | None = None, *, attribute_box=None) -> dict:
        """Measure one tested frame and append its row.

        Parameters
        ----------
        frame_rgb : ndarray of shape (height, width, 3), dtype uint8, RGB
        frame_index : int, optional
            Video frame index (default: the number of frames seen so far).
        attribute_box : array-like of shape (4,), optional
            Face box for the attribute crop (default: this frame's own face box).

        Returns
        -------
        dict
            The frame's row (the ``BehaviourFeatures`` fields, one frame's values).

        Raises
        ------
        ValueError
            If the frame is not uint8 (height, width, 3) or its size differs from the
            first frame's.
        """
        check_frame(frame_rgb)
        height, width = frame_rgb.shape[:2]
        if self._frame_wh is None:
            self._frame_wh = (width, height)
        elif self._frame_wh != (width, height):
            raise ValueError(f"frame size changed from {self._frame_wh} to {(width, height)}")
        row = {
            k: v[0]
            for k, v in vars(BehaviourFeatures.empty_rows(1, (width, height))).items()
            if isinstance(v, np.ndarray) and k != "frame_wh"
        }
        row["frame_index"] = len(self._rows) if frame_index is None else int(frame_index)
        started = time.process_time()
        mesh = self._mesh.landmarks(frame_rgb)
        face = _face_features(mesh, (width, height)) if mesh is not None else None
        if face is None:
            mesh = None
        else:
            row.update(face)
        started = self._clock("face_mesh", started, True)
        run = self._expression is not None and mesh is not None
        if run:
            row["expression"] = self._expression.predict(
                self._expression.crop(frame_rgb, row["face_box"])[None]
            )[0][0]
        started = self._clock("expression", started, run)
        box = row["face_box"] if attribute_box is None else np.asarray(attribute_box, np.float64)
        run = self._attribute is not None and bool(np.isfinite(box).all())
        if run:
            probabilities, features = self._attribute.predict(self._attribute.crop(frame_rgb, box)[None])
            row["attribute"], row["attribute_features"] = probabilities[0], features[0]
        started = self._clock("attribute", started, run)
        if self._pose is not None:
            found = self._pose.landmarks(frame_rgb)
            if found is not None:
                row["pose_xy"], row["pose_visibility"] = found
        started = self._clock("pose", started, self._pose is not None)
        if self._hands is not None:
            row["hands_xy"] = self._hands.landmarks(frame_rgb)
        self._clock("hands", started, self._hands is not None)
        self._rows.append(row)
        return row

    def add_row(self, row: dict, frame_wh: tuple[int, int]) -> None:
        """Append a row measured on an identical frame (every model runs in static image
        mode, so a frame's row is a function of its pixels and the attribute box alone).

        Parameters
        ----------
        row : dict
            A row returned by ``update`` (or read from stored features) of a frame equal
            to this one, measured with the same settings and attribute box.
        frame_wh : (int, int)
            The frame's width and height.

        Raises
        ------
        ValueError
            If the frame size differs from the first frame's.
        """
        if self._frame_wh is None:
            self._frame_wh = tuple(frame_wh)
        elif self._frame_wh != tuple(frame_wh):
            raise ValueError(f"frame size changed from {self._frame_wh} to {tuple(frame_wh)}")
        self._rows.append(dict(row))

    def reset(self) -> None:
        """Start a new video: forget the rows and the frame size, keep the loaded models."""
        self._rows = []
        self._frame_wh = None

    def features(self) -> BehaviourFeatures:
        """All rows so far as a ``BehaviourFeatures`` (n may be 0).

        Raises
        ------
        ValueError
            If no frame was given yet (the frame size is unknown).
        """
        if self._frame_wh is None:
            raise ValueError("no frame was measured: call update(frame_rgb) for each tested frame first")
        result = BehaviourFeatures.empty_rows(0, self._frame_wh, self.settings)
        for name, empty in vars(result).items():
            if isinstance(empty, np.ndarray) and name != "frame_wh":
                setattr(
                    result,
                    name,
                    np.array([row[name] for row in self._rows], dtype=empty.dtype).reshape(
                        (len(self._rows),) + empty.shape[1:]
                    ),
                )
        return result

    def close(self) -> None:
        """Release the mediapipe graphs."""
        for model in (self._mesh, self._pose, self._hands):
            if model is not None:
                model.close()

    def __enter__(self) -> BehaviourExtractor:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
