"""Campaign-scoped access: the one rule behind every admin page, API endpoint and staff view.

A staff organizer sees only the rows of the campaigns they organize
(``Campaign.organizers``); superusers see everything; anyone else sees nothing
(DESIGN.md, security stance: "organizers only their campaigns' data").

A model is scoped by the lookup path from it to :class:`~evalsite.models.Campaign`,
found once by following its non-null foreign keys (``Response -> trial -> session ->
campaign``), so a model added later is scoped without being listed anywhere. A model
whose only links are nullable ones is scoped through any of them (``Team.campaign``: a team of no campaign is for superusers only);
models reached only through reverse relations (the user model) have an explicit rule
in :data:`RULES`.

Use :func:`scope` for querysets, :class:`CampaignScopedAdminMixin` for admin pages and
inlines (rows, foreign-key and many-to-many choices, list filters, autocomplete through
the related admin) and :class:`CampaignScopedViewSetMixin` for REST API views.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from functools import cache

from django.apps import apps
from django.conf import settings
from django.contrib import admin
from django.db.models import Model, Q, QuerySet

from .models import Campaign, Team


class NotCampaignScoped(LookupError):
    """The model has no path to a campaign and no rule in :data:`RULES`."""


def visible_campaigns(user) -> QuerySet[Campaign]:
    """Campaigns ``user`` may see: all for a superuser, their own for an organizer, none otherwise."""
    if user is None or not user.is_authenticated or not user.is_active:
        return Campaign.objects.none()
    return Campaign.objects.visible_to(user)


def _user_rule(campaigns: QuerySet[Campaign]) -> Q:
    # Staff accounts can be chosen as co-organizers. A rater account or a team member
    # of other campaigns only is hidden: its name can identify a participant.
    raters = apps.get_model("trials", "Rater").objects.filter(user__isnull=False)
    members = Team.members.through.objects
    visible_teams = Team.objects.filter(campaign__in=campaigns)
    here = Q(pk__in=raters.filter(campaign__in=campaigns).values("user")) | Q(
        pk__in=members.filter(team__in=visible_teams).values("user")
    )
    elsewhere = Q(pk__in=raters.values("user")) | Q(pk__in=members.values("user"))
    return Q(is_staff=True) | here | ~elsewhere


#: Models reached only through reverse relations: label -> rule(visible campaigns) -> Q.
RULES: dict[str, Callable[[QuerySet[Campaign]], Q]] = {
    settings.AUTH_USER_MODEL.lower(): _user_rule,
}


def _forward_links(model: type[Model], *, include_nullable: bool):
    for field in model._meta.get_fields():
        if field.concrete and field.is_relation and (field.many_to_one or field.one_to_one):
            if include_nullable or not field.null:
                yield field


def _strict_path(model: type[Model]) -> str | None:
    """Shortest lookup path from ``model`` to Campaign along non-null foreign keys."""
    if model is Campaign:
        return ""
    queue, seen = deque([(model, "")]), {model}
    while queue:
        current, path = queue.popleft()
        for field in _forward_links(current, include_nullable=False):
            step = f"{path}__{field.name}" if path else field.name
            if field.related_model is Campaign:
                return step
            if field.related_model not in seen:
                seen.add(field.related_model)
                queue.append((field.related_model, step))
    return None


@cache
def campaign_lookups(model: type[Model]) -> tuple[str, ...]:
    """Lookup paths from ``model`` to its campaign, e.g. ``("trial__session__campaign",)``.

    One path along non-null foreign keys when there is one; otherwise one path through
    each nullable link (a row is visible through any of them; a row with all of them
    empty belongs to no campaign and is shown to superusers only).

    Raises
    ------
    NotCampaignScoped
        If no foreign-key chain leads to a campaign (add a rule to :data:`RULES`).
    """
    if model is Campaign:
        return ("pk",)
    strict = _strict_path(model)
    if strict is not None:
        return (strict,)
    paths = []
    for field in _forward_links(model, include_nullable=True):
        rest = _strict_path(field.related_model)
        if field.null and rest is not None:
            paths.append(f"{field.name}__{rest}" if rest else field.name)
    if not paths:
        raise NotCampaignScoped(
            f"{model._meta.label} has no foreign-key path to a campaign; add a rule to evalsite.scoping.RULES"
        )
    return tuple(paths)


def is_scoped(model: type[Model]) -> bool:
    """True if rows of ``model`` belong to campaigns (or have a rule in :data:`RULES`)."""
    if model._meta.label_lower in RULES:
        return True
    try:
        campaign_lookups(model)
    except NotCampaignScoped:
        return False
    return True


def campaign_q(model: type[Model], campaigns: QuerySet[Campaign]) -> Q:
    """The filter keeping the rows of ``model`` that belong to ``campaigns``."""
    rule = RULES.get(model._meta.label_lower)
    if rule is not None:
        return rule(campaigns)
    condition = Q()
    for path in campaign_lookups(model):
        condition |= Q(**{f"{path}__in": campaigns})
    return condition


def scope(queryset: QuerySet, user) -> QuerySet:
    """``queryset`` restricted to the campaigns ``user`` may see (unchanged for superusers).

    Raises
    ------
    NotCampaignScoped
        If the queryset's model has no path to a campaign.
    """
    if user is not None and user.is_active and user.is_superuser:
        return queryset
    return queryset.filter(campaign_q(queryset.model, visible_campaigns(user)))


# --- admin -----------------------------------------------------------------------------


class CampaignScopedAdminMixin:
    """For ModelAdmin and inlines: rows, choices and list filters of the user's campaigns only.

    Rows (changelist, change/delete/history pages, actions, search) come from
    :meth:`get_queryset`; foreign-key and many-to-many choices (select boxes, raw-id
    validation, ``filter_horizontal``) from :meth:`get_field_queryset`; autocomplete from
    the related model's admin, which is scoped the same way. Relational list filters show
    only values present in the scoped rows (``RelatedOnlyFieldListFilter``).
    """

    def get_queryset(self, request):
        return scope(super().get_queryset(request), request.user)

    def get_field_queryset(self, db, db_field, request):
        queryset = super().get_field_queryset(db, db_field, request)
        related = db_field.remote_field.model
        if not is_scoped(related):
            return queryset
        if queryset is None:
            queryset = related._default_manager.using(db).all()
        return scope(queryset, request.user)

    def get_list_filter(self, request):
        return [_related_only(self.model, entry) for entry in super().get_list_filter(request)]


def _related_only(model, entry):
    if not isinstance(entry, str):
        return entry
    from django.contrib.admin.utils import get_fields_from_path

    if get_fields_from_path(model, entry)[-1].is_relation:
        return (entry, admin.RelatedOnlyFieldListFilter)
    return entry


class ReadOnlyAdminMixin:
    """Rows written by the platform only: viewable, never added or edited in the admin.

    ``allow_delete = True`` keeps deletion (for users with the delete permission).
    """

    allow_delete = False

    def has_add_permission(self, request, *args):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return self.allow_delete and super().has_delete_permission(request, obj)


# --- REST API --------------------------------------------------------------------------


class CampaignScopedViewSetMixin:
    """DRF views: ``get_queryset`` (lists, detail lookups, actions) scoped to the user."""

    def get_queryset(self):
        return scope(super().get_queryset(), self.request.user)
