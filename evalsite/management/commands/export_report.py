"""``manage.py export_report SUBMISSION_ID --format csv|json [--output FILE] [--no-dictionary]``.

With ``--output``, the data dictionary (every column's meaning, unit, range, ideal value,
precision, model and source) is written beside the report as ``dictionary.<format>``.
"""

from django.core.management.base import BaseCommand, CommandError

from evalsite import dictionary
from evalsite.models import Submission
from evalsite.services import REPORT_FORMATS, render_report, write_report


class Command(BaseCommand):
    help = "Write a submission's per-video score report (CSV or JSON with the summary)."

    def add_arguments(self, parser):
        parser.add_argument(
            "submission_id", type=int, help="id of the submission (manage.py list_submissions)"
        )
        parser.add_argument(
            "--format",
            choices=REPORT_FORMATS,
            default="csv",
            help="csv: one row per video; json: the summary plus the rows (default csv)",
        )
        parser.add_argument("--output", help="output file (default: standard output)")
        parser.add_argument(
            "--no-dictionary",
            action="store_true",
            help="with --output: do not write the data dictionary (dictionary.<format>) beside the report",
        )

    def handle(self, *args, submission_id, format, output, no_dictionary=False, **options):
        submission = Submission.objects.filter(pk=submission_id).first()
        if submission is None:
            raise CommandError(f"no submission with id {submission_id}")
        if output:
            path = write_report(submission, format, output)
            self.stdout.write(self.style.SUCCESS(f"Wrote {path}"))
            if not no_dictionary:
                written = dictionary.write(dictionary.beside(path, format), format)
                self.stdout.write(self.style.SUCCESS(f"Wrote {written} (what every column means)"))
        else:
            self.stdout.write(render_report(submission, format), ending="")
