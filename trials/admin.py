"""Admin views of the human-evaluation records, scoped to the organizer's campaigns.

Rows are written by the rater pages only: sessions, items, trials and responses are
read-only here (responses are data); of a rater only "excluded from scoring" can be
changed (as on the organizer page), and a rater can be deleted with their answers (a
participant withdrawing). Scoping: ``evalsite/scoping.py``.
"""

from django.contrib import admin

from evalsite.scoping import CampaignScopedAdminMixin, ReadOnlyAdminMixin

from .models import Item, RaterFlag, RatingSession, Rater, Response, Trial


class ReadOnlyRecordAdmin(CampaignScopedAdminMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    pass


class RaterFlagInline(admin.TabularInline):
    """Integrity flags (trials.integrity): written by the site, read-only here."""

    model = RaterFlag
    fields = ["kind", "reason", "updated_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Rater)
class RaterAdmin(CampaignScopedAdminMixin, admin.ModelAdmin):
    list_display = ["id", "campaign", "participant_code", "user", "flagged", "excluded", "created_at"]
    list_filter = ["campaign", "flagged", "excluded", "flags__kind"]
    inlines = [RaterFlagInline]
    list_editable = ["excluded"]
    search_fields = ["participant_code", "user__username"]
    fields = ["campaign", "participant_code", "user", "flagged", "excluded", "created_at"]
    readonly_fields = ["campaign", "participant_code", "user", "flagged", "created_at"]

    def has_add_permission(self, request):
        return False  # raters join through the campaign link


@admin.register(RatingSession)
class RatingSessionAdmin(ReadOnlyRecordAdmin):
    list_display = ["id", "rater", "campaign", "state", "position", "consented_at", "completed_at"]
    list_filter = ["campaign", "state"]


@admin.register(Item)
class ItemAdmin(ReadOnlyRecordAdmin):
    list_display = ["id", "source_video", "masked_video", "task", "target_count", "superseded_at"]
    list_filter = ["campaign", "task", ("superseded_at", admin.EmptyFieldListFilter)]


@admin.register(Trial)
class TrialAdmin(ReadOnlyRecordAdmin):
    list_display = [
        "id",
        "session",
        "position",
        "kind",
        "task",
        "item",
        "target_present",
        "completed",
        "released",
    ]
    list_filter = ["session__campaign", "kind", "task", "completed", "released"]


@admin.register(Response)
class ResponseAdmin(ReadOnlyRecordAdmin):
    list_display = [
        "id",
        "trial",
        "choice",
        "correct",
        "response_time_ms",
        "replays",
        "watch_time_ms",
        "superseded",
    ]
    list_select_related = ["trial__item"]
    # Responses to a replaced clear or masked file: kept, not counted (trials.services.supersede_items).
    list_filter = [
        "trial__session__campaign",
        "correct",
        ("trial__item__superseded_at", admin.EmptyFieldListFilter),
    ]

    @admin.display(boolean=True, description="superseded (file replaced, not counted)")
    def superseded(self, response):
        item = response.trial.item
        return item is not None and item.superseded
