"""Celery tasks of the automated app (autodiscovered by evalsite.celery)."""

from .attack_tasks import *  # noqa: F401,F403
from .face_tasks import *  # noqa: F401,F403
from .report_tasks import *  # noqa: F401,F403
