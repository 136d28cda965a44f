"""Opening and closing rating for a campaign (called by the organizer page and commands)."""
from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from evalsite.models import Campaign

from .assignment import identity_pool, sync_items
from .checks import campaign_warnings
from .tasks import prepare_campaign_media


class CannotOpenRating(ValueError):
    """The campaign cannot be rated at all (e.g. fewer identities than faces per trial)."""


@dataclass(frozen=True)
class OpenResult:
    items_created: int
    warnings: list[str]


def open_rating(campaign: Campaign, *, prepare_media: bool = True) -> OpenResult:
    """Create the rating items, prepare media for browsers and open the campaign to raters.

    Parameters
    ----------
    campaign : Campaign
    prepare_media : bool, default=True
        Crop gallery faces and transcode videos (a Celery task, in-process by default).

    Returns
    -------
    OpenResult
        Items created and the organizer warnings (foil shortages, missing faces ...).

    Raises
    ------
    CannotOpenRating
        If fewer identities have a gallery face than an identity trial shows.
    """
    needed = campaign.foils_per_trial + 1
    if len(identity_pool(campaign)) < needed:
        raise CannotOpenRating(
            f"campaign {campaign.name!r}: {len(identity_pool(campaign))} identities with a gallery "
            f"face, an identity trial needs {needed}"
        )
    created = sync_items(campaign)
    if prepare_media:
        prepare_campaign_media.delay(campaign.pk)
    with transaction.atomic():
        type(campaign).objects.filter(pk=campaign.pk).update(rating_open=True)
    campaign.rating_open = True
    return OpenResult(created, campaign_warnings(campaign))


def close_rating(campaign: Campaign) -> None:
    """Stop new trials; answers already on their way are still stored."""
    type(campaign).objects.filter(pk=campaign.pk).update(rating_open=False)
    campaign.rating_open = False
