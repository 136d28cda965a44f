"""The team view (mounted under /team/): team members see and upload their own submissions.

A team member (``Team.members``, a plain account: no staff flag) logs in at
``/team/login/`` and sees

- every submission of their team(s), with its per-video report (page, CSV, JSON:
  :mod:`evalsite.reports`, the same report the organizer exports) and its uploads;
- a campaign's leaderboard once its organizer publishes it
  (``Campaign.leaderboard_visibility``: other teams named or anonymised, their own team
  always named);
- nothing of a run's results (page, CSV, JSON, figures, leaderboard rows) while its phase
  keeps them from teams (``evalsite.phases``: hidden, or before the release time), and
  other teams' rows of a phase only once its results are public;
- an upload page for a submission when the organizer allows it
  (``Campaign.teams_may_upload``), which goes through :func:`evalsite.uploads.receive_upload`:
  the same validation, background processing and per-file report as the admin.

Access rule, in one place (``evalsite.team_accounts``: ``own_submissions``, ``own_uploads``,
``leaderboard_campaigns``): rows of the user's teams only. Anything else answers 404,
so a page does not even confirm that another team's submission or upload exists.
Organizer pages stay closed to team members (they are not staff); team pages show no
media at all.
"""

from __future__ import annotations

import json


from django.contrib.auth.views import LoginView
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse_lazy

from evalsite import dictionary, phases, reports, services, spreadsheet
from evalsite.booleans import NotABoolean
from evalsite.forms import SubmissionZipForm
from evalsite.models import LeaderboardVisibility, MaskedVideo, Submission
from evalsite.report_cache import cached
from evalsite.team_accounts import (
    leaderboard_campaigns,
    own_submissions,
    own_teams,
    own_uploads,
    team_login_required,
)
from evalsite.uploads import FINISHED
from evalsite.validation import report_rows_as_csv

from . import leaderboard, report_page

CONTENT_TYPES = {"csv": "text/csv; charset=utf-8", "json": "application/json"}


class TeamLoginView(LoginView):
    """Django's login view with the team page as the place to land."""

    template_name = "team/login.html"
    redirect_authenticated_user = False
    next_page = reverse_lazy("team:home")


def _own_submission(request, pk: int) -> Submission:
    return get_object_or_404(own_submissions(request.user), pk=pk)


# --- helpers --------------------------------------------------------------------------


def _download(text: str, filename: str, fmt: str) -> HttpResponse:
    response = HttpResponse(text, content_type=CONTENT_TYPES[fmt])
    response["Content-Disposition"] = f'attachment; filename="{filename}.{fmt}"'
    return response


def _headers(names, level: str) -> list[dict]:
    """Column names with their data-dictionary meaning and unit (a tooltip), where documented."""
    headers = []
    for name in names:
        column = dictionary.find(str(name), level)
        meaning = "" if column is None else dictionary.plain_words(column.meaning)
        title = meaning + (f" ({column.unit})" if column is not None and column.unit else "")
        headers.append({"name": name, "title": title})
    return headers


def _submission_facts(submission: Submission) -> dict:
    valid = MaskedVideo.objects.filter(submission=submission).valid().count()
    return {
        "submission": submission,
        "valid_videos": valid,
        "source_videos": submission.campaign.source_videos.count(),
        "latest_upload": submission.uploads.first(),
        "may_upload": _may_upload(submission),
    }


def _may_upload(submission: Submission) -> bool:
    # Platform-made baselines are the organizer's; only the admin changes them.
    return submission.campaign.teams_may_upload and not submission.baseline_method


# --- pages ----------------------------------------------------------------------------


@team_login_required
def home(request):
    """The user's teams per campaign (a member of several teams of one campaign sees all of
    them as their own), each with its submissions."""
    campaigns: dict[int, dict] = {}
    for team in own_teams(request.user).select_related("campaign").order_by("campaign__name", "name"):
        block = campaigns.setdefault(team.campaign_id, {"campaign": team.campaign, "teams": []})
        submissions = team.submissions.select_related("campaign", "team").order_by("name")
        block["teams"].append({"team": team, "submissions": [_submission_facts(s) for s in submissions]})
    return render(request, "team/home.html", {"campaigns": list(campaigns.values())})


@team_login_required
def submission_page(request, pk: int):
    """One own submission: its state, summary and per-video report, uploads."""
    submission = _own_submission(request, pk)
    if not phases.team_sees_results(submission):  # a blind phase: nothing of its results
        context = {
            **_submission_facts(submission),
            "results_hidden": phases.hidden_message(submission.phase),
            "uploads": submission.uploads.all()[:20],
            "missing": list(submission.missing_source_videos().values_list("name", flat=True)),
            "leaderboard_published": submission.campaign.leaderboard_visibility
            != LeaderboardVisibility.HIDDEN,
        }
        return render(request, "team/submission.html", context)
    # The submission's own leaderboard row (its headline figures with intervals); the other
    # rows are dropped, and anonymised, before anything is rendered.
    frame = team_leaderboard_frame(submission)
    own_rows = frame[(frame["submission_id"] == submission.pk).fillna(False)].reset_index(drop=True)
    summary = reports.summary_row(submission, team=True)
    context = {
        **_submission_facts(submission),
        **report_table(submission),
        "summary": [
            (header, report_page.format_value(summary[header["name"]]))
            for header in _headers(summary, "summary")
        ],
        **leaderboard.table_context(own_rows),
        "uploads": submission.uploads.all()[:20],
        "missing": list(submission.missing_source_videos().values_list("name", flat=True)),
        "leaderboard_published": submission.campaign.leaderboard_visibility != LeaderboardVisibility.HIDDEN,
    }
    return render(request, "team/submission.html", context)


def team_leaderboard_frame(submission: Submission):
    """The leaderboard as the submission's team sees it on the submission page (anonymised,
    the rows its phases show it); cached, so its scores are gathered only on a miss."""
    campaign = submission.campaign
    return leaderboard.leaderboard_frame(
        campaign,
        anonymise_teams=True,
        viewer_team=submission.team,
        submissions=phases.leaderboard_submissions(campaign, viewer_teams=[submission.team]),
    )


def report_table(submission: Submission) -> dict:
    """``report_columns`` and ``report_rows`` (formatted cells) of the team's per-video report,
    cached by the campaign's inputs inside a request (``evalsite.report_cache``: rounding and
    formatting some 3,000 cells cost more than reading the report)."""

    def compute() -> dict:
        report = dictionary.rounded(reports.per_video_report(submission, team=True))
        return {
            "report_columns": _headers(report.columns, "video"),
            "report_rows": [
                [report_page.format_value(v) for v in row] for row in report.itertuples(index=False)
            ],
        }

    return cached(submission.campaign_id, ("team_report_table", submission.pk), compute)


def warm_team_pages(campaign) -> None:
    """What a team's submission page reads, computed into the cache for every team
    submission of ``campaign`` (``evalsite.report_cache.warm``)."""
    for submission in campaign.submissions.filter(baseline_method="").select_related("team", "campaign"):
        if phases.team_sees_results(submission):
            team_leaderboard_frame(submission)
            report_table(submission)


@team_login_required
def submission_report_page(request, pk: int):
    """The team's view of an own submission's report as a page, each figure with its meaning."""
    submission = _own_submission(request, pk)
    if not phases.team_sees_results(submission):
        return HttpResponse(
            phases.hidden_message(submission.phase), status=403, content_type="text/plain; charset=utf-8"
        )
    context = {**report_page.report_context(submission, team=True), "base_template": "team/_base.html"}
    return render(request, "evalsite/report.html", context)


@team_login_required
def submission_report(request, pk: int, fmt: str):
    """The per-video report of an own submission as a CSV or JSON download."""
    submission = _own_submission(request, pk)
    if fmt not in services.REPORT_FORMATS:
        raise Http404("unknown report format")
    if not phases.team_sees_results(submission):
        return HttpResponse(
            phases.hidden_message(submission.phase), status=403, content_type="text/plain; charset=utf-8"
        )
    return _download(
        services.render_report(submission, fmt, team=True), reports.report_basename(submission), fmt
    )


@team_login_required
def upload(request, pk: int):
    """Upload a zip of masked videos to an own submission, if the organizer allows it."""
    submission = _own_submission(request, pk)
    if not _may_upload(submission):
        return render(request, "team/upload_closed.html", {"submission": submission}, status=403)
    form = SubmissionZipForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        stored = form.receive(submission, uploaded_by=request.user)
        if stored is not None:  # else refused by the phase (deadline, quota): the form says why
            return redirect("team:upload_detail", pk=stored.pk)
    context = {
        "submission": submission,
        "form": form,
        "source_names": list(submission.source_videos().values_list("name", flat=True)),
    }
    return render(request, "team/upload.html", context)


@team_login_required
def upload_detail(request, pk: int):
    """An upload to an own submission: its status and per-file validation report."""
    stored = get_object_or_404(own_uploads(request.user), pk=pk)
    context = {
        "upload": stored,
        "submission": stored.submission,
        "files": stored.report.get("files", []),
        "missing": stored.report.get("missing_videos", []),
        "finished": stored.status in FINISHED,
    }
    return render(request, "team/upload_detail.html", context)


@team_login_required
def upload_report(request, pk: int, fmt: str):
    """An upload's per-file validation report as a CSV or JSON download."""
    stored = get_object_or_404(own_uploads(request.user), pk=pk)
    if fmt not in CONTENT_TYPES:
        raise Http404("unknown report format")
    text = report_rows_as_csv(stored.report) if fmt == "csv" else json.dumps(stored.report, indent=2)
    return _download(text, f"upload-{stored.pk}-validation", fmt)


def _published_leaderboard(request, pk: int):
    """(campaign, viewer team, anonymised?, scores) of a leaderboard the user may see, else 404
    (``NotABoolean`` for a ``?primary=`` that is no yes/no word)."""
    campaign = get_object_or_404(leaderboard_campaigns(request.user), pk=pk)
    viewer_team = list(own_teams(request.user).filter(campaign=campaign).order_by("name"))  # all are own
    anonymise = campaign.leaderboard_visibility == LeaderboardVisibility.ANONYMISED
    # Only runs whose results the user may see (phases: released, public or their own; ?phase=, ?primary=1).
    try:
        runs = phases.runs_from_query(campaign, request.GET, viewer_teams=viewer_team)
    except NotABoolean:
        raise  # ?primary= that is no yes/no word: the caller's 400 names it
    except ValueError as error:
        raise Http404(str(error)) from None
    return campaign, viewer_team, anonymise, leaderboard.campaign_scores(campaign, runs)


@team_login_required
def leaderboard_page(request, pk: int):
    """A campaign's leaderboard as published to its teams, with the paired comparisons of one
    figure (404 while hidden; other teams anonymised if the organizer chose so)."""
    try:
        campaign, viewer_team, anonymise, scores = _published_leaderboard(request, pk)
    except NotABoolean as error:
        return HttpResponse(str(error), status=400, content_type="text/plain; charset=utf-8")
    # Default figure as on the organizer's page: human masking success once rated, else re-identification.
    rated = scores.human_bootstrap("human_masking_success") is not None
    figure = request.GET.get("compare") or ("human_masking_success" if rated else "reidentification")
    try:
        leaderboard.headline(figure)
    except ValueError as error:
        return HttpResponse(str(error), status=400, content_type="text/plain; charset=utf-8")
    names = {"anonymise_teams": anonymise, "viewer_team": viewer_team, "scores": scores}
    frame = leaderboard.leaderboard_frame(campaign, **names)
    pairs = leaderboard.comparison_frame(campaign, figure, **names)
    context = {
        "campaign": campaign,
        "viewer_team": viewer_team,
        "anonymised": anonymise,
        **leaderboard.table_context(frame),
        "figure": leaderboard.headline(figure),
        "figures": leaderboard.HEADLINES,
        "comparisons": pairs.to_dict(orient="records"),
        "protocols": sorted({p for p in frame["reidentification_protocol"] if p}),
    }
    return render(request, "team/leaderboard.html", context)


@team_login_required
def leaderboard_csv(request, pk: int):
    """The published leaderboard as a CSV download (named or anonymised as on the page)."""
    try:
        campaign, viewer_team, anonymise, scores = _published_leaderboard(request, pk)
    except NotABoolean as error:
        return HttpResponse(str(error), status=400, content_type="text/plain; charset=utf-8")
    frame = leaderboard.leaderboard_frame(
        campaign, anonymise_teams=anonymise, viewer_team=viewer_team, scores=scores
    )
    return _download(spreadsheet.frame_csv(frame), f"{campaign.slug}-leaderboard", "csv")
