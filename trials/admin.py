"""Admin views of the human-evaluation records (organizers; declarations only)."""
from django.contrib import admin

from .models import Item, RatingSession, Rater, Response, Trial


@admin.register(Rater)
class RaterAdmin(admin.ModelAdmin):
    list_display = ["id", "campaign", "participant_code", "user", "flagged", "excluded", "created_at"]
    list_filter = ["campaign", "flagged", "excluded"]
    list_editable = ["excluded"]
    search_fields = ["participant_code", "user__username"]


@admin.register(RatingSession)
class RatingSessionAdmin(admin.ModelAdmin):
    list_display = ["id", "rater", "campaign", "state", "position", "consented_at", "completed_at"]
    list_filter = ["campaign", "state"]
    readonly_fields = ["plan", "seed", "completion_code"]


@admin.register(Item)
class ItemAdmin(admin.ModelAdmin):
    list_display = ["id", "source_video", "masked_video", "task", "target_count"]
    list_filter = ["campaign", "task"]


@admin.register(Trial)
class TrialAdmin(admin.ModelAdmin):
    list_display = ["id", "session", "position", "kind", "task", "item", "target_present", "completed", "released"]
    list_filter = ["kind", "task", "completed", "released"]
    raw_id_fields = ["session", "item", "source_video", "probe_image", "target_identity"]


@admin.register(Response)
class ResponseAdmin(admin.ModelAdmin):
    list_display = ["id", "trial", "choice", "correct", "response_time_ms", "replays", "watch_time_ms"]
    list_filter = ["correct"]
    raw_id_fields = ["trial"]
