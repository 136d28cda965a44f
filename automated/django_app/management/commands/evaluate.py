"""``python manage.py evaluate <submission_id> [--stride N] [--detector NAME] [--embedder NAME] [--allow-incomplete] [--no-behaviour] [--no-wait]``.

Starts the run through ``dispatch.start_run`` (one Celery task per masked video, shared by
the workers when a broker is configured; in this process otherwise) and, with a broker,
prints its progress until it finishes.
"""

import math

from django.core.management.base import BaseCommand, CommandError

from automated.detection import DETECTOR_NAMES
from automated.recognition import DEFAULT_EMBEDDER, EMBEDDER_NAMES
from automated.django_app import dispatch
from automated.django_app.services import run_summary
from evalsite.models import Submission


class Command(BaseCommand):
    help = "Run the automated face evaluation of a submission and print its summary."

    def add_arguments(self, parser):
        parser.add_argument("submission_id", type=int)
        parser.add_argument("--stride", type=int, default=5, help="test every N-th frame (default 5)")
        parser.add_argument("--detector", default="mediapipe", choices=DETECTOR_NAMES)
        parser.add_argument(
            "--embedder",
            default=DEFAULT_EMBEDDER,
            choices=EMBEDDER_NAMES,
            help=f"face embedder (default {DEFAULT_EMBEDDER}: dlib's ResNet in PyTorch)",
        )
        parser.add_argument(
            "--allow-incomplete",
            action="store_true",
            help="evaluate although some source videos have no masked video",
        )
        parser.add_argument(
            "--no-behaviour",
            dest="behaviour",
            action="store_false",
            help="skip the behaviour-preservation measures (head pose, gaze, eyes, mouth, body)",
        )
        parser.add_argument(
            "--no-wait",
            action="store_true",
            help="with a broker: queue the run and return (progress: admin, API)",
        )

    def handle(
        self,
        *args,
        submission_id,
        stride,
        detector,
        embedder,
        allow_incomplete,
        behaviour,
        no_wait,
        **options,
    ):
        try:
            submission = Submission.objects.get(pk=submission_id)
        except Submission.DoesNotExist:
            raise CommandError(f"no submission with id {submission_id}") from None
        try:
            run = dispatch.start_run(
                "face",
                submission,
                stride=stride,
                detector=detector,
                embedder=embedder,
                allow_incomplete=allow_incomplete,
                behaviour=behaviour,
            )
        except ValueError as error:
            raise CommandError(str(error)) from error
        self.stdout.write(f"run {run.pk} of {submission}: {run.status} ({run.progress})")
        if no_wait:
            return
        run = dispatch.wait(run, lambda line: self.stdout.write(f"  {line}"))
        if run.status == run.Status.FAILED:
            raise CommandError(f"run {run.pk} failed: {run.error}")
        summary = run_summary(run)
        for key, value in summary.items():
            if (
                key == "psnr_db"
                and value is None
                and summary.get("psnr_identical_frames") == summary["frames_tested"]
            ):
                value = math.inf  # every tested frame identical to its source
            shown = f"{value:.4f}" if isinstance(value, float) else value
            self.stdout.write(f"  {key:24} {shown}")
