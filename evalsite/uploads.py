"""Receiving a zip of masked videos: the one path behind the CLI, the admin and the API.

:func:`receive_upload` stores the zip inside a new upload record, then queues its
validation (``evalsite.tasks.validate_upload_task``). Without a broker the task runs at
once in this process, so the caller gets the finished report; with one, the record is
``queued`` until a worker takes it, and callers show or poll its status.
"""

from __future__ import annotations

import time
from functools import partial

from django.conf import settings
from django.db import transaction

from .models import SubmissionUpload, Team, UploadStatus
from .phases import check_upload
from .tasks import validate_upload_task
from .validation import create_upload_record, store_upload_zip

FINISHED = (UploadStatus.DONE, UploadStatus.FAILED)


def receive_upload(
    submission,
    zip_file,
    *,
    original_name: str = "",
    replace: bool = False,
    uploaded_by=None,
    web_copies: bool = True,
    override_deadline: bool = False,
) -> SubmissionUpload:
    """Record and store ``zip_file`` for ``submission`` and queue its validation.

    Parameters as :func:`evalsite.validation.create_upload`; ``web_copies`` also stores a
    browser copy of each accepted file; ``override_deadline`` (organizers only) accepts an
    upload after the run's phase closed, recorded on the upload (``late``,
    ``deadline_overridden_by``).

    Returns
    -------
    SubmissionUpload
        Re-read after queueing: ``done`` or ``failed`` in the embedded setup (tasks run
        in-process), usually ``queued`` with a broker.

    Raises
    ------
    evalsite.phases.Refused
        If the run's phase refuses the upload (not open, deadline passed, a quota used
        up; :func:`evalsite.phases.check_upload`); nothing is stored then.
    """
    with transaction.atomic():
        # One quota decision at a time per team: a double-clicked upload (two requests at
        # once) must not both pass the check before either's record exists. The record
        # is made under the lock; the zip is stored after it (a large body would hold it).
        list(Team.objects.select_for_update().filter(pk=submission.team_id).values_list("pk"))
        late = check_upload(submission, override_deadline=override_deadline)
        upload = create_upload_record(
            submission, zip_file, original_name=original_name, replace=replace, uploaded_by=uploaded_by
        )
    store_upload_zip(upload, zip_file)
    if late:
        upload.late, upload.deadline_overridden_by = True, uploaded_by
        upload.save(update_fields=["late", "deadline_overridden_by"])
    if upload.status == UploadStatus.QUEUED:
        queue = partial(validate_upload_task.delay, upload.pk, web_copies)
        if settings.CELERY_TASK_ALWAYS_EAGER:
            queue()  # same process and connection: the row is visible before any commit
        else:
            transaction.on_commit(queue)  # a worker must find the committed row
    upload.refresh_from_db()
    return upload


def requeue_upload(upload: SubmissionUpload, *, web_copies: bool = True) -> SubmissionUpload:
    """Queue an unfinished upload again (e.g. left ``processing`` by a worker that died).

    Raises
    ------
    ValueError
        If the upload is already done or failed.
    """
    if upload.status in FINISHED:
        raise ValueError(f"upload {upload.pk} is {upload.status}; nothing to resume")
    validate_upload_task.delay(upload.pk, web_copies)
    upload.refresh_from_db()
    return upload


def wait_for_upload(upload: SubmissionUpload, *, timeout_s: float, poll_s: float = 0.5) -> SubmissionUpload:
    """Re-read ``upload`` until it is done or failed, or ``timeout_s`` passed; return it."""
    deadline = time.monotonic() + timeout_s
    upload.refresh_from_db()
    while upload.status not in FINISHED and time.monotonic() < deadline:
        time.sleep(poll_s)
        upload.refresh_from_db()
    return upload
