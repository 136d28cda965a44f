"""Start automated runs: create the pending run, then queue one task per video after commit.

The one module that knows both what a run is (``services``, ``attack_service``) and how it
is queued (the tasks): services import no task and tasks import services, so there is no
import cycle. Callers: the ``evaluate`` and ``attack`` commands, the admin actions and the
REST API. Tasks go to the Celery broker (``CELERY_BROKER_URL``), only once the run row is
committed (``transaction.on_commit``), so a worker never looks for a run that does not
exist yet. Without a broker (the embedded default) the run's units are executed in this
process (``embedded``): here and now for a command, in a thread of the server for a web
request (``background=True``), the process recorded as the run's owner; a run whose owner
process is gone (a server restart) is resumed by ``recover``, which the progress page, the
organizer's "evaluate everything", ``start_run`` and each server process's first request
call.
"""

from __future__ import annotations

import logging
import os
import time
from datetime import timedelta
from collections.abc import Callable
from dataclasses import dataclass

from celery import Task
from django.conf import settings
from django.db import transaction
from django.urls import get_resolver
from django.utils import timezone

from . import embedded, lifecycle, processes
from .attack_models import AttackRun
from .attack_service import ATTACK_RUN, create_attack_run
from .attack_tasks import attack_fold_task, attack_suite_task, attack_video_task
from .face_models import AutomatedRun
from .face_tasks import face_video_task
from .run_models import RunBase, RunStatus
from .services import FACE_RUN, create_face_run

logger = logging.getLogger(__name__)

#: Without a broker, a run still without an owner this long after it was created is an orphan
#: (``adopt_orphans``); a run being started gets its owner within the same second.
UNOWNED_GRACE = timedelta(minutes=1)


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


class ActiveTwin(ValueError):
    """A run of the same kind and options is already pending or running (``run``)."""

    def __init__(self, message: str, run: RunBase):
        super().__init__(message)
        self.run = run


def create_run(kind: str, submission, **options) -> RunBase:
    """Check the options and create the PENDING run (nothing queued yet).

    Without a broker the run's owner is this process (``processes.this_process``): it
    executes it (``queue``), and if it stops first, ``recover`` resumes it elsewhere.

    Raises
    ------
    ActiveTwin
        A run of this kind with the same configuration is already pending or running for
        the submission (a double click on the admin action or a resent API call): no run
        is created. A ``ValueError``.
    ValueError
        An unknown kind, bad options, a submission that cannot be evaluated (see
        ``services.run_face_evaluation`` and ``attack_service.run_attack``).
    """
    spec = run_type(kind)
    with transaction.atomic():
        # The submission's row lock serialises two starts at once, so only one can pass.
        type(submission).objects.select_for_update().filter(pk=submission.pk).first()
        run = spec.create(submission, **options)
        active = spec.kind.model.objects.filter(submission=submission, status__in=lifecycle.ACTIVE)
        twin = next((r for r in active.exclude(pk=run.pk).order_by("pk") if r.config == run.config), None)
        if twin is not None:  # raising rolls the new run back
            raise ActiveTwin(
                f"{kind} run {twin.pk} of this submission with the same options is already "
                f"{twin.status} ({twin.progress}); follow it, or re-queue it if its worker was lost",
                twin,
            )
        if runs_in_process():
            run.owner = processes.this_process()
            spec.kind.model.objects.filter(pk=run.pk).update(owner=run.owner)
    return run


def enqueue(run: RunBase) -> int:
    """Queue a task for each planned video of ``run`` that has no result yet; return how many.

    Idempotent, so it also re-queues a run whose tasks were lost (e.g. a broker restarted
    without persistence): units already done are not queued, duplicates store nothing
    twice. When every video is done, the folds without a result are queued (kinds with
    per-fold units); when they are done too but the final step is not, the final step is
    queued (as the task that claimed it, if one did, so it takes over from a lost one).
    A finished run queues nothing. With no broker the tasks run here, now (eagerly; the
    embedded mode itself executes runs through ``queue``).
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


def start_run(kind: str, submission, *, background: bool = False, **options) -> RunBase:
    """Create a PENDING run of ``submission`` and queue its tasks once the row is committed.

    First resumes the submission's runs whose in-process owner is gone (``adopt_orphans``);
    when one of them is a run of this kind with the same options, that run is resumed
    instead of starting a twin.

    Parameters
    ----------
    kind : {"face", "attack"}
    submission : Submission
    background : bool, default=False
        Without a broker: execute in a thread of this process and return at once (web
        requests), else here and now (commands). With a broker it changes nothing.
    **options
        The kind's options (``services.create_face_run``, ``attack_service.attack_config``).

    Returns
    -------
    RunBase
        Refreshed: pending or running with a broker or in the background, finished when
        executed here.

    Raises
    ------
    ValueError
        As ``create_run`` (no run is created); executed here, also a failure during the
        run, which is then stored on the run as failed.
    """
    adopted = adopt_orphans(submission)
    run = None
    try:
        run = create_run(kind, submission, **options)
    except ActiveTwin as twin:
        if twin.run.pk not in {r.pk for r in adopted if type(r) is type(twin.run)}:
            raise
        run = twin.run  # resumed below, with the other orphans
        adopted = [r for r in adopted if not (type(r) is type(run) and r.pk == run.pk)]
    finally:
        if run is None:  # refused: the orphans adopted are resumed all the same
            queue_runs(adopted, background=background, keep_going=True)
    queue_runs([*adopted, run], background=background)
    run.refresh_from_db()
    return run


def queue(run: RunBase, *, background: bool = False) -> None:
    """Queue ``run``'s units (``queue_runs`` of one run)."""
    queue_runs([run], background=background)


def queue_runs(runs: list[RunBase], *, background: bool = False, keep_going: bool = False) -> None:
    """Have ``runs`` executed: on the broker, or in this process without one.

    With a broker: ``enqueue`` each once the current transaction commits (at once outside
    a transaction). Without one: ``embedded.execute``, one run after the other, here and
    now or (``background``) in a thread of this process; the runs must then be committed.
    ``keep_going``: here and now, a failing run is logged and the next one still executed.

    Raises
    ------
    kombu.exceptions.OperationalError
        With a broker, outside a transaction: the broker cannot be reached.
    Exception
        In-process here and now, unless ``keep_going``: the first failing run's error
        (stored on it as FAILED; the runs after it are not executed).
    """
    if runs_in_process():
        work = [(RUN_KINDS[kind_name(run)].kind, run) for run in runs]
        embedded.execute(work, background=background, raise_errors=not keep_going)
        return
    for run in runs:
        transaction.on_commit(lambda run=run: enqueue(run))


def adopt_orphans(submission=None) -> list[RunBase]:
    """Take over the PENDING or RUNNING runs (of ``submission``; default all) whose owner process is gone.

    Each orphan (``lifecycle.orphans``: a run executed in-process by a server or command
    that stopped; without a broker also a run without an owner created more than
    ``UNOWNED_GRACE`` ago, e.g. one left "running" before runs had owners) is adopted by compare-and-set: by this process without a broker, by the
    broker with one (owner emptied). The adoption is counted on the run
    (``deliveries["resumed"]``, shown in its log) and logged with the dead owner.
    Nothing is executed yet (``recover`` does both).

    Returns
    -------
    list of RunBase
        The runs this call adopted (face runs first), refreshed.
    """
    in_process = runs_in_process()
    new_owner = None if in_process else ""
    # Without a broker, an ownerless run nobody took within a minute has no one to run it.
    unowned_before = timezone.now() - UNOWNED_GRACE if in_process else None
    adopted = []
    for name, spec in RUN_KINDS.items():
        runs = spec.kind.model.objects.all()
        if submission is not None:
            runs = runs.filter(submission=submission)
        for run in lifecycle.orphans(spec.kind.model, runs, unowned_before=unowned_before):
            if lifecycle.adopt(spec.kind.model, run.pk, run.owner, new_owner):
                lifecycle.count_resume(spec.kind.model, run.pk)
                logger.warning(
                    "%s run %s (%s, %s): the process that ran it (%s) is gone; resumed %s",
                    name,
                    run.pk,
                    run.status,
                    run.progress,
                    run.owner,
                    "here" if new_owner is None else "on the broker",
                )
                run.refresh_from_db()
                adopted.append(run)
    return adopted


def recover(submission=None, *, background: bool = False) -> list[RunBase]:
    """Resume every run (of ``submission``; default all) whose in-process owner is gone: ``adopt_orphans``, then ``queue_runs``.

    A run is never left "running" after its process stopped: its units left undone are
    executed again (done ones are kept); a unit its process died in too often fails the run
    with the reason (``lifecycle.start_unit``). Errors of runs executed here are stored on
    them and logged, not raised.

    Returns
    -------
    list of RunBase
        The resumed runs.
    """
    adopted = adopt_orphans(submission)
    queue_runs(adopted, background=background, keep_going=True)
    return adopted


_resumed_at_start: set[int] = set()


def resume_on_first_request(sender=None, **kwargs) -> None:
    """``request_started`` receiver: a server process's first request resumes the runs whose process is gone.

    Once per process (a server restart starts new ones), when ``DEID_RESUME_RUNS_ON_START``
    is on, without a broker: ``recover`` of every submission, in a thread of this
    process, once the URLconf is loaded (so the thread and the request do not import the
    same modules at once). A failure is logged, never shown to the request.
    """
    if os.getpid() in _resumed_at_start:
        return
    _resumed_at_start.add(os.getpid())
    if not settings.DEID_RESUME_RUNS_ON_START:
        return
    if not runs_in_process():
        return
    try:
        # The URLconf (and the views' imports) first, here: imported by the
        # request and the resuming thread at once, a module could be seen half-initialised.
        get_resolver().url_patterns
        resumed = recover(background=True)
    except Exception:  # e.g. the database not migrated yet: the pages say so themselves
        logger.exception("resuming the runs whose process is gone failed")
        return
    if resumed:
        logger.warning("resumed %d run(s) whose process was gone", len(resumed))


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
