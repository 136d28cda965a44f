"""``manage.py compute_face_quality --campaign SLUG [--force]``."""

from django.core.management.base import BaseCommand, CommandError

from evalsite.models import Campaign
from fairness.django_app.services import compute_face_quality


class Command(BaseCommand):
    help = "Measure face quality (sharpness, luminance) of a campaign's gallery stills and clear videos."

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True, help="campaign slug")
        parser.add_argument("--force", action="store_true", help="recompute stored scores")

    def handle(self, *args, campaign, force, **options):
        try:
            target = Campaign.objects.get(slug=campaign)
        except Campaign.DoesNotExist:
            raise CommandError(f"no campaign with slug {campaign!r}") from None
        count = compute_face_quality(target, force=force)
        self.stdout.write(f"measured {count} item(s) of {target}")
