"""Reports, summaries, leaderboards and plots cached by what they are computed from (issue 21).

A campaign's reports are pure functions of its rows: catalogue (campaign, identities,
gallery, source and masked videos, teams, submissions), runs and their results, raters,
items and responses. :func:`fingerprint` reads a digest of those rows in a few
aggregate queries (the rows themselves for the small, editable tables; count, highest
id and one aggregate per column for the large ones), so a result written, a run that
moves on, a file replaced, a role changed, a row edited in place or a rater excluded
changes it.
:func:`cached` keys a value by the campaign, a name and the fingerprint, in Django's
default cache (``CACHES``, ``DEID_REPORT_CACHE_URL``: a folder under ``DEID_VAR_DIR`` by
default, Redis for several machines), shared by every process: an unchanged campaign's
summary is computed once, not per request nor per gunicorn worker. As the cache outlives
processes, the fingerprint also covers the reports' code and the settings that change
them (``TRIALS_*``, ``FAIRNESS_*``): a new deployment never reads the old one's reports.

:func:`warm` computes a campaign's reports into the cache (the apps register what their
pages read first with :func:`register_warmer`); the automated app calls it, in a
background task, when a campaign's last active run finishes (``DEID_WARM_REPORTS``), so
the first page after a run is read from the cache.

Caching is on only inside :func:`scope` (the :class:`ReportCacheMiddleware` opens one
per request; the fingerprint is read once per campaign and scope): a command, a task or
a test that writes results and reads reports outside a request always computes afresh.
"""

from __future__ import annotations

import contextvars
import functools
import hashlib
import importlib
import logging
import pickle
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from django.apps import apps
from django.conf import settings
from django.core.cache import cache
from django.db import models
from django.db.models.functions import Length

#: (model label, lookup from the model to the campaign, "rows" | "count").
#: "rows": every column of every row (small tables an organizer edits: identities, videos,
#: labels, teams, raters, flags); "runs": every column but the JSON ones (written with the
#: status); "count": row count, highest id and one aggregate per column (large tables, rows
#: added by runs and raters): the latest date-time, the count of true booleans, the sum of
#: numbers and foreign-key ids, the summed length of text (:func:`_column_aggregate`), so
#: an in-place edit of a row (an item's target count, a superseded item, a re-measured face
#: quality, a still check) changes it too. Not covered: a JSON column edited in place, or
#: edits that leave every sum equal (a text changed to another of the same length); no code
#: edits those rows so (run results and responses are only added; admin shows them read-only).
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
    # The human report computes the flags as of now from the stored ones (which kinds a
    # rater already has: ROW_COLUMNS) and the sessions' browsers and addresses (trials.integrity).
    ("trials.RaterFlag", "rater__campaign", "rows"),
    ("trials.RatingSession", "campaign", "count"),
    ("trials.Item", "campaign", "count"),
    ("trials.Response", "trial__session__campaign", "count"),
    ("trials.RatedSubmission", "submission__campaign", "rows"),
    ("trials.StillCheck", "gallery_image__identity__campaign", "count"),
    ("fairness.FaceQualityScore", "source_video__campaign", "count"),
    ("fairness.FaceQualityScore", "gallery_image__identity__campaign", "count"),
)

logger = logging.getLogger(__name__)

#: "rows" tables of which only some columns matter to reports: a flag's reason names the
#: figures of the latest test (rewritten when the organizer page stores the flags), but the
#: reports read only which kinds of flag a rater has.
ROW_COLUMNS: dict[str, tuple[str, ...]] = {"trials.RaterFlag": ("rater_id", "kind")}

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
        names = list(ROW_COLUMNS.get(model._meta.label, ())) or [
            f.attname
            for f in model._meta.concrete_fields
            if mode == "rows" or not isinstance(f, models.JSONField)
        ]
        return list(rows.order_by("pk").values_list(*names))
    aggregates = {"n": models.Count("pk"), "top": models.Max("pk")}
    for field in model._meta.concrete_fields:
        aggregate = _column_aggregate(field)
        if aggregate is not None:
            aggregates[field.attname] = aggregate
    return sorted((name, _stable(value)) for name, value in rows.aggregate(**aggregates).items())


def _column_aggregate(field):
    """A cheap aggregate of one column that an in-place edit of a row changes (issue 21):
    the latest date-time; the count of true booleans; the sum of numbers and of foreign-key
    ids; the summed length of text. None for JSON and other columns (not covered)."""
    name = field.attname
    if isinstance(field, models.DateTimeField):
        return models.Max(name)
    if isinstance(field, models.BooleanField):
        return models.Count("pk", filter=models.Q(**{name: True}))
    if isinstance(field, models.IntegerField | models.FloatField | models.DecimalField | models.ForeignKey):
        return models.Sum(name)
    if isinstance(field, models.CharField | models.TextField):
        return models.Sum(Length(name))
    return None


def _stable(value):
    """A float sum to 12 significant digits: the same rows summed in another order (a
    parallel plan) give the same fingerprint."""
    return f"{value:.12g}" if isinstance(value, float) else value


#: Packages whose code computes the reports: the cache outlives a process (a folder, Redis),
#: so a deployment of changed code must not read what the old code computed.
CODE_PACKAGES = ("evalsite", "automated", "trials", "fairness")
#: Settings (by prefix) that change what a report says (bootstrap resamples, score columns,
#: attention and outlier thresholds): part of the fingerprint for the same reason.
SETTING_PREFIXES = ("TRIALS_", "FAIRNESS_")


@functools.cache
def _code_digest() -> str:
    """SHA-256 of the source of :data:`CODE_PACKAGES` (read once per process)."""
    digest = hashlib.sha256()
    for package in CODE_PACKAGES:
        root = Path(importlib.import_module(package).__file__).parent
        for path in sorted(root.rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _report_settings() -> list:
    """The current values of the settings named by :data:`SETTING_PREFIXES`."""
    names = sorted(n for n in dir(settings) if n.startswith(SETTING_PREFIXES))
    return [(name, repr(getattr(settings, name))) for name in names]


def fingerprint(campaign) -> str:
    """Digest (hex) of every row the campaign's reports are computed from (:data:`DEPENDENCIES`),
    of the code that computes them and of the settings that change them (a new deployment
    or a changed setting never reads what was computed before it).

    About 20 queries; within a :func:`scope` read once per campaign.
    """
    memo = _SCOPE.get()
    pk = getattr(campaign, "pk", campaign)
    if memo is not None and pk in memo:
        return memo[pk]
    digest = hashlib.sha256(_code_digest().encode())
    digest.update(repr(_report_settings()).encode())
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


#: ``warmer(campaign)``: computes (inside :func:`warm`'s scope, so into the cache) what a
#: campaign's pages read first; registered by the apps (:func:`register_warmer`).
WARMERS: list[Callable] = []
#: ``preparer(campaign)``: stores what reports would otherwise measure and store on first
#: read (e.g. missing face quality), run by :func:`warm` before the fingerprint is read, so
#: the warmed reports are keyed by the rows the pages will see.
PREPARERS: list[Callable] = []


def register_warmer(warmer: Callable, *, prepares: bool = False) -> None:
    """Add ``warmer(campaign)`` to what :func:`warm` computes (once, however often called);
    ``prepares``: it writes rows the reports read (run first, outside the cache's scope)."""
    registry = PREPARERS if prepares else WARMERS
    if warmer not in registry:
        registry.append(warmer)


def warm(campaign) -> list[str]:
    """Compute every registered report of ``campaign`` into the cache (:data:`PREPARERS`,
    then :data:`WARMERS` in one :func:`scope`).

    A warmer that fails is logged and skipped (warming never fails what called it: the
    page computes that report itself). Returns the names of the warmers that failed.
    """
    failed = []

    def run(warmer):
        try:
            warmer(campaign)
        except Exception:  # a page shows the error when it computes the report itself
            logger.exception("warming %s of campaign %s failed", warmer.__qualname__, campaign.pk)
            failed.append(warmer.__qualname__)

    for preparer in PREPARERS:
        run(preparer)
    with scope():
        for warmer in WARMERS:
            run(warmer)
    return failed
