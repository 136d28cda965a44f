"""Django adapter of :mod:`trials.scoring`: responses from the database -> report columns.

Registered in :class:`trials.apps.TrialsConfig` as the ``human`` per-video columns and
summary section of ``evalsite.reports``. Responses of excluded raters are left out: a
rater who fails an attention check is flagged and excluded, and the organizer can include
them again (organizer page or admin), so scoring follows what the organizer sees.
"""

from __future__ import annotations

import pandas as pd
from django.db.models import Q

from . import scoring
from .models import Response, TrialKind


def responses_frame(submission, *, include_excluded: bool = False) -> pd.DataFrame:
    """Evaluated responses for one submission: the campaign's clear items + its masked items.

    Parameters
    ----------
    submission : evalsite.models.Submission
    include_excluded : bool, default=False
        Also keep responses of raters marked ``excluded`` (e.g. flagged by a failed
        attention check), for a sensitivity analysis.

    Returns
    -------
    pandas.DataFrame
        Columns of :data:`trials.scoring.REQUIRED_COLUMNS`.
    """
    rows = Response.objects.filter(
        trial__kind=TrialKind.ITEM,
        trial__item__campaign=submission.campaign_id,
    ).filter(
        # Responses to a replaced masked video stay stored but score the file they saw, not this one.
        Q(trial__item__masked_video__isnull=True)
        | Q(trial__item__masked_video__submission=submission, trial__item__masked_video__current=True)
    )
    if not include_excluded:
        rows = rows.exclude(trial__session__rater__excluded=True)
    values = rows.values_list(
        "trial__session__rater_id",
        "trial__item__source_video__name",
        "trial__item__masked_video_id",
        "trial__item__task",
        "choice",
        "correct",
        "trial__target_present",
    )
    frame = pd.DataFrame(
        [(r, v, "clear" if m is None else "masked", t, c, ok, p) for r, v, m, t, c, ok, p in values],
        columns=scoring.REQUIRED_COLUMNS,
    )
    return frame


def video_columns(submission) -> pd.DataFrame:
    """Per-video human columns for ``evalsite.reports`` (index: source-video name)."""
    frame = responses_frame(submission)
    if frame.empty:
        return pd.DataFrame(index=pd.Index([], name="video"))
    return scoring.per_video_scores(frame)


def summary(submission) -> dict:
    """The ``human`` summary section for ``evalsite.reports``: scores of usable responses,
    plus ``n_excluded_responses`` / ``n_excluded_raters`` (left out, not counted)."""
    usable = responses_frame(submission)
    every = responses_frame(submission, include_excluded=True)
    out = scoring.summary_scores(usable)
    out["n_excluded_responses"] = len(every) - len(usable)
    out["n_excluded_raters"] = len(set(every["rater"]) - set(usable["rater"]))
    return out
