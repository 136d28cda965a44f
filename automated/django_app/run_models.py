"""What every automated run shares: status, timestamps, error, progress, latest-completed lookup.

The lifecycle that moves a run through these states is ``lifecycle.py``.
"""

from django.db import models
from evalsite import provenance


class RunStatus(models.TextChoices):
    PENDING = "pending", "pending"
    RUNNING = "running", "running"
    COMPLETED = "completed", "completed"
    FAILED = "failed", "failed"


class RunQuerySet(models.QuerySet):
    def completed(self):
        return self.filter(status=RunStatus.COMPLETED)

    def latest_completed_for(self, submission):
        """The submission's most recent completed run (the one reports show), or None."""
        return self.completed().filter(submission=submission).order_by("-finished_at", "-id").first()


class RunBase(models.Model):
    """Abstract run of a submission; subclasses add ``submission`` and ``config``."""

    Status = RunStatus

    status = models.CharField("status", max_length=16, choices=RunStatus.choices, default=RunStatus.PENDING)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField("started", null=True, blank=True)
    finished_at = models.DateTimeField("finished", null=True, blank=True)
    error = models.TextField("error", blank=True)
    planned_videos = models.JSONField(
        "planned masked videos",
        default=list,
        blank=True,
        help_text="Ids of the masked videos the run covers, fixed when it was queued (one task each).",
    )
    videos_total = models.PositiveIntegerField("videos", default=0)
    videos_done = models.PositiveIntegerField("videos done", default=0)
    final_task = models.CharField(
        "final step owner",
        max_length=64,
        blank=True,
        help_text="Id of the task that owns the run's final step once every video is done (attack suite).",
    )
    deliveries = models.JSONField(
        "deliveries per unit",
        default=dict,
        blank=True,
        help_text=(
            "How many times each unit was started ({'video:<masked video id>': n, 'fold:<n>': n, "
            "'final': n}); a unit whose worker died DEID_TASK_MAX_DELIVERIES times fails the run."
        ),
    )

    owner = models.CharField(
        "in-process owner",
        max_length=200,
        blank=True,
        help_text=(
            "Without a broker: the process running the run ('<host> <boot id> <pid> <start ticks>'); "
            "a run whose owner is gone is resumed (lifecycle.recover). Empty for runs a broker delivers."
        ),
    )
    provenance = models.JSONField(
        "provenance",
        default=dict,
        blank=True,
        editable=False,
        help_text="What the results were computed with, recorded when the run was created: code version "
        "(git describe or the package version), package versions, model files' SHA-256 (evalsite.provenance).",
    )

    objects = RunQuerySet.as_manager()

    class Meta:
        abstract = True
        ordering = ["-created_at", "-id"]

    def save(self, *args, **kwargs):
        """Save; a new run records its provenance (``evalsite.provenance.provenance``) first."""
        if self._state.adding and not self.provenance:
            self.provenance = provenance.provenance()
        super().save(*args, **kwargs)

    @property
    def progress(self) -> str:
        """``"<videos done>/<videos total> videos"``, e.g. ``"3/18 videos"``."""
        return f"{self.videos_done}/{self.videos_total} videos"
