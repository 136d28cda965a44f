"""A random Django secret key stored in a private file, for local use without configuration.

``settings.py`` takes the key from ``DEID_SECRET_KEY`` or, when that is unset, from
``$DEID_VAR_DIR/secret_key``; with neither (and ``DEID_DEBUG`` off) the site refuses to
start (:func:`require_secret_key`: every management command but ``--help``, the web server,
the Celery workers). ``make demo`` (and ``make bench``) run ``python -m evalsite.secret_key PATH`` first,
which writes a new key to ``PATH`` once (mode 0600) and never replaces an existing one,
so sessions and signed links stay valid across restarts. A production deployment sets
``DEID_SECRET_KEY`` instead (docs/campaign.md, "Running a campaign").
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from django.core.management.utils import get_random_secret_key


def missing_key_message(path: Path) -> str:
    """What to do when there is no key: ``DEID_SECRET_KEY``, a key file at ``path``, or debug mode."""
    return (
        "No secret key. Production: set DEID_SECRET_KEY to a long random string "
        "(docs, 'Running a campaign'). One machine: run "
        f"`python -m evalsite.secret_key {path}` once to store a random key "
        "there (make demo does). Development only: DEID_DEBUG=1."
    )


def require_secret_key() -> None:
    """Refuse to go on without a secret key.

    Raises
    ------
    django.core.exceptions.ImproperlyConfigured
        The settings found no key (``settings.SECRET_KEY_MISSING`` says what to do).
    """
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured

    if getattr(settings, "SECRET_KEY_MISSING", ""):
        raise ImproperlyConfigured(settings.SECRET_KEY_MISSING)


def check_secret_key(app_configs=None, **kwargs) -> list:
    """System check (registered by evalsite.apps): an error without a secret key, so every
    management command that runs checks refuses to start, while ``--help`` still works."""
    from django.conf import settings
    from django.core.checks import Error

    problem = getattr(settings, "SECRET_KEY_MISSING", "")
    return [Error(problem, id="evalsite.E001")] if problem else []


def read_secret_key(path: Path) -> str | None:
    """The key stored at ``path``, or None when the file is absent or empty."""
    try:
        key = Path(path).read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    return key or None


def ensure_secret_key(path: Path) -> bool:
    """Write a new random key (50 characters) to ``path`` unless it holds one; True if written."""
    path = Path(path)
    if read_secret_key(path):
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # also when an empty file with wider permissions was there
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(get_random_secret_key() + "\n")
    return True


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m evalsite.secret_key PATH")
    target = Path(sys.argv[1])
    print(f"{target}: {'new secret key written' if ensure_secret_key(target) else 'secret key kept'}")
