"""Django models for automated face evaluation runs and per-video scores.

The science lives in ``automated/face_eval.py`` (Django-free); these rows only store its
``VideoEvaluation`` results. NaN (undefined, e.g. no face in the clear video) and the
+inf PSNR of identical frames are stored as NULL; ``psnr_identical_frames`` says which.
"""

import math

from django.db import models
from evalsite.models import MaskedVideo

from automated.face_fields import METRIC_FIELDS
from automated.serialize import jsonable

from .run_models import RunBase

__all__ = ["AutomatedRun", "VideoScore"]


class AutomatedRun(RunBase):
    """One automated face evaluation of a submission with one configuration."""

    submission = models.ForeignKey(
        "evalsite.Submission", on_delete=models.CASCADE, related_name="automated_runs"
    )
    config = models.JSONField(
        "configuration",
        default=dict,
        blank=True,
        help_text='e.g. {"stride": 5, "detector": "mediapipe", "threshold": 0.6}',
    )

    class Meta(RunBase.Meta):
        verbose_name = "automated face evaluation run"

    def __str__(self) -> str:
        return f"run {self.pk} of {self.submission} ({self.status})"


class VideoScoreQuerySet(models.QuerySet):
    """``VideoScore.objects``: adds ``reported()``, the rows reports may read."""

    def reported(self):
        """Scores every report, summary and leaderboard reads: of current masked videos that
        are not attacker training material (``MaskedVideoQuerySet.without_attacker_training``).

        A run planned before the face evaluation skipped attacker training videos keeps
        their rows; they are left out here, so its summary is over the evaluated videos.
        """
        return self.filter(masked_video__in=MaskedVideo.objects.without_attacker_training())


def _metric_field(verbose_name: str, *, integer: bool = False):
    field = models.IntegerField if integer else models.FloatField
    return field(verbose_name, null=True, blank=True)


class VideoScore(models.Model):
    """Automated face metrics of one masked video in one run (``face_eval.VideoEvaluation``).

    Rates are fractions in [0, 1]; NULL where undefined (no face in the clear frames) and,
    for ``psnr_db``, where every tested frame is identical to the clear one.
    """

    run = models.ForeignKey(AutomatedRun, on_delete=models.CASCADE, related_name="video_scores")
    masked_video = models.ForeignKey(
        "evalsite.MaskedVideo", on_delete=models.CASCADE, related_name="face_scores"
    )
    frames_tested = _metric_field("tested frames", integer=True)
    clear_faces = _metric_field("frames with a clear face", integer=True)
    masked_faces = _metric_field("of those, with a masked face", integer=True)
    mean_iou = _metric_field("mean detection IoU")
    detection_failure_rate = _metric_field("face detection failure rate")
    match_rate = _metric_field("gallery match rate (masked)")
    rank1_rate = _metric_field("rank-1 rate (masked)")
    mean_rank = _metric_field("mean rank (masked)")
    mean_genuine_distance = _metric_field("mean genuine distance (masked)")
    clear_match_rate = _metric_field("gallery match rate (clear)")
    clear_rank1_rate = _metric_field("rank-1 rate (clear)")
    chance_level = _metric_field("chance level")
    n_identities = _metric_field("gallery identities", integer=True)
    ssim = _metric_field("SSIM")
    psnr_db = _metric_field("PSNR (dB)")
    psnr_identical_frames = _metric_field("frames identical to clear", integer=True)
    # Every face in the clear video (face_eval protocol, steps 2 and 6); NULL in runs before tracking.
    n_face_tracks = _metric_field("face tracks (people) in the clear video", integer=True)
    faces_leaked = _metric_field("faces leaked (tracks detected or recognisable)", integer=True)
    faces_detected = _metric_field("tracks detected in the masked video", integer=True)
    faces_recognisable = _metric_field("tracks recognisable in the masked video", integer=True)
    all_faces = _metric_field("clear faces, all tracks", integer=True)
    all_faces_mean_iou = _metric_field("mean detection IoU, all faces")
    all_faces_detection_failure_rate = _metric_field("face detection failure rate, all faces")
    # Behaviour preservation (automated.behaviour, issue 12); NULL when the run had
    # ``behaviour: false`` or predates it. The metrics dict: compare + behaviour_score.
    behaviour_score = _metric_field("behaviour-preservation score")
    behaviour_metrics = models.JSONField(
        "behaviour metrics",
        null=True,
        blank=True,
        help_text="automated.behaviour.compare metrics and score components; NaN stored as null.",
    )
    # Gender-attacker evidence of the frames with a clear face (automated.behaviour.leakage):
    # per-video samples, scored per submission against the identities' known gender.
    attribute_samples = models.JSONField(
        "attribute-attacker samples",
        null=True,
        blank=True,
        help_text="gender probabilities (clear, masked) and masked penultimate features per tested frame "
        "with a clear face (automated.behaviour.leakage.AttributeVideo); NULL without behaviour.",
    )

    objects = VideoScoreQuerySet.as_manager()

    class Meta:
        verbose_name = "video face score"
        ordering = ["run", "masked_video"]
        constraints = [
            models.UniqueConstraint(fields=["run", "masked_video"], name="one_face_score_per_video_and_run")
        ]

    def __str__(self) -> str:
        return f"{self.masked_video} (run {self.run_id})"

    @staticmethod
    def metric_values(evaluation) -> dict:
        """Field values from a ``VideoEvaluation``: NaN and infinities become None."""
        values = {}
        for name in METRIC_FIELDS:
            value = getattr(evaluation, name)
            values[name] = None if isinstance(value, float) and not math.isfinite(value) else value
        return values

    @staticmethod
    def behaviour_values(metrics: dict) -> dict:
        """Field values from ``evaluate_behaviour(...).metrics``: NaN and infinities become None."""
        clean = {
            key: None if isinstance(value, float) and not math.isfinite(value) else value
            for key, value in jsonable(metrics).items()
        }
        return {"behaviour_score": clean.get("behaviour_score"), "behaviour_metrics": clean}
