"""Celery tasks of the face evaluation: one task per masked video (``lifecycle.process_video``).

Acknowledged late and rejected when the worker is lost, so a worker killed mid-video
(SIGKILL, OOM, a lost machine) leaves the task to be redelivered; the lifecycle makes the
redelivery store the video's score exactly once. A video whose worker dies in it every time
fails its run after ``DEID_TASK_MAX_DELIVERIES`` starts (``lifecycle.start_unit``) instead of
coming back forever.
"""

from celery import shared_task

from . import lifecycle
from .services import FACE_RUN

#: Delivery options of every run task (``evalsite/settings.py`` sets the same defaults).
RELIABLE = {"acks_late": True, "reject_on_worker_lost": True}


@shared_task(name="automated.face_video", **RELIABLE)
def face_video_task(run_id: int, masked_video_id: int) -> bool:
    """Score masked video ``masked_video_id`` in face run ``run_id``; True if this call stored it."""
    return lifecycle.process_video(FACE_RUN, run_id, masked_video_id).stored
