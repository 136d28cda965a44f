"""Per-video score reports and submission summaries, assembled from every app.

Apps contribute without this module importing them: each registers, in its
``AppConfig.ready()``,

- a *video column provider* ``provider(submission) -> pandas.DataFrame`` indexed by
  source-video name, whose columns join the per-video report, and
- a *summary provider* ``provider(submission) -> dict`` whose entries join the
  submission summary under the given section name.

The base report has one row per source video of the campaign with ``video``,
``identity_code`` and ``action``.
"""
from __future__ import annotations

import json
from collections.abc import Callable

import pandas as pd

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


def per_video_report(submission) -> pd.DataFrame:
    """One row per source video of the submission's campaign, with every metric.

    Returns
    -------
    pandas.DataFrame
        Columns ``video``, ``identity_code``, ``action``, then each provider's columns
        (missing values are NaN, e.g. a video not yet evaluated).
    """
    videos = submission.campaign.source_videos.select_related("identity").order_by("name")
    base = pd.DataFrame(
        [{"video": v.name, "identity_code": v.identity.code, "action": v.action} for v in videos],
        columns=["video", "identity_code", "action"],
    ).set_index("video", drop=False)
    for _, provider in VIDEO_COLUMN_PROVIDERS:
        columns = provider(submission)
        if columns is not None and len(columns.columns):
            base = base.join(columns, how="left")
    return base.reset_index(drop=True)


def submission_summary(submission) -> dict:
    """Nested dict: submission facts plus one section per registered summary provider."""
    summary = {
        "submission": str(submission),
        "submission_id": submission.pk,
        "campaign": submission.campaign.name,
        "team": submission.team.name,
        "method": submission.name,
        "baseline_method": submission.baseline_method,
        "complete": submission.is_complete,
    }
    for name, provider in SUMMARY_PROVIDERS:
        summary[name] = provider(submission)
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
