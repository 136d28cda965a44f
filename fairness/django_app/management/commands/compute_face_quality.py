"""``manage.py compute_face_quality --campaign ID|SLUG [--force]``."""

from django.core.management.base import BaseCommand

from evalsite.management.campaigns import CAMPAIGN_HELP, find_campaign
from fairness.django_app.services import compute_face_quality


class Command(BaseCommand):
    help = "Measure face quality (sharpness, luminance) of a campaign's gallery stills and clear videos."

    def add_arguments(self, parser):
        parser.add_argument("--campaign", metavar="ID_OR_SLUG", required=True, help=CAMPAIGN_HELP)
        parser.add_argument("--force", action="store_true", help="recompute stored scores")

    def handle(self, *args, campaign, force, **options):
        target = find_campaign(campaign)
        count = compute_face_quality(target, force=force)
        self.stdout.write(f"measured {count} item(s) of {target}")
