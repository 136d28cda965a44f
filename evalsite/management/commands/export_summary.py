"""``manage.py export_summary --campaign SLUG --output FILE``: one row per submission."""

from django.core.management.base import BaseCommand, CommandError

from evalsite.models import Campaign
from evalsite.reports import summary_table_as_csv
from evalsite.services import write_summary


class Command(BaseCommand):
    help = "Write the cross-team summary of a campaign as CSV (one row per submission, summary means)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--campaign", required=True, help="campaign slug (manage.py list_campaigns lists them)"
        )
        parser.add_argument("--output", help="output CSV file (default: standard output)")

    def handle(self, *args, campaign, output, **options):
        found = Campaign.objects.filter(slug=campaign).first()
        if found is None:
            slugs = ", ".join(Campaign.objects.values_list("slug", flat=True)) or "none"
            raise CommandError(f"no campaign with slug {campaign!r} (existing: {slugs})")
        if output:
            self.stdout.write(self.style.SUCCESS(f"Wrote {write_summary(found, output)}"))
        else:
            self.stdout.write(summary_table_as_csv(found), ending="")
