"""The shape checks of pairwise behaviour helpers: clear and masked inputs must match.

NumPy would broadcast a one-frame series against a long one (a silently wrong mean) or
fail deep inside with an error that names neither input; the helpers call
:func:`check_same_shape` (or :func:`check_same_length`, for per-frame arrays of
different kinds) first instead.
"""

from __future__ import annotations

import numpy as np


def check_same_shape(first_name: str, first: np.ndarray, second_name: str, second: np.ndarray) -> None:
    """Raise ValueError naming both inputs and both lengths unless their shapes are equal.

    Parameters
    ----------
    first_name, second_name : str
        The arguments' names, as the caller's signature spells them.
    first, second : ndarray
        Arrays of any shape; zero-length arrays (no frames) are valid.

    Raises
    ------
    ValueError
        ``"x and y differ in length: 5 vs 4"`` when only the first dimension (frames)
        differs, ``"p and q differ in shape: (3, 7) vs (3, 6)"`` otherwise.
    """
    if first.shape == second.shape:
        return
    if first.ndim == second.ndim and first.ndim >= 1 and first.shape[1:] == second.shape[1:]:
        check_same_length(first_name, first, second_name, second)
    raise ValueError(f"{first_name} and {second_name} differ in shape: {first.shape} vs {second.shape}")


def check_same_length(first_name: str, first: np.ndarray, second_name: str, second: np.ndarray) -> None:
    """Raise ValueError naming both inputs and lengths unless they hold as many frames (axis 0).

    Raises
    ------
    ValueError
        ``"clear_pose_xy and clear_hands_xy differ in length: 5 vs 4"``.
    """
    if len(first) != len(second):
        raise ValueError(f"{first_name} and {second_name} differ in length: {len(first)} vs {len(second)}")
