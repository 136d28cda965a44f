"""Django models for attack-suite runs and results (naive/parrot attackers).

The science lives in ``automated/attack/`` (Django-free); these rows store the tidy table
of ``attack.suite.run_attack_suite`` (one ``AttackResult`` per recognizer x attacker x
identity subset) and the per-video accuracy of the worst-case pair.
"""

from django.db import models

from .run_models import RunBase

__all__ = ["AttackRun", "AttackExtraction", "AttackResult", "AttackVideoResult"]


class AttackRun(RunBase):
    """One run of the attack suite against a submission (seeds/000, sections 4-5)."""

    submission = models.ForeignKey(
        "evalsite.Submission", on_delete=models.CASCADE, related_name="attack_runs"
    )
    config = models.JSONField(
        "configuration",
        default=dict,
        blank=True,
        help_text='e.g. {"attackers": ["clear", "naive", "parrot"], "recognizers": ["lbph"], "stride": 5}',
    )
    extraction_s = models.FloatField(
        "feature extraction (s)",
        null=True,
        blank=True,
        help_text="Wall seconds decoding videos, detecting and cropping faces (cached per video).",
    )
    training_s = models.FloatField(
        "training and testing (s)",
        null=True,
        blank=True,
        help_text="Wall seconds fitting and testing all recognizer x attacker pairs.",
    )
    n_samples = models.PositiveIntegerField("face crops", null=True, blank=True)

    class Meta(RunBase.Meta):
        verbose_name = "attack run"

    def __str__(self) -> str:
        return f"attack run {self.pk} of {self.submission} ({self.status})"


class AttackExtraction(models.Model):
    """Face crops of one masked video (and its clear source) extracted for an attack run.

    One per video and run: the per-video task's result (the crops themselves are in the
    disk cache, ``attack.faces.video_face_crops``); the suite starts when every planned
    video has one.
    """

    run = models.ForeignKey(AttackRun, on_delete=models.CASCADE, related_name="extractions")
    masked_video = models.ForeignKey(
        "evalsite.MaskedVideo", on_delete=models.CASCADE, related_name="attack_extractions"
    )
    n_crops = models.PositiveIntegerField(
        "face crops", help_text="Tested frames with a face in the clear frame."
    )
    extraction_s = models.FloatField(
        "extraction (s)", help_text="Wall seconds decoding, detecting and cropping."
    )

    class Meta:
        verbose_name = "attack face extraction"
        ordering = ["run", "masked_video"]
        constraints = [
            models.UniqueConstraint(fields=["run", "masked_video"], name="one_attack_extraction_per_video")
        ]

    def __str__(self) -> str:
        return f"{self.masked_video} (attack run {self.run_id}): {self.n_crops} crops"


class AttackResult(models.Model):
    """Accuracy of one recognizer x attacker on one identity subset (a row of the tidy table)."""

    run = models.ForeignKey(AttackRun, on_delete=models.CASCADE, related_name="results")
    recognizer = models.CharField("recognizer", max_length=64)
    attacker = models.CharField(
        "attacker", max_length=32, help_text="clear, naive, parrot_25/50/75 or parrot"
    )
    selection = models.CharField("identity selection", max_length=32, default="all")
    subset_size = models.PositiveIntegerField("subset size")
    repeat = models.PositiveIntegerField("repeat", default=0)
    n_identities = models.PositiveIntegerField("identities")
    n_train = models.PositiveIntegerField("training samples")
    n_test = models.PositiveIntegerField("test samples")
    accuracy = models.FloatField("accuracy", help_text="Rank-1 closed-set identification, in [0, 1].")
    chance_level = models.FloatField("chance level", help_text="1 / identities.")
    chance_normalised = models.FloatField("chance-normalised accuracy")
    fit_s = models.FloatField("fit (s)", null=True, blank=True)
    predict_s = models.FloatField("predict (s)", null=True, blank=True)

    class Meta:
        verbose_name = "attack result"
        ordering = ["run", "selection", "-subset_size", "repeat", "recognizer", "attacker"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "recognizer", "attacker", "selection", "subset_size", "repeat"],
                name="one_attack_result_per_cell",
            )
        ]

    def __str__(self) -> str:
        return (
            f"{self.recognizer} x {self.attacker} ({self.selection}, {self.subset_size}): {self.accuracy:.3f}"
        )


class AttackVideoResult(models.Model):
    """Accuracy of the worst-case pair on the test frames of one masked video."""

    run = models.ForeignKey(AttackRun, on_delete=models.CASCADE, related_name="video_results")
    source_video = models.ForeignKey(
        "evalsite.SourceVideo", on_delete=models.CASCADE, related_name="attack_results"
    )
    n_test = models.PositiveIntegerField("test frames")
    accuracy = models.FloatField(
        "worst-case accuracy", help_text="Share of test frames re-identified, in [0, 1]."
    )

    class Meta:
        verbose_name = "attack result per video"
        ordering = ["run", "source_video"]
        constraints = [
            models.UniqueConstraint(fields=["run", "source_video"], name="one_attack_result_per_video")
        ]
