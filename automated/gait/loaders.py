"""Loaders of real skeleton walks: University of Calgary Kinect v2 and CMU mocap (ASF/AMC).

Both return a ``GaitDataset``: sequences ``(n_sequences, n_frames, n_joints, 3)`` in metres
plus per-sequence subject ids and metadata, ready for ``automated.attack.AttackData``
(``identities=subject_ids``, ``groups=sequence_ids``: the 75/25 split then goes by whole
sequence, seeds/000 section 5.4).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .acclaim import forward_kinematics, read_amc, read_asf
from .layouts import CALGARY_KINECT, CMU_MOCAP, JointLayout
from .sequences import resample

CALGARY_FOLDER = Path("gait") / "ucalgary_kinect_gait"
CMU_FOLDER = Path("gait") / "cmu_mocap_asf_amc"
CALGARY_FRAMES = 120
_CALGARY_VALUES = 62  # 18 joints x XYZ + 8 distances per row


class GaitDataError(ValueError):
    """A skeleton data file or index is malformed (the file and the problem are named)."""


@dataclass(frozen=True)
class GaitDataset:
    """Skeleton sequences of several subjects with per-sequence metadata.

    Attributes
    ----------
    sequences : ndarray of shape (n_sequences, n_frames, n_joints, 3), float32
        Joint positions in metres (Calgary: Kinect camera coordinates; CMU: mocap frame,
        y up). All sequences have one length (CMU: after ``sequences.resample``).
    subject_ids : ndarray of int of shape (n_sequences,)
    sequence_ids : ndarray of str of shape (n_sequences,)
        Unique per sequence (e.g. ``"sub1/run1"``, ``"07_01"``): the group of the split.
    metadata : pandas.DataFrame
        One row per sequence, same order: Calgary ``subject_id, run, gender, gait_type,
        path``; CMU ``subject_id, trial, description, fps, n_frames_original, path``.
    layout : JointLayout
    """

    sequences: np.ndarray
    subject_ids: np.ndarray
    sequence_ids: np.ndarray
    metadata: pd.DataFrame
    layout: JointLayout

    @property
    def n_subjects(self) -> int:
        return len(np.unique(self.subject_ids))


def read_calgary_positions(path: str | os.PathLike, *, n_frames: int = CALGARY_FRAMES) -> np.ndarray:
    """Read one Calgary ``GeometricPositions`` CSV into joint positions.

    The file has a header row, then one row per frame of 62 numbers: X, Y, Z of the 18
    joints of ``layouts.CALGARY_KINECT`` (metres, camera coordinates), then 8 derived
    distances, which are dropped (data/gait/ucalgary_kinect_gait/SOURCE.md).

    Parameters
    ----------
    path : path-like
    n_frames : int, default=120
        Frames the file must have.

    Returns
    -------
    positions : ndarray of shape (n_frames, 18, 3), float32, metres

    Raises
    ------
    GaitDataError
        If the file is missing or empty, a row does not have 62 numbers, a value is not a
        finite number, or the number of frames differs from ``n_frames``.
    """
    path = Path(path)
    if not path.is_file():
        raise GaitDataError(f"Calgary positions file not found: {path}")
    try:
        table = pd.read_csv(path, header=0, skipinitialspace=True)
    except (pd.errors.EmptyDataError, pd.errors.ParserError) as error:
        raise GaitDataError(f"{path.name}: not a readable CSV ({error})") from None
    if table.shape[1] != _CALGARY_VALUES:
        raise GaitDataError(f"{path.name}: expected {_CALGARY_VALUES} values per row, got {table.shape[1]}")
    values = table.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values)
    if bad.any():
        row, column = np.argwhere(bad)[0]
        raise GaitDataError(
            f"{path.name}: row {row + 2}, column {column + 1} is not a finite number: "
            f"{table.iat[row, column]!r}"
        )
    if len(values) != n_frames:
        raise GaitDataError(f"{path.name}: expected {n_frames} frames, got {len(values)}")
    return (
        values[:, : 3 * CALGARY_KINECT.n_joints]
        .reshape(n_frames, CALGARY_KINECT.n_joints, 3)
        .astype(np.float32)
    )


def load_calgary(data_dir: str | os.PathLike) -> GaitDataset:
    """Load the University of Calgary Kinect walks (28 subjects, 167 sequences of 120 frames).

    Reads ``index.csv`` and every ``GeometricPositions`` file it lists. Known quirks of the
    source are kept as they are (SOURCE.md): subject 21 has no run 4; subject 8 is labelled
    male in runs 1-2 and female in runs 3-6 (``gender`` is per file; see
    ``gender_by_subject``).

    Parameters
    ----------
    data_dir : path-like
        The shared data folder (``settings.DATA_DIR``), containing
        ``gait/ucalgary_kinect_gait/``; or that folder itself.

    Returns
    -------
    GaitDataset
        ``sequences`` (167, 120, 18, 3) float32 metres; ``metadata`` columns ``subject_id``,
        ``run`` (1-6), ``gender`` ("M"/"F", per file), ``gait_type`` ("N" normal, "AR"/"AL"
        simulated abnormal right/left leg), ``path``; ``sequence_ids`` like ``"sub1/run1"``.

    Raises
    ------
    GaitDataError
        If the folder or index is missing, the index lacks a column, or a listed file is
        malformed (``read_calgary_positions``).
    """
    folder = Path(data_dir)
    if not (folder / "index.csv").is_file():
        folder = folder / CALGARY_FOLDER
    index_path = folder / "index.csv"
    if not index_path.is_file():
        raise GaitDataError(f"Calgary index not found: {index_path}")
    index = pd.read_csv(index_path)
    needed = ["subject_id", "run", "gender", "gait_type", "frames", "geometric_positions_csv"]
    missing = [c for c in needed if c not in index.columns]
    if missing:
        raise GaitDataError(f"{index_path}: missing column(s) {missing}")
    index = index.sort_values(["subject_id", "run"], kind="stable").reset_index(drop=True)
    paths = [folder / str(p).strip() for p in index["geometric_positions_csv"]]
    sequences = np.stack([read_calgary_positions(p, n_frames=int(f)) for p, f in zip(paths, index["frames"])])
    metadata = pd.DataFrame(
        {
            "subject_id": index["subject_id"].astype(int),
            "run": index["run"].astype(int),
            "gender": index["gender"].astype(str).str.strip(),
            "gait_type": index["gait_type"].astype(str).str.strip(),
            "path": [str(p) for p in paths],
        }
    )
    sequence_ids = np.array([f"sub{s}/run{r}" for s, r in zip(metadata["subject_id"], metadata["run"])])
    return GaitDataset(sequences, metadata["subject_id"].to_numpy(), sequence_ids, metadata, CALGARY_KINECT)


def gender_by_subject(dataset: GaitDataset) -> pd.Series:
    """Gender of each subject where the files agree, else missing.

    Calgary subject 8 is "M" in two files and "F" in four; rather than guess, it gets a
    missing value (``pd.isna``) so group-fairness measures leave it out explicitly.

    Returns
    -------
    pandas.Series indexed by subject id, values "M", "F" or missing
    """
    labels = dataset.metadata.groupby("subject_id")["gender"].agg(
        lambda g: g.iloc[0] if g.nunique() == 1 else None
    )
    return labels.rename("gender")


def load_cmu_walks(data_dir: str | os.PathLike, *, n_frames: int | None = None) -> GaitDataset:
    """Load the CMU mocap walking trials listed in ``trials.csv`` as joint positions.

    Each trial's AMC is parsed against its subject's ASF and turned into joint positions by
    forward kinematics (``acclaim.forward_kinematics``): root + the end of each of the 30
    bones, metres, y up, 120 fps.

    Parameters
    ----------
    data_dir : path-like
        The shared data folder (containing ``gait/cmu_mocap_asf_amc/``) or that folder.
    n_frames : int or None, default=None
        Resample every trial to this many frames (``sequences.resample``; the paper uses
        100, seeds/000 section 5.3) so they stack. None: keep the original lengths, which
        differ, so ``sequences`` is then a 1-D object array of (n_frames_i, 31, 3) arrays.

    Returns
    -------
    GaitDataset
        ``sequence_ids`` like ``"07_01"``; ``metadata`` columns ``subject_id``, ``trial``,
        ``description``, ``fps``, ``n_frames_original``, ``path``.

    Raises
    ------
    GaitDataError
        If ``trials.csv`` is missing or lacks a column.
    AcclaimError
        If an ASF or AMC file is malformed.
    """
    folder = Path(data_dir)
    if not (folder / "trials.csv").is_file():
        folder = folder / CMU_FOLDER
    trials_path = folder / "trials.csv"
    if not trials_path.is_file():
        raise GaitDataError(f"CMU trial list not found: {trials_path}")
    trials = pd.read_csv(trials_path, dtype=str)
    needed = ("subject", "trial", "file", "skeleton_file", "cmu_description", "fps")
    missing = [c for c in needed if c not in trials.columns]
    if missing:
        raise GaitDataError(f"{trials_path}: missing column(s) {missing}")
    skeletons = {}
    sequences, rows = [], []
    for trial in trials.itertuples(index=False):
        if trial.skeleton_file not in skeletons:
            skeletons[trial.skeleton_file] = read_asf(folder / trial.skeleton_file)
        skeleton = skeletons[trial.skeleton_file]
        if skeleton.joint_names != CMU_MOCAP.joint_names:
            raise GaitDataError(
                f"{trial.skeleton_file}: bones differ from the CMU layout: {skeleton.joint_names}"
            )
        positions = forward_kinematics(skeleton, read_amc(folder / trial.file, skeleton)).astype(np.float32)
        rows.append(
            {
                "subject_id": int(trial.subject),
                "trial": int(trial.trial),
                "description": trial.cmu_description,
                "fps": float(trial.fps),
                "n_frames_original": len(positions),
                "path": str(folder / trial.file),
            }
        )
        sequences.append(positions if n_frames is None else resample(positions, n_frames))
    if n_frames is None:
        stacked = np.empty(len(sequences), dtype=object)
        stacked[:] = sequences
    else:
        stacked = np.stack(sequences)
    metadata = pd.DataFrame(rows)
    sequence_ids = np.array([f"{s}_{t}" for s, t in zip(trials["subject"], trials["trial"])])
    return GaitDataset(stacked, metadata["subject_id"].to_numpy(), sequence_ids, metadata, CMU_MOCAP)
