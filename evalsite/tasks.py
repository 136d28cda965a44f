"""Celery tasks of the catalogue: validating uploaded zips in the background.

Runs in-process by default (``CELERY_TASK_ALWAYS_EAGER``: the CLI, admin and API get the
report at once) and on Celery workers when a broker is configured. Acknowledged late and
rejected when the worker is lost, so an upload whose worker died is redelivered and
resumed (``validation.run_upload`` stores no member twice).
"""

from celery import shared_task

from .validation import run_upload


@shared_task(name="evalsite.validate_upload", acks_late=True, reject_on_worker_lost=True)
def validate_upload_task(upload_id: int, web_copies: bool = True) -> str | None:
    """Validate upload ``upload_id`` and store its good members; returns its final status."""
    upload = run_upload(upload_id, web_copies=web_copies)
    return None if upload is None else upload.status
