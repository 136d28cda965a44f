"""The campaign leaderboard for organizers: page, CSV, per-video bars (PNG) and the REST API.

Staff only, and only campaigns the user organizes (``evalsite.scoping``): another
campaign's organizer gets 404, as on every organizer page. The figures and comparisons
are ``evalsite.portal.leaderboard``; the frontier plot on the page is the automated app's
``automated:frontier_svg`` view.

Routes (evalsite/portal/urls.py, evalsite/portal/api_urls.py):

- ``/organizer/<campaign>/leaderboard/``: the page (``?compare=<figure>`` chooses the
  paired comparisons, ``?submission=<id>`` the per-video bars); every table also takes
  ``?phase=<name or id>`` (one phase's runs) and ``?primary=1`` (primary runs only);
- ``/organizer/<campaign>/leaderboard.csv``: the table (``?table=comparisons&compare=``
  for the comparisons);
- ``/organizer/<campaign>/leaderboard/submission/<id>/bars.png``;
- ``/organizer/<campaign>/package.zip``: the results package (``evalsite/portal/package.py``;
  ``?team=<id>``: one team's);
- ``GET /api/campaigns/<id>/leaderboard/`` and ``.../leaderboard/comparisons/?figure=``:
  JSON (``?format=csv`` for CSV).
"""

from __future__ import annotations

import io
import json

from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.text import slugify
from rest_framework.response import Response
from rest_framework.views import APIView

from evalsite import dictionary, phases
from evalsite.booleans import NotABoolean
from evalsite.models import Campaign, Submission
from evalsite.renderers import REPORT_RENDERERS, wants_csv
from evalsite.scoping import scope

from . import leaderboard, package, report_page


def _campaign(request, campaign_id: int) -> Campaign:
    return get_object_or_404(scope(Campaign.objects.all(), request.user), pk=campaign_id)


def _scores(campaign: Campaign, params) -> leaderboard.CampaignScores:
    """Scores of the runs chosen by ``?phase=`` and ``?primary=1`` (ValueError for an unknown
    phase or a ``primary`` that is no yes/no word: ``NotABoolean``)."""
    return leaderboard.campaign_scores(campaign, phases.runs_from_query(campaign, params))


def _query_refused(error: ValueError) -> Response:
    """The API's 400 for a refused ``?primary=`` or ``?phase=``, under the parameter's name."""
    if isinstance(error, NotABoolean):
        return Response({error.field: [{"message": str(error), "code": "invalid"}]}, status=400)
    return Response({"phase": [{"message": str(error), "code": "unknown_phase"}]}, status=400)


def _bad_request(error: ValueError) -> HttpResponse:
    return HttpResponse(str(error), status=400, content_type="text/plain; charset=utf-8")


def _figure(value: str | None, scores: leaderboard.CampaignScores) -> str:
    """The chosen comparison figure; default: human masking success if rated, else re-identification."""
    if value:
        leaderboard.headline(value)  # ValueError for an unknown key
        return value
    human = scores.human_bootstrap("human_masking_success")
    return "human_masking_success" if human is not None else "reidentification"


def _csv_response(text: str, filename: str) -> HttpResponse:
    response = HttpResponse(text, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["Cache-Control"] = "private, no-store"
    return response


@staff_member_required
def leaderboard_page(request, campaign_id: int):
    """The leaderboard, the paired comparisons of one figure, the frontier and per-video bars."""
    campaign = _campaign(request, campaign_id)
    try:
        scores = _scores(campaign, request.GET)
        figure = _figure(request.GET.get("compare"), scores)
    except ValueError as error:
        return _bad_request(error)
    frame = leaderboard.leaderboard_frame(campaign, scores=scores)
    pairs = leaderboard.comparison_frame(campaign, figure, scores=scores)
    submissions = scores.submissions
    chosen = request.GET.get("submission")
    # By default the first submission with per-video figures (an empty one would be a broken image).
    with_bars = [s for s in submissions if not leaderboard.per_video_frame(scores, s).empty]
    bar_submission = next(
        (s for s in submissions if str(s.pk) == chosen), with_bars[0] if with_bars else None
    )
    context = {
        "campaign": campaign,
        **leaderboard.table_context(frame),
        "figure": leaderboard.headline(figure),
        "figures": leaderboard.HEADLINES,
        "comparisons": pairs.to_dict(orient="records"),
        "submissions": submissions,
        "bar_submission": bar_submission,
        "protocols": sorted({p for p in frame["reidentification_protocol"] if p}),
    }
    return render(request, "evalsite/leaderboard.html", context)


@staff_member_required
def submission_report_page(request, submission_id: int):
    """A submission's report as a page for its campaign's organizers, each figure with its meaning."""
    submission = get_object_or_404(
        Submission.objects.filter(campaign__in=scope(Campaign.objects.all(), request.user)).select_related(
            "team", "campaign"
        ),
        pk=submission_id,
    )
    context = {**report_page.report_context(submission, team=False), "base_template": "base.html"}
    return render(request, "evalsite/report.html", context)


@staff_member_required
def leaderboard_csv(request, campaign_id: int):
    """The leaderboard (or, with ``?table=comparisons``, the comparisons) as a CSV download."""
    campaign = _campaign(request, campaign_id)
    try:
        scores = _scores(campaign, request.GET)
    except ValueError as error:
        return _bad_request(error)
    stem = f"{campaign.pk}-{slugify(campaign.name)}-leaderboard"
    if request.GET.get("table") == "comparisons":
        try:
            figure = _figure(request.GET.get("compare"), scores)
        except ValueError as error:
            return HttpResponse(str(error), status=400, content_type="text/plain; charset=utf-8")
        table = leaderboard.comparison_frame(campaign, figure, scores=scores)
        return _csv_response(leaderboard.as_csv(table), f"{stem}-comparisons-{figure}.csv")
    frame = leaderboard.leaderboard_frame(campaign, scores=scores)
    return _csv_response(leaderboard.as_csv(frame), f"{stem}.csv")


@staff_member_required
def results_package(request, campaign_id: int):
    """The campaign's results package as a zip download (``?team=<id>``: one team's package)."""
    campaign = _campaign(request, campaign_id)
    team = None
    if request.GET.get("team"):
        team = get_object_or_404(campaign.teams.all(), pk=request.GET["team"])
    buffer = io.BytesIO()
    root = package.write_zip(campaign, buffer, team=team)
    response = HttpResponse(buffer.getvalue(), content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{root}-results.zip"'
    response["Cache-Control"] = "private, no-store"
    return response


@staff_member_required
def video_bars(request, campaign_id: int, submission_id: int):
    """Per-video bars of every headline figure of one submission, as PNG (404 without values)."""
    campaign = _campaign(request, campaign_id)
    submission = get_object_or_404(campaign.submissions.select_related("team"), pk=submission_id)

    png = leaderboard.video_bars_png(campaign, submission)
    if not png:
        raise Http404("this submission has no per-video figures yet")
    response = HttpResponse(png, content_type="image/png")
    response["Cache-Control"] = "private, no-store"
    return response


# --- REST API -----------------------------------------------------------------------------


def _records(frame) -> list[dict]:
    return json.loads(frame.to_json(orient="records"))  # NaN -> null


class LeaderboardAPIView(APIView):
    """``GET /api/campaigns/<id>/leaderboard/``: ``{"campaign", "columns", "rows"}``; CSV with ``?format=csv``.

    ``columns`` describes each headline figure (key, label, unit, better, description);
    ``rows`` are :func:`evalsite.portal.leaderboard.leaderboard_frame` records (NaN -> null).
    """

    renderer_classes = REPORT_RENDERERS

    def get(self, request, pk: int):
        campaign = _campaign(request, pk)
        try:
            scores = _scores(campaign, request.query_params)
        except ValueError as error:
            return _query_refused(error)
        frame = leaderboard.leaderboard_frame(campaign, scores=scores)
        if wants_csv(request):
            return Response(leaderboard.as_csv(frame))
        columns = [  # descriptions in readers' words, as on the page (paper titles, not seeds/ files)
            {
                "key": h.key,
                "label": h.label,
                "unit": h.unit,
                "better": h.better,
                "description": dictionary.plain_words(h.description),
            }
            for h in leaderboard.HEADLINES
        ]
        return Response({"campaign": campaign.pk, "columns": columns, "rows": _records(frame)})


class ComparisonsAPIView(APIView):
    """``GET /api/campaigns/<id>/leaderboard/comparisons/?figure=<key>``: paired comparisons of every pair.

    JSON ``{"campaign", "figure", "better", "rows"}`` (rows as
    :func:`evalsite.portal.leaderboard.comparison_frame`); CSV with ``?format=csv``; 400 for an
    unknown figure.
    """

    renderer_classes = REPORT_RENDERERS

    def get(self, request, pk: int):
        campaign = _campaign(request, pk)
        try:
            scores = _scores(campaign, request.query_params)
        except ValueError as error:
            return _query_refused(error)
        try:
            figure = _figure(request.query_params.get("figure"), scores)
        except ValueError as error:
            return Response({"figure": [{"message": str(error), "code": "unknown_figure"}]}, status=400)
        table = leaderboard.comparison_frame(campaign, figure, scores=scores)
        if wants_csv(request):
            return Response(leaderboard.as_csv(table))
        entry = leaderboard.headline(figure)
        return Response(
            {"campaign": campaign.pk, "figure": figure, "better": entry.better, "rows": _records(table)}
        )
