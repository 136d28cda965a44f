"""The one campaign lookup (id or slug) and the one team lookup (ignoring case) of the commands."""

from django.core.management.base import CommandError

from evalsite.models import Campaign, Team, find_team, team_name_note

CAMPAIGN_HELP = "the campaign: its id or slug (manage.py list_campaigns lists them)"


def find_campaign(value: str) -> Campaign:
    """The campaign with id or slug ``value``.

    New slugs are never made only of digits (:func:`evalsite.models.digit_slug_problem`),
    so a value of digits is an id; a slug of digits stored before that rule is found too,
    unless another campaign has that id: then the value is ambiguous and refused.

    Raises
    ------
    CommandError
        If there is none (naming ``list_campaigns``), or if ``value`` is the id of one
        campaign and the slug of another (naming both).
    """
    value = str(value).strip()
    by_id = Campaign.objects.filter(pk=int(value)).first() if value.isdigit() else None
    by_slug = Campaign.objects.filter(slug=value).first()
    if by_id is not None and by_slug is not None and by_id != by_slug:
        raise CommandError(
            f"{value!r} is the id of campaign {by_id.name!r} and the slug of campaign {by_slug.name!r}: "
            f"take {by_id.name!r} by its slug {by_id.slug!r} or {by_slug.name!r} by its id {by_slug.pk}, "
            f"and give {by_slug.name!r} a slug with a letter (admin)"
        )
    campaign = by_id or by_slug
    if campaign is None:
        raise CommandError(f"no campaign with id or slug {value!r} (manage.py list_campaigns lists them)")
    return campaign


def existing_team(campaign: Campaign, name: str) -> Team:
    """The team of ``campaign`` named ``name``, ignoring case (:func:`evalsite.models.find_team`).

    Raises
    ------
    CommandError
        If the campaign has no such team (listing its teams).
    """
    team = find_team(campaign, name)
    if team is None:
        known = ", ".join(campaign.teams.order_by("name").values_list("name", flat=True)) or "none yet"
        raise CommandError(f"no team named {name!r} in campaign {campaign.slug!r} (teams: {known})")
    return team


def team_name_warning(given: str, team: Team) -> str | None:
    """A warning when ``team`` was found under a name that is not exactly ``given`` (case,
    spaces): :func:`evalsite.models.team_name_note` after ``"Warning: "``."""
    note = team_name_note(given, team.name)
    return None if note is None else f"Warning: {note}"
