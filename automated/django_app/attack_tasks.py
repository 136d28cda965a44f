"""Celery tasks of the attack suite: face crops per masked video, one task per cross-video
fold, then the summary step (``lifecycle``).

Every video and fold task is shareable among workers; the video task that finds every
video done (its result committed) queues the fold tasks, the fold task that finds every
fold done queues the suite task. A redelivered video task of a finished extraction queues
the suite again (its worker may have died before it could), and the suite's claim on
``final_task`` makes any such duplicate a no-op.
"""

from celery import shared_task

from . import lifecycle
from .attack_service import ATTACK_RUN
from .face_tasks import RELIABLE


@shared_task(name="automated.attack_video", **RELIABLE)
def attack_video_task(run_id: int, masked_video_id: int) -> bool:
    """Crop the faces of masked video ``masked_video_id`` for attack run ``run_id``; queue the suite when due."""
    outcome = lifecycle.process_video(ATTACK_RUN, run_id, masked_video_id)
    if outcome.folds_due:  # the video's result is committed already (process_video's own transaction)
        run = ATTACK_RUN.model.objects.get(pk=run_id)
        for fold in lifecycle.pending_folds(ATTACK_RUN, run):
            attack_fold_task.delay(run_id, fold)
    if outcome.final_due:
        attack_suite_task.delay(run_id)
    return outcome.stored


@shared_task(name="automated.attack_fold", **RELIABLE)
def attack_fold_task(run_id: int, fold: int) -> bool:
    """Train and test every recognizer x attacker on cross-video fold ``fold`` of run ``run_id``."""
    outcome = lifecycle.process_fold(ATTACK_RUN, run_id, fold)
    if outcome.final_due:
        attack_suite_task.delay(run_id)
    return outcome.stored


@shared_task(bind=True, name="automated.attack_suite", **RELIABLE)
def attack_suite_task(self, run_id: int) -> bool:
    """Run the attack suite of run ``run_id`` once its videos are extracted; True if this call completed it."""
    return lifecycle.run_final_step(ATTACK_RUN, run_id, owner=self.request.id or f"suite-{run_id}")
