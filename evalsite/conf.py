"""Every setting a deployment can change, declared once: environment variable, type, default, doc.

``evalsite/settings.py`` (Django), ``evalsite/gunicorn_conf.py`` (the web server) and the
benchmarks read their values through :func:`value`; nothing else reads these environment
variables (the Django-free science cores excepted: they take plain arguments, and
``DEID_MODELS_DIR`` / the ffmpeg time-outs as fallbacks of their own, declared here so
they are documented, with the core's own defaults: ``automated/models_dir.py``,
``automated/video_timeouts.py``). The documentation's configuration page is generated from
:data:`SETTINGS` (``docs/hooks.py``), so a setting added here is documented by adding it.

A value that does not parse stops start-up with an ``ImproperlyConfigured`` error naming
the variable (typed reads: ``evalsite/env.py``).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from automated.models_dir import default_models_dir
from automated.video_timeouts import (
    DEFAULT_PROBE_TIMEOUT_S,
    DEFAULT_TRANSCODE_TIMEOUT_S,
    PROBE_TIMEOUT_ENV,
    TRANSCODE_TIMEOUT_ENV,
)
from evalsite import env

BASE_DIR = Path(__file__).resolve().parent.parent

#: How each ``kind`` is read from the environment (evalsite/env.py).
READERS: dict[str, Callable[..., Any]] = {
    "string": env.string,
    "boolean": env.boolean,
    "integer": env.integer,
    "strings": env.strings,
    "path": env.path,
    "json": env.json_value,
}

#: Sections of the configuration page, in order.
GROUPS = (
    "Security",
    "Folders",
    "Database",
    "Background work (Celery)",
    "Web server (gunicorn)",
    "Uploads and video checks",
    "Automated evaluation",
    "Human evaluation (trials)",
    "Fairness reports",
    "Benchmarks",
    "Tests",
)


@dataclass(frozen=True)
class Setting:
    """One environment variable.

    ``default`` is a value, or a function ``default(get)`` of other settings (``get(name)``
    returns another variable's value), e.g. ``$DEID_VAR_DIR/media``; ``default_doc`` then
    says in words what it is. ``setting`` names the Django setting it becomes (``None``:
    read by gunicorn, a benchmark, the tests or a science core's fallback).
    """

    env: str
    kind: str
    default: Any
    doc: str
    group: str
    setting: str | None = None
    minimum: int | None = None
    default_doc: str | None = None

    def __post_init__(self):
        if self.kind not in READERS:
            raise ValueError(f"{self.env}: unknown kind {self.kind!r} (one of {sorted(READERS)})")
        if self.group not in GROUPS:
            raise ValueError(f"{self.env}: unknown group {self.group!r}")
        if callable(self.default) and not self.default_doc:
            raise ValueError(f"{self.env}: a computed default needs default_doc")

    def shown_default(self) -> str:
        """The default as the documentation shows it (Markdown)."""
        if self.default_doc:
            return self.default_doc
        value = self.default
        if value is None or value == "" or value == []:
            return "unset"
        if isinstance(value, bool):
            return f"`{int(value)}`"
        if isinstance(value, list):
            return f"`{','.join(value)}`"
        return f"`{value}`"


def _cores_workers(get) -> int:
    return min(2 * (os.cpu_count() or 1) + 1, 8)


S = Setting
# fmt: off
SETTINGS: tuple[Setting, ...] = (
    # --- Security ---------------------------------------------------------------------
    S("DEID_DEBUG", "boolean", False, "`1`: Django's debug pages (settings, paths, environment) and static "
      "files from the apps; development only", "Security", "DEBUG"),
    S("DEID_SECRET_KEY", "string", "", "signs sessions, CSRF tokens and links; long and random in production",
      "Security", "SECRET_KEY",
      default_doc="the key in `$DEID_VAR_DIR/secret_key` (written by `make demo`, `python -m "
      "evalsite.secret_key PATH`); neither: refuses to start unless `DEID_DEBUG=1`"),
    S("DEID_SECRET_KEY_FALLBACKS", "strings", [], "old keys still accepted while a new `DEID_SECRET_KEY` "
      "rolls out", "Security", "SECRET_KEY_FALLBACKS"),
    S("DEID_ALLOWED_HOSTS", "strings", ["127.0.0.1", "localhost", "testserver"],
      "host names the site answers to (others get 400)", "Security", "ALLOWED_HOSTS"),
    S("DEID_CSRF_TRUSTED_ORIGINS", "strings", [], "`https://host` origins whose POSTs pass CSRF (the public "
      "name behind a TLS proxy)", "Security", "CSRF_TRUSTED_ORIGINS"),
    S("DEID_SECURE_PROXY_SSL_HEADER", "string", "", "header a TLS proxy sets for HTTPS requests, "
      "`X-Forwarded-Proto` (value `https`) or `Name=value`; only if the proxy always sets it",
      "Security", "SECURE_PROXY_SSL_HEADER"),
    S("DEID_SECURE_SSL_REDIRECT", "boolean", False, "redirect plain-HTTP requests to HTTPS", "Security",
      "SECURE_SSL_REDIRECT"),
    S("DEID_SECURE_HSTS_SECONDS", "integer", 0, "`Strict-Transport-Security` max-age (browsers use HTTPS "
      "only)", "Security", "SECURE_HSTS_SECONDS", minimum=0),
    S("DEID_SECURE_HSTS_INCLUDE_SUBDOMAINS", "boolean", False, "HSTS for every subdomain too", "Security",
      "SECURE_HSTS_INCLUDE_SUBDOMAINS"),
    S("DEID_SECURE_HSTS_PRELOAD", "boolean", False, "allow the domain on browsers' HSTS preload lists",
      "Security", "SECURE_HSTS_PRELOAD"),
    S("DEID_SESSION_COOKIE_SECURE", "boolean", lambda get: get("DEID_SECURE_SSL_REDIRECT"),
      "session cookie (and the rater's `deid_rater_key` cookie) over HTTPS only", "Security",
      "SESSION_COOKIE_SECURE", default_doc="= `DEID_SECURE_SSL_REDIRECT`"),
    S("DEID_CSRF_COOKIE_SECURE", "boolean", lambda get: get("DEID_SECURE_SSL_REDIRECT"),
      "CSRF cookie over HTTPS only", "Security", "CSRF_COOKIE_SECURE",
      default_doc="= `DEID_SECURE_SSL_REDIRECT`"),
    # --- Folders ----------------------------------------------------------------------
    S("DEID_VAR_DIR", "path", BASE_DIR / "var", "everything the site writes: SQLite database, media, caches, "
      "static files, demo data, reports, secret key", "Folders", "VAR_DIR", default_doc="`var/` in the checkout"),
    S("DEID_MEDIA_ROOT", "path", lambda get: get("DEID_VAR_DIR") / "media", "uploaded, masked and "
      "browser-copy videos, gallery stills (shared by web and workers)", "Folders", "MEDIA_ROOT",
      default_doc="`$DEID_VAR_DIR/media`"),
    S("DEID_CACHE_DIR", "path", lambda get: get("DEID_VAR_DIR") / "cache", "caches of automated runs "
      "(face crops, embeddings, poses, the clear side)", "Folders", "CACHE_DIR",
      default_doc="`$DEID_VAR_DIR/cache`"),
    S("DEID_STATIC_ROOT", "path", lambda get: get("DEID_VAR_DIR") / "static", "where `collectstatic` puts "
      "the admin's CSS/JS for WhiteNoise", "Folders", "STATIC_ROOT", default_doc="`$DEID_VAR_DIR/static`"),
    S("DEID_DATA_DIR", "path", BASE_DIR.parent / "shared" / "data", "the real public data (demo, tests, "
      "benchmarks)", "Folders", "DATA_DIR", default_doc="`../shared/data` beside the checkout"),
    S("DEID_MODELS_DIR", "path", lambda get: default_models_dir(), "model files placed on disk "
      "(read only; nothing is downloaded): InsightFace packs, the face classifiers; read by the science "
      "core's models-dir resolver, so library use sees it too", "Folders",
      default_doc="`../shared/models` beside the checkout"),
    # --- Database ---------------------------------------------------------------------
    S("DATABASE_URL", "string", "", "`postgres://user:pass@host:port/name` for PostgreSQL, or "
      "`sqlite:///path`", "Database", default_doc="SQLite `$DEID_VAR_DIR/db.sqlite3`"),
    S("DEID_DB_CONN_MAX_AGE", "integer", 0, "seconds a PostgreSQL connection is kept for the next request "
      "(0: one per request)", "Database", minimum=0),
    # --- Background work --------------------------------------------------------------
    S("CELERY_BROKER_URL", "string", "", "`redis://host:6379/0`: tasks go to Celery workers",
      "Background work (Celery)", "CELERY_BROKER_URL", default_doc="unset: background work runs in-process"),
    S("CELERY_RESULT_BACKEND", "string", "", "Celery result store (the site does not need one)",
      "Background work (Celery)", "CELERY_RESULT_BACKEND"),
    S("DEID_WORKER_CONCURRENCY", "integer", None, "processes per Celery worker", "Background work (Celery)",
      "CELERY_WORKER_CONCURRENCY", minimum=1, default_doc="one per CPU core"),
    S("DEID_TASK_TIME_LIMIT_S", "integer", 3600, "seconds one background task may run before its run is "
      "marked failed (hard kill 60 s later)", "Background work (Celery)", "CELERY_TASK_SOFT_TIME_LIMIT",
      minimum=1),
    S("DEID_BROKER_VISIBILITY_TIMEOUT_S", "integer", lambda get: get("DEID_TASK_TIME_LIMIT_S") + 60 + 300,
      "seconds before Redis redelivers a task no worker acknowledged (a dead worker's); keep it above the "
      "time limit", "Background work (Celery)", minimum=1, default_doc="task time limit + 360"),
    S("DEID_TASK_MAX_DELIVERIES", "integer", 3, "times one unit of a run (a video, an attack fold, the "
      "attack summary) may be started; a unit whose worker died that many times in it (SIGKILL, out of "
      "memory, a decoder crash) fails its run at the next delivery, naming it, instead of being "
      "redelivered forever", "Background work (Celery)", "DEID_TASK_MAX_DELIVERIES", minimum=1),
    S("DEID_RESUME_RUNS_ON_START", "boolean", True, "without a broker: each server process's first request "
      "resumes the automated runs whose process is gone (a server restarted during a run); the progress page "
      "and starting a run do it anyway", "Background work (Celery)", "DEID_RESUME_RUNS_ON_START"),
    # --- Web server -------------------------------------------------------------------
    S("DEID_WEB_BIND", "string", "127.0.0.1:8000", "gunicorn's address (`make serve`; `make demo` sets it "
      "from `DEMO_ADDRESS`)", "Web server (gunicorn)"),
    S("DEID_WEB_WORKERS", "integer", _cores_workers, "gunicorn worker processes", "Web server (gunicorn)",
      minimum=1, default_doc="2 x cores + 1, at most 8 (`make demo`: 2)"),
    S("DEID_WEB_THREADS", "integer", 4, "threads per gunicorn worker", "Web server (gunicorn)", minimum=1),
    S("DEID_WEB_CONNECTIONS", "integer", 32, "connections one gunicorn worker holds at once, idle keep-alive "
      "ones included: a worker at its limit leaves new connections to the others, so a crowd of raters is "
      "spread over the processes and the cores (gunicorn's own default, 1000, let one of 4 workers take "
      "nearly all of 100 raters: 7 CPU minutes against 17 s for each of the others)", "Web server (gunicorn)",
      minimum=2),
    S("DEID_REPORT_CACHE_URL", "string", "", "where computed reports, summaries and plots are kept "
      "(`evalsite/report_cache.py`), shared by every process that reads them: `redis://host:6379/1` when "
      "web servers or workers run on several machines (a Redis database of its own, not the broker's: "
      "clearing the cache empties it), `locmem://` for a cache per process", "Web server (gunicorn)",
      "CACHES", default_doc="the folder `$DEID_VAR_DIR/report-cache` (shared by the processes of one machine)"),
    S("DEID_WARM_REPORTS", "boolean", True, "compute a campaign's reports into the cache when its last "
      "active automated run finishes (a background task), so the first page after a run is fast",
      "Web server (gunicorn)", "DEID_WARM_REPORTS"),
    S("DEID_WEB_TIMEOUT", "integer", 120, "seconds before a silent gunicorn worker is restarted (uploads of "
      "large zips arrive within one request)", "Web server (gunicorn)", minimum=1),
    # --- Uploads ----------------------------------------------------------------------
    S(PROBE_TIMEOUT_ENV, "integer", DEFAULT_PROBE_TIMEOUT_S, "seconds one ffmpeg or OpenCV probe of a "
      "video may take (upload checks: `probe_timeout`)", "Uploads and video checks", "DEID_FFMPEG_TIMEOUT_S",
      minimum=1),
    S(TRANSCODE_TIMEOUT_ENV, "integer", DEFAULT_TRANSCODE_TIMEOUT_S, "seconds one browser-copy transcode "
      "may take (uploads: `transcode_timeout`)", "Uploads and video checks", "DEID_TRANSCODE_TIMEOUT_S",
      minimum=1),
    S("DEID_UPLOAD_MAX_ZIP_ENTRIES", "integer", 2000, "entries (files and folders) one uploaded zip may "
      "hold; more fails the upload (`too_many_entries`)", "Uploads and video checks",
      "DEID_UPLOAD_MAX_ZIP_ENTRIES", minimum=1),
    S("DEID_UPLOAD_MAX_COMPRESSION_RATIO", "integer", 100, "times its compressed size a zip member over "
      "1 MiB may expand to (`compression_ratio_too_high`; compressed video stays near 1x, raise it for "
      "uncompressed video)", "Uploads and video checks", "DEID_UPLOAD_MAX_COMPRESSION_RATIO", minimum=1),
    S("DEID_DESCRIPTION_PDF_MAX_BYTES", "integer", 10 * 1024**2, "bytes a run's system description PDF "
      "may have (`pdf_too_large`)", "Uploads and video checks", "DEID_DESCRIPTION_PDF_MAX_BYTES", minimum=1),
    # --- Automated evaluation ---------------------------------------------------------
    S("DEID_WORKERS", "integer", lambda get: os.cpu_count() or 1, "processes that execute an automated "
      "run's videos and attack folds without a broker (the embedded default; models load once per process); "
      "`1`: in the calling process",
      "Automated evaluation", "DEID_WORKERS", minimum=1, default_doc="the machine's cores"),
    S("DEID_TORCH_THREADS", "integer", None, "threads of the PyTorch face models (`dlib_resnet`, `mmod`) in "
      "automated runs", "Automated evaluation", "TORCH_NUM_THREADS", minimum=1,
      default_doc="PyTorch's default (one per core)"),
    S("DEID_VERBOSE", "boolean", False, "`1`: keep the start-up lines native libraries print to standard "
      "error (MediaPipe's TFLite and absl warnings, e.g. `Feedback manager requires a model with a single "
      "signature inference`); silenced otherwise (`automated/native_logs.py`)", "Automated evaluation"),
    # --- Human evaluation -------------------------------------------------------------
    S("TRIALS_PER_SESSION", "integer", 20, "evaluated trials per rating session (practice trials come on "
      "top)", "Human evaluation (trials)", "TRIALS_PER_SESSION", minimum=1),
    S("TRIALS_PRACTICE", "integer", 2, "practice trials (with feedback) at the start of a session",
      "Human evaluation (trials)", "TRIALS_PRACTICE", minimum=0),
    S("TRIALS_PRACTICE_FACES", "path", lambda get: get("DEID_DATA_DIR") / "faces" / "london_face_set",
      "the Face Research Lab London Set folder: practice people (never evaluated) that `manage.py "
      "add_practice_faces` gives a campaign without imported practice material", "Human evaluation (trials)",
      "TRIALS_PRACTICE_FACES", default_doc="`faces/london_face_set` in `DEID_DATA_DIR`"),
    S("TRIALS_FACE_SIZE_PX", "integer", 160, "side of the face crops raters see, in pixels",
      "Human evaluation (trials)", "TRIALS_FACE_SIZE_PX", minimum=32),
    S("TRIALS_CLAIM_TIMEOUT_S", "integer", 180, "seconds an unanswered trial keeps its item reserved after "
      "its page's last heartbeat (the page sends one every quarter of this): a closed page or a hoarder's "
      "script frees it within minutes", "Human evaluation (trials)", "TRIALS_CLAIM_TIMEOUT_S", minimum=1),
    S("TRIALS_CLAIM_MAX_HOLD_S", "integer", 30 * 60, "heartbeats renew a claim for at most this many seconds "
      "after its page was first shown", "Human evaluation (trials)", "TRIALS_CLAIM_MAX_HOLD_S", minimum=1),
    S("TRIALS_OVERASSIGN", "boolean", True, "when open claims hold every item still missing responses, new "
      "raters get those items too (first answers count): a study is never full while responses are "
      "missing; `0`: they wait for claims to lapse", "Human evaluation (trials)", "TRIALS_OVERASSIGN"),
    S("TRIALS_MAX_SESSIONS_PER_BROWSER", "integer", 1, "participant codes that may join one campaign from one "
      "browser (its server-issued cookie); codes sharing a browser are flagged and excluded; `0`: no cap, "
      "no flag",
      "Human evaluation (trials)", "TRIALS_MAX_SESSIONS_PER_BROWSER", minimum=0),
    S("TRIALS_MAX_SESSIONS_PER_ADDRESS", "integer", 3, "participant codes that may join one campaign from one "
      "network address (an IPv6 /64); codes sharing one are flagged and excluded; `0`: addresses not "
      "counted (no cap, no flag; a lab behind one address)",
      "Human evaluation (trials)", "TRIALS_MAX_SESSIONS_PER_ADDRESS", minimum=0),
    S("TRIALS_MAX_SESSIONS_PER_NETWORK", "integer", lambda get: 4 * get("TRIALS_MAX_SESSIONS_PER_ADDRESS"),
      "participant codes that may join one campaign from one network: an IPv6 /48 (a home or site gets "
      "a /48 or /56 of many /64s, each of which counts as one address) or an IPv4 /24; codes sharing a "
      "/48 are flagged and excluded, codes sharing a /24 only capped (a campus or carrier pool) and "
      "tested pooled for implausible accuracy (trials.integrity.network_tests); `0`: no cap, no flag",
      "Human evaluation (trials)", "TRIALS_MAX_SESSIONS_PER_NETWORK", minimum=0,
      default_doc="4 x `TRIALS_MAX_SESSIONS_PER_ADDRESS` (12)"),
    S("TRIALS_MAX_OPEN_CLAIMS_PER_BROWSER", "integer", 1, "unanswered evaluated trials held at once by one "
      "browser's sessions (a new claim releases the oldest beyond it)", "Human evaluation (trials)",
      "TRIALS_MAX_OPEN_CLAIMS_PER_BROWSER", minimum=1),
    S("TRIALS_MAX_OPEN_CLAIMS_PER_ADDRESS", "integer", 3, "unanswered evaluated trials held at once by one "
      "network address's sessions", "Human evaluation (trials)", "TRIALS_MAX_OPEN_CLAIMS_PER_ADDRESS",
      minimum=1),
    S("TRIALS_TRUSTED_PROXIES", "integer", 0, "proxies in front of the site whose `X-Forwarded-For` entries "
      "are trusted to name the rater's address (`0`: the TCP peer is the rater; behind one nginx: `1`)",
      "Human evaluation (trials)", "TRIALS_TRUSTED_PROXIES", minimum=0),
    S("TRIALS_OUTLIER_ALPHA", "json", 0.01, "family-wise error rate (Holm) of the per-rater test of accuracy "
      "(evaluated trials and attention checks) against the crowd's; raters below it are flagged", "Human evaluation (trials)",
      "TRIALS_OUTLIER_ALPHA"),
    S("TRIALS_ADDRESS_HASH_KEY", "string", "", "key of the HMAC that stores raters' network addresses "
      "(addresses themselves are never stored)", "Human evaluation (trials)", "TRIALS_ADDRESS_HASH_KEY",
      default_doc="`DEID_SECRET_KEY`"),
    S("TRIALS_PLAUSIBILITY_CHECKS", "boolean", True, "flag and exclude raters whose answers could not follow "
      "looking (faces or video never fetched, too fast, too little video sent); `0` only for scripted load "
      "tests", "Human evaluation (trials)", "TRIALS_PLAUSIBILITY_CHECKS"),
    S("TRIALS_MIN_VIEW_MS", "integer", 1000, "floor in milliseconds from the first request of a trial's "
      "video to its answer below which the answer is implausible", "Human evaluation (trials)",
      "TRIALS_MIN_VIEW_MS", minimum=0),
    S("TRIALS_MIN_WATCH_PERCENT", "integer", 80, "the answer must also come at least this percent of the "
      "clip's duration after the video's first request (a 3 s clip: 2.4 s)", "Human evaluation (trials)",
      "TRIALS_MIN_WATCH_PERCENT", minimum=0),
    S("TRIALS_MIN_VIDEO_PERCENT", "integer", 50, "percent of a trial's video bytes that must have been sent "
      "before its answer", "Human evaluation (trials)", "TRIALS_MIN_VIDEO_PERCENT", minimum=0),
    S("TRIALS_MAX_ATTENTION_FAILURES", "integer", 2, "failed attention checks that exclude a rater (one slip "
      "does not)", "Human evaluation (trials)", "TRIALS_MAX_ATTENTION_FAILURES", minimum=1),
    # --- Fairness ---------------------------------------------------------------------
    S("FAIRNESS_SCORE_COLUMNS", "json", None, "JSON list of `{\"column\", \"favourable\", \"mdg_step\", "
      "\"description\"}`: the per-video scores whose fairness is reported", "Fairness reports",
      "FAIRNESS_SCORE_COLUMNS", default_doc="the report's `DEFAULT_SCORE_COLUMNS`"),
    S("FAIRNESS_BOOTSTRAP_RESAMPLES", "integer", 200, "bootstrap resamples of each fairness interval",
      "Fairness reports", "FAIRNESS_BOOTSTRAP_RESAMPLES", minimum=1),
    S("FAIRNESS_BOOTSTRAP_SEED", "integer", 0, "seed of those resamples", "Fairness reports",
      "FAIRNESS_BOOTSTRAP_SEED"),
    S("FAIRNESS_COMPUTE_QUALITY_ON_DEMAND", "boolean", True, "measure missing face quality scores when a "
      "fairness report is built", "Fairness reports", "FAIRNESS_COMPUTE_QUALITY_ON_DEMAND"),
    # --- Benchmarks -------------------------------------------------------------------
    S("DEID_BENCH_REPEATS", "integer", 1, "`python -m benchmarks celery_workers` only: how many times each "
      "worker count is measured (alternating)", "Benchmarks", minimum=1),
    S("DEID_BENCH_ATTACK_RECOGNIZERS", "strings", [], "`python -m benchmarks attack` / `attack_baselines` "
      "only: comma-separated recognizers to time", "Benchmarks", default_doc="the benchmark's own list"),
    S("DEID_BENCH_ATTACK_BASELINES", "strings", [], "`python -m benchmarks attack_baselines` only: "
      "comma-separated baselines to attack", "Benchmarks", default_doc="every baseline method"),
    S("DEID_BENCH_HYPOTHESES_RECOGNIZERS", "strings", [], "`python -m benchmarks attack_hypotheses` only: "
      "comma-separated recognizers (add `dlib_finetuned`: about 20 CPU s per fit of 280 ORL crops)", "Benchmarks",
      default_doc="eigenfaces, lbph, cnn, dlib_svm"),
    S("DEID_BENCH_HYPOTHESES_BASELINES", "strings", [], "`python -m benchmarks attack_hypotheses` only: "
      "comma-separated baselines", "Benchmarks", default_doc="every baseline but identity"),
    S("DEID_BENCH_ATTACK_DIR", "path", Path(tempfile.gettempdir()) / "deid_bench_attack", "`python -m "
      "benchmarks attack` / `attack_baselines` only: where masked videos and crops are kept and reused "
      "between runs", "Benchmarks", default_doc="`deid_bench_attack` in the system's temporary folder"),
    # --- Tests ------------------------------------------------------------------------
    S("DEID_TEST_POSTGRES_URL", "string", "postgres://deid:deid@127.0.0.1:5432/postgres", "tests only: a "
      "PostgreSQL role that may create databases", "Tests"),
    S("DEID_TEST_REDIS_URL", "string", "redis://127.0.0.1:6379", "tests only: a Redis server", "Tests"),
    S("DEID_TEST_KILL_ON_VIDEO", "integer", None, "tests only (set by the poison-task ops test for its "
      "worker): a masked video id whose processing SIGKILLs the worker (`tests/ops/poison.py`)", "Tests"),
    S("DEID_TEST_KILL_LOG", "string", "", "tests only, with `DEID_TEST_KILL_ON_VIDEO`: the file each killed "
      "worker appends its process id to", "Tests"),
    S("DEID_TEST_KILL_TIMES", "integer", None, "tests only, with `DEID_TEST_KILL_ON_VIDEO`: SIGKILL only "
      "the first N times the video is processed (`tests/ops/poison.py`)", "Tests", default_doc="every time"),
    S("DEID_REQUIRE_SERVICES", "boolean", False, "tests only (set by `.ci/run`): a test that finds PostgreSQL "
      "or Redis missing fails instead of skipping", "Tests"),
    S("DEID_TEST_WORKER_VAR_DIR", "path", None, "tests only (set by tests/settings.py under pytest-xdist): "
      "the worker's own var folder, a marker that child processes keep the folder they were given", "Tests",
      default_doc="unset"),
    S("DEID_SHOTS_DIR", "path", Path("/tmp/shots"), "tests only: where browser tests save their screenshots",
      "Tests"),
)
# fmt: on
del S

#: The declarations by environment variable.
DECLARED: dict[str, Setting] = {setting.env: setting for setting in SETTINGS}
if len(DECLARED) != len(SETTINGS):
    raise ImportError("evalsite.conf: a variable is declared twice")


def value(name: str) -> Any:
    """The value of the declared variable ``name``: its environment value, else its default.

    Raises
    ------
    KeyError
        ``name`` is not declared in :data:`SETTINGS` (declare it there first).
    django.core.exceptions.ImproperlyConfigured
        The environment's value does not parse (names the variable and what it must be).
    """
    try:
        setting = DECLARED[name]
    except KeyError:
        raise KeyError(f"{name} is not declared in evalsite/conf.py SETTINGS") from None
    default = setting.default(value) if callable(setting.default) else setting.default
    reader = READERS[setting.kind]
    if setting.kind == "integer":
        return reader(name, default, minimum=setting.minimum)
    return reader(name, default)


def markdown() -> str:
    """The configuration reference as Markdown: one table per group of :data:`SETTINGS`.

    The documentation's configuration page is this text (``docs/hooks.py`` writes it at
    build time), so it cannot drift from the declarations.
    """
    parts = []
    for group in GROUPS:
        rows = [s for s in SETTINGS if s.group == group]
        parts += [f"## {group}", "", "| variable | type | default | meaning | Django setting |"]
        parts.append("|---|---|---|---|---|")
        for s in rows:
            kind = s.kind + (f" >= {s.minimum}" if s.minimum is not None else "")
            django = f"`{s.setting}`" if s.setting else "(not one)"
            parts.append(f"| `{s.env}` | {kind} | {s.shown_default()} | {s.doc} | {django} |")
        parts.append("")
    return "\n".join(parts)
