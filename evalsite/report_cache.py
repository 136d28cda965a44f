"""Reports, summaries, leaderboards and plots cached by what they are computed from (issue 21).

A campaign's reports are pure functions of its rows: catalogue (campaign, identities,
gallery, source and masked videos, teams, submissions), runs and their results, raters,
items and responses. :func:`fingerprint` reads a digest of those rows in a few
aggregate queries (the rows themselves for the small, editable tables; count, highest
id and one aggregate per column for the large ones), so a result written, a run that
moves on, a file replaced, a role changed, a row edited in place or a rater excluded
changes it.

Pending and running ("active") runs are left out of the fingerprint, and so are the rows
their results so far add: the reports read completed runs only, so a run that is queued
or moves on video by video does not recompute every report of the campaign (the team's
submission page took 7.7-15 s on the demo's first request while any run was under way).
What reads an active run's state (a section's "running: 2/3 videos", a part's progress
line) says so with :func:`reads_progress`; :func:`cached` then keys that value by the
state of the active runs it read as well (:func:`progress_fingerprint`: of one submission's
runs, or of the campaign's), and so is every cached value computed from it. Another
submission's run moving on changes neither key.
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
from django.db import connections, models, router
from django.db.models import Value
from django.db.models.functions import Length

#: (model label, lookup from the model to the campaign, "rows" | "runs" | "count").
#: "rows": every column of every row (small tables an organizer edits: identities, videos,
#: labels, teams, raters, flags); "runs": every column but the JSON ones (written with the
#: status) of the runs that are not active (:data:`ACTIVE_STATUSES`; a run model has
#: ``status`` and ``submission``); "count": row count, highest id and one aggregate per column (large tables, rows
#: added by runs and raters): the latest date-time, the count of true booleans, the sum of
#: numbers and foreign-key ids, the summed length of text (:func:`_column_aggregate`), so
#: an in-place edit of a row (an item's target count, a superseded item, a re-measured face
#: quality, a still check) changes it too. Not covered: a JSON column edited in place, or
#: edits that leave every sum equal (a text changed to another of the same length); no code
#: edits those rows so (run results and responses are only added; admin shows them read-only).
#: A "count" table whose ``run`` points to a "runs" table counts the rows of runs that are
#: not active only (an active run's rows so far are :func:`progress_fingerprint`'s).
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

#: Statuses of a run that is queued or under way: left out of :func:`fingerprint`, covered by
#: :func:`progress_fingerprint` for what reads them (:func:`reads_progress`).
ACTIVE_STATUSES = ("pending", "running")
#: :func:`reads_progress` of every submission of the campaign.
EVERY_SUBMISSION = "*"

_SCOPE: contextvars.ContextVar[dict | None] = contextvars.ContextVar("report_cache_scope", default=None)
#: What the :func:`cached` computation under way read of active runs (submission ids or
#: :data:`EVERY_SUBMISSION`); None outside a computation.
_READS: contextvars.ContextVar[set | None] = contextvars.ContextVar("report_cache_reads", default=None)
TIMEOUT_S = 24 * 3600


def _model(label: str):
    try:
        return apps.get_model(label)
    except LookupError:  # an app that is not installed contributes nothing
        return None


def _run_models() -> set:
    """The models of the "runs" tables of :data:`DEPENDENCIES` (the installed ones)."""
    return {m for label, _, mode in DEPENDENCIES if mode == "runs" and (m := _model(label)) is not None}


def _run_field(model, run_models: set) -> str | None:
    """The name of ``model``'s foreign key to a run table, if it has one (a run's result rows)."""
    for field in model._meta.concrete_fields:
        if isinstance(field, models.ForeignKey) and field.related_model in run_models:
            return field.name
    return None


#: Stands for the campaign's id in the compiled queries of :func:`_part_query`.
_CAMPAIGN_PARAM = -7_351_928_413


def _part(model, lookup: str, mode: str, campaign_pk: int, run_models: set = frozenset()):
    """The rows ("rows", "runs") or the aggregates ("count") :data:`DEPENDENCIES` names for one
    table, as the database returns them (raw values: only compared, never shown)."""
    alias = router.db_for_read(model)
    sql, params, names = _part_query(
        model, lookup, mode, _run_field(model, run_models), alias, connections[alias].vendor
    )
    params = [campaign_pk if p == _CAMPAIGN_PARAM else p for p in params]
    with connections[alias].cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    if mode in ("rows", "runs"):
        return [tuple(row) for row in rows]
    return sorted((name, _stable(value)) for name, value in zip(names, rows[0] if rows else ()))


@functools.cache
def _part_query(model, lookup: str, mode: str, run_field: str | None, alias: str, vendor: str) -> tuple:
    """(SQL, parameters, column names) of :func:`_part`'s query on database ``alias``
    (of ``vendor``), compiled by the ORM once per process (the campaign's id is
    :data:`_CAMPAIGN_PARAM` among the parameters): compiling some 20 querysets on each
    request cost more than running them."""
    rows = model.objects.using(alias).filter(**{lookup: _CAMPAIGN_PARAM}).order_by()
    if mode == "runs":
        rows = rows.exclude(status__in=ACTIVE_STATUSES)
    elif mode == "count" and run_field is not None:
        rows = rows.exclude(**{f"{run_field}__status__in": ACTIVE_STATUSES})
    if mode in ("rows", "runs"):
        names = list(ROW_COLUMNS.get(model._meta.label, ())) or [
            f.attname
            for f in model._meta.concrete_fields
            if mode == "rows" or not isinstance(f, models.JSONField)
        ]
        query = rows.order_by("pk").values_list(*names)
    else:
        aggregates = {"n": models.Count("pk"), "top": models.Max("pk")}
        for field in model._meta.concrete_fields:
            aggregate = _column_aggregate(field)
            if aggregate is not None:
                aggregates[f"agg_{field.attname}"] = aggregate
        # Grouped by a constant: no GROUP BY, one row of aggregates (what .aggregate() runs).
        query = rows.annotate(_all=Value(1)).values("_all").annotate(**aggregates).values_list(*aggregates)
        names = [name.removeprefix("agg_") for name in aggregates]
    sql, params = query.query.get_compiler(using=alias).as_sql()
    return sql, tuple(params), tuple(names)


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
    or a changed setting never reads what was computed before it). Active runs and their
    rows are left out (:func:`progress_fingerprint`).

    About 20 queries; within a :func:`scope` read once per campaign.
    """
    memo = _SCOPE.get()
    pk = getattr(campaign, "pk", campaign)
    if memo is not None and pk in memo:
        return memo[pk]
    digest = hashlib.sha256(_code_digest().encode())
    digest.update(repr(_report_settings()).encode())
    run_models = _run_models()
    for label, lookup, mode in DEPENDENCIES:
        model = _model(label)
        if model is not None:
            digest.update(repr((label, lookup, _part(model, lookup, mode, pk, run_models))).encode())
    value = digest.hexdigest()
    if memo is not None:
        memo[pk] = value
    return value


def reads_progress(campaign, submission=None) -> None:
    """Say that the :func:`cached` computation under way reads the state of active runs
    (pending or running: status, progress counters, their result rows so far) of
    ``submission`` (an object or id; None: of every submission of ``campaign``).

    Call it before reading them: it reads their :func:`progress_fingerprint` then (once per
    :func:`scope`). The value is cached under that digest too, and so is every cached value
    computed from it (the reads carry up through nested :func:`cached` calls, also when the
    inner value comes from the cache). Outside a computation it does nothing.
    """
    reads = _READS.get()
    if reads is not None:
        read = EVERY_SUBMISSION if submission is None else getattr(submission, "pk", submission)
        _progress_of(getattr(campaign, "pk", campaign), read)
        reads.add(read)


def progress_fingerprint(campaign, reads) -> str:
    """Digest (hex) of the active runs of the submissions in ``reads`` (ids, or
    :data:`EVERY_SUBMISSION` for all of the campaign's): every column of each run row, and
    the count and highest id of each result table's rows of those runs.

    The campaign's active runs are read once per :func:`scope` (:func:`_active_runs`).
    """
    pk = getattr(campaign, "pk", campaign)
    if EVERY_SUBMISSION in reads:
        return _progress_of(pk, EVERY_SUBMISSION)
    parts = [(read, _progress_of(pk, read)) for read in sorted(reads)]
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def _progress_of(campaign_pk: int, read) -> str:
    """:func:`progress_fingerprint` of one submission (id) or of :data:`EVERY_SUBMISSION`."""
    runs, results = _active_runs(campaign_pk)
    digest = hashlib.sha256(repr(read).encode())
    for label, rows in runs.items():
        counts = results.get(label, {})
        mine = [
            (row[2], [(name, found.get(row[0])) for name, found in counts.items()])
            for row in rows
            if read == EVERY_SUBMISSION or row[1] == read
        ]
        digest.update(repr((label, mine)).encode())  # another submission's runs: no part of it
    return digest.hexdigest()


def _active_runs(campaign_pk: int) -> tuple[dict, dict]:
    """The campaign's active runs, ``{run label: [(id, submission id, every column), ...]}``,
    and their result rows, ``{run label: {result label: {run id: (count, highest id)}}}``.

    One query per run table, plus one per result table when a run is active; read once
    per :func:`scope`.
    """
    memo = _SCOPE.get()
    memo_key = ("active runs", campaign_pk)
    if memo is not None and memo_key in memo:
        return memo[memo_key]
    run_models = _run_models()
    runs, results = {}, {}
    for label, lookup, mode in DEPENDENCIES:
        model = _model(label)
        if model is None or mode != "runs":
            continue
        found = model.objects.filter(**{lookup: campaign_pk}, status__in=ACTIVE_STATUSES).order_by("pk")
        names = [f.attname for f in model._meta.concrete_fields]
        runs[label] = [(row[0], row[1], row[2:]) for row in found.values_list("pk", "submission_id", *names)]
        ids = [row[0] for row in runs[label]]
        for result_label, _, result_mode in DEPENDENCIES:
            result_model = _model(result_label)
            if result_model is None or result_mode != "count" or not ids:
                continue
            run = _run_field(result_model, run_models)
            if run is None or result_model._meta.get_field(run).related_model is not model:
                continue
            counts = (
                result_model.objects.filter(**{f"{run}__in": ids})
                .values_list(run)
                .annotate(n=models.Count("pk"), top=models.Max("pk"))
                .order_by()
            )
            results.setdefault(label, {})[result_label] = {row[0]: row[1:] for row in counts}
    value = (runs, results)
    if memo is not None:
        memo[memo_key] = value
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

    A value whose computation read active runs (:func:`reads_progress`) is stored under the
    :func:`progress_fingerprint` of those runs too: the entry under the fingerprint names
    what was read, the value sits under both digests. A re-computation with the same
    rows and the same state of the runs it read would read and return the same.
    """
    if _SCOPE.get() is None:
        return compute()
    pk = getattr(campaign, "pk", campaign)
    name = hashlib.sha256(repr((pk, key)).encode()).hexdigest()[:32]
    cache_key = f"deid-report:{pk}:{name}:{fingerprint(campaign)}"
    stored = cache.get(cache_key)
    if stored is not None:
        reads, value = pickle.loads(stored)
        if not reads:
            return value
        progress = cache.get(f"{cache_key}:{progress_fingerprint(campaign, reads)}")
        if progress is not None:
            _carry(reads)
            return pickle.loads(progress)
    token = _READS.set(set())
    try:
        value = compute()
        reads = frozenset(_READS.get())
    finally:
        _READS.reset(token)
    if reads:
        cache.set(cache_key, pickle.dumps((reads, None)), TIMEOUT_S)
        cache.set(f"{cache_key}:{progress_fingerprint(campaign, reads)}", pickle.dumps(value), TIMEOUT_S)
        _carry(reads)
    else:
        cache.set(cache_key, pickle.dumps((reads, value)), TIMEOUT_S)
    return value


def _carry(reads) -> None:
    """What a nested value read of active runs counts as read by the computation around it."""
    outer = _READS.get()
    if outer is not None:
        outer.update(reads)


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
