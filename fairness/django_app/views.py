"""Organizer (staff) pages: fairness measures and per-group distributions.

Staff only; an organizer sees only their campaigns (``evalsite.scoping``)
(others get 404, as for the staff media views). Plots show group labels and score
values only, never identity codes.
"""

from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, render

from evalsite.models import Campaign, Submission
from evalsite.scoping import scope

from . import report
from .services import video_samples
from fairness.plots import violin_png
from evalsite.dictionary import acronyms_in, plain_words

#: The measures every fairness page shows (seeds/003, eq. 1-8): their names are spelled out.
MEASURE_NAMES = "SQFR GC Mean-GC-SQFR Median-GC-SQFR CSQFR LWM MDG"


def _submission_or_404(request, submission_id) -> Submission:
    return get_object_or_404(
        scope(Submission.objects.select_related("campaign", "team"), request.user), pk=submission_id
    )


def _campaign_or_404(request, campaign_id) -> Campaign:
    return get_object_or_404(scope(Campaign.objects.all(), request.user), pk=campaign_id)


@staff_member_required
def index(request):
    """The organizer's campaigns and their submissions."""
    campaigns = scope(Campaign.objects.prefetch_related("submissions__team"), request.user)
    return render(request, "fairness/index.html", {"campaigns": campaigns})


@staff_member_required
def submission_fairness(request, submission_id):
    """Measures table per score and attribute, with a violin plot each."""
    submission = _submission_or_404(request, submission_id)
    samples = video_samples(submission)
    return render(
        request,
        "fairness/submission.html",
        {
            "submission": submission,
            "scores": report.video_fairness(submission, samples),
            "source": plain_words(report.SOURCE),
            "acronyms": acronyms_in(MEASURE_NAMES),
            "privacy": report.privacy_fairness_section(submission, samples),
            "privacy_source": plain_words(report.PRIVACY_SOURCE),
            "min_group": report.MIN_GROUP_IDENTITIES,
        },
    )


@staff_member_required
def campaign_quality(request, campaign_id):
    """Face quality fairness of the campaign's gallery stills and clear videos."""
    campaign = _campaign_or_404(request, campaign_id)
    return render(
        request,
        "fairness/quality.html",
        {
            "campaign": campaign,
            "kinds": report.quality_fairness(campaign),
            "source": plain_words(report.SOURCE),
            "acronyms": acronyms_in(MEASURE_NAMES),
        },
    )


def _png(spec, per_group, attribute) -> HttpResponse:
    if not per_group:
        raise Http404("no scores for this attribute")
    image = violin_png(per_group, title=f"{spec.name} by {attribute}", ylabel=spec.name)
    response = HttpResponse(image, content_type="image/png")
    response["Cache-Control"] = "private, no-store"
    return response


@staff_member_required
def submission_plot(request, submission_id):
    """PNG violin plot: ``?score=<name>&attribute=<attribute>``."""
    submission = _submission_or_404(request, submission_id)
    attribute = request.GET.get("attribute", "")
    if attribute not in submission.campaign.demographic_attributes:
        raise Http404("unknown attribute")
    try:
        spec, per_group = report.video_score_groups(submission, request.GET.get("score", ""), attribute)
    except (KeyError, ValueError):
        raise Http404("unknown score") from None
    return _png(spec, per_group, attribute)


@staff_member_required
def quality_plot(request, campaign_id):
    """PNG violin plot: ``?kind=gallery|clear_video&score=<component>&attribute=<attribute>``."""
    campaign = _campaign_or_404(request, campaign_id)
    attribute = request.GET.get("attribute", "")
    kind = request.GET.get("kind", "")
    if attribute not in campaign.demographic_attributes or kind not in ("gallery", "clear_video"):
        raise Http404("unknown attribute or kind")
    try:
        spec, per_group = report.quality_groups(campaign, kind, request.GET.get("score", ""), attribute)
    except KeyError:
        raise Http404("unknown quality component") from None
    return _png(spec, per_group, attribute)
