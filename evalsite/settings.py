"""Django settings for deid-eval.

Everything a deployment can change is declared once in evalsite/conf.py (environment
variable, type, default, doc) and read here through ``conf.value``; the documentation's
configuration page is generated from those declarations. The defaults suit one machine:
SQLite file, in-process background tasks, local media folder, DEBUG off. A production
campaign sets the variables of the docs' "Running a campaign" (PostgreSQL, Redis, HTTPS
proxy).
"""

from urllib.parse import urlparse

from django.core.exceptions import ImproperlyConfigured

from evalsite.conf import BASE_DIR, value
from evalsite.secret_key import missing_key_message, read_secret_key

# Folders. Everything the site writes lives under VAR_DIR unless moved one by one (media
# on a filesystem shared with the Celery workers of other machines, for example).
VAR_DIR = value("DEID_VAR_DIR")
DATA_DIR = value("DEID_DATA_DIR")
# DEID_MODELS_DIR is not a Django setting: the science core's models-dir resolver reads it
# (evalsite/conf.py declares it), so the site and library use find the same model files.
# Media is never served by a public URL: every media response goes through a
# permission-checked view (DESIGN.md, security stance).
MEDIA_ROOT = value("DEID_MEDIA_ROOT")
MEDIA_URL = None
CACHE_DIR = value("DEID_CACHE_DIR")
STATIC_ROOT = value("DEID_STATIC_ROOT")
STATIC_URL = "static/"
VAR_DIR.mkdir(parents=True, exist_ok=True)  # SQLite cannot create its folder

# Security. DEBUG pages show settings, paths and the process environment: never on
# unless asked for.
DEBUG = value("DEID_DEBUG")
SECRET_KEY_FILE = VAR_DIR / "secret_key"
SECRET_KEY = value("DEID_SECRET_KEY") or read_secret_key(SECRET_KEY_FILE) or ""
if not SECRET_KEY and DEBUG:
    SECRET_KEY = "django-insecure-development-only-key-never-use-it-with-DEID_DEBUG-off"
# Without a key the settings still load, so `manage.py <command> --help` works on a fresh
# checkout; every command, the web server and the workers refuse to start, naming the fix
# (evalsite.secret_key.require_secret_key: a system check, wsgi.py, the Celery worker).
SECRET_KEY_MISSING = "" if SECRET_KEY else missing_key_message(SECRET_KEY_FILE)
# Old keys still accepted for signatures while a new DEID_SECRET_KEY rolls out.
SECRET_KEY_FALLBACKS = value("DEID_SECRET_KEY_FALLBACKS")
ALLOWED_HOSTS = value("DEID_ALLOWED_HOSTS")
# Behind a TLS-terminating proxy: the https://host origins browsers send (CSRF checks them).
CSRF_TRUSTED_ORIGINS = value("DEID_CSRF_TRUSTED_ORIGINS")
CSRF_FAILURE_VIEW = "evalsite.errors.csrf_failure"


def _proxy_ssl_header(value: str) -> tuple[str, str] | None:
    """``X-Forwarded-Proto`` (value ``https``) or ``Header-Name=value`` -> Django's META pair."""
    if not value:
        return None
    name, _, expected = value.partition("=")
    meta = "HTTP_" + name.strip().upper().replace("-", "_")
    return meta, expected.strip() or "https"


# Only set it when the proxy always sets (or strips) this header: Django then trusts it.
SECURE_PROXY_SSL_HEADER = _proxy_ssl_header(value("DEID_SECURE_PROXY_SSL_HEADER"))
SECURE_SSL_REDIRECT = value("DEID_SECURE_SSL_REDIRECT")
SECURE_HSTS_SECONDS = value("DEID_SECURE_HSTS_SECONDS")
SECURE_HSTS_INCLUDE_SUBDOMAINS = value("DEID_SECURE_HSTS_INCLUDE_SUBDOMAINS")
SECURE_HSTS_PRELOAD = value("DEID_SECURE_HSTS_PRELOAD")
# A site that redirects to HTTPS sends its cookies over HTTPS only, unless told otherwise.
SESSION_COOKIE_SECURE = value("DEID_SESSION_COOKIE_SECURE")
CSRF_COOKIE_SECURE = value("DEID_CSRF_COOKIE_SECURE")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "evalsite",
    "automated.django_app",
    "trials",
    "fairness.django_app",
    "evalsite.portal",  # where the apps meet (URL root, API router, leaderboard, team pages, demo)
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "evalsite.report_cache.ReportCacheMiddleware",  # reports cached per request by their inputs
]

ROOT_URLCONF = "evalsite.portal.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "evalsite.wsgi.application"


def _database_from_url(url: str) -> dict:
    """Translate ``DATABASE_URL`` into a Django DATABASES entry (sqlite or postgres)."""
    parsed = urlparse(url)
    if parsed.scheme == "sqlite":
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": parsed.path or ":memory:"}
    if parsed.scheme in {"postgres", "postgresql"}:
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": parsed.path.lstrip("/"),
            "USER": parsed.username or "",
            "PASSWORD": parsed.password or "",
            "HOST": parsed.hostname or "",
            "PORT": str(parsed.port or ""),
            # Seconds a web/worker thread keeps its connection (0: one per request).
            "CONN_MAX_AGE": value("DEID_DB_CONN_MAX_AGE"),
            "CONN_HEALTH_CHECKS": True,
        }
    raise ImproperlyConfigured(f"DATABASE_URL scheme must be sqlite or postgres, got {parsed.scheme!r}")


DATABASE_URL = value("DATABASE_URL")
DATABASES = {
    "default": _database_from_url(DATABASE_URL)
    if DATABASE_URL
    else {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": VAR_DIR / "db.sqlite3",
        # Many raters at once on SQLite: wait for the write lock instead of failing; WAL
        # lets readers run during a write and makes commits cheap (trials benchmark).
        "OPTIONS": {
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL",
        },
    }
}


def _report_cache(url: str) -> dict:
    """``CACHES["default"]`` from ``DEID_REPORT_CACHE_URL``: the computed reports
    (``evalsite.report_cache``), shared by the processes that read them (each gunicorn worker
    would otherwise compute every report once)."""
    scheme = urlparse(url).scheme
    if not url:
        # One file per entry; a campaign's pages keep a few hundred, old fingerprints' entries
        # are culled (a third at a time) beyond MAX_ENTRIES.
        return {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": VAR_DIR / "report-cache",
            "OPTIONS": {"MAX_ENTRIES": 5000},
        }
    if scheme in {"redis", "rediss", "unix"}:
        return {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url}
    if scheme == "locmem":
        return {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    raise ImproperlyConfigured(
        f"DEID_REPORT_CACHE_URL={url!r}: must be empty (a folder under DEID_VAR_DIR), redis://host:port/db "
        "or locmem://"
    )


CACHES = {"default": _report_cache(value("DEID_REPORT_CACHE_URL"))}
# Compute a campaign's reports into the cache when its last active run finishes.
DEID_WARM_REPORTS = value("DEID_WARM_REPORTS")

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# WhiteNoise serves STATIC_ROOT (filled by `manage.py collectstatic`) from the web
# process, compressed; with DEBUG on it also finds app static files without collecting.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 50 * 1024 * 1024
# Seconds one ffmpeg/OpenCV probe (upload checks) and one browser-copy transcode may take.
DEID_FFMPEG_TIMEOUT_S = value("DEID_FFMPEG_TIMEOUT_S")
DEID_TRANSCODE_TIMEOUT_S = value("DEID_TRANSCODE_TIMEOUT_S")
# Zip-bomb limits of an upload: entries (files and folders) in one zip, and how many times
# its compressed size one member may expand to (video hardly compresses: about 1x).
DEID_UPLOAD_MAX_ZIP_ENTRIES = value("DEID_UPLOAD_MAX_ZIP_ENTRIES")
DEID_UPLOAD_MAX_COMPRESSION_RATIO = value("DEID_UPLOAD_MAX_COMPRESSION_RATIO")
# Largest system description PDF of a run (evalsite.phases.check_description_pdf).
DEID_DESCRIPTION_PDF_MAX_BYTES = value("DEID_DESCRIPTION_PDF_MAX_BYTES")
# PyTorch threads of the face models in automated runs (unset: PyTorch's default, one per core).
TORCH_NUM_THREADS = value("DEID_TORCH_THREADS")
# Processes of the embedded executor's pool (None: the machine's cores; automated/django_app/embedded.py).
DEID_WORKERS = value("DEID_WORKERS")

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LOGIN_URL = "/admin/login/"

# Human evaluation (trials/): session length, practice trials, face crop size, how long
# a claimed, unanswered trial keeps its item reserved without heartbeats, and Sybil caps.
TRIALS_PER_SESSION = value("TRIALS_PER_SESSION")
TRIALS_PRACTICE = value("TRIALS_PRACTICE")
TRIALS_PRACTICE_FACES = value("TRIALS_PRACTICE_FACES")
TRIALS_FACE_SIZE_PX = value("TRIALS_FACE_SIZE_PX")
TRIALS_CLAIM_TIMEOUT_S = value("TRIALS_CLAIM_TIMEOUT_S")
TRIALS_CLAIM_MAX_HOLD_S = value("TRIALS_CLAIM_MAX_HOLD_S")
TRIALS_OVERASSIGN = value("TRIALS_OVERASSIGN")
# Sybil resistance (trials/integrity.py).
TRIALS_MAX_SESSIONS_PER_BROWSER = value("TRIALS_MAX_SESSIONS_PER_BROWSER")
TRIALS_MAX_SESSIONS_PER_ADDRESS = value("TRIALS_MAX_SESSIONS_PER_ADDRESS")
TRIALS_MAX_SESSIONS_PER_NETWORK = value("TRIALS_MAX_SESSIONS_PER_NETWORK")
TRIALS_MAX_OPEN_CLAIMS_PER_BROWSER = value("TRIALS_MAX_OPEN_CLAIMS_PER_BROWSER")
TRIALS_MAX_OPEN_CLAIMS_PER_ADDRESS = value("TRIALS_MAX_OPEN_CLAIMS_PER_ADDRESS")
TRIALS_TRUSTED_PROXIES = value("TRIALS_TRUSTED_PROXIES")
TRIALS_ADDRESS_HASH_KEY = value("TRIALS_ADDRESS_HASH_KEY")
TRIALS_OUTLIER_ALPHA = value("TRIALS_OUTLIER_ALPHA")
if not isinstance(TRIALS_OUTLIER_ALPHA, int | float) or not 0 < TRIALS_OUTLIER_ALPHA < 1:
    raise ImproperlyConfigured(
        f"TRIALS_OUTLIER_ALPHA={TRIALS_OUTLIER_ALPHA!r}: must be a number between 0 and 1"
    )
# Plausibility checks of answers (trials/plausibility.py); off only for scripted load tests.
TRIALS_PLAUSIBILITY_CHECKS = value("TRIALS_PLAUSIBILITY_CHECKS")
TRIALS_MIN_VIEW_MS = value("TRIALS_MIN_VIEW_MS")
TRIALS_MIN_VIDEO_PERCENT = value("TRIALS_MIN_VIDEO_PERCENT")
TRIALS_MIN_WATCH_PERCENT = value("TRIALS_MIN_WATCH_PERCENT")
TRIALS_MAX_ATTENTION_FAILURES = value("TRIALS_MAX_ATTENTION_FAILURES")

# Fairness reports (fairness/django_app/report.py): score columns (None: its
# DEFAULT_SCORE_COLUMNS), bootstrap intervals, face quality measured when missing.
FAIRNESS_SCORE_COLUMNS = value("FAIRNESS_SCORE_COLUMNS")
FAIRNESS_BOOTSTRAP_RESAMPLES = value("FAIRNESS_BOOTSTRAP_RESAMPLES")
FAIRNESS_BOOTSTRAP_SEED = value("FAIRNESS_BOOTSTRAP_SEED")
FAIRNESS_COMPUTE_QUALITY_ON_DEMAND = value("FAIRNESS_COMPUTE_QUALITY_ON_DEMAND")

REST_FRAMEWORK = {
    # JSON bodies through evalsite.bodies: an undecodable or absurdly nested body is a 400.
    "DEFAULT_PARSER_CLASSES": [
        "evalsite.bodies.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAdminUser"],
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Basic first: an unauthenticated API client gets 401 with a login challenge.
        "rest_framework.authentication.BasicAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
}

# Background work: Celery with a broker when configured, otherwise eager in-process.
CELERY_BROKER_URL = value("CELERY_BROKER_URL")
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
if CELERY_TASK_ALWAYS_EAGER:
    # Eager .delay() still takes a producer from the pool: an in-memory broker with a host
    # keeps Celery from falling back to amqp:// and warning "No hostname was supplied".
    CELERY_BROKER_URL = "memory://localhost/"
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_RESULT_BACKEND = value("CELERY_RESULT_BACKEND") or None
# Run tasks survive a dead worker (automated/django_app/lifecycle.py): acknowledged only
# after they ran, so a worker killed mid-task (SIGKILL, OOM, lost machine) leaves its task
# to be redelivered; each worker process reserves one task at a time, so the per-video
# tasks of a run spread over all workers.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Seconds one task may run: at the soft limit its run is marked failed with the reason.
CELERY_TASK_SOFT_TIME_LIMIT = value("DEID_TASK_TIME_LIMIT_S")
CELERY_TASK_TIME_LIMIT = CELERY_TASK_SOFT_TIME_LIMIT + 60
# Times one unit of a run (a video, a fold, the summary) may be started: a unit whose worker
# died this many times in it (SIGKILL, out of memory, a crash in a decoder) fails its run
# at the next delivery instead of being redelivered forever (automated/django_app/lifecycle.py).
DEID_TASK_MAX_DELIVERIES = value("DEID_TASK_MAX_DELIVERIES")
# Without a broker: a server process's first request resumes the runs whose process is gone
# (automated/django_app/embedded.py).
DEID_RESUME_RUNS_ON_START = value("DEID_RESUME_RUNS_ON_START")
# Redis redelivers a task not acknowledged within this many seconds (keep it above the
# task time limit, or long tasks run twice), looking for such tasks every <= 10 s.
_VISIBILITY_TIMEOUT_S = value("DEID_BROKER_VISIBILITY_TIMEOUT_S")
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": _VISIBILITY_TIMEOUT_S,
    "unacked_restore_interval": min(10, max(1, _VISIBILITY_TIMEOUT_S // 10)),
    "unacked_restore_throttle": 1,
}
# Worker processes per `celery worker` (unset: one per CPU core).
CELERY_WORKER_CONCURRENCY = value("DEID_WORKER_CONCURRENCY")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"without_traceback": {"()": "evalsite.log_filters.WithoutTraceback"}},
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        "deid": {"level": "INFO"},
        # A Host header outside ALLOWED_HOSTS: one line ("Invalid HTTP_HOST header: ..."), not
        # a traceback per request.
        "django.security.DisallowedHost": {"filters": ["without_traceback"]},
    },
}
