"""Catalogue operations shared by the admin, the API and the management commands."""
from __future__ import annotations

from pathlib import Path

from django.db import IntegrityError, transaction

from . import reports
from .models import Campaign, Submission, Team

REPORT_FORMATS = ("csv", "json")


def create_submission(campaign: Campaign, team_name: str, method: str, *, description: str = "") -> Submission:
    """Create the submission ``method`` of team ``team_name`` (the team is created if new).

    Raises
    ------
    ValueError
        If the team already has a submission of that name in the campaign, or a name is empty.
    """
    team_name, method = team_name.strip(), method.strip()
    if not team_name or not method:
        raise ValueError(f"team and method names must not be empty, got {team_name!r} and {method!r}")
    team, _ = Team.objects.get_or_create(name=team_name)
    try:
        with transaction.atomic():  # a savepoint, so the caller's transaction survives the error
            return Submission.objects.create(campaign=campaign, team=team, name=method, description=description)
    except IntegrityError:
        raise ValueError(
            f"team {team_name!r} already has a submission {method!r} in campaign {campaign.slug!r}"
        ) from None


def render_report(submission: Submission, fmt: str) -> str:
    """The per-video report of ``submission`` as ``csv`` or ``json`` text."""
    if fmt == "csv":
        return reports.report_as_csv(submission)
    if fmt == "json":
        return reports.report_as_json(submission)
    raise ValueError(f"format must be one of {REPORT_FORMATS}, got {fmt!r}")


def write_report(submission: Submission, fmt: str, path) -> Path:
    """Write the per-video report (``csv`` or ``json``) to ``path``; return the path."""
    path = Path(path)
    text = render_report(submission, fmt)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def write_summary(campaign: Campaign, path) -> Path:
    """Write the cross-submission summary CSV of ``campaign`` (one row per submission)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(reports.summary_table_as_csv(campaign), encoding="utf-8")
    return path
