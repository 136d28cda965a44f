"""``manage.py export_summary --campaign ID|SLUG --output FILE [--no-dictionary] [--force]``: one row per submission.

With ``--output``, the data dictionary is written beside it as ``dictionary.csv``.
An existing file is replaced only with ``--force`` (evalsite/management/overwrite.py), unless
it already holds the same text.
"""

from django.core.management.base import BaseCommand

from evalsite import dictionary
from evalsite.management.campaigns import CAMPAIGN_HELP, find_campaign
from evalsite.management.overwrite import FORCE_HELP, write_outputs
from evalsite.reports import summary_table_as_csv


class Command(BaseCommand):
    help = "Write the cross-team summary of a campaign as CSV (one row per submission, summary means)."

    def add_arguments(self, parser):
        parser.add_argument("--campaign", metavar="ID_OR_SLUG", required=True, help=CAMPAIGN_HELP)
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
        found = find_campaign(campaign)
        if not output:
            self.stdout.write(summary_table_as_csv(found), ending="")
            return
        files = {output: summary_table_as_csv(found)}
        if not no_dictionary:
            files[dictionary.beside(output)] = dictionary.render("csv")
        write_outputs(self, files, force=force, notes={dictionary.beside(output): "what every column means"})
