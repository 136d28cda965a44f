"""The organizer page: rating progress, raters, flagged raters, open/close, foil warnings.

Rating progress is rolled up per condition (clear videos, each submission) above the
per-item table, with the raters still needed (``trials.progress``); each submission row
shows what the other apps register for it (``evalsite.plugins.register_submission_panel``:
the automated runs, and "evaluate everything").

Staff only, and only campaigns the user organizes (``evalsite.scoping``). Opening rating
goes through ``trials.services.open_rating``, as in the admin and the API.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.core.exceptions import BadRequest
from django.db.models import Count, Q
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from evalsite import plugins
from evalsite.booleans import NotABoolean, parse_boolean
from evalsite.models import Campaign
from evalsite.scoping import scope

from . import crowd, integrity, progress
from .assignment import block_share, evaluated_trials_per_session, identity_plans
from .checks import campaign_warnings
from .models import Item, Rater, SessionState
from .services import CannotOpenRating, close_rating, open_rating, set_submission_rated, submissions_in_rating
from .stills import material_warnings
from .tasks import check_campaign_stills


def _campaign(request, pk: int) -> Campaign:
    return get_object_or_404(scope(Campaign.objects.all(), request.user), pk=pk)


@staff_member_required
def crowd_export(request, pk: int, fmt: str):
    """The crowd bookkeeping of a campaign (approve, reject, bonus) as a CSV download (``trials.crowd``)."""
    campaign = _campaign(request, pk)
    try:
        text = crowd.export(campaign, fmt)
    except ValueError as error:
        raise Http404(str(error)) from None
    response = HttpResponse(text, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{campaign.slug}-crowd-{fmt}.csv"'
    response["Cache-Control"] = "private, no-store"
    return response


@staff_member_required
def campaign_list(request):
    campaigns = scope(Campaign.objects.order_by("name"), request.user)
    return render(request, "trials/organizer/list.html", {"campaigns": campaigns})


@staff_member_required
def campaign_progress(request, pk: int):
    campaign = _campaign(request, pk)
    items = list(
        Item.objects.filter(campaign=campaign)
        .select_related("source_video", "masked_video__submission__team")
        .with_counts()
        .order_by("source_video__name", "masked_video_id", "task")
    )
    for item in items:
        item.n_claimed = item.n_live - item.n_completed  # open claims, not yet answered
    # The flags as of now, stored here: the organizer acts on them (includes a rater again),
    # and a stored flag never excludes twice (trials.integrity.refresh_flags).
    flagged_ids = integrity.refresh_flags(campaign).flagged
    raters = Rater.objects.filter(campaign=campaign).annotate(
        n_responses=Count("session__trials__response"),
        n_catch_failed=Count(
            "session__trials",
            filter=Q(session__trials__kind="catch", session__trials__response__correct=False),
        ),
    )
    raters = raters.prefetch_related("flags")  # integrity flags and their reasons
    evaluated_ids = set(Item.objects.evaluated(campaign).values_list("pk", flat=True))
    evaluated = [item for item in items if item.pk in evaluated_ids]
    submissions = list(campaign.submissions.select_related("team").order_by("team__name", "name"))
    rollup = [
        (row, plugins.submission_lines(row.submission) if row.submission is not None else [])
        for row in progress.rollup(evaluated, submissions)
    ]
    context = {
        "campaign": campaign,
        "join_url": request.build_absolute_uri(reverse("trials:join", args=[campaign.join_code])),
        "items": items,
        "raters": raters,
        "n_raters": raters.count(),
        "n_complete": raters.filter(session__state=SessionState.COMPLETE).count(),
        "n_flagged": raters.filter(flagged=True).count(),
        "n_integrity_flagged": len(flagged_ids),
        "n_excluded": raters.filter(excluded=True).count(),
        "responses_done": sum(min(item.n_completed, item.target_count) for item in evaluated),
        "responses_excluded": sum(item.n_excluded for item in evaluated),
        "responses_wanted": sum(item.target_count for item in evaluated),
        "warnings": campaign_warnings(campaign),
        "material_warnings": material_warnings(campaign),  # _warnings.html
        "submissions_in_rating": submissions_in_rating(campaign),  # _submissions.html
        "rollup": rollup,
        # open_rating makes the items: none at all means rating was never opened
        "never_opened": not items,
        "estimate": progress.raters_needed(
            evaluated,
            evaluated_trials_per_session(campaign),
            _video_blocks(campaign),
            block_share(campaign),
        ),
        "may_evaluate": plugins.may_start(request.user),
    }
    return render(request, "trials/organizer/progress.html", context)


def _posted_boolean(request, name: str) -> bool:
    """The page button's yes/no value ``name`` (:func:`evalsite.booleans.parse_boolean`).

    Raises
    ------
    BadRequest
        (a 400) when it is absent or not a yes/no value.
    """
    try:
        return parse_boolean(request.POST.get(name), name)
    except NotABoolean as error:
        raise BadRequest(str(error)) from None


@staff_member_required
@require_POST
def set_rating_open(request, pk: int):
    campaign = _campaign(request, pk)
    if _posted_boolean(request, "open"):
        try:
            result = open_rating(campaign)
        except CannotOpenRating as error:
            messages.error(request, str(error))
        else:
            # The warnings are listed on the page itself; say only how many.
            n_warnings = len(result.warnings)
            messages.success(
                request,
                f"Rating open ({result.items_created} new items)."
                + (f" {n_warnings} warning{'s' if n_warnings != 1 else ''} below." if n_warnings else ""),
            )
    else:
        close_rating(campaign)
        messages.success(request, "Rating closed.")
    return redirect("trials:organizer_campaign", pk=campaign.pk)


@staff_member_required
@require_POST
def set_rater_excluded(request, pk: int, rater_pk: int):
    campaign = _campaign(request, pk)
    Rater.objects.filter(campaign=campaign, pk=rater_pk).update(excluded=_posted_boolean(request, "excluded"))
    return redirect("trials:organizer_campaign", pk=campaign.pk)


@staff_member_required
@require_POST
def set_submission_in_rating(request, pk: int, submission_pk: int):
    """Add a submission to human rating (items at once if rating is open) or take it out."""
    campaign = _campaign(request, pk)
    submission = get_object_or_404(campaign.submissions, pk=submission_pk)
    included = _posted_boolean(request, "rated")
    created = set_submission_rated(submission, included)
    if included:
        messages.success(request, f"{submission}: rated by humans ({created} new items).")
    else:
        messages.success(request, f"{submission}: no new rating trials (responses given are kept).")
    return redirect("trials:organizer_campaign", pk=campaign.pk)


@staff_member_required
@require_POST
def check_stills_now(request, pk: int):
    """Compare gallery stills with evaluated videos before rating opens (the lineup-material warnings)."""
    campaign = _campaign(request, pk)
    check_campaign_stills.delay(campaign.pk)
    messages.success(request, "Gallery stills are being compared with the evaluated videos.")
    return redirect("trials:organizer_campaign", pk=campaign.pk)


def _video_blocks(campaign) -> dict:
    """``{source_video_pk: lineup block}`` of the evaluated videos with identity trials."""
    plans, videos = identity_plans(campaign)
    return {pk: plans[identity].block for pk, identity in videos if plans[identity].block}
