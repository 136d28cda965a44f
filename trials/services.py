"""Opening and closing rating for a campaign: the one code path behind the organizer page,
the admin ("Rating open" and the open/close actions), the REST API and the commands.

The checks here are exactly what lineup building needs (:func:`trials.design.build_lineup_relaxed`
raises ``FoilShortageError`` otherwise), so a campaign that opens can always give its raters
trials.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from django.db import transaction
from django.utils import timezone

from evalsite.models import Campaign, Submission

from .assignment import identity_pool, sync_items
from .checks import campaign_warnings
from .integrity import refresh_flags
from .models import RatedSubmission
from .stills import material_warnings
from .variants import remove_served_variants
from .tasks import prepare_campaign_media


class CannotOpenRating(ValueError):
    """The campaign cannot be rated at all; ``problems`` lists why (one sentence each)."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = list(problems)


@dataclass(frozen=True)
class OpenResult:
    items_created: int
    warnings: list[str]


def rating_blockers(campaign: Campaign) -> list[str]:
    """Why ``campaign`` cannot open to raters; empty when rating can open.

    Raters are asked to agree to the campaign's consent text before their first trial, so
    an empty one blocks opening. Uses the campaign's current (possibly unsaved) settings and
    its stored gallery: an identity trial shows ``foils_per_trial + 1`` gallery faces; a
    target-absent trial (``target_absent_share > 0``) shows as many faces none of which is
    the person in the video, so it needs one identity more (seeds/002, section 4.2).

    Returns
    -------
    list of str
        Plain-language problems naming the campaign and the numbers involved, all at once.
    """
    problems = []
    if not campaign.consent_text.strip():
        problems.append(
            f"campaign {campaign.name!r} has no consent text: raters are asked to agree to it before "
            "their first trial; write it first (admin: the campaign's 'consent text' field, or "
            "consent_text in the dataset's campaign.json)"
        )
    return problems + _lineup_blockers(campaign)


def _lineup_blockers(campaign: Campaign) -> list[str]:
    """The lineup part of :func:`rating_blockers` (foils, identities with a gallery face)."""
    if campaign.foils_per_trial < 1:
        return [
            f"campaign {campaign.name!r}: foils per identity trial must be at least 1, "
            f"got {campaign.foils_per_trial}"
        ]
    n_pool = len(identity_pool(campaign)) if campaign.pk else 0
    faces = campaign.foils_per_trial + 1
    if n_pool < faces:
        return [
            f"campaign {campaign.name!r}: {n_pool} identities with a gallery face, "
            f"an identity trial needs {faces}"
        ]
    if campaign.target_absent_share > 0 and n_pool < faces + 1:
        return [
            f"campaign {campaign.name!r}: {n_pool} identities with a gallery face, a target-absent "
            f"identity trial needs {faces + 1} ({faces} faces, none of them the person in the video); "
            "add an identity or set the target-absent share to 0"
        ]
    return []


def submissions_in_rating(campaign: Campaign) -> list[tuple[Submission, bool, bool]]:
    """Each submission of ``campaign`` with whether it is rated and whether it is complete.

    Returns
    -------
    list of (submission, rated, decided)
        ``rated``: its masked videos get rating items; ``decided``: the organizer (or the
        first opening of rating) chose so. An undecided submission is not rated yet.
    """
    rows = []
    for submission in campaign.submissions.select_related("team", "rating_choice").order_by(
        "team__name", "name"
    ):
        choice = getattr(submission, "rating_choice", None)
        rows.append((submission, bool(choice and choice.included), choice is not None))
    return rows


def _decide_submissions(campaign: Campaign, submissions) -> None:
    """Record the organizer's choice (``submissions``: ids or rows to rate; the others are
    not rated), or, with None, include every undecided complete submission."""
    if submissions is not None:
        wanted = {getattr(s, "pk", s) for s in submissions}
        unknown = wanted - set(campaign.submissions.values_list("pk", flat=True))
        if unknown:
            raise CannotOpenRating([f"campaign {campaign.name!r} has no submission(s) {sorted(unknown)}"])
        for submission in campaign.submissions.all():
            RatedSubmission.objects.update_or_create(
                submission=submission, defaults={"included": submission.pk in wanted}
            )
        return
    for submission in campaign.submissions.filter(rating_choice__isnull=True):
        RatedSubmission.objects.create(submission=submission, included=submission.is_complete)


def set_submission_rated(submission: Submission, included: bool, *, prepare_media: bool = True) -> int:
    """Add a submission to human rating or take it out; items follow at once.

    Adding creates the items of its masked videos now if rating is open (a late
    submission joins the running study; again later: items of masked videos uploaded
    since), or at the next opening. Taking it out stops new trials of its items
    (``ItemQuerySet.evaluated``); responses already given stay stored. Either way media
    preparation is queued (``prepare_media``) when rating is open, so attention-check probes
    stand on the conditions identity trials show now.

    Returns
    -------
    int
        Items created.
    """
    with transaction.atomic():
        list(Campaign.objects.select_for_update().filter(pk=submission.campaign_id).values_list("pk"))
        before = (
            RatedSubmission.objects.filter(submission=submission).values_list("included", flat=True).first()
        )
        RatedSubmission.objects.update_or_create(submission=submission, defaults={"included": included})
        campaign = Campaign.objects.get(pk=submission.campaign_id)
        created = sync_items(campaign) if included and campaign.rating_open else 0
        # When the conditions identity trials show changed (in or out, also back in with its
        # items kept), the attention-check probes follow (trials.media.ensure_catch_video
        # with recheck_footage; hostile pass h61: probes on a submission taken out stayed in
        # 11 of 40 checks).
        if prepare_media and campaign.rating_open and (created or before != included):
            transaction.on_commit(partial(prepare_campaign_media.delay, campaign.pk))
    return created


def open_rating(campaign: Campaign, *, prepare_media: bool = True, submissions=None) -> OpenResult:
    """Check the campaign, create its rating items and open it to raters (idempotent).

    Parameters
    ----------
    campaign : Campaign
        Its in-memory settings are the ones checked (the admin passes the edited form).
    submissions : iterable of Submission or int, optional
        The submissions to rate (the others are not). None keeps earlier choices and
        includes every undecided submission that is complete; an incomplete one waits
        for the organizer (:func:`set_submission_rated`), as does one added later.
    prepare_media : bool, default=True
        Queue :func:`trials.tasks.prepare_campaign_media` (crop gallery faces, transcode
        videos for browsers) once the transaction commits: on a Celery worker with a
        broker, in-process otherwise.

    Returns
    -------
    OpenResult
        Items created and the organizer warnings (foil shortages, missing faces ...).

    Raises
    ------
    CannotOpenRating
        With :func:`rating_blockers`' problems, or naming submissions not of this
        campaign; nothing is changed then.
    """
    with transaction.atomic():
        # One opening at a time per campaign: a double click must not race sync_items.
        list(Campaign.objects.select_for_update().filter(pk=campaign.pk).values_list("pk"))
        problems = rating_blockers(campaign)
        if problems:
            raise CannotOpenRating(problems)
        _decide_submissions(campaign, submissions)
        created = sync_items(campaign)
        Campaign.objects.filter(pk=campaign.pk).update(rating_open=True)
        if prepare_media:
            transaction.on_commit(partial(prepare_campaign_media.delay, campaign.pk))
    campaign.rating_open = True
    return OpenResult(created, campaign_warnings(campaign) + material_warnings(campaign))


def close_rating(campaign: Campaign) -> None:
    """Stop new trials; answers already on their way are still stored.

    The flags are recomputed on the final answers (:func:`trials.integrity.refresh_flags`)
    and the per-trial video copies served are deleted from storage
    (:func:`trials.variants.remove_served_variants`).
    """
    Campaign.objects.filter(pk=campaign.pk).update(rating_open=False)
    campaign.rating_open = False
    refresh_flags(campaign)
    remove_served_variants(campaign, answered_only=False)


def supersede_items(old_items, *, masked_video=None, now=None) -> int:
    """Move rating from ``old_items`` (their file was replaced) to new items of the new file.

    The one mechanism for both replacements (:func:`supersede_masked_video`,
    :func:`supersede_clear_video`). Responses stay attached to the old items (they are
    data about the file the raters saw); the old items get ``superseded_at``, so they
    take no new trials (``ItemQuerySet.evaluated``) and their responses no longer count
    (``trials.human_report.responses_frame``); their unanswered claims are released, so
    a rater on one gets another trial and an answer sent to it is refused
    (``assignment.TrialExpired``). An answer stored in the same instant still lands on
    the old, superseded item and counts for nothing. Each old item gets a new one (same
    campaign, source video, task and target) showing ``masked_video`` (None: the clear
    video). Locks only trial rows of the old items and creates new item rows (no item
    row is locked, so no lock-order cycle with raters).

    Parameters
    ----------
    old_items : QuerySet of Item
        The items of the replaced file.
    masked_video : MaskedVideo or None
        The condition of the new items: the replacement masked video, or None for the
        (replaced) clear video.
    now : datetime, optional
        The replacement time stamped on the old items (default: now).

    Returns
    -------
    int
        Items created for the new file.
    """
    from .models import Item, Trial

    old = list(old_items.filter(superseded_at__isnull=True))
    Trial.objects.filter(item__in=old, completed=False, released=False).update(released=True)
    Item.objects.filter(pk__in=[i.pk for i in old]).update(superseded_at=now or timezone.now())
    created = 0
    for item in old:
        _, made = Item.objects.get_or_create(
            campaign_id=item.campaign_id,
            source_video_id=item.source_video_id,
            masked_video=masked_video,
            task=item.task,
            superseded_at=None,
            defaults={"target_count": item.target_count},
        )
        created += made
    return created


def _remake_probes_on_replaced(campaign: Campaign, retired: int) -> None:
    """Queue media preparation (it remakes the ``retired`` probes) once the replacement
    commits, while rating is open: made on a rater's request instead, a probe's first
    request would be slow (1-2 CPU s), which tells a check (``trials.media``)."""
    if retired and campaign.rating_open:
        transaction.on_commit(partial(prepare_campaign_media.delay, campaign.pk))


def supersede_masked_video(old, new) -> int:
    """Move rating from a replaced masked video ``old`` to its replacement ``new``
    (:func:`supersede_items`); before rating opens, :func:`open_rating` makes the items.
    Attention-check probes made of ``old``'s footage are made again
    (:func:`trials.media.retire_probes_on`; media preparation is queued for them).

    Returns
    -------
    int
        Items created for ``new``.
    """
    from .media import retire_probes_on
    from .models import Item

    _remake_probes_on_replaced(old.submission.campaign, retire_probes_on(masked_video_pk=old.pk))
    return supersede_items(Item.objects.filter(masked_video=old), masked_video=new, now=old.superseded_at)


def supersede_clear_video(source) -> int:
    """Move the clear-video rating of ``source``, whose clear file was replaced, to new items
    (:func:`supersede_items`): responses to the old file stop counting in the clear-video
    accuracy (and so in the human score, clear minus masked accuracy, seeds/002 section 4.3).
    Attention-check probes made of the old file's footage (clear, or a masked copy of it)
    are made again (:func:`trials.media.retire_probes_on`; media preparation is queued for them).

    Returns
    -------
    int
        Clear items created for the new file (0 before rating opens: no items yet).
    """
    from .media import retire_probes_on
    from .models import Item

    _remake_probes_on_replaced(source.campaign, retire_probes_on(source_video_pk=source.pk))
    return supersede_items(
        Item.objects.filter(source_video=source, masked_video__isnull=True),
        masked_video=None,
        now=source.file_replaced_at,
    )
