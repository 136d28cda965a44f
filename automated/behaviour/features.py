"""Per-frame behaviour features of one video's tested frames, and their file format.

A ``BehaviourFeatures`` holds one row per tested frame; NaN marks "not found" (no face,
no person, no such hand), never a dropped row, so that a masked video's lost frames stay
visible to ``compare``. Saved as a compressed ``.npz`` with its ``settings`` string
(models and parameters that produced it), so a cached clear side is only reused with
the same settings.
"""

from __future__ import annotations

import os
import tempfile
import zipfile
import zlib
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from .landmarks import N_HAND_LANDMARKS, N_POSE_LANDMARKS


@dataclass
class BehaviourFeatures:
    """Features of ``n`` tested frames (arrays float64 unless stated; NaN = not found).

    Attributes
    ----------
    frame_index : ndarray (n,), int64
        Video frame index of each tested frame.
    frame_wh : ndarray (2,), int64
        Frame width and height in pixels.
    head_pose_deg : ndarray (n, 3)
        Yaw, pitch, roll in degrees (``head_pose``).
    gaze_vector : ndarray (n, 3)
        Unit gaze vector in camera axes (``gaze``).
    ear, mar : ndarray (n,)
        Eye and mouth aspect ratios (``openness``).
    face_box : ndarray (n, 4)
        Face-mesh extent ``[x1, y1, x2, y2]`` in pixels.
    expression : ndarray (n, 7)
        Expression probabilities (``face_classifier.EXPRESSION_LABELS`` order).
    attribute : ndarray (n, 2)
        Gender probabilities (``GENDER_LABELS``) of the crop at the attribute box.
    attribute_features : ndarray (n, 128), float32
        Penultimate features of the gender network for the same crop (parrot attacker).
    pose_xy : ndarray (n, 33, 2)
        MediaPipe Pose landmarks in pixels.
    pose_visibility : ndarray (n, 33)
        Their visibility in [0, 1]; 0 where no person.
    hands_xy : ndarray (n, 2, 21, 2)
        MediaPipe Hands landmarks, "Left" then "Right", pixels.
    settings : str
        What produced the features (``BehaviourExtractor.settings``).
    """

    frame_index: np.ndarray
    frame_wh: np.ndarray
    head_pose_deg: np.ndarray
    gaze_vector: np.ndarray
    ear: np.ndarray
    mar: np.ndarray
    face_box: np.ndarray
    expression: np.ndarray
    attribute: np.ndarray
    attribute_features: np.ndarray
    pose_xy: np.ndarray
    pose_visibility: np.ndarray
    hands_xy: np.ndarray
    settings: str = ""

    @property
    def n_frames(self) -> int:
        return len(self.frame_index)

    @property
    def face_found(self) -> np.ndarray:
        """(n,) bool: a face mesh was found."""
        return np.isfinite(self.ear)

    @property
    def pose_found(self) -> np.ndarray:
        """(n,) bool: a body pose was found."""
        return np.isfinite(self.pose_xy[:, 0, 0])

    @classmethod
    def empty_rows(cls, n: int, frame_wh: tuple[int, int], settings: str = "") -> BehaviourFeatures:
        """``n`` rows of "nothing found" (NaN), frame indices 0..n-1."""
        nan = np.nan
        return cls(
            frame_index=np.arange(n, dtype=np.int64),
            frame_wh=np.asarray(frame_wh, np.int64),
            head_pose_deg=np.full((n, 3), nan),
            gaze_vector=np.full((n, 3), nan),
            ear=np.full(n, nan),
            mar=np.full(n, nan),
            face_box=np.full((n, 4), nan),
            expression=np.full((n, 7), nan),
            attribute=np.full((n, 2), nan),
            attribute_features=np.full((n, 128), nan, np.float32),
            pose_xy=np.full((n, N_POSE_LANDMARKS, 2), nan),
            pose_visibility=np.zeros((n, N_POSE_LANDMARKS)),
            hands_xy=np.full((n, 2, N_HAND_LANDMARKS, 2), nan),
            settings=settings,
        )

    def save(self, path) -> Path:
        """Write to ``path`` (.npz) atomically (a temporary file in the same folder, then rename)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        arrays = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "settings"}
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-", suffix=".npz")
        try:
            with os.fdopen(handle, "wb") as stream:
                np.savez_compressed(stream, settings=np.array(self.settings), **arrays)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        return path

    @classmethod
    def load(cls, path) -> BehaviourFeatures:
        """Read a file written by ``save``.

        Raises
        ------
        ValueError
            If the file is not a readable features file (truncated, not an ``.npz``, or
            a field is missing).
        """
        try:
            with np.load(path, allow_pickle=False) as data:
                missing = [f.name for f in fields(cls) if f.name not in data.files]
                if missing:
                    raise ValueError(
                        f"{Path(path).name} is not a behaviour-features file: no {', '.join(missing)}"
                    )
                values = {f.name: data[f.name] for f in fields(cls)}
        except (zipfile.BadZipFile, EOFError, zlib.error) as error:  # truncated or overwritten file
            raise ValueError(
                f"{Path(path).name} is not a readable behaviour-features file: {error}"
            ) from error
        values["settings"] = str(values["settings"])
        return cls(**values)
