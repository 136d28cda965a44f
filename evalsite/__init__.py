"""deid-eval Django project: settings, URLs, the Celery app and the catalogue."""

from .celery import app as celery_app

__all__ = ["celery_app"]
