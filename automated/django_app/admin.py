"""Admin pages of the automated evaluation: read-only lists of face-evaluation and attack runs.

Runs show their progress (videos done / total); runs are started from the Submission
changelist (``admin_actions.SUBMISSION_ACTIONS``) and can be re-queued from here.
"""

import math

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from automated.face_fields import METRIC_FIELDS
from evalsite.scoping import CampaignScopedAdminMixin, ReadOnlyAdminMixin
from .admin_actions import requeue_runs
from .attack_models import AttackExtraction, AttackResult, AttackRun
from .behaviour_report import automated_pu
from .face_models import AutomatedRun, VideoScore


class ReadOnlyAdmin(CampaignScopedAdminMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    """Rows are written by runs only (a run can be deleted); scoped to the user's campaigns."""

    allow_delete = True


class VideoScoreInline(CampaignScopedAdminMixin, admin.TabularInline):
    model = VideoScore
    fields = [
        "masked_video",
        "match_rate",
        "rank1_rate",
        "detection_failure_rate",
        "mean_iou",
        "ssim",
        "psnr_db",
        "behaviour_score",
    ]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(AutomatedRun)
class AutomatedRunAdmin(ReadOnlyAdmin):
    list_display = ["id", "submission", "status", "progress", "config", "started_at", "finished_at"]
    list_filter = ["status", "submission__campaign"]
    search_fields = ["submission__name", "submission__team__name"]
    readonly_fields = [
        "submission",
        "config",
        "status",
        "progress",
        "created_at",
        "started_at",
        "finished_at",
        "error",
    ]
    inlines = [VideoScoreInline]
    actions = [requeue_runs]


@admin.register(VideoScore)
class VideoScoreAdmin(ReadOnlyAdmin):
    list_display = [
        "masked_video",
        "run",
        "match_rate",
        "rank1_rate",
        "detection_failure_rate",
        "mean_iou",
        "ssim",
        "psnr_db",
        "behaviour_score",
        "pu_score_automated",
    ]
    list_filter = ["run__submission__campaign", "run__status"]
    search_fields = ["masked_video__source_video__name", "run__submission__name"]
    exclude = ["attribute_samples"]  # per-frame features: summarised by gender_attacker
    readonly_fields = [
        "run",
        "masked_video",
        *METRIC_FIELDS,
        "behaviour_score",
        "pu_score_automated",
        "behaviour_metrics",
        "gender_attacker",
    ]

    @admin.display(description="PU score (automated)")
    def pu_score_automated(self, score):
        """Behaviour score x (1 - SSIM) (``behaviour_report``); "-" where either is missing."""
        value = automated_pu(score.behaviour_score, score.ssim)
        return "-" if math.isnan(value) else f"{value:.3f}"

    @admin.display(description="gender attacker (frames with a clear face)")
    def gender_attacker(self, score):
        """Frames and mean P(man) of the pretrained gender attacker, clear and masked (``leakage``)."""
        samples = score.attribute_samples
        if not samples or not samples.get("clear_probabilities"):
            return "-"
        clear = [p[1] for p in samples["clear_probabilities"]]
        masked = [p[1] for p in samples["masked_probabilities"]]
        return (
            f"{len(clear)} frames; mean P(man) clear {sum(clear) / len(clear):.3f}, "
            f"masked {sum(masked) / len(masked):.3f}"
        )


class AttackResultInline(CampaignScopedAdminMixin, admin.TabularInline):
    model = AttackResult
    fields = [
        "recognizer",
        "attacker",
        "selection",
        "subset_size",
        "repeat",
        "accuracy",
        "n_folds",
        "sd",
        "ci_low",
        "ci_high",
        "chance_level",
        "chance_normalised",
    ]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


class AttackExtractionInline(CampaignScopedAdminMixin, admin.TabularInline):
    model = AttackExtraction
    fields = ["masked_video", "n_crops", "extraction_s"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(AttackRun)
class AttackRunAdmin(ReadOnlyAdmin):
    list_display = [
        "id",
        "submission",
        "status",
        "progress",
        "n_samples",
        "extraction_s",
        "training_s",
        "finished_at",
    ]
    list_filter = ["status", "submission__campaign"]
    search_fields = ["submission__name", "submission__team__name"]
    readonly_fields = [
        "submission",
        "config",
        "status",
        "progress",
        "created_at",
        "started_at",
        "finished_at",
        "extraction_s",
        "training_s",
        "n_samples",
        "folds_total",
        "folds_done",
        "counts",
        "report",
        "error",
    ]
    inlines = [AttackExtractionInline, AttackResultInline]

    @admin.display(description="report")
    def report(self, run):
        """Link to the run's report page (cross-video worst case, verification plots)."""
        if run.status != run.Status.COMPLETED:
            return "-"
        return format_html(
            '<a href="{}">cross-video report and plots</a>',
            reverse("automated:attack_run_report", args=[run.pk]),
        )

    actions = [requeue_runs]
