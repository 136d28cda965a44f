"""Per-video score reports and submission summaries, assembled from every app.

Apps contribute without this module importing them: each registers, in its
``AppConfig.ready()``,

- a *video column provider* ``provider(submission) -> pandas.DataFrame`` indexed by
  source-video name, whose columns join the per-video report, and
- a *summary provider* ``provider(submission) -> dict`` whose entries join the
  submission summary under the given section name.

The base report has one row per source video of the campaign with ``video``,
``identity_code``, ``action``, ``has_masked_video`` (False while the submission lacks
a current, valid masked video for it), ``stale`` and ``stale_results`` (the sections
whose result for the video predates a replacement of its masked or clear file:
``evalsite/staleness.py``). :func:`campaign_summary_table` puts the summaries of all
submissions of a campaign side by side (one row per submission, nested sections
flattened to ``section.key`` columns).
"""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np
import pandas as pd
from django.utils.text import slugify

from automated.privacy_utility import privacy_utility_score

from .models import MaskedVideo
from .staleness import RUN_SECTIONS, stale_results, stale_videos

VIDEO_COLUMN_PROVIDERS: list[tuple[str, Callable]] = []
SUMMARY_PROVIDERS: list[tuple[str, Callable]] = []


def register_video_columns(name: str, provider: Callable) -> None:
    """Register ``provider(submission) -> DataFrame`` (index: video name) under ``name``."""
    if name not in {n for n, _ in VIDEO_COLUMN_PROVIDERS}:
        VIDEO_COLUMN_PROVIDERS.append((name, provider))


def register_summary_section(name: str, provider: Callable) -> None:
    """Register ``provider(submission) -> dict`` as the summary section ``name``."""
    if name not in {n for n, _ in SUMMARY_PROVIDERS}:
        SUMMARY_PROVIDERS.append((name, provider))


def _stale(submission) -> dict[str, dict]:
    """:func:`staleness.stale_results` for the runs the run sections show now."""
    sections = {name: provider(submission) for name, provider in SUMMARY_PROVIDERS if name in RUN_SECTIONS}
    return stale_results(submission, sections)


def per_video_report(submission, *, stale: dict | None = None) -> pd.DataFrame:
    """One row per source video of the submission's campaign, with every metric.

    Parameters
    ----------
    submission : Submission
    stale : dict, optional
        :func:`evalsite.staleness.stale_results` if already computed.

    Returns
    -------
    pandas.DataFrame
        Columns ``video``, ``identity_code``, ``action``, ``has_masked_video``,
        ``stale`` (bool), ``stale_results`` (space-separated section names, '' if
        none), then each provider's columns (missing values are NaN, e.g. a video not
        yet evaluated).
    """
    stale = _stale(submission) if stale is None else stale
    videos = submission.campaign.source_videos.select_related("identity").order_by("name")
    masked = set(
        MaskedVideo.objects.filter(submission=submission).valid().values_list("source_video_id", flat=True)
    )
    base = pd.DataFrame(
        [
            {
                "video": v.name,
                "identity_code": v.identity.code,
                "action": v.action,
                "has_masked_video": v.pk in masked,
                "stale": any(v.name in entry["videos"] for entry in stale.values()),
                "stale_results": " ".join(name for name, entry in stale.items() if v.name in entry["videos"]),
            }
            for v in videos
        ],
        columns=["video", "identity_code", "action", "has_masked_video", "stale", "stale_results"],
    ).set_index("video", drop=False)
    for _, provider in VIDEO_COLUMN_PROVIDERS:
        columns = provider(submission)
        if columns is not None and len(columns.columns):
            base = base.join(columns, how="left")
    return _with_pu_score(base.reset_index(drop=True))


# Human action accuracy (utility) and automated SSIM (privacy) feed the PU score.
PU_INPUTS = ("action_accuracy_masked", "action_accuracy_clear", "face_ssim")


def _pu_or_nan(masked_accuracy, clear_accuracy, ssim) -> float:
    values = (masked_accuracy, clear_accuracy, ssim)
    if any(v is None or pd.isna(v) for v in values) or clear_accuracy == 0:
        return float("nan")  # not rated / not evaluated yet, or no clear-video utility
    return privacy_utility_score(float(masked_accuracy), float(clear_accuracy), float(ssim))


def _with_pu_score(report: pd.DataFrame) -> pd.DataFrame:
    """Add ``pu_score`` per video when the human and automated inputs are present.

    ``automated.privacy_utility.privacy_utility_score`` (our documented reading of
    PrivHAR-Bench's composite score, seeds/004): (masked / clear human action accuracy)
    x (1 - SSIM), in [0, 1], higher is better. NaN where an input is missing.
    """
    if all(column in report.columns for column in PU_INPUTS):
        report["pu_score"] = [_pu_or_nan(*row) for row in report[list(PU_INPUTS)].itertuples(index=False)]
        if "pu_score_automated" in report.columns:  # the automated stand-in only where humans did not rate
            report.loc[report["pu_score"].notna(), "pu_score_automated"] = np.nan
    return report


def privacy_utility_summary(report: pd.DataFrame) -> dict | None:
    """Submission-level PU score from the per-video means over videos with every input.

    Returns None when the report lacks the inputs (e.g. no human ratings yet).
    """
    if not all(column in report.columns for column in PU_INPUTS):
        return None
    rated = report[list(PU_INPUTS)].apply(pd.to_numeric, errors="coerce").dropna()
    if rated.empty:
        return None
    means = rated.mean()
    return {
        "videos": int(len(rated)),
        "action_accuracy_masked": float(means["action_accuracy_masked"]),
        "action_accuracy_clear": float(means["action_accuracy_clear"]),
        "ssim": float(means["face_ssim"]),
        "pu_score": _pu_or_nan(*means.to_numpy(dtype=np.float64)),
    }


def submission_summary(submission) -> dict:
    """Nested dict: submission facts plus one section per registered summary provider.

    ``complete`` and ``masked_videos`` count current masked videos that match their
    clear video (replaced ones are kept but not counted; ``flagged_videos`` names those
    that no longer match a replaced clear video). ``stale`` says whether a section's
    result predates a replaced masked or clear file; ``stale_videos`` names the videos
    and ``stale_results`` maps each stale section to its run and videos.
    """
    current = MaskedVideo.objects.filter(submission=submission)
    summary = {
        "submission": str(submission),
        "submission_id": submission.pk,
        "campaign": submission.campaign.name,
        "team": submission.team.name,
        "method": submission.name,
        "baseline_method": submission.baseline_method,
        "complete": submission.is_complete,
        "masked_videos": current.valid().count(),
        "source_videos": submission.campaign.source_videos.count(),
        "flagged_videos": sorted(current.exclude(check_code="").values_list("source_video__name", flat=True)),
    }
    for name, provider in SUMMARY_PROVIDERS:
        summary[name] = provider(submission)
    stale = stale_results(submission, summary)
    summary["stale"] = bool(stale)
    summary["stale_videos"] = stale_videos(stale)
    summary["stale_results"] = stale
    summary["privacy_utility"] = privacy_utility_summary(per_video_report(submission, stale=stale))
    return summary


def _jsonable(value):
    if isinstance(value, float) and value != value:  # NaN -> null
        return None
    if hasattr(value, "item"):
        return _jsonable(value.item())
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def report_as_csv(submission) -> str:
    """The per-video report as CSV text (header row, one row per video)."""
    return per_video_report(submission).to_csv(index=False)


def report_as_json(submission) -> str:
    """``{"summary": ..., "videos": [row, ...]}`` as JSON text; NaN becomes null."""
    rows = per_video_report(submission).to_dict(orient="records")
    payload = {"summary": submission_summary(submission), "videos": rows}
    return json.dumps(_jsonable(payload), indent=2, default=str)


def _scalar(value) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def summary_row(submission) -> dict:
    """The submission summary as one flat row: top-level facts plus ``<section>.<key>``
    for every scalar entry of each section (nested tables such as per-group breakdowns
    are left to the JSON report)."""
    row = {}
    for key, value in _jsonable(submission_summary(submission)).items():
        if isinstance(value, dict):
            row.update({f"{key}.{k}": v for k, v in value.items() if _scalar(v)})
        elif _scalar(value):
            row[key] = value
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            row[key] = " ".join(value)  # e.g. stale_videos
    return row


def campaign_summary_table(campaign) -> pd.DataFrame:
    """One row per submission of ``campaign`` (:func:`summary_row`), for comparing teams.

    Returns
    -------
    pandas.DataFrame
        Columns ``submission_id``, ``team``, ``method``, ``baseline_method``,
        ``complete``, ``masked_videos``, ``source_videos``, ``stale``, ``stale_videos``
        (space-separated names), ``flagged_videos``, then one column per scalar
        summary entry named ``<section>.<key>`` (e.g. ``face_evaluation.rank1_rate``).
        Rows are ordered by team, then method.
    """
    submissions = campaign.submissions.select_related("team", "campaign").order_by("team__name", "name")
    rows = [summary_row(s) for s in submissions]
    table = pd.DataFrame(rows)
    # A section that is None for some submissions (e.g. no attack run yet) would add a bare,
    # empty column beside the "<section>.<key>" columns of the others.
    sections = {column.split(".", 1)[0] for column in table.columns if "." in column}
    table = table.drop(columns=["submission", "campaign", *sections], errors="ignore")
    for column in table.columns:  # ids and counts stay whole where others are missing (not 1.0)
        present = [row[column] for row in rows if row.get(column) is not None]
        if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
            table[column] = table[column].astype("Int64")
    first = [
        "submission_id",
        "team",
        "method",
        "baseline_method",
        "complete",
        "masked_videos",
        "source_videos",
        "stale",
        "stale_videos",
    ]
    ordered = first + [c for c in table.columns if c not in first]
    return table.reindex(columns=ordered)


def summary_table_as_csv(campaign) -> str:
    """:func:`campaign_summary_table` as CSV text."""
    return campaign_summary_table(campaign).to_csv(index=False)


def report_basename(submission) -> str:
    """File name stem for a submission's report, e.g. ``12-baselines-blur_face``."""
    return f"{submission.pk}-{slugify(submission.team.name)}-{slugify(submission.name)}"


def summary_as_dict(submission) -> dict:
    """:func:`submission_summary` made JSON-safe (NaN -> None, numpy scalars -> Python)."""
    return json.loads(json.dumps(_jsonable(submission_summary(submission)), default=str))
