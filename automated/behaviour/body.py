"""Body and hand keypoint agreement between clear and masked frames: PCK and hand presence.

PCK (percentage of correct keypoints; Yang and Ramanan, "Articulated human detection
with flexible mixtures of parts", TPAMI 2013, section 7): a masked keypoint is correct
when it lies within ``alpha`` times a body-size length of the same keypoint in the clear
frame, which stands in for the ground truth (what a downstream model saw before masking).

- Body size: the clear frame's **shoulder width** (MediaPipe Pose landmarks 11-12), the
  torso size measurable in head-and-shoulders and driver-facing views, where the hips
  are out of frame. ``alpha = 0.2`` (PCK@0.2): at a typical 40 cm shoulder width, 8 cm,
  finer than the hand-to-face distance that tells phone use or eating from driving.
- Groups: **torso** (shoulders and hips 11, 12, 23, 24), **arms** (elbows and wrists
  13-16), **hands** (21 MediaPipe Hands points of each hand).
- Reference keypoints: body points the clear model sees as visible (visibility >= 0.5)
  and all points of each hand found in the clear frame, in frames where the clear video
  has a body pose (which gives the scale). A keypoint the masked model does not find
  (no person, or that hand missing) is a miss, never skipped.

Hand presence agreement: share of tested frames where the same hands ("Left",
"Right" as labelled by MediaPipe) are found in the clear and the masked frame; 1 when
neither has a hand.
"""

from __future__ import annotations

import numpy as np

from .shapes import check_same_length, check_same_shape

PCK_ALPHA = 0.2
VISIBLE = 0.5
SHOULDERS = (11, 12)
TORSO = (11, 12, 23, 24)
ARMS = (13, 14, 15, 16)


def shoulder_width(pose_xy: np.ndarray) -> np.ndarray:
    """Shoulder width per frame, pixels: shape (n, 33, 2) -> (n,), NaN where no pose."""
    pose_xy = np.asarray(pose_xy, np.float64)
    return np.linalg.norm(pose_xy[:, SHOULDERS[0]] - pose_xy[:, SHOULDERS[1]], axis=-1)


def pck_counts(
    clear_xy: np.ndarray,
    reference: np.ndarray,
    masked_xy: np.ndarray,
    scale: np.ndarray,
    *,
    alpha: float = PCK_ALPHA,
) -> tuple[int, int]:
    """(correct, total) keypoint counts of PCK@alpha over frames.

    Parameters
    ----------
    clear_xy, masked_xy : ndarray of shape (n, k, 2), pixels, NaN where not found
    reference : ndarray of shape (n, k), bool
        Keypoints that count (see module docstring).
    scale : ndarray of shape (n,), pixels
        Body-size length per frame; frames with a NaN or zero scale are left out.
    alpha : float, default=0.2

    Returns
    -------
    (correct, total) : (int, int)

    Raises
    ------
    ValueError
        If clear_xy and masked_xy differ in shape, or reference or scale has another
        number of frames (``"clear_xy and scale differ in length: 3 vs 1"``).

    Examples
    --------
    >>> clear = np.array([[[0.0, 0.0], [10.0, 0.0]]])
    >>> masked = np.array([[[1.0, 0.0], [10.0, 5.0]]])
    >>> pck_counts(clear, np.ones((1, 2), bool), masked, np.array([20.0]))  # threshold 4 px
    (1, 2)
    """
    clear_xy = np.asarray(clear_xy, np.float64)
    masked_xy = np.asarray(masked_xy, np.float64)
    scale = np.asarray(scale, np.float64)
    reference = np.asarray(reference, bool)
    check_same_shape("clear_xy", clear_xy, "masked_xy", masked_xy)
    check_same_length("clear_xy", clear_xy, "reference", reference)
    check_same_length("clear_xy", clear_xy, "scale", scale)
    usable = reference & (np.isfinite(scale) & (scale > 0))[:, None]
    distance = np.linalg.norm(masked_xy - clear_xy, axis=-1)
    with np.errstate(invalid="ignore"):
        correct = usable & (distance <= alpha * scale[:, None])  # NaN distance (missing) -> False
    return int(correct.sum()), int(usable.sum())


def body_metrics(
    clear_pose_xy,
    clear_visibility,
    masked_pose_xy,
    clear_hands_xy,
    masked_hands_xy,
    *,
    alpha: float = PCK_ALPHA,
) -> dict:
    """PCK of torso, arms and hands, body loss and hand presence agreement over tested frames.

    Parameters
    ----------
    clear_pose_xy, masked_pose_xy : ndarray of shape (n, 33, 2), pixels, NaN where no person
    clear_visibility : ndarray of shape (n, 33), in [0, 1] (0 where no person)
    clear_hands_xy, masked_hands_xy : ndarray of shape (n, 2, 21, 2), pixels, NaN where
        that hand is not found

    Returns
    -------
    dict
        ``pose_frames`` (tested frames with a clear body pose), ``body_lost_rate``
        (share of those where the masked frame has none; NaN without pose frames),
        ``pck_torso``, ``pck_arms``, ``pck_hands`` (fractions in [0, 1], NaN when no
        reference keypoint), ``hand_frames`` (tested frames with a clear hand),
        ``hand_presence_agreement`` (fraction in [0, 1], NaN without tested frames).

    Raises
    ------
    ValueError
        If the clear and masked poses (or hands) differ in shape, or the inputs cover
        different numbers of frames (``"clear_pose_xy and clear_hands_xy differ in
        length: 5 vs 4"``).
    """
    clear_pose_xy = np.asarray(clear_pose_xy, np.float64)
    masked_pose_xy = np.asarray(masked_pose_xy, np.float64)
    clear_visibility = np.asarray(clear_visibility, np.float64)
    clear_hands = np.asarray(clear_hands_xy, np.float64)
    masked_hands = np.asarray(masked_hands_xy, np.float64)
    check_same_shape("clear_pose_xy", clear_pose_xy, "masked_pose_xy", masked_pose_xy)
    check_same_shape("clear_hands_xy", clear_hands, "masked_hands_xy", masked_hands)
    check_same_length("clear_pose_xy", clear_pose_xy, "clear_visibility", clear_visibility)
    check_same_length("clear_pose_xy", clear_pose_xy, "clear_hands_xy", clear_hands)
    visible = clear_visibility >= VISIBLE
    clear_found = np.isfinite(clear_pose_xy[:, 0, 0])
    masked_found = np.isfinite(masked_pose_xy[:, 0, 0])
    scale = shoulder_width(clear_pose_xy)
    result = {"pose_frames": int(clear_found.sum())}
    result["body_lost_rate"] = float(np.mean(~masked_found[clear_found])) if clear_found.any() else np.nan
    for name, points in (("torso", TORSO), ("arms", ARMS)):
        points = list(points)
        correct, total = pck_counts(
            clear_pose_xy[:, points],
            visible[:, points] & clear_found[:, None],
            masked_pose_xy[:, points],
            scale,
            alpha=alpha,
        )
        result[f"pck_{name}"] = correct / total if total else np.nan
    n = len(clear_hands)
    clear_present = np.isfinite(clear_hands[:, :, 0, 0])
    masked_present = np.isfinite(masked_hands[:, :, 0, 0])
    hand_reference = np.repeat(clear_present, clear_hands.shape[2], axis=1)  # (n, 2 * 21)
    correct, total = pck_counts(
        clear_hands.reshape(n, -1, 2), hand_reference, masked_hands.reshape(n, -1, 2), scale, alpha=alpha
    )
    result["pck_hands"] = correct / total if total else np.nan
    result["hand_frames"] = int(clear_present.any(axis=1).sum())
    result["hand_presence_agreement"] = (
        float(np.mean((clear_present == masked_present).all(axis=1))) if n else np.nan
    )
    return result
