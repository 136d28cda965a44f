"""What every automated run shares: status, timestamps, error, latest-completed lookup."""
from django.db import models


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

    objects = RunQuerySet.as_manager()

    class Meta:
        abstract = True
        ordering = ["-created_at", "-id"]
