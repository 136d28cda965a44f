"""``python manage.py evaluate <submission_id> [--stride N] [--detector NAME] [--embedder NAME] [--allow-incomplete] [--no-behaviour] [--no-wait]``.

Starts the run through ``dispatch.start_run`` (one Celery task per masked video, shared by
the workers when a broker is configured; in this process otherwise) and, with a broker,
prints its progress until it finishes (``run_cli.start_and_follow``, shared with ``attack``).
"""

import math

from django.core.management.base import BaseCommand

from automated.detection import DETECTOR_NAMES
from automated.recognition import DEFAULT_EMBEDDER, EMBEDDER_NAMES
from automated.django_app import run_cli
from automated.django_app.services import run_summary
from evalsite import dictionary


class Command(BaseCommand):
    help = "Run the automated face evaluation of a submission and print its summary."

    def add_arguments(self, parser):
        run_cli.add_common_arguments(parser)
        parser.add_argument("--stride", type=int, default=5, help="test every N-th frame (default 5)")
        parser.add_argument(
            "--detector",
            default="mediapipe",
            choices=DETECTOR_NAMES,
            help="face detector run on the clear and the masked frames (default mediapipe)",
        )
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
        run = run_cli.start_and_follow(
            self,
            "face",
            submission_id,
            no_wait=no_wait,
            stride=stride,
            detector=detector,
            embedder=embedder,
            allow_incomplete=allow_incomplete,
            behaviour=behaviour,
        )
        if run is None:
            return
        summary = run_summary(run)
        for key, value in summary.items():
            if (
                key == "psnr_db"
                and value is None
                and summary.get("psnr_identical_frames") == summary["frames_tested"]
            ):
                value = math.inf  # every tested frame identical to its source
            # rounded to the data dictionary's precision of the summary entry (as in CSV reports)
            self.stdout.write(f"  {key:24} {dictionary.shown(f'face_evaluation.{key}', value, 'summary')}")
