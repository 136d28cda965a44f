"""``manage.py export_report SUBMISSION_ID --format csv|json [--output FILE] [--no-dictionary] [--force]``.

With ``--output``, the data dictionary (every column's meaning, unit, range, ideal value,
precision, model and source) is written beside the report as ``dictionary.<format>``.
Neither file is overwritten if it exists, unless ``--force``.
"""

from django.core.management.base import BaseCommand, CommandError

from evalsite import dictionary
from evalsite.management.overwrite import FORCE_HELP, refuse_overwrite
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
        parser.add_argument(
            "--output", help="output file (default: standard output); an existing file is kept unless --force"
        )
        parser.add_argument(
            "--no-dictionary",
            action="store_true",
            help="with --output: do not write the data dictionary (dictionary.<format>) beside the report",
        )
        parser.add_argument("--force", action="store_true", help=FORCE_HELP)

    def handle(self, *args, submission_id, format, output, no_dictionary=False, force=False, **options):
        submission = Submission.objects.filter(pk=submission_id).first()
        if submission is None:
            raise CommandError(f"no submission with id {submission_id}")
        if output:
            beside = [] if no_dictionary else [dictionary.beside(output, format)]
            refuse_overwrite([output, *beside], force=force)
            path = write_report(submission, format, output)
            self.stdout.write(self.style.SUCCESS(f"Wrote {path}"))
            if not no_dictionary:
                written = dictionary.write(dictionary.beside(path, format), format)
                self.stdout.write(self.style.SUCCESS(f"Wrote {written} (what every column means)"))
        else:
            self.stdout.write(render_report(submission, format), ending="")
