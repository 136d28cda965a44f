"""``manage.py export_report SUBMISSION_ID --format csv|json [--output FILE] [--no-dictionary] [--force]``.

With ``--output``, the data dictionary (every column's meaning, unit, range, ideal value,
precision, model and source) is written beside the report as ``dictionary.<format>``.
An existing file is replaced only with ``--force`` (evalsite/management/overwrite.py), unless
it already holds the same text (the dictionary of the folder's earlier reports).
"""

from django.core.management.base import BaseCommand, CommandError

from evalsite import dictionary
from evalsite.management.overwrite import FORCE_HELP, write_outputs
from evalsite.models import Submission
from evalsite.services import REPORT_FORMATS, render_report


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
            "--output",
            help="output file (default: standard output); an existing file is kept unless --force",
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
        if not output:
            self.stdout.write(render_report(submission, format), ending="")
            return
        files = {output: render_report(submission, format)}
        if not no_dictionary:
            files[dictionary.beside(output, format)] = dictionary.render(format)
        notes = {dictionary.beside(output, format): "what every column means"}
        write_outputs(self, files, force=force, notes=notes)
