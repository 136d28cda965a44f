"""``{% frontier campaign [submission] %}``: the privacy-utility frontier partial (issue 12).

Renders ``templates/automated/_frontier.html``: the campaign's frontier figure (served
by ``frontier_view``: staff only, the user's own campaigns) and a table of every
submission's point (worst-case re-identification, behaviour-preservation score), its
automated PU score and its worst gender leakage, with ``submission`` (if given)
highlighted. Used on the organizer's campaign page and on a submission's admin page
(where its report is downloaded). ``{% team_frontier submission %}``: the same on a
team's submission page, with only that submission and the baselines (never another
team's points) and the team figure URL.
"""

from django import template

from evalsite import reports

from ..frontier_view import frontier_points, frontier_submissions

register = template.Library()


@register.inclusion_tag("automated/_frontier.html")
def frontier(campaign, submission=None) -> dict:
    """Context of the partial for staff: every submission, ``submission`` highlighted."""
    return _context(campaign, submission, own=None)


@register.inclusion_tag("automated/_frontier.html")
def team_frontier(submission) -> dict:
    """Context of the partial on a team's page: its ``submission`` and the baselines only."""
    context = _context(submission.campaign, submission, own=submission)
    context["team_submission"] = submission
    return context


def _context(campaign, submission, *, own) -> dict:
    """``campaign``, ``rows`` (one per drawn submission), ``highlight``, ``plotted`` (some
    row has both coordinates, so the figure has a point to show)."""
    submissions = frontier_submissions(campaign, own=own)
    points = frontier_points(campaign, own=own)  # the same order
    rows = []
    for item, point in zip(submissions, points):
        # The summary sections (behaviour_summary, leakage_summary), read from the report cache.
        behaviour = reports.summary_section("behaviour", item) or {}
        leakage = reports.summary_section("attribute_leakage", item) or {}
        rows.append(
            {
                "label": point.label,
                "kind": point.kind,
                "reidentification": point.reidentification,
                "behaviour": point.behaviour,
                "pu_automated": behaviour.get("pu_score_automated"),
                "gender_leakage": leakage.get("leakage_worst"),
                "current": submission is not None and item.pk == submission.pk,
            }
        )
    # NaN != NaN: a point is drawn only when both of its coordinates are measured.
    plotted = any(
        r["reidentification"] == r["reidentification"] and r["behaviour"] == r["behaviour"] for r in rows
    )
    return {"campaign": campaign, "rows": rows, "highlight": submission, "plotted": plotted}
