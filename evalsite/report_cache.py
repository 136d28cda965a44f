"""Reports, summaries, leaderboards and plots cached by what they are computed from (issue 21).

A campaign's reports are pure functions of its rows: catalogue (campaign, identities,
gallery, source and masked videos, teams, submissions), runs and their results, raters,
items and responses. :func:`fingerprint` reads a digest of those rows in a few
aggregate queries (the rows themselves for the small, editable tables; count, highest
id and latest timestamp for the large, append-mostly ones), so a result written, a run
that moves on, a file replaced, a role changed or a rater excluded changes it.
:func:`cached` keys a value by the campaign, a name and the fingerprint, in Django's
default cache (``CACHES``; per process unless configured otherwise), so an unchanged
campaign's summary is computed once, not per request.

Caching is on only inside :func:`scope` (the :class:`ReportCacheMiddleware` opens one
per request; the fingerprint is read once per campaign and scope): a command, a task or
a test that writes results and reads reports outside a request always computes afresh.
"""

from __future__ import annotations

import contextvars
import hashlib
import pickle
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.apps import apps
from django.core.cache import cache
from django.db import models

#: (model label, lookup from the model to the campaign, "rows" | "count").
#: "rows": every column of every row (small tables an organizer edits); "runs": every
#: column but the JSON ones (written with the status); "count": row count, highest id
#: and the latest value of each date-time column (large, append-mostly tables).
DEPENDENCIES: tuple[tuple[str, str, str], ...] = (
    ("evalsite.Campaign", "pk", "rows"),
    ("evalsite.Identity", "campaign", "rows"),
    ("evalsite.GalleryImage", "identity__campaign", "rows"),
    ("evalsite.SourceVideo", "campaign", "rows"),
    ("evalsite.Phase", "campaign", "rows"),
    ("evalsite.Team", "campaign", "rows"),
    ("evalsite.Submission", "campaign", "rows"),
    ("evalsite.MaskedVideo", "submission__campaign", "rows"),
    ("automated.AutomatedRun", "submission__campaign", "runs"),
    ("automated.AttackRun", "submission__campaign", "runs"),
    ("automated.VideoScore", "run__submission__campaign", "count"),
    ("automated.AttackResult", "run__submission__campaign", "count"),
    ("automated.AttackVideoResult", "run__submission__campaign", "count"),
    ("automated.AttackFold", "run__submission__campaign", "count"),
    ("trials.Rater", "campaign", "rows"),
    # Not trials.RaterFlag: the human report recomputes the accuracy-outlier flags from the
    # responses on every read (issue 19), rewriting their timestamps; they follow from rows
    # listed here (responses, raters' flagged/excluded columns).
    ("trials.Item", "campaign", "count"),
    ("trials.Response", "trial__session__campaign", "count"),
    ("trials.RatedSubmission", "submission__campaign", "rows"),
    ("trials.StillCheck", "gallery_image__identity__campaign", "count"),
    ("fairness.FaceQualityScore", "source_video__campaign", "count"),
    ("fairness.FaceQualityScore", "gallery_image__identity__campaign", "count"),
)

_SCOPE: contextvars.ContextVar[dict | None] = contextvars.ContextVar("report_cache_scope", default=None)
TIMEOUT_S = 24 * 3600


def _model(label: str):
    try:
        return apps.get_model(label)
    except LookupError:  # an app that is not installed contributes nothing
        return None


def _part(model, lookup: str, mode: str, campaign_pk: int):
    rows = model.objects.filter(**{lookup: campaign_pk})
    if mode in ("rows", "runs"):
        names = [
            f.attname
            for f in model._meta.concrete_fields
            if mode == "rows" or not isinstance(f, models.JSONField)
        ]
        return list(rows.order_by("pk").values_list(*names))
    stamps = [f.attname for f in model._meta.concrete_fields if isinstance(f, models.DateTimeField)]
    aggregates = {"n": models.Count("pk"), "top": models.Max("pk")}
    aggregates.update({name: models.Max(name) for name in stamps})
    return sorted(rows.aggregate(**aggregates).items())


def fingerprint(campaign) -> str:
    """Digest (hex) of every row the campaign's reports are computed from (:data:`DEPENDENCIES`).

    About 20 queries; within a :func:`scope` read once per campaign.
    """
    memo = _SCOPE.get()
    pk = getattr(campaign, "pk", campaign)
    if memo is not None and pk in memo:
        return memo[pk]
    digest = hashlib.sha256()
    for label, lookup, mode in DEPENDENCIES:
        model = _model(label)
        if model is not None:
            digest.update(repr((label, lookup, _part(model, lookup, mode, pk))).encode())
    value = digest.hexdigest()
    if memo is not None:
        memo[pk] = value
    return value


@contextmanager
def scope() -> Iterator[None]:
    """Within this block :func:`cached` uses the cache (fingerprints are read once per campaign).

    Writes inside the block after a fingerprint was read are not seen by it: open a scope
    around reading only (a request, an export).
    """
    token = _SCOPE.set({})
    try:
        yield
    finally:
        _SCOPE.reset(token)


def cached(campaign, key: tuple, compute: Callable):
    """``compute()``, cached under (campaign, ``key``, :func:`fingerprint`) inside a :func:`scope`.

    ``key`` is a tuple of plain values (names, ids, flags) that tells apart what
    ``compute`` returns for one campaign. Outside a scope ``compute()`` runs every time.
    The value is stored pickled: the caller gets its own copy.
    """
    if _SCOPE.get() is None:
        return compute()
    pk = getattr(campaign, "pk", campaign)
    name = hashlib.sha256(repr((pk, key)).encode()).hexdigest()[:32]
    cache_key = f"deid-report:{pk}:{name}:{fingerprint(campaign)}"
    stored = cache.get(cache_key)
    if stored is not None:
        return pickle.loads(stored)
    value = compute()
    cache.set(cache_key, pickle.dumps(value), TIMEOUT_S)
    return value


class ReportCacheMiddleware:
    """Opens a :func:`scope` around each GET and HEAD request (settings ``MIDDLEWARE``)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method not in ("GET", "HEAD"):  # a write, then a page: no fingerprint read early
            return self.get_response(request)
        with scope():
            return self.get_response(request)
