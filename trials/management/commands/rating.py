"""``manage.py rating --campaign ID|SLUG open|close``: open or close a campaign to raters.

The same checks and effects as the organizer page, the admin and the API
(``trials.services.open_rating``): without a consent text, or without enough identities
with a gallery face, rating stays closed and every problem is named.
"""

from django.core.management.base import BaseCommand, CommandError

from evalsite.management.campaigns import CAMPAIGN_HELP, find_campaign
from trials.services import CannotOpenRating, close_rating, open_rating


class Command(BaseCommand):
    help = "Open a campaign to raters (after the organizer page's checks) or close it."

    def add_arguments(self, parser):
        parser.add_argument("--campaign", metavar="ID_OR_SLUG", required=True, help=CAMPAIGN_HELP)
        parser.add_argument(
            "state",
            choices=("open", "close"),
            help="open: check, create the rating items and open; close: stop new trials",
        )

    def handle(self, *args, campaign, state, **options):
        found = find_campaign(campaign)
        if state == "close":
            close_rating(found)
            self.stdout.write(self.style.SUCCESS(f"Rating of {found.name} is closed."))
            return
        try:
            result = open_rating(found)
        except CannotOpenRating as error:
            raise CommandError(
                "rating stays closed:\n" + "\n".join(f"- {p}" for p in error.problems)
            ) from None
        self.stdout.write(
            self.style.SUCCESS(
                f"Rating of {found.name} is open ({result.items_created} rating items created)."
            )
        )
        for warning in result.warnings:
            self.stdout.write(self.style.WARNING(f"warning: {warning}"))
