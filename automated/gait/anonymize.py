"""The simple gait anonymizations of seeds/000_0b74979cb8a3f1c3.txt, section 5.6.2.

"First, we suppress parts of the samples: Keep(legs) and Keep(head) both keep only the
captured points for legs and head, respectively, while all other points are set to zero.
Second, we perturb the samples: Noise(x) applies to each captured point normal (mu=0,
sigma=1) distributed noise, which is scaled by 3, 10, or 100. Third, we generalize: Motion
Extraction captures the differences between each next pose in order to extract only the
dynamic parts of the data."

Pure functions on arrays of shape ``(..., n_frames, n_joints, 3)`` (one sequence or a
batch); the joint layout is passed explicitly because Kinect, MediaPipe and CMU skeletons
order their joints differently. All return a new float array of the input shape.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .layouts import JointLayout

PAPER_NOISE_SCALES = (3.0, 10.0, 100.0)


def _as_float_sequences(sequences) -> np.ndarray:
    array = np.asarray(sequences)
    if array.ndim < 3 or array.shape[-1] != 3:
        raise ValueError(f"sequences must have shape (..., n_frames, n_joints, 3), got {array.shape}")
    return array if np.issubdtype(array.dtype, np.floating) else array.astype(np.float64)


def keep_joints(sequences, joint_indices) -> np.ndarray:
    """Keep only the given joints; every other joint is set to 0 in every frame.

    The suppression step of Keep(legs) / Keep(head) (seeds/000, section 5.6.2).

    Parameters
    ----------
    sequences : array-like of shape (..., n_frames, n_joints, 3)
    joint_indices : sequence of int

    Returns
    -------
    ndarray of the input shape

    Raises
    ------
    ValueError
        If an index is out of range.
    """
    array = _as_float_sequences(sequences)
    joint_indices = list(joint_indices)
    n_joints = array.shape[-2]
    if any(not 0 <= j < n_joints for j in joint_indices):
        raise ValueError(f"joint indices must be in [0, {n_joints}), got {joint_indices}")
    kept = np.zeros_like(array)
    kept[..., joint_indices, :] = array[..., joint_indices, :]
    return kept


def keep_group(sequences, layout: JointLayout, group: str) -> np.ndarray:
    """Keep(group): keep only the joints of a named group of ``layout`` (e.g. "legs", "head").

    seeds/000, section 5.6.2. Groups per layout are defined in ``layouts.py`` (Calgary
    Kinect: legs = hips, knees, ankles, feet; head = the head joint).

    Raises
    ------
    ValueError
        If the sequences do not have ``layout.n_joints`` joints.
    KeyError
        If ``layout`` has no such group.
    """
    array = _as_float_sequences(sequences)
    if array.shape[-2] != layout.n_joints:
        raise ValueError(
            f"sequences have {array.shape[-2]} joints, layout {layout.name!r} has {layout.n_joints}"
        )
    return keep_joints(array, layout.indices(group))


def add_noise(sequences, scale: float, *, rng: np.random.Generator) -> np.ndarray:
    """Noise(scale): add ``scale * N(0, 1)`` independently to every coordinate of every point.

    seeds/000, section 5.6.2, with scale 3, 10 or 100. The noise is in the data's own units:
    the paper gives no unit; on the Calgary Kinect walks (metres) Noise(3) is a standard
    deviation of 3 m per coordinate, frame and joint.

    Parameters
    ----------
    sequences : array-like of shape (..., n_frames, n_joints, 3)
    scale : float
        Standard deviation of the noise, >= 0.
    rng : numpy.random.Generator
        Source of the noise (seed it for reproducible masked data).

    Returns
    -------
    ndarray of the input shape

    Raises
    ------
    ValueError
        If ``scale`` is negative or not finite.
    """
    if not np.isfinite(scale) or scale < 0:
        raise ValueError(f"noise scale must be a finite number >= 0, got {scale}")
    array = _as_float_sequences(sequences)
    return array + (scale * rng.standard_normal(array.shape)).astype(array.dtype)


def motion_extraction(sequences) -> np.ndarray:
    """Motion Extraction: the difference between each pose and the previous one.

    seeds/000, section 5.6.2: "captures the differences between each next pose in order to
    extract only the dynamic parts of the data. The structure of the walkers is, then,
    effectively removed." Output frame ``t >= 1`` is ``x[t] - x[t - 1]``; frame 0 (which has
    no predecessor) is all zeros, so the sequence keeps its length and aligns with the clear
    one (naive attackers are trained on clear sequences of the same shape).

    Parameters
    ----------
    sequences : array-like of shape (..., n_frames, n_joints, 3)

    Returns
    -------
    ndarray of the input shape
        Per-frame displacements, in the data's units per frame.
    """
    array = _as_float_sequences(sequences)
    motion = np.zeros_like(array)
    motion[..., 1:, :, :] = np.diff(array, axis=-3)
    return motion


def paper_anonymizations(
    layout: JointLayout, *, seed: int = 0
) -> dict[str, Callable[[np.ndarray], np.ndarray]]:
    """The six gait anonymizations of seeds/000 section 5.6.2, ready to apply to a batch.

    Parameters
    ----------
    layout : JointLayout
        Joint layout of the sequences (for Keep(legs) / Keep(head)).
    seed : int, default=0
        Seed of the noise; each Noise(x) call draws from a fresh generator with this seed,
        so applying it twice to the same input gives the same output.

    Returns
    -------
    dict of str to callable
        ``"Keep(legs)"``, ``"Keep(head)"``, ``"Noise(3)"``, ``"Noise(10)"``, ``"Noise(100)"``,
        ``"Motion Extraction"``; each maps sequences (..., n_frames, n_joints, 3) to an
        array of the same shape.
    """
    methods = {
        "Keep(legs)": lambda x: keep_group(x, layout, "legs"),
        "Keep(head)": lambda x: keep_group(x, layout, "head"),
    }
    for scale in PAPER_NOISE_SCALES:
        methods[f"Noise({scale:g})"] = lambda x, s=scale: add_noise(x, s, rng=np.random.default_rng(seed))
    methods["Motion Extraction"] = motion_extraction
    return methods
