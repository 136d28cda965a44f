"""Celery application for background work (automated runs, transcoding, attacks).

With no ``CELERY_BROKER_URL`` in the environment, tasks run eagerly in-process (the
embedded default); set it (e.g. ``redis://localhost:6379/0``) to run Celery workers on
several machines.
"""

import os

from celery import Celery
from celery.signals import worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")

app = Celery("evalsite")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
def _refuse_without_secret_key(**kwargs):
    """A worker without a secret key stops at start-up naming the fix (evalsite.secret_key)."""
    from evalsite.secret_key import require_secret_key

    require_secret_key()
