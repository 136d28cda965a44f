"""``manage.py upload_submission SUBMISSION_ID ZIP [--replace] [--override-deadline]``: validate and store masked videos.

The zip is stored with its upload record first, then validated by the background task
(in-process without a broker; with one, this command waits for a worker, ``--no-wait``
returns at once). ``--resume UPLOAD_ID`` queues an upload again that a stopped worker
left ``processing``.
"""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evalsite.phases import Refused
from evalsite.models import Submission, SubmissionUpload, UploadStatus
from evalsite.uploads import FINISHED, receive_upload, requeue_upload, wait_for_upload
from evalsite.validation import ValidationReport


class Command(BaseCommand):
    help = "Validate a zip of masked videos against the campaign's source videos and store the good ones."

    def add_arguments(self, parser):
        parser.add_argument(
            "submission_id", type=int, nargs="?", help="id of the submission (manage.py list_submissions)"
        )
        parser.add_argument("zip", nargs="?", help="zip of masked videos named after the source videos")
        parser.add_argument(
            "--replace",
            action="store_true",
            help="replace masked videos already stored for the same source videos "
            "(the old ones are kept as superseded, with their ratings and scores)",
        )
        parser.add_argument(
            "--resume",
            type=int,
            metavar="UPLOAD_ID",
            help="queue again an upload left 'processing' (its worker stopped)",
        )
        parser.add_argument(
            "--override-deadline",
            action="store_true",
            help="accept the upload although the run's phase has closed (recorded on the upload as late)",
        )
        parser.add_argument("--no-wait", action="store_true", help="with a broker: return once queued")
        parser.add_argument(
            "--wait-timeout",
            type=float,
            default=3600,
            metavar="SECONDS",
            help="with a broker: how long to wait for a worker (default 3600)",
        )

    def handle(
        self, *args, submission_id, zip, replace, resume, no_wait, wait_timeout, override_deadline, **options
    ):
        if resume is not None:
            upload = SubmissionUpload.objects.filter(pk=resume).first()
            if upload is None:
                raise CommandError(f"no upload with id {resume}")
            try:
                upload = requeue_upload(upload)
            except ValueError as error:
                raise CommandError(str(error)) from error
        else:
            if submission_id is None or zip is None:
                raise CommandError("give SUBMISSION_ID and ZIP (or --resume UPLOAD_ID)")
            submission = Submission.objects.filter(pk=submission_id).first()
            if submission is None:
                raise CommandError(f"no submission with id {submission_id}")
            if not Path(zip).is_file():
                raise CommandError(f"no such file: {zip}")
            try:
                upload = receive_upload(
                    submission, Path(zip), replace=replace, override_deadline=override_deadline
                )
            except Refused as refused:
                raise CommandError(f"upload refused ({refused.code}): {refused}") from None
        if upload.status not in FINISHED and not no_wait:
            self.stdout.write(f"upload {upload.pk} {upload.status}: waiting for a worker ...")
            upload = wait_for_upload(upload, timeout_s=wait_timeout)
        self._print(upload)

    def _print(self, upload: SubmissionUpload) -> None:
        report = ValidationReport.from_upload(upload)
        for row in report.files:
            style = self.style.SUCCESS if row.status == "accepted" else self.style.WARNING
            self.stdout.write(style(f"{row.status:9} {row.code:22} {row.message}"))
        if upload.status == UploadStatus.FAILED:
            raise CommandError(f"upload {upload.pk} failed ({upload.error_code}): {upload.error}")
        if upload.status != UploadStatus.DONE:
            self.stdout.write(
                f"upload {upload.pk} {upload.status}: its report appears on its admin page once "
                "a worker has validated it"
            )
            return
        self.stdout.write(
            f"upload {upload.pk}: {len(report.accepted)} accepted, {len(report.rejected)} rejected; "
            + ("submission complete" if report.complete else f"missing: {', '.join(report.missing_videos)}")
        )
