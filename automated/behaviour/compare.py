"""Behaviour metrics of a masked video against its clear video (pure function of their features).

Reference frames are tested frames where the clear video has a face (face metrics) or a
body pose (body metrics). A reference frame where the masked video's model finds
nothing is **lost behaviour**: it is counted in ``face_lost_rate`` /
``body_lost_rate`` and the behaviour score treats it as nothing preserved
(``score``); errors and agreements below are over the frames both sides measured
(paired frames), and eye/mouth events are found on every tested frame of each side (a
lost frame cannot hold an event, so lost closures are missed events).

Metric definitions:

- ``head_pose_error_deg``: mean over paired frames of the mean absolute yaw, pitch and
  roll difference (``head_pose.pose_error_deg``); ``yaw/pitch/roll_error_deg`` per angle.
- ``gaze_error_deg``: mean angle between the gaze vectors (``gaze.angular_error_deg``).
- ``ear_correlation``, ``mar_correlation``: Pearson's r of the EAR / MAR series over
  paired frames (NaN with fewer than 3 paired frames or a constant clear series; 0
  when only the masked series is constant: the movement is gone).
- ``blink_f1``, ``mouth_f1`` (+ precision, recall, event counts): ``events.event_f1``.
- ``expression_js``: mean Jensen-Shannon divergence (base 2, in [0, 1]) of the
  expression distributions; ``expression_agreement``: share of paired frames with the
  same top-1 expression.
- body: ``body.body_metrics`` (PCK@0.2 of torso, arms, hands; hand presence agreement).
"""

from __future__ import annotations

import math

import numpy as np

from .body import body_metrics
from .events import event_f1, eye_closure_events, mouth_opening_events
from .features import BehaviourFeatures
from .gaze import angular_error_deg
from .head_pose import angle_differences_deg
from .shapes import check_same_shape


class FeatureMismatchError(ValueError):
    """Clear and masked features do not describe the same tested frames or settings."""


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson's r in [-1, 1] (exactly 1.0 for identical non-constant series).

    ``sxy / sqrt(sxx syy)``: for x == y this is ``sxx / sqrt(sxx^2)``, exactly 1 in IEEE
    arithmetic, which ``np.corrcoef`` (dividing by each standard deviation) does not
    guarantee. NaN when fewer than 3 values (none included: no paired frame) or x is
    constant; 0 when only y is constant.

    Parameters
    ----------
    x, y : array-like of float, shape (n,)
        Paired series (clear, masked).

    Raises
    ------
    ValueError
        If x and y differ in length (``"x and y differ in length: 5 vs 4"``) or are not 1-D.
    """
    x = np.asarray(x, np.float64)
    y = np.asarray(y, np.float64)
    check_same_shape("x", x, "y", y)
    if x.ndim != 1:
        raise ValueError(f"x and y must be 1-D series, got shape {x.shape}")
    if len(x) < 3:
        return math.nan
    if np.ptp(x) == 0.0:  # exact test: the mean of equal floats need not equal them
        return math.nan
    if np.ptp(y) == 0.0:
        return 0.0
    dx, dy = x - x.mean(), y - y.mean()
    sxx, syy, sxy = float(dx @ dx), float(dy @ dy), float(dx @ dy)
    return float(np.clip(sxy / math.sqrt(sxx * syy), -1.0, 1.0))


def jensen_shannon(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Jensen-Shannon divergence, base 2, in [0, 1], row-wise: shapes (n, k) -> (n,); 0 for equal rows.

    ``n = 0`` (no frame) gives an empty result; one distribution of shape (k,) a scalar.

    Raises
    ------
    ValueError
        If p and q differ in shape (``"p and q differ in length: 3 vs 1"`` for the frames,
        ``"... differ in shape: (3, 7) vs (3, 6)"`` for the categories), or the
        distributions have no category (k = 0).
    """
    p = np.asarray(p, np.float64)
    q = np.asarray(q, np.float64)
    check_same_shape("p", p, "q", q)
    if p.ndim == 0 or p.shape[-1] == 0:
        raise ValueError(f"p and q must be distributions over k >= 1 categories, got shape {p.shape}")
    m = (p + q) / 2.0

    def kl(a, b):
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(a > 0, a * np.log2(a / b), 0.0)
        return terms.sum(axis=-1)

    return np.clip((kl(p, m) + kl(q, m)) / 2.0, 0.0, 1.0)


def _mean(values: np.ndarray) -> float:
    return float(np.mean(values)) if len(values) else math.nan


def check_pair(clear: BehaviourFeatures, masked: BehaviourFeatures) -> None:
    """Raise ``FeatureMismatchError`` unless both describe the same frames with the same settings."""
    if clear.settings != masked.settings:
        raise FeatureMismatchError(
            f"features come from different settings: {clear.settings!r} vs {masked.settings!r}"
        )
    if clear.n_frames != masked.n_frames or not np.array_equal(clear.frame_index, masked.frame_index):
        raise FeatureMismatchError(
            f"clear and masked features cover different frames ({clear.n_frames} vs {masked.n_frames} tested frames)"
        )
    if not np.array_equal(clear.frame_wh, masked.frame_wh):
        raise FeatureMismatchError(
            f"frame sizes differ: clear {clear.frame_wh.tolist()}, masked {masked.frame_wh.tolist()}"
        )


def compare(clear: BehaviourFeatures, masked: BehaviourFeatures) -> dict:
    """All behaviour metrics of masked against clear features (module docstring).

    Parameters
    ----------
    clear, masked : BehaviourFeatures
        Same tested frames (frame indices), frame size and settings.

    Returns
    -------
    dict of float/int
        ``frames_tested``, ``face_frames`` (clear faces), ``face_lost_rate``, the face
        metrics, the body metrics and ``expression_frames``; NaN where a metric has no
        paired frame.

    Raises
    ------
    FeatureMismatchError
        If the features do not fit together (``check_pair``).
    """
    check_pair(clear, masked)
    clear_face, masked_face = clear.face_found, masked.face_found
    paired = clear_face & masked_face
    n_face = int(clear_face.sum())
    result: dict = {
        "frames_tested": clear.n_frames,
        "face_frames": n_face,
        "face_lost_rate": float(np.mean(~masked_face[clear_face])) if n_face else math.nan,
    }
    angle_diff = angle_differences_deg(clear.head_pose_deg[paired], masked.head_pose_deg[paired])
    result["head_pose_error_deg"] = _mean(angle_diff.mean(axis=1))
    for column, name in enumerate(("yaw", "pitch", "roll")):
        result[f"{name}_error_deg"] = _mean(angle_diff[:, column])
    result["gaze_error_deg"] = _mean(angular_error_deg(clear.gaze_vector[paired], masked.gaze_vector[paired]))
    result["ear_correlation"] = pearson(clear.ear[paired], masked.ear[paired])
    result["mar_correlation"] = pearson(clear.mar[paired], masked.mar[paired])
    for name, find in (("blink", eye_closure_events), ("mouth", mouth_opening_events)):
        series = "ear" if name == "blink" else "mar"
        scores = event_f1(
            find(getattr(clear, series), clear.frame_index), find(getattr(masked, series), masked.frame_index)
        )
        for key, value in scores.items():
            result[f"{name}_{key}"] = value
    expressed = paired & np.isfinite(clear.expression[:, 0]) & np.isfinite(masked.expression[:, 0])
    result["expression_frames"] = int(expressed.sum())
    result["expression_js"] = _mean(jensen_shannon(clear.expression[expressed], masked.expression[expressed]))
    result["expression_agreement"] = _mean(
        (clear.expression[expressed].argmax(axis=1) == masked.expression[expressed].argmax(axis=1)).astype(
            float
        )
    )
    result.update(
        body_metrics(clear.pose_xy, clear.pose_visibility, masked.pose_xy, clear.hands_xy, masked.hands_xy)
    )
    return result
