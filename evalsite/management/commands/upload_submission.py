"""``manage.py upload_submission SUBMISSION_ID ZIP [--replace]``: validate and store masked videos."""
from django.core.management.base import BaseCommand, CommandError

from evalsite.models import Submission
from evalsite.validation import UploadError, ingest_submission_zip


class Command(BaseCommand):
    help = "Validate a zip of masked videos against the campaign's source videos and store the good ones."

    def add_arguments(self, parser):
        parser.add_argument("submission_id", type=int)
        parser.add_argument("zip", help="zip of masked videos named after the source videos")
        parser.add_argument("--replace", action="store_true",
                            help="replace masked videos already stored for the same source videos")

    def handle(self, *args, submission_id, zip, replace, **options):
        submission = Submission.objects.filter(pk=submission_id).first()
        if submission is None:
            raise CommandError(f"no submission with id {submission_id}")
        try:
            report = ingest_submission_zip(submission, zip, replace=replace)
        except (UploadError, FileNotFoundError) as error:
            raise CommandError(str(error)) from error
        for row in report.files:
            style = self.style.SUCCESS if row.status == "accepted" else self.style.WARNING
            self.stdout.write(style(f"{row.status:9} {row.code:22} {row.message}"))
        self.stdout.write(
            f"{len(report.accepted)} accepted, {len(report.rejected)} rejected; "
            + ("submission complete" if report.complete else f"missing: {', '.join(report.missing_videos)}")
        )
