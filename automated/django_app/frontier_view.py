"""The privacy-utility frontier of a campaign, served to its organizers as PNG and SVG (issue 12).

One point per submission (baselines drawn as baselines): x = worst-case chance-normalised
re-identification of the submission's latest completed attack run (the highest
``AttackResult.chance_normalised`` over recognizer x attacker pairs on all identities,
the clear-on-clear bound left out), y = its behaviour-preservation score
(``behaviour_report.behaviour_summary``). The figure is ``automated.behaviour.frontier``.

Staff only, and only campaigns the user organizes (``evalsite.scoping``): another
campaign's organizer gets 404, as for every organizer page.

A team member gets ``team_submission_frontier``: the frontier of one of the team's own
submissions (``evalsite.team_accounts.own_submissions``; any other is 404) against the
campaign's baselines only, never another team's points.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING
from pathlib import Path

from django.contrib.admin.views.decorators import staff_member_required
from django.db.models import Max, Q
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404

from automated.attack.names import ALL
from evalsite.models import Campaign
from evalsite.report_cache import cached
from evalsite.scoping import scope
from evalsite.phases import team_sees_results
from evalsite.team_accounts import own_submissions, team_login_required

from .attack_models import AttackResult
from .attack_report import strongest_completed_run
from .behaviour_report import behaviour_summary, leakage_summary

# automated.behaviour (its package imports the face evaluation, scikit-image, the models) is
# imported in the functions that use it: Django start-up imports this module.
if TYPE_CHECKING:
    from automated.behaviour.frontier import FrontierPoint

CONTENT_TYPES = {"png": "image/png", "svg": "image/svg+xml"}


def worst_case_reidentification(submission) -> float:
    """Highest chance-normalised accuracy of the run the reports show (``attack_report.strongest_completed_run``:
    all identities); NaN if none."""
    run = strongest_completed_run(submission)
    if run is None:
        return math.nan
    best = (
        AttackResult.objects.filter(run=run, selection=ALL)
        .exclude(attacker="clear")
        .aggregate(best=Max("chance_normalised"))["best"]
    )
    return math.nan if best is None else min(1.0, max(-1.0, float(best)))


def frontier_submissions(campaign: Campaign, *, own=None) -> list:
    """The submissions drawn: all of the campaign's, or with ``own`` only it and the baselines."""
    submissions = campaign.submissions.select_related("team").order_by("name", "pk")
    if own is not None:
        submissions = submissions.filter(Q(baseline_method__gt="") | Q(pk=own.pk))
    return list(submissions)


def frontier_points(campaign: Campaign, *, own=None) -> list[FrontierPoint]:
    """:func:`_frontier_points`, cached by the campaign's inputs inside a request (``evalsite.report_cache``)."""
    return cached(
        campaign, ("frontier_points", getattr(own, "pk", None)), lambda: _frontier_points(campaign, own=own)
    )


def _frontier_points(campaign: Campaign, *, own=None) -> list[FrontierPoint]:
    """One ``FrontierPoint`` per ``frontier_submissions`` (NaN coordinates where not measured)."""
    from automated.behaviour.frontier import FrontierPoint

    points = []
    for submission in frontier_submissions(campaign, own=own):
        summary = behaviour_summary(submission) or {}
        behaviour = summary.get("behaviour_score")
        points.append(
            FrontierPoint(
                label=submission.name
                if submission.baseline_method
                else f"{submission.team.name}: {submission.name}",
                reidentification=worst_case_reidentification(submission),
                behaviour=math.nan if behaviour is None else float(behaviour),
                kind="baseline" if submission.baseline_method else "submission",
            )
        )
    return points


def _finite(value):
    return None if value is None or (isinstance(value, float) and not math.isfinite(value)) else value


def automated_fields(submission) -> dict:
    """The automated headline of a submission (API ``SubmissionSerializer.automated``; None = not measured).

    ``behaviour_score`` and ``pu_score_automated`` (with its label) of the behaviour run,
    ``worst_case_reidentification`` (the frontier's x) and ``gender_leakage`` (the worst
    attacker's leakage above the majority rate); the full sections are in the summary.
    """
    behaviour = behaviour_summary(submission) or {}
    leakage = leakage_summary(submission) or {}
    return {
        "behaviour_score": behaviour.get("behaviour_score"),
        "pu_score_automated": behaviour.get("pu_score_automated"),
        "pu_score_automated_kind": behaviour.get("pu_score_automated_kind"),
        "worst_case_reidentification": _finite(worst_case_reidentification(submission)),
        "gender_leakage": leakage.get("leakage_worst"),
    }


@staff_member_required
def campaign_frontier(request, campaign_id: int, fmt: str):
    """The campaign's frontier figure as ``fmt`` ("png" or "svg"); 404 without submissions."""
    campaign = get_object_or_404(scope(Campaign.objects.all(), request.user), pk=campaign_id)
    if not campaign.submissions.exists():
        raise Http404("the campaign has no submissions yet")
    return _figure_response(campaign, None, _campaign_title(campaign), fmt)


@team_login_required
def team_submission_frontier(request, pk: int, fmt: str):
    """An own submission's frontier figure (it and the baselines) as ``fmt`` ("png" or "svg")."""
    if fmt not in CONTENT_TYPES:
        raise Http404("unknown figure format")
    submission = get_object_or_404(own_submissions(request.user).select_related("campaign"), pk=pk)
    if not team_sees_results(submission):  # a blind phase: not even the figure
        raise Http404("results not released")
    return _figure_response(submission.campaign, submission, _team_title(submission), fmt)


def _campaign_title(campaign: Campaign) -> str:
    return f"Privacy-utility frontier: {campaign.name}"


def _team_title(submission) -> str:
    return f"Privacy-utility frontier: {submission.name} and the baselines"


def frontier_images(campaign: Campaign, own, title: str) -> dict[str, bytes]:
    """``{"png", "svg"}`` of the frontier of ``campaign`` (with ``own``: it and the baselines),
    cached by the campaign's inputs inside a request (``evalsite.report_cache``): drawn
    once for both formats."""
    from automated.behaviour.frontier import frontier_figure

    return cached(
        campaign,
        ("frontier", getattr(own, "pk", None), title),
        lambda: frontier_figure(frontier_points(campaign, own=own), title=title),
    )


def warm_frontiers(campaign: Campaign) -> None:
    """The campaign's frontier figure and each team submission's (it and the baselines),
    computed into the cache (``evalsite.report_cache.warm``)."""
    if not campaign.submissions.exists():
        return
    frontier_images(campaign, None, _campaign_title(campaign))
    for submission in campaign.submissions.filter(baseline_method="").select_related("campaign"):
        if team_sees_results(submission):
            frontier_images(campaign, submission, _team_title(submission))


def write_frontier_files(campaign: Campaign, folder) -> list[Path]:
    """Write the campaign's frontier as ``<folder>/frontier.png`` and ``.svg`` (the demo's report folder).

    Returns the paths written; none when the campaign has no submission.
    """
    from automated.behaviour.frontier import frontier_figure

    points = frontier_points(campaign)
    if not points:
        return []
    figures = frontier_figure(points, title=f"Privacy-utility frontier: {campaign.name}")
    paths = []
    for fmt in CONTENT_TYPES:
        path = Path(folder) / f"frontier.{fmt}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(figures[fmt])
        paths.append(path)
    return paths


def _figure_response(campaign: Campaign, own, title: str, fmt: str) -> HttpResponse:
    """The frontier of ``campaign`` (with ``own``: it and the baselines), cached by the campaign's inputs."""
    image = frontier_images(campaign, own, title)[fmt]
    response = HttpResponse(image, content_type=CONTENT_TYPES[fmt])
    response["Cache-Control"] = "private, no-store"
    if fmt == "svg":  # opened directly, an SVG is a document: no scripts, no same-origin access
        response["Content-Security-Policy"] = "sandbox"
    return response
