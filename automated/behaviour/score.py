"""The behaviour-preservation score in [0, 1] of a masked video, and per submission.

1 means the automated observers saw identical behaviour in the clear and the masked
video; 0 means none of it survived. Composition (every term in [0, 1]):

- **face part** = ``(1 - face_lost_rate) * mean(face components)``, components:

  - head pose: ``max(0, 1 - head_pose_error_deg / 30)``
  - gaze: ``max(0, 1 - gaze_error_deg / 30)``
  - eyes: mean of ``max(0, ear_correlation)`` and ``blink_f1``
  - mouth: mean of ``max(0, mar_correlation)`` and ``mouth_f1``
  - expression: ``1 - expression_js``

  30 degrees is where a pose or gaze reading stops being useful (it is about the angle
  between looking at the road and at a dashboard display); a component whose metric is
  NaN (e.g. a correlation of a constant clear series) is left out of the mean, and an
  eyes/mouth component uses what it has.
- **body part** = ``(1 - body_lost_rate) * mean(pck_torso, pck_arms, pck_hands,
  hand_presence_agreement)``, NaN terms left out.
- **score** = mean of the parts the clear video defines (face part when it has a face
  in a tested frame, body part when it has a body pose), NaN when it defines neither.

The ``(1 - lost rate)`` factors make frames where a model finds nothing in the masked
video count as zero preservation instead of being skipped.

Per submission (``summarize_behaviour``): each video weighs the same; the score and
every metric are means over the videos that define them, counts are sums.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

ANGLE_SCALE_DEG = 30.0
COUNT_KEYS = (
    "frames_tested",
    "face_frames",
    "pose_frames",
    "hand_frames",
    "expression_frames",
    "blink_n_clear",
    "blink_n_masked",
    "blink_n_matched",
    "mouth_n_clear",
    "mouth_n_masked",
    "mouth_n_matched",
)


def _nanmean(values) -> float:
    values = np.asarray([v for v in values if v is not None], np.float64)
    values = values[np.isfinite(values)]
    return float(values.mean()) if len(values) else math.nan


def face_components(metrics: dict) -> dict:
    """The five face components in [0, 1] (module docstring); NaN where undefined."""

    def angle(error):
        return max(0.0, 1.0 - error / ANGLE_SCALE_DEG) if np.isfinite(error) else math.nan

    def positive(r):
        return max(0.0, r) if np.isfinite(r) else math.nan

    return {
        "head_pose": angle(metrics["head_pose_error_deg"]),
        "gaze": angle(metrics["gaze_error_deg"]),
        "eyes": _nanmean([positive(metrics["ear_correlation"]), metrics["blink_f1"]]),
        "mouth": _nanmean([positive(metrics["mar_correlation"]), metrics["mouth_f1"]]),
        "expression": 1.0 - metrics["expression_js"] if np.isfinite(metrics["expression_js"]) else math.nan,
    }


def behaviour_score(metrics: dict) -> dict:
    """Score of one video from ``compare.compare``'s metrics.

    Returns
    -------
    dict
        ``behaviour_score``, ``face_part``, ``body_part`` (floats in [0, 1] or NaN) and
        the components ``score_head_pose``, ``score_gaze``, ``score_eyes``,
        ``score_mouth``, ``score_expression``, ``score_body``.

    Raises
    ------
    KeyError
        If a metric of ``compare`` is missing.
    """
    components = face_components(metrics)
    face_part = math.nan
    if metrics["face_frames"] > 0:
        kept = _nanmean(components.values())
        face_part = (1.0 - metrics["face_lost_rate"]) * kept if np.isfinite(kept) else 0.0
    body = _nanmean(
        [metrics["pck_torso"], metrics["pck_arms"], metrics["pck_hands"], metrics["hand_presence_agreement"]]
    )
    body_part = math.nan
    if metrics["pose_frames"] > 0:
        body_part = (1.0 - metrics["body_lost_rate"]) * body if np.isfinite(body) else 0.0
    result = {
        "behaviour_score": _nanmean([face_part, body_part]),
        "face_part": face_part,
        "body_part": body_part,
    }
    result.update({f"score_{name}": value for name, value in components.items()})
    result["score_body"] = body
    return result


def automated_pu_score(behaviour: float, ssim: float) -> float:
    """PU score with the behaviour-preservation score as the utility kept (labelled automated).

    ``automated.privacy_utility.privacy_utility_score`` takes the utility kept as
    masked / clear action accuracy of human raters; where no human action rating
    exists, the behaviour score (already a masked-vs-clear ratio, 1 = all kept) stands
    in for it: ``PU = clip(behaviour * (1 - SSIM), 0, 1)``. NaN if either input is NaN.

    Raises
    ------
    ValueError
        If ``behaviour`` is outside [0, 1] or ``ssim`` outside [-1, 1].
    """
    from ..privacy_utility import privacy_utility_score

    if not (np.isfinite(behaviour) and np.isfinite(ssim)):
        return math.nan
    if not 0.0 <= behaviour <= 1.0:
        raise ValueError(f"behaviour score must be in [0, 1], got {behaviour!r}")
    return privacy_utility_score(float(behaviour), 1.0, float(ssim))


def summarize_behaviour(videos: Iterable[dict]) -> dict:
    """Per-submission aggregate of per-video metric + score dicts (module docstring).

    Parameters
    ----------
    videos : iterable of dict
        One ``compare`` result merged with its ``behaviour_score`` per masked video.

    Returns
    -------
    dict
        ``n_videos``; for every numeric key, the mean over videos where it is finite
        (``COUNT_KEYS`` are summed); ``videos_without_score`` counts NaN scores.

    Raises
    ------
    ValueError
        If ``videos`` is empty.
    """
    videos = list(videos)
    if not videos:
        raise ValueError("no video behaviour results to summarise")
    summary: dict = {"n_videos": len(videos)}
    keys = list(
        dict.fromkeys(
            k
            for video in videos
            for k, v in video.items()
            if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
        )
    )
    for key in keys:
        values = [video.get(key) for video in videos]
        if key in COUNT_KEYS:
            summary[key] = int(sum(v for v in values if v is not None))
        else:
            summary[key] = _nanmean(values)
    summary["videos_without_score"] = sum(
        1 for video in videos if not np.isfinite(video.get("behaviour_score", math.nan))
    )
    return summary
