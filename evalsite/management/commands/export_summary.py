"""``manage.py export_summary --campaign SLUG --output FILE [--no-dictionary] [--force]``: one row per submission.

With ``--output``, the data dictionary is written beside it as ``dictionary.csv``.
Neither file is overwritten if it exists, unless ``--force``.
"""

from django.core.management.base import BaseCommand, CommandError

from evalsite import dictionary
from evalsite.management.overwrite import FORCE_HELP, refuse_overwrite
from evalsite.models import Campaign
from evalsite.reports import summary_table_as_csv
from evalsite.services import write_summary


class Command(BaseCommand):
    help = "Write the cross-team summary of a campaign as CSV (one row per submission, summary means)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--campaign", required=True, help="campaign slug (manage.py list_campaigns lists them)"
        )
        parser.add_argument(
            "--output",
            help="output CSV file (default: standard output); an existing file is kept unless --force",
        )
        parser.add_argument(
            "--no-dictionary",
            action="store_true",
            help="with --output: do not write the data dictionary (dictionary.csv) beside the summary",
        )
        parser.add_argument("--force", action="store_true", help=FORCE_HELP)

    def handle(self, *args, campaign, output, no_dictionary=False, force=False, **options):
        found = Campaign.objects.filter(slug=campaign).first()
        if found is None:
            slugs = ", ".join(Campaign.objects.values_list("slug", flat=True)) or "none"
            raise CommandError(f"no campaign with slug {campaign!r} (existing: {slugs})")
        if output:
            refuse_overwrite([output, *([] if no_dictionary else [dictionary.beside(output)])], force=force)
            path = write_summary(found, output)
            self.stdout.write(self.style.SUCCESS(f"Wrote {path}"))
            if not no_dictionary:
                written = dictionary.write(dictionary.beside(path))
                self.stdout.write(self.style.SUCCESS(f"Wrote {written} (what every column means)"))
        else:
            self.stdout.write(summary_table_as_csv(found), ending="")
