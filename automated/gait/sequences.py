"""Skeleton sequences: validation, resampling to a fixed length, root centring.

seeds/000_0b74979cb8a3f1c3.txt, section 5.3: "For each identity in the dataset there are
20 gait sequences, and we resample these to be 100 frames long." The paper uses the
absolute 3D positions of the markers and names no other normalisation; ``center_on_root``
is offered for skeletons whose absolute position is meaningless (e.g. MediaPipe image
coordinates of a moving camera) and is NOT part of the paper's pipeline.
"""

from __future__ import annotations

import numpy as np
from scipy.interpolate import interp1d

PAPER_N_FRAMES = 100


def check_sequence(sequence, *, name: str = "sequence") -> np.ndarray:
    """Validate one skeleton sequence and return it as a float array.

    Parameters
    ----------
    sequence : array-like of shape (n_frames, n_joints, 3)

    Returns
    -------
    ndarray of shape (n_frames, n_joints, 3), floating

    Raises
    ------
    ValueError
        If the shape is not (n_frames, n_joints, 3) with n_frames, n_joints >= 1, or a value
        is NaN or infinite.
    """
    array = np.asarray(sequence)
    if array.ndim != 3 or array.shape[-1] != 3 or array.shape[0] < 1 or array.shape[1] < 1:
        raise ValueError(f"{name} must have shape (n_frames, n_joints, 3), got {array.shape}")
    if not np.issubdtype(array.dtype, np.floating):
        array = array.astype(np.float64)
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return array


def check_sequences(sequences, *, name: str = "sequences") -> np.ndarray:
    """Validate a batch of equal-length sequences, shape (n_sequences, n_frames, n_joints, 3).

    Raises
    ------
    ValueError
        If the array is not 4-D with last axis 3, is empty, or has non-finite values.
    """
    array = np.asarray(sequences)
    if array.ndim != 4 or array.shape[-1] != 3 or 0 in array.shape:
        raise ValueError(f"{name} must have shape (n_sequences, n_frames, n_joints, 3), got {array.shape}")
    if not np.issubdtype(array.dtype, np.floating):
        array = array.astype(np.float64)
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return array


def resample(sequence, n_frames: int = PAPER_N_FRAMES) -> np.ndarray:
    """Resample a sequence to ``n_frames`` frames by linear interpolation over time.

    The first and last frames are kept; frame ``k`` of the output lies at the fraction
    ``k / (n_frames - 1)`` of the input's duration (seeds/000, section 5.3: sequences
    "resampled to be 100 frames long").

    Parameters
    ----------
    sequence : array-like of shape (n_frames_in, n_joints, 3) or (n_sequences, n_frames_in, n_joints, 3)
        One sequence or a batch of equal-length sequences; n_frames_in >= 2.
    n_frames : int, default=100

    Returns
    -------
    ndarray of shape (n_frames, n_joints, 3) or (n_sequences, n_frames, n_joints, 3)
        Same dtype as the input (float).

    Raises
    ------
    ValueError
        If ``n_frames`` < 2, the input has fewer than 2 frames, or a bad shape/value.

    Examples
    --------
    >>> x = np.arange(3, dtype=float).reshape(3, 1, 1) * np.ones((1, 1, 3))
    >>> resample(x, 5)[:, 0, 0].tolist()
    [0.0, 0.5, 1.0, 1.5, 2.0]
    """
    if n_frames < 2:
        raise ValueError(f"n_frames must be >= 2, got {n_frames}")
    array = np.asarray(sequence)
    array = check_sequence(array) if array.ndim == 3 else check_sequences(array)
    time_axis = array.ndim - 3
    n_in = array.shape[time_axis]
    if n_in < 2:
        raise ValueError(f"cannot resample a sequence of {n_in} frame; need at least 2")
    if n_in == n_frames:
        return array.copy()
    source_time = np.linspace(0.0, 1.0, n_in)
    target_time = np.linspace(0.0, 1.0, n_frames)
    return interp1d(source_time, array, axis=time_axis)(target_time).astype(array.dtype)


def center_on_root(sequence, root_indices) -> np.ndarray:
    """Subtract, per frame, the mean position of the root joints (not in the paper).

    Parameters
    ----------
    sequence : array-like of shape (..., n_frames, n_joints, 3)
    root_indices : sequence of int
        E.g. ``layout.indices(layout.root)``.

    Returns
    -------
    ndarray of the input shape
        Root-relative positions: the root joint(s) average to 0 in every frame.

    Raises
    ------
    ValueError
        If ``root_indices`` is empty or out of range.
    """
    array = np.asarray(sequence)
    if not np.issubdtype(array.dtype, np.floating):
        array = array.astype(np.float64)
    root_indices = list(root_indices)
    if not root_indices or min(root_indices) < -array.shape[-2] or max(root_indices) >= array.shape[-2]:
        raise ValueError(
            f"root_indices must be non-empty joint indices < {array.shape[-2]}, got {root_indices}"
        )
    return array - array[..., root_indices, :].mean(axis=-2, keepdims=True)
