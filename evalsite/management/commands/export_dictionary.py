"""``manage.py export_dictionary [--format csv|json] [--output FILE] [--force]``: the reports' data dictionary.

An existing file is replaced only with ``--force`` (evalsite/management/overwrite.py), unless
it already holds the same text.
"""

from django.core.management.base import BaseCommand

from evalsite import dictionary
from evalsite.management.overwrite import FORCE_HELP, write_outputs


class Command(BaseCommand):
    help = (
        "Write the data dictionary of the reports: one row per column (per-video report, submission "
        "summary, campaign summary table) with its meaning, unit, range, ideal value, type, precision, "
        "model, threshold, distance and source."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--format",
            choices=dictionary.FORMATS,
            help="csv (one row per column) or json (default: from the --output suffix, else csv)",
        )
        parser.add_argument(
            "--output",
            help="output file (default: standard output); an existing file is kept unless --force",
        )
        parser.add_argument("--force", action="store_true", help=FORCE_HELP)

    def handle(self, *args, format, output, force=False, **options):
        if not output:
            self.stdout.write(dictionary.render(format or "csv"), ending="")
            return
        suffix = output.rsplit(".", 1)[-1].lower() if "." in output else ""
        format = format or (suffix if suffix in dictionary.FORMATS else "csv")
        write_outputs(self, {output: dictionary.render(format)}, force=force)
