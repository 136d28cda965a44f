"""Django models for attack-suite runs and results (naive/parrot attackers).

The science lives in ``automated/attack/`` (Django-free). The headline is the cross-video
protocol (``attack.crossvideo``): one ``AttackFold`` per fold (a task each, so workers
share them), then one ``AttackResult`` per recognizer x attacker with the mean, sd, range
and interval over folds, and the per-video accuracy of the worst-case pair. The
within-video (time-segment) table, a scene-memorisation figure, is kept apart on the run
(``AttackRun.scene_memorisation``) so it can never be taken for the worst case.
"""

from django.db import models

from .run_models import RunBase

__all__ = ["AttackRun", "AttackExtraction", "AttackFold", "AttackResult", "AttackVideoResult"]


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
    planned_folds = models.JSONField(
        "planned cross-video folds",
        default=list,
        blank=True,
        help_text="Per fold, the ids of the masked videos it tests (fixed when the run was queued; one task each).",
    )
    folds_total = models.PositiveIntegerField("folds", default=0)
    folds_done = models.PositiveIntegerField("folds done", default=0)
    counts = models.JSONField(
        "cross-video counts",
        default=dict,
        blank=True,
        help_text="Identities (classes), tested identities, videos, tested and attacker videos, frames, folds.",
    )
    per_identity = models.JSONField(
        "per-identity accuracy",
        default=list,
        blank=True,
        help_text="Cross-video accuracy of each tested identity, per recognizer x attacker.",
    )
    verification = models.JSONField(
        "verification",
        default=dict,
        blank=True,
        help_text="Per pretrained recognizer: CMC ranks 1-5, EER, FNMR at FMR 1e-2 / 1e-3 and the curves "
        "(masked probes of each fold vs the clear gallery of the others).",
    )
    scene_memorisation = models.JSONField(
        "within-video table (scene memorisation)",
        default=list,
        blank=True,
        help_text="Every video split in time: the attacker sees other frames of the tested recording, so "
        "this measures scene memorisation, never the worst case.",
    )
    privacy = models.JSONField(
        "declared attacker, linkability by group, identity over time",
        default=dict,
        blank=True,
        help_text="The declared attacker chosen on development identities (attack.declared), "
        "verification by demographic group (EER, linkability), and per masked video temporal identity "
        "consistency and flicker with the linking attacker across recordings (automated.temporal).",
    )
    timing = models.JSONField(
        "timing",
        default=dict,
        blank=True,
        help_text="Wall seconds: features (crops, embeddings) and training per recognizer, per protocol.",
    )

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


class AttackFold(models.Model):
    """One cross-video fold of an attack run: every recognizer x attacker trained and tested.

    The per-fold task's result (``crossvideo.run_fold``); the summary step starts when every
    planned fold has one.
    """

    run = models.ForeignKey(AttackRun, on_delete=models.CASCADE, related_name="folds")
    fold = models.PositiveIntegerField("fold")
    test_videos = models.JSONField("tested masked videos", default=list)
    rows = models.JSONField("results", default=list, help_text="One per recognizer x attacker.")
    predictions = models.JSONField(
        "predictions", default=dict, help_text="Per tested frame: pair, sample, group, identity, predicted."
    )
    fit_s = models.FloatField("training and testing (s)")

    class Meta:
        verbose_name = "attack fold"
        ordering = ["run", "fold"]
        constraints = [models.UniqueConstraint(fields=["run", "fold"], name="one_attack_fold_result")]

    def __str__(self) -> str:
        return f"fold {self.fold} of attack run {self.run_id}"


class AttackResult(models.Model):
    """Cross-video accuracy of one recognizer x attacker (mean over folds), the headline table."""

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
    n_folds = models.PositiveIntegerField("folds", null=True, blank=True)
    sd = models.FloatField("sd over folds", null=True, blank=True)
    min_accuracy = models.FloatField("lowest fold accuracy", null=True, blank=True)
    max_accuracy = models.FloatField("highest fold accuracy", null=True, blank=True)
    ci_low = models.FloatField("95 % interval, low", null=True, blank=True)
    ci_high = models.FloatField("95 % interval, high", null=True, blank=True)
    frame_accuracy = models.FloatField(
        "accuracy over all tested frames", null=True, blank=True, help_text="Pooled over folds."
    )

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
