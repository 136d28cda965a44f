"""Start automated runs: create the pending run, then queue one task per video after commit.

The one module that knows both what a run is (``services``, ``attack_service``) and how it
is queued (the tasks): services import no task and tasks import services, so there is no
import cycle. Callers: the ``evaluate`` and ``attack`` commands, the admin actions and the
REST API. Tasks go to the Celery broker (``CELERY_BROKER_URL``), only once the run row is
committed (``transaction.on_commit``), so a worker never looks for a run that does not
exist yet. Without a broker they run eagerly in this process, as before, right away (in the
caller's transaction, if any).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from celery import Task
from django.db import transaction

from . import lifecycle
from .attack_models import AttackRun
from .attack_service import ATTACK_RUN, create_attack_run
from .attack_tasks import attack_fold_task, attack_suite_task, attack_video_task
from .face_models import AutomatedRun
from .face_tasks import face_video_task
from .run_models import RunBase, RunStatus
from .services import FACE_RUN, create_face_run


@dataclass(frozen=True)
class RunType:
    """A run kind with its constructor and its tasks."""

    kind: lifecycle.RunKind
    create: Callable[..., RunBase]
    video_task: Task
    final_task: Task | None = None
    fold_task: Task | None = None


#: ``kind`` name (API, admin) -> run type.
RUN_KINDS = {
    "face": RunType(FACE_RUN, create_face_run, face_video_task),
    "attack": RunType(ATTACK_RUN, create_attack_run, attack_video_task, attack_suite_task, attack_fold_task),
}
_BY_MODEL = {AutomatedRun: "face", AttackRun: "attack"}


def kind_name(run: RunBase) -> str:
    """``"face"`` or ``"attack"`` for a run row."""
    return _BY_MODEL[type(run)]


def run_type(kind: str) -> RunType:
    """The run type named ``kind``.

    Raises
    ------
    ValueError
        Naming the known kinds, if ``kind`` is not one.
    """
    try:
        return RUN_KINDS[kind]
    except (KeyError, TypeError):
        raise ValueError(f"unknown run kind {kind!r}; choose one of {', '.join(RUN_KINDS)}") from None


def create_run(kind: str, submission, **options) -> RunBase:
    """Check the options and create the PENDING run (nothing queued yet).

    Raises
    ------
    ValueError
        An unknown kind, bad options, a submission that cannot be evaluated (see
        ``services.run_face_evaluation`` and ``attack_service.run_attack``), or a run of
        this kind with the same configuration already pending or running for the
        submission (a double click on the admin action or a resent API call): no run is
        created.
    """
    spec = run_type(kind)
    with transaction.atomic():
        # The submission's row lock serialises two starts at once, so only one can pass.
        type(submission).objects.select_for_update().filter(pk=submission.pk).first()
        run = spec.create(submission, **options)
        active = spec.kind.model.objects.filter(submission=submission, status__in=lifecycle.ACTIVE)
        twin = next((r for r in active.exclude(pk=run.pk).order_by("pk") if r.config == run.config), None)
        if twin is not None:  # raising rolls the new run back
            raise ValueError(
                f"{kind} run {twin.pk} of this submission with the same options is already "
                f"{twin.status} ({twin.progress}); follow it, or re-queue it if its worker was lost"
            )
    return run


def enqueue(run: RunBase) -> int:
    """Queue a task for each planned video of ``run`` that has no result yet; return how many.

    Idempotent, so it also re-queues a run whose tasks were lost (e.g. a broker restarted
    without persistence): units already done are not queued, duplicates store nothing
    twice. When every video is done, the folds without a result are queued (kinds with
    per-fold units); when they are done too but the final step is not, the final step is
    queued (as the task that claimed it, if one did, so it takes over from a lost one).
    A finished run queues nothing. With no broker the tasks run here, now.
    """
    spec = RUN_KINDS[kind_name(run)]
    run.refresh_from_db()
    if run.status not in lifecycle.ACTIVE:
        return 0
    pending = lifecycle.pending_videos(spec.kind, run)
    for masked_video_id in pending:
        spec.video_task.delay(run.pk, masked_video_id)
    folds = lifecycle.pending_folds(spec.kind, run) if not pending and run.status == RunStatus.RUNNING else []
    for fold in folds:
        spec.fold_task.delay(run.pk, fold)
    if not pending and not folds and spec.final_task is not None and run.status == RunStatus.RUNNING:
        # Under the id of the task that claimed the step, if one did: that claim admits only
        # its own redelivery, so a new id would be a no-op and a lost suite task never rerun.
        spec.final_task.apply_async((run.pk,), task_id=run.final_task or None)
    return len(pending)


def start_run(kind: str, submission, **options) -> RunBase:
    """Create a PENDING run of ``submission`` and queue its tasks once the row is committed.

    Parameters
    ----------
    kind : {"face", "attack"}
    submission : Submission
    **options
        The kind's options (``services.create_face_run``, ``attack_service.attack_config``).

    Returns
    -------
    RunBase
        Refreshed: pending or running with a broker, completed when tasks run in-process.

    Raises
    ------
    ValueError
        As ``create_run`` (no run is created); in-process, also a failure during the run,
        which is then stored on the run as failed.
    """
    run = create_run(kind, submission, **options)
    queue(run)
    run.refresh_from_db()
    return run


def queue(run: RunBase) -> None:
    """``enqueue(run)`` once the current transaction commits (at once outside a transaction).

    In-process (no broker) it runs at once: eager tasks share this connection, so they see
    the run before any commit, and a caller's transaction does not hold them back.
    """
    if runs_in_process():
        enqueue(run)
    else:
        transaction.on_commit(lambda: enqueue(run))


def runs_in_process() -> bool:
    """True when no broker is configured: ``delay()`` runs the task here and now (Celery eager mode)."""
    return bool(face_video_task.app.conf.task_always_eager)


def describe(run: RunBase) -> str:
    """One line of status and progress, e.g. ``"running: 2/3 videos"``."""
    run.refresh_from_db()
    text = f"{run.status}: {run.progress}"
    if (
        run.status == RunStatus.RUNNING
        and RUN_KINDS[kind_name(run)].final_task is not None
        and run.videos_done >= run.videos_total
    ):
        total = getattr(run, "folds_total", 0)
        if total and run.folds_done < total:
            text += f" extracted, {run.folds_done}/{total} folds"
        else:
            text += " extracted, suite running"
    if run.status == RunStatus.FAILED:
        text += f" ({run.error})"
    return text


def wait(
    run: RunBase,
    write: Callable[[str], None],
    *,
    poll_s: float = 1.0,
    timeout_s: float | None = None,
    hint_after_s: float = 30.0,
) -> RunBase:
    """Poll ``run`` until it completes or fails, calling ``write`` with each new progress line.

    Prints a hint once if the run is still pending after ``hint_after_s`` seconds (no
    worker is consuming the queue). Returns the refreshed run, finished or, after
    ``timeout_s``, still active (the workers carry on without the caller).
    """
    started, last, hinted = time.monotonic(), None, False
    while True:
        line = describe(run)
        if line != last:
            write(line)
            last = line
        if run.status not in lifecycle.ACTIVE or runs_in_process():  # in-process: nothing runs later
            return run
        waited = time.monotonic() - started
        if run.status == RunStatus.PENDING and waited > hint_after_s and not hinted:
            write("  still pending: is a worker running? (celery -A evalsite worker)")
            hinted = True
        if timeout_s is not None and waited > timeout_s:
            return run
        time.sleep(poll_s)
