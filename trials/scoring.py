"""Human scores: identification and action accuracy, masking success, rater agreement.

Pure functions over a pandas frame of responses (no Django; the adapter is
``trials/human_report.py``). Definitions follow the MediaEval 2021 task overview
(``../shared/seeds/002_68b18bfdbdb94491.txt``):

- identification accuracy of a video in a condition = share of raters' identity-matching
  responses that are correct (section 4.2: pick the gallery face of the person in the
  video, or "not present" when the person is not among the 5 faces);
- masking success = accuracy on the clear video - accuracy on the masked video
  (section 4.3: "the difference between the identification of the unmasked video ...
  and the identification of the masked video");
- action accuracy likewise for the "most obvious" action (section 5: "the difference
  between the accuracy of identifying the action in the unmasked video ... and the masked
  video"): ``action_loss = action accuracy clear - action accuracy masked``, the seed's
  action-preservation difference with the same sign as masking success. Lower is better:
  0 means the action is as recognisable as in the clear video, 1 means it was always
  recognised clear and never masked; it can be negative (masked recognised more often).
  Named a loss, not "preservation", so that the sign reads right.

Input frame ``responses``: one row per evaluated response with columns

=================  ==========================================================
``rater``          rater id (any hashable)
``video``          source-video name
``condition``      ``"clear"`` or ``"masked"``
``task``           ``"identity"`` or ``"action"``
``choice``         ``"1"``-``"5"``, ``"0"`` (not present), or an action label
``correct``        bool
``target_present`` bool (identity trials; True for action trials)
=================  ==========================================================

and optionally ``truth`` (the correct answer: the video's action for action trials; for
the majority-class rate) and ``n_faces`` (gallery faces shown in the identity trial; for
the chance level of the lineup as served).

Chance levels are reported beside every accuracy, because a strategist beats the naive
"1 / choices" without looking: in the action task, answering the most common action
scores its share of the videos (the majority-class rate); so action accuracy is also
given chance-corrected, ``(accuracy - p_majority) / (1 - p_majority)`` (Cohen's 1960
form ``(p_o - p_e) / (1 - p_e)`` with the majority-class rate as ``p_e``: the best
accuracy a rater can reach without looking, higher than Cohen's product-of-marginals
``p_e``): 0 = no better than always naming the most common action, 1 = always right,
negative = worse. Identity chance is ``1 / (faces shown + 1)`` per trial as served,
averaged over the trials.

Rates are fractions in [0, 1]; a rate with no trials is NaN.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

# pandas and statsmodels are imported where they are used: slow to import, and Django start-up
# imports this module.
if TYPE_CHECKING:
    import pandas as pd

REQUIRED_COLUMNS = ["rater", "video", "condition", "task", "choice", "correct", "target_present"]
CONDITIONS = ("clear", "masked")
NOT_PRESENT = "0"


def check_responses(responses: pd.DataFrame) -> pd.DataFrame:
    """Validate the response frame (columns, conditions, tasks) and return it.

    Raises
    ------
    ValueError
        Naming missing columns or unknown condition/task values.
    """
    missing = [c for c in REQUIRED_COLUMNS if c not in responses.columns]
    if missing:
        raise ValueError(f"responses lack columns {missing}")
    bad_conditions = set(responses["condition"]) - set(CONDITIONS)
    if bad_conditions:
        raise ValueError(f"condition must be 'clear' or 'masked', got {sorted(bad_conditions)}")
    bad_tasks = set(responses["task"]) - {"identity", "action"}
    if bad_tasks:
        raise ValueError(f"task must be 'identity' or 'action', got {sorted(bad_tasks)}")
    return responses


def wilson_interval(successes, n, *, alpha: float = 0.05):
    """Wilson score interval of a binomial proportion (statsmodels ``proportion_confint``).

    Parameters
    ----------
    successes, n : int or array-like of int
        Correct responses and responses; where ``n == 0`` the interval is NaN.
    alpha : float, default=0.05
        1 - confidence level (0.05 -> 95 % interval).

    Returns
    -------
    low, high : float or ndarray of float, in [0, 1]
    """
    from statsmodels.stats.proportion import proportion_confint

    successes = np.asarray(successes, dtype=float)
    n = np.asarray(n, dtype=float)
    safe_n = np.where(n > 0, n, 1.0)
    low, high = proportion_confint(successes, safe_n, alpha=alpha, method="wilson")
    low = np.where(n > 0, low, np.nan)
    high = np.where(n > 0, high, np.nan)
    if low.ndim == 0:
        return float(low), float(high)
    return low, high


def chance_corrected(accuracy: float, reference: float) -> float:
    """``(accuracy - reference) / (1 - reference)``: accuracy above a no-look reference.

    Parameters
    ----------
    accuracy, reference : float in [0, 1]
        e.g. action accuracy and the majority-class rate (module docstring).

    Returns
    -------
    float in (-inf, 1]
        NaN when either is NaN or ``reference == 1`` (nothing to gain over the reference).
    """
    if np.isnan(accuracy) or np.isnan(reference) or reference >= 1.0:
        return float("nan")
    return (accuracy - reference) / (1.0 - reference)


def majority_rate(responses: pd.DataFrame, task: str = "action") -> float:
    """Share of ``task`` responses whose correct answer is the most common correct answer.

    The accuracy of a rater who always gives that answer without looking (e.g. "talking"
    in a campaign of mostly talking drivers). Needs the optional ``truth`` column.

    Returns
    -------
    float in (0, 1], NaN without such responses or without ``truth``.
    """
    if "truth" not in responses.columns:
        return float("nan")
    truth = responses.loc[responses["task"] == task, "truth"].astype(str)
    return float(truth.value_counts().iloc[0] / len(truth)) if len(truth) else float("nan")


def served_chance(responses: pd.DataFrame) -> float:
    """Mean over identity responses of ``1 / (n_faces + 1)``: the chance level of the lineups as served.

    Returns
    -------
    float in (0, 1], NaN without identity responses or without the ``n_faces`` column.
    """
    if "n_faces" not in responses.columns:
        return float("nan")
    faces = responses.loc[responses["task"] == "identity", "n_faces"].astype(float)
    return float((1.0 / (faces + 1.0)).mean()) if len(faces) else float("nan")


def _rate(numerator, denominator):
    return np.where(denominator > 0, numerator / np.where(denominator > 0, denominator, 1), np.nan)


def identification_scores(responses: pd.DataFrame, *, alpha: float = 0.05) -> pd.DataFrame:
    """Identity-matching accuracy per (video, condition), with target-absent analysis.

    Returns
    -------
    pandas.DataFrame indexed by (video, condition) with columns
        ``n`` (responses), ``n_correct``, ``accuracy``, ``ci_low``, ``ci_high`` (Wilson,
        ``1 - alpha``), ``n_target_present``, ``hits`` (target-present trials answered
        with the target's face), ``hit_rate``, ``n_target_absent``, ``false_alarms``
        (target-absent trials answered with any face instead of "not present"),
        ``false_alarm_rate``.
    """
    import pandas as pd

    identity = check_responses(responses)
    identity = identity[identity["task"] == "identity"]
    present = identity["target_present"].astype(bool)
    frame = pd.DataFrame(
        {
            "video": identity["video"],
            "condition": identity["condition"],
            "correct": identity["correct"].astype(bool),
            "present": present,
            "hit": present & identity["correct"].astype(bool),
            "absent": ~present,
            "false_alarm": ~present & (identity["choice"].astype(str) != NOT_PRESENT),
        }
    )
    grouped = frame.groupby(["video", "condition"])
    out = pd.DataFrame(
        {
            "n": grouped.size(),
            "n_correct": grouped["correct"].sum(),
            "n_target_present": grouped["present"].sum(),
            "hits": grouped["hit"].sum(),
            "n_target_absent": grouped["absent"].sum(),
            "false_alarms": grouped["false_alarm"].sum(),
        }
    ).astype(int)
    out["accuracy"] = out["n_correct"] / out["n"]
    out["ci_low"], out["ci_high"] = wilson_interval(out["n_correct"], out["n"], alpha=alpha)
    out["hit_rate"] = _rate(out["hits"], out["n_target_present"])
    out["false_alarm_rate"] = _rate(out["false_alarms"], out["n_target_absent"])
    return out


def action_scores(responses: pd.DataFrame, *, alpha: float = 0.05) -> pd.DataFrame:
    """Action-labelling accuracy per (video, condition): ``n``, ``n_correct``, ``accuracy``, Wilson CI."""
    import pandas as pd

    action = check_responses(responses)
    action = action[action["task"] == "action"]
    grouped = action.assign(correct=action["correct"].astype(bool)).groupby(["video", "condition"])
    out = pd.DataFrame({"n": grouped.size(), "n_correct": grouped["correct"].sum()}).astype(int)
    out["accuracy"] = out["n_correct"] / out["n"]
    out["ci_low"], out["ci_high"] = wilson_interval(out["n_correct"], out["n"], alpha=alpha)
    return out


def _wide(scores: pd.DataFrame, prefix: str, columns: list[str]) -> pd.DataFrame:
    """(video, condition)-indexed scores -> one row per video, ``<prefix>_<col>_<condition>``."""
    import pandas as pd

    if scores.empty:
        return pd.DataFrame(index=pd.Index([], name="video"))
    wide = scores[columns].unstack("condition")
    wide.columns = [f"{prefix}_{column}_{condition}" for column, condition in wide.columns]
    for column in columns:
        for condition in CONDITIONS:
            if f"{prefix}_{column}_{condition}" not in wide:
                wide[f"{prefix}_{column}_{condition}"] = np.nan
    return wide


def per_video_scores(responses: pd.DataFrame, *, alpha: float = 0.05) -> pd.DataFrame:
    """One row per video: human accuracies per condition, masking success, action loss.

    Returns
    -------
    pandas.DataFrame indexed by video with columns
        ``human_id_n_<c>``, ``human_id_accuracy_<c>``, ``human_id_ci_low_<c>``,
        ``human_id_ci_high_<c>``, ``human_id_hit_rate_<c>``,
        ``human_id_false_alarm_rate_<c>`` for c in (clear, masked);
        ``human_masking_success`` = accuracy clear - accuracy masked;
        ``human_id_chance_as_served_<c>`` (:func:`served_chance` of the video's trials,
        with the ``n_faces`` column);
        ``human_action_n_<c>``, ``human_action_accuracy_<c>``, ``human_action_ci_low_<c>``,
        ``human_action_ci_high_<c>``; ``human_action_loss`` = action accuracy clear -
        action accuracy masked (lower is better). Every column starts with ``human_``
        (the report's section prefix; the summary keys of :func:`summary_scores` do not,
        their section names them).
        All rates and differences in [0, 1] or [-1, 1]; NaN where a condition has no
        responses.

    Raises
    ------
    ValueError
        From :func:`check_responses` on a malformed frame.
    """
    identity = _wide(
        identification_scores(responses, alpha=alpha),
        "human_id",
        ["n", "accuracy", "ci_low", "ci_high", "hit_rate", "false_alarm_rate"],
    )
    action = _wide(
        action_scores(responses, alpha=alpha), "human_action", ["n", "accuracy", "ci_low", "ci_high"]
    )
    out = identity.join(action, how="outer")
    for name in (
        "human_id_accuracy_clear",
        "human_id_accuracy_masked",
        "human_action_accuracy_clear",
        "human_action_accuracy_masked",
    ):
        if name not in out:
            out[name] = np.nan
    if "n_faces" in responses.columns:
        for condition in CONDITIONS:
            trials = responses[(responses["condition"] == condition) & (responses["task"] == "identity")]
            chance = (1.0 / (trials["n_faces"].astype(float) + 1.0)).groupby(trials["video"]).mean()
            out[f"human_id_chance_as_served_{condition}"] = chance.reindex(out.index).astype(float)
    out["human_masking_success"] = out["human_id_accuracy_clear"] - out["human_id_accuracy_masked"]
    out["human_action_loss"] = out["human_action_accuracy_clear"] - out["human_action_accuracy_masked"]
    out.index.name = "video"
    return out.sort_index()


def action_agreement(responses: pd.DataFrame, condition: str) -> dict:
    """Fleiss' kappa of the action labels raters chose for the videos of one condition.

    Fleiss' kappa needs the same number of ratings per video, so only videos with the
    most common number of action responses (at least 2) are used; how many is reported.

    Returns
    -------
    dict
        ``fleiss_kappa`` (float; NaN when fewer than 2 videos or all labels identical in
        a way that leaves chance agreement at 1), ``n_videos``, ``raters_per_video``.
    """
    import pandas as pd
    from statsmodels.stats.inter_rater import fleiss_kappa

    action = check_responses(responses)
    action = action[(action["task"] == "action") & (action["condition"] == condition)]
    table = pd.crosstab(action["video"], action["choice"].astype(str))
    if table.empty:
        return {"fleiss_kappa": float("nan"), "n_videos": 0, "raters_per_video": 0}
    per_video = table.sum(axis=1)
    common = int(per_video.mode().max())
    table = table[per_video == common]
    if common < 2 or len(table) < 2:
        return {"fleiss_kappa": float("nan"), "n_videos": int(len(table)), "raters_per_video": common}
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = float(fleiss_kappa(table.to_numpy(), method="fleiss"))
    return {"fleiss_kappa": kappa, "n_videos": int(len(table)), "raters_per_video": common}


ALPHA_BOOTSTRAP = 1000  # resamples of the videos for the interval of Krippendorff's alpha


def action_alpha(
    responses: pd.DataFrame, condition: str, *, n_boot: int = ALPHA_BOOTSTRAP, seed: int = 0
) -> dict:
    """Krippendorff's alpha (nominal) of the action labels of one condition, with a bootstrap interval.

    Unlike Fleiss' kappa (:func:`action_agreement`), alpha takes every video with at
    least two action responses, whatever their number (missing ratings allowed;
    Krippendorff 2011, "Computing Krippendorff's alpha-reliability", section C; the
    ``krippendorff`` package's coincidence-matrix computation). The interval is the
    percentile bootstrap over videos (units resampled with replacement, ``n_boot``
    resamples, seeded).

    Parameters
    ----------
    responses : pandas.DataFrame
        Columns of :data:`REQUIRED_COLUMNS`.
    condition : str
        ``"clear"`` or ``"masked"``.

    Returns
    -------
    dict
        ``krippendorff_alpha`` (float in [-1, 1]; NaN with fewer than 2 pairable videos or
        one label only), ``ci_low``, ``ci_high`` (95 %, NaN likewise), ``n_videos``
        (videos with >= 2 responses), ``n_responses`` (their responses).
    """
    import krippendorff
    import pandas as pd

    action = check_responses(responses)
    action = action[(action["task"] == "action") & (action["condition"] == condition)]
    counts = pd.crosstab(action["video"], action["choice"].astype(str))
    counts = counts[counts.sum(axis=1) >= 2]
    nan = float("nan")
    result = {"krippendorff_alpha": nan, "ci_low": nan, "ci_high": nan, "n_videos": int(len(counts))}
    result["n_responses"] = int(counts.to_numpy().sum())
    if len(counts) < 2 or counts.shape[1] < 2:
        return result
    table = counts.to_numpy(dtype=float)
    result["krippendorff_alpha"] = float(
        krippendorff.alpha(value_counts=table, level_of_measurement="nominal")
    )
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(n_boot):
        sample = table[rng.integers(0, len(table), len(table))]
        if (sample.sum(axis=0) > 0).sum() < 2:  # one label only: alpha undefined
            continue
        draws.append(krippendorff.alpha(value_counts=sample, level_of_measurement="nominal"))
    if draws:
        result["ci_low"], result["ci_high"] = (float(v) for v in np.percentile(draws, [2.5, 97.5]))
    return result


def summary_scores(responses: pd.DataFrame, *, alpha: float = 0.05) -> dict:
    """Submission-level human scores.

    Pooled accuracy (all responses of a condition, Wilson CI) per task and condition;
    ``masking_success`` and ``action_loss`` as the mean of the per-video
    differences over videos rated in both conditions (seeds/002, 4.3: per-trial
    differences summarised per submission); Fleiss' kappa of action labels per condition.

    Returns
    -------
    dict
        ``n_responses``, ``n_raters`` (int); for key in (``id``, ``action``) and c in
        (``clear``, ``masked``): ``<key>_accuracy_<c>`` (float in [0, 1], NaN without
        responses), ``<key>_ci_<c>`` ([low, high] Wilson, ``1 - alpha``), ``<key>_n_<c>``
        (int); ``masking_success`` and ``action_loss`` (float in [-1, 1], clear - masked,
        NaN when no video has both conditions); ``n_videos_both_conditions`` (int);
        ``action_agreement_<c>`` (dict of :func:`action_agreement`);
        ``action_alpha_<c>`` (dict of :func:`action_alpha`);
        ``id_chance_as_served_<c>`` (:func:`served_chance`), ``action_majority_rate_<c>``
        (:func:`majority_rate`) and ``action_chance_corrected_<c>``
        (:func:`chance_corrected` of the action accuracy against it), NaN without the
        optional columns.

    Raises
    ------
    ValueError
        From :func:`check_responses` on a malformed frame.
    """
    check_responses(responses)
    summary: dict = {"n_responses": int(len(responses)), "n_raters": int(responses["rater"].nunique())}
    for task, key in (("identity", "id"), ("action", "action")):
        for condition in CONDITIONS:
            subset = responses[(responses["task"] == task) & (responses["condition"] == condition)]
            n, k = len(subset), int(subset["correct"].astype(bool).sum())
            low, high = wilson_interval(k, n, alpha=alpha)
            summary[f"{key}_accuracy_{condition}"] = k / n if n else float("nan")
            summary[f"{key}_ci_{condition}"] = [low, high]
            summary[f"{key}_n_{condition}"] = n
    per_video = per_video_scores(responses, alpha=alpha)
    summary["masking_success"] = (
        float(per_video["human_masking_success"].mean()) if len(per_video) else float("nan")
    )
    summary["action_loss"] = float(per_video["human_action_loss"].mean()) if len(per_video) else float("nan")
    summary["n_videos_both_conditions"] = (
        int(per_video["human_masking_success"].notna().sum()) if len(per_video) else 0
    )
    for condition in CONDITIONS:
        summary[f"action_agreement_{condition}"] = action_agreement(responses, condition)
        summary[f"action_alpha_{condition}"] = action_alpha(responses, condition)
        subset = responses[responses["condition"] == condition]
        summary[f"id_chance_as_served_{condition}"] = served_chance(subset)
        summary[f"action_majority_rate_{condition}"] = majority_rate(subset)
        summary[f"action_chance_corrected_{condition}"] = chance_corrected(
            summary[f"action_accuracy_{condition}"], summary[f"action_majority_rate_{condition}"]
        )
    return summary
