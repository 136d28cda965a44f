"""Django settings for deid-eval.

Embedded defaults (SQLite file, in-process tasks, local media folder) need no
configuration; every default can be overridden by an environment variable:

``DEID_SECRET_KEY``, ``DEID_DEBUG``, ``DEID_ALLOWED_HOSTS`` (comma-separated),
``DATABASE_URL`` (``sqlite:///path`` or ``postgres://user:pass@host:port/name``),
``DEID_VAR_DIR`` (database, media and caches; default ``var/`` in the checkout),
``DEID_DATA_DIR`` (the real public data; default ``../shared/data`` beside the checkout),
``CELERY_BROKER_URL`` (unset: tasks run in-process).
"""
import os
from pathlib import Path
from urllib.parse import urlparse

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("DEID_VAR_DIR", BASE_DIR / "var")).resolve()
DATA_DIR = Path(os.environ.get("DEID_DATA_DIR", BASE_DIR.parent / "shared" / "data")).resolve()
VAR_DIR.mkdir(parents=True, exist_ok=True)  # SQLite cannot create its folder

SECRET_KEY = os.environ.get("DEID_SECRET_KEY", "dev-only-insecure-key-change-me-in-production")
DEBUG = os.environ.get("DEID_DEBUG", "1") == "1"
ALLOWED_HOSTS = os.environ.get("DEID_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",")

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
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "evalsite.urls"

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
        }
    raise ValueError(f"DATABASE_URL scheme must be sqlite or postgres, got {parsed.scheme!r}")


DATABASES = {
    "default": _database_from_url(os.environ["DATABASE_URL"])
    if os.environ.get("DATABASE_URL")
    else {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": VAR_DIR / "db.sqlite3",
        # Many raters at once on SQLite: wait for the write lock instead of failing; WAL
        # lets readers run during a write and makes commits cheap (trials benchmark).
        "OPTIONS": {
            "timeout": 30, "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL",
        },
    }
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
# Media is never served by a public URL: every media response goes through a
# permission-checked view (DESIGN.md, security stance).
MEDIA_ROOT = VAR_DIR / "media"
MEDIA_URL = None
CACHE_DIR = VAR_DIR / "cache"

FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 50 * 1024 * 1024

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LOGIN_URL = "/admin/login/"

REST_FRAMEWORK = {
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAdminUser"],
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Basic first: an unauthenticated API client gets 401 with a login challenge.
        "rest_framework.authentication.BasicAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
}

# Background work: Celery with a broker when configured, otherwise eager in-process.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "")
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
if CELERY_TASK_ALWAYS_EAGER:
    # Eager .delay() still takes a producer from the pool: an in-memory broker with a host
    # keeps Celery from falling back to amqp:// and warning "No hostname was supplied".
    CELERY_BROKER_URL = "memory://localhost/"
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND", None)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {"deid": {"level": "INFO"}},
}
