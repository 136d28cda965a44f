"""Settings for the test run: the project's own settings plus a throwaway secret key.

With ``DEID_DEBUG`` off (the default) the site refuses to start without a secret key;
the test run makes one up. It goes into ``os.environ`` so the servers and commands the
tests start as child processes (gunicorn, Celery workers, ``manage.py``) share it.
"""

import os
import secrets
from pathlib import Path

os.environ.setdefault("DEID_SECRET_KEY", "tests-only-" + secrets.token_urlsafe(40))

# Under pytest-xdist (`make test` runs `pytest -n 2`) every worker gets a var folder of its
# own, ``<var>/xdist/<worker id>``: its media, cache and static folders (and the SQLite file
# of the child processes that inherit it) are never shared with the other worker. The test
# databases are per worker already (pytest-django gives each worker its own; the
# PostgreSQL ones of tests/ops/servers.py have random names). It goes into ``os.environ``
# so the servers and commands a test starts see the same folders unless the test gives them
# a ``DEID_VAR_DIR`` of their own (those children import this module again with the
# marker ``DEID_TEST_WORKER_VAR_DIR`` set, and keep the folder they were given).
_XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
if _XDIST_WORKER and not os.environ.get("DEID_TEST_WORKER_VAR_DIR"):
    _shared_var = Path(os.environ.get("DEID_VAR_DIR") or Path(__file__).resolve().parents[1] / "var")
    os.environ["DEID_VAR_DIR"] = str(_shared_var / "xdist" / _XDIST_WORKER)
    os.environ["DEID_TEST_WORKER_VAR_DIR"] = os.environ["DEID_VAR_DIR"]
    # One OpenMP/BLAS thread per worker (PyTorch, OpenBLAS): two workers with two threads
    # each on two cores would spin against each other. Set before numpy/torch load.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    # Runs without a broker execute in-process, not in a pool of one process per core
    # (automated.django_app.embedded): the other xdist worker already has the other core,
    # and every pool process would import the models again. tests/ops/test_embedded_pool.py
    # sets its own.
    os.environ.setdefault("DEID_WORKERS", "1")

from evalsite.settings import *  # noqa: E402,F403

# Tests run without `collectstatic`; an existing (empty) STATIC_ROOT keeps WhiteNoise from
# warning "No directory at" on every test request. The served files are tested against
# a collected folder under gunicorn (tests/evalsite/test_deploy_settings.py).
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # noqa: F405

# The real-worker test of the redelivery limit (tests/ops/test_celery_runs.py) starts one
# worker with this set: that worker dies (SIGKILL) in every face unit of the masked video.
if os.environ.get("DEID_TEST_KILL_ON_VIDEO"):
    import tests.ops.poison  # noqa: E402,F401

# No resuming of orphaned runs on a process's first request: it would touch the database in
# tests that have none (tests/automated/django_app/test_orphaned_runs.py calls it itself);
# a server a test starts may ask for it (tests/ops/test_embedded_restart.py).
DEID_RESUME_RUNS_ON_START = os.environ.get("DEID_RESUME_RUNS_ON_START") == "1"

# Every rater of the Django test client comes from 127.0.0.1: addresses are not counted
# (no cap, no flag), except in the tests of that check (tests/trials/test_sybil*.py).
TRIALS_MAX_SESSIONS_PER_ADDRESS = 0
TRIALS_MAX_SESSIONS_PER_NETWORK = 0

# PBKDF2 at production strength costs about 0.4 s of CPU per password set or checked; the
# tests make and log in users hundreds of times. Passwords are still hashed and checked
# (MD5 hasher: the same code paths, a cheap digest); child processes that inherit
# DJANGO_SETTINGS_MODULE share it. evalsite.settings keeps Django's default hashers.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# No warming of a campaign's reports after each completed run (a whole report computation
# per run); tests/evalsite/test_report_cache_shared.py turns it on.
DEID_WARM_REPORTS = False
