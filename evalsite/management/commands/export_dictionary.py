"""``manage.py export_dictionary [--format csv|json] [--output FILE]``: the reports' data dictionary."""

from django.core.management.base import BaseCommand

from evalsite import dictionary


class Command(BaseCommand):
    help = (
        "Write the data dictionary of the reports: one row per column (per-video report, submission "
        "summary, campaign summary table) with its meaning, unit, range, ideal value, type, precision, "
        "model, threshold, distance and source."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--format", choices=dictionary.FORMATS, default="csv", help="csv (one row per column) or json"
        )
        parser.add_argument("--output", help="output file (default: standard output)")

    def handle(self, *args, format, output, **options):
        if output:
            self.stdout.write(self.style.SUCCESS(f"Wrote {dictionary.write(output, format)}"))
        else:
            self.stdout.write(dictionary.render(format), ending="")
