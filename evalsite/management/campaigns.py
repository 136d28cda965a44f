"""Finding a campaign by id or slug, for the management commands."""

from django.core.management.base import CommandError

from evalsite.models import Campaign


def find_campaign(value: str) -> Campaign:
    """The campaign with id or slug ``value``.

    Raises
    ------
    CommandError
        If there is none (naming ``list_campaigns``).
    """
    campaign = Campaign.objects.filter(pk=int(value)).first() if value.isdigit() else None
    campaign = campaign or Campaign.objects.filter(slug=value).first()
    if campaign is None:
        raise CommandError(f"no campaign with id or slug {value!r} (manage.py list_campaigns lists them)")
    return campaign
