"""Eye-closure and mouth-opening events in EAR/MAR series, and their detection F1.

Events (what drowsiness and talking/yawning monitors look for):

- **Eye closure** (blink or longer closure): a maximal run of tested frames whose EAR is
  below ``EYE_CLOSED_FRACTION`` (0.75) times the series' own median EAR. The median is
  the person's open-eye level (eyes are open most of the time), so the threshold adapts
  to eye shape and to a masking that shifts EAR as a whole, as a per-driver calibrated
  monitor would; Soukupova and Cech (CVWW 2016) likewise flag a blink by a drop of EAR.
- **Mouth opening**: a maximal run of tested frames whose MAR is above
  ``MOUTH_OPEN_MAR`` (0.15). Closed lips give MAR 0 for every person, so the
  threshold is absolute; it separates speech openings (0.2-0.6 on the GRID and CREMA-D
  clips) from lips at rest (< 0.05).

Frames without a face (NaN) end a run and never belong to one.

Matching: a masked event matches a clear event when their frame spans overlap after
each is widened by ``tolerance_frames`` (default 2 video frames, 67-80 ms at 25-30 fps)
on both sides; matching is one-to-one, greedily in time order. Precision = matched
masked events / masked events, recall = matched clear events / clear events, F1 their
harmonic mean. When neither series has an event, the masking kept the (absence of)
behaviour: F1 = 1. When only one has events, F1 = 0.
"""

from __future__ import annotations

import numpy as np

from .shapes import check_same_shape

EYE_CLOSED_FRACTION = 0.75
MOUTH_OPEN_MAR = 0.15
TOLERANCE_FRAMES = 2


def runs(active: np.ndarray, frame_indices: np.ndarray) -> list[tuple[int, int]]:
    """Maximal runs of consecutive True entries as (first, last) video frame indices.

    Parameters
    ----------
    active : array-like of shape (n,), bool
    frame_indices : array-like of shape (n,), int
        Video frame index of each entry (tested frames, increasing).

    Raises
    ------
    ValueError
        If active and frame_indices differ in length (``"active and frame_indices differ
        in length: 5 vs 4"``). Both empty (no tested frame) is valid: no runs.

    Examples
    --------
    >>> runs(np.array([0, 1, 1, 0, 1], bool), np.array([0, 5, 10, 15, 20]))
    [(5, 10), (20, 20)]
    """
    active = np.asarray(active, bool)
    frames = np.asarray(frame_indices)
    check_same_shape("active", active, "frame_indices", frames)
    edges = np.diff(np.concatenate([[0], active.astype(np.int8), [0]]))
    starts, stops = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1
    return [(int(frames[a]), int(frames[b])) for a, b in zip(starts, stops)]


def eye_closure_events(
    ear: np.ndarray, frame_indices: np.ndarray, *, fraction: float = EYE_CLOSED_FRACTION
) -> list[tuple[int, int]]:
    """Eye-closure events (module docstring) of an EAR series; NaN = no face.

    Returns an empty list when the series has no finite value.
    """
    ear = np.asarray(ear, np.float64)
    finite = np.isfinite(ear)
    if not finite.any():
        return []
    closed = np.zeros_like(finite)
    closed[finite] = ear[finite] < fraction * np.median(ear[finite])
    return runs(closed, frame_indices)


def mouth_opening_events(
    mar: np.ndarray, frame_indices: np.ndarray, *, threshold: float = MOUTH_OPEN_MAR
) -> list[tuple[int, int]]:
    """Mouth-opening events (module docstring) of a MAR series; NaN = no face."""
    mar = np.asarray(mar, np.float64)
    with np.errstate(invalid="ignore"):
        return runs(np.isfinite(mar) & (mar > threshold), frame_indices)


def event_f1(clear_events, masked_events, *, tolerance_frames: int = TOLERANCE_FRAMES) -> dict:
    """Precision, recall and F1 of masked events against clear events (module docstring).

    Parameters
    ----------
    clear_events, masked_events : list of (first, last) video frame indices
    tolerance_frames : int, default=2
        Frames added on each side of both spans before testing overlap; >= 0.

    Returns
    -------
    dict with ``precision``, ``recall``, ``f1`` (floats in [0, 1]; precision is 1 when
    the masked video has no event, recall 1 when the clear one has none),
    ``n_clear``, ``n_masked``, ``n_matched``.

    Raises
    ------
    ValueError
        If ``tolerance_frames`` is negative.

    Examples
    --------
    >>> event_f1([(10, 12), (40, 41)], [(13, 14)])["f1"]  # one of two found, no false alarm
    0.6666666666666666
    """
    if tolerance_frames < 0:
        raise ValueError(f"tolerance_frames must be >= 0, got {tolerance_frames}")
    masked_events = sorted(masked_events)
    used = [False] * len(masked_events)
    matched = 0
    for first, last in sorted(clear_events):
        for j, (m_first, m_last) in enumerate(masked_events):
            if (
                not used[j]
                and m_first - tolerance_frames <= last + tolerance_frames
                and first - tolerance_frames <= m_last + tolerance_frames
            ):
                used[j] = True
                matched += 1
                break
    n_clear, n_masked = len(clear_events), len(masked_events)
    precision = matched / n_masked if n_masked else 1.0
    recall = matched / n_clear if n_clear else 1.0
    if n_clear == 0 and n_masked == 0:
        f1 = 1.0
    elif matched == 0:
        f1 = 0.0
    else:
        f1 = 2 * precision * recall / (precision + recall)
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "n_clear": n_clear,
        "n_masked": n_masked,
        "n_matched": matched,
    }
