"""One lifecycle for every automated run kind (face evaluation, attack suite, later kinds).

A run is queued PENDING with its planned masked videos. Work is split into one unit per
masked video and, for kinds that need it, one final step (the attack suite):

- **claim**: the first unit to start moves the run PENDING -> RUNNING by compare-and-set
  (``UPDATE ... WHERE status = pending``), so exactly one caller claims it; later units
  join the RUNNING run, which is how several workers share one submission. A unit of a
  COMPLETED or FAILED run is a no-op: nothing ever sets a finished run back.
- **per-video result**: computed outside any transaction (minutes of decoding and
  models), then stored in one short transaction that locks the run row: the result row
  is ``get_or_create``-d under a unique (run, masked video) constraint, ``videos_done``
  is recounted from those rows, and the run completes when the last one is stored. A
  redelivered or duplicated unit therefore stores nothing twice and counts nothing twice;
  a unit whose worker died mid-video stored nothing and is simply redone.
- **per-fold units** (kinds with ``fold_model``, the attack suite's cross-video folds):
  once every video is done, one unit per planned fold (``run.folds_total``), stored like
  the per-video results (``get_or_create`` under a unique (run, fold) constraint,
  ``folds_done`` recounted under the run lock), so workers share the folds too;
- **final step**: claimed for one task id (a redelivery of that same task, after its
  worker died, takes over; a different duplicate is a no-op), computed outside a
  transaction, then written with the COMPLETED status in one transaction that first
  checks the run is still RUNNING, so results are written exactly once.
- **failure**: an error moves a PENDING or RUNNING run to FAILED with the message; a
  completed run is never marked failed.
- **poison units**: each start of a unit's work is counted on the run (``deliveries``,
  ``"video:<masked video id>"``, ``"fold:<n>"``, ``"final"``) in its own committed
  transaction, before the work. A unit that stored nothing and raised nothing after
  ``DEID_TASK_MAX_DELIVERIES`` starts had its worker die each time (SIGKILL, out of
  memory, a crash in a decoder): its next delivery fails the run, naming the unit, instead
  of running it again forever. Other runs are untouched; a unit redelivered once after
  its worker was killed runs again as before.

- **in-process owner** (no broker): a run executed in this process (``execute_inline``,
  the embedded default's only executor) records the process as its ``owner``
  (``processes.this_process``), taken by compare-and-set so one live process runs it. A
  PENDING or RUNNING run whose owner process is gone (a server restart, a killed command)
  is an *orphan* (``orphans``): ``dispatch.recover`` adopts it (``adopt``, compare-and-set
  from the dead owner) and executes its units left undone, as a broker redelivers the units
  of a dead worker; the delivery count above fails it, naming the unit, if its process died
  in the same unit too often.

Celery delivers units at least once (``acks_late``, ``reject_on_worker_lost``); the
rules above make at-least-once delivery store results exactly once. Tasks: ``tasks.py``;
queueing: ``dispatch.py``. This module imports neither.
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass
from functools import partial

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone
from evalsite.models import MaskedVideo

from . import processes
from .run_models import RunBase, RunStatus

logger = logging.getLogger(__name__)

ACTIVE = (RunStatus.PENDING, RunStatus.RUNNING)

#: Key of ``run.deliveries`` counting the times the run was resumed after its owner process was gone.
RESUMED = "resumed"


class RunKind:
    """What a run kind adds to the lifecycle (subclassed in ``services`` and ``attack_service``).

    Attributes
    ----------
    name : str
        ``"face"``, ``"attack"``: the ``kind`` of the API and admin.
    model : RunBase subclass
    result_model : model with ``run`` and ``masked_video`` foreign keys, unique together
        One row per done video (``VideoScore``, ``AttackExtraction``).
    has_final_step : bool
        True when the run needs a final step after every video (``compute_final``,
        ``write_final``); False: the run completes with its last video.
    fold_model : model with ``run`` foreign key and ``fold`` number, unique together, optional
        Kinds with per-fold units between the videos and the final step (``compute_fold``);
        their run model has ``folds_total`` and ``folds_done``.
    """

    name: str = ""
    model: type[RunBase]
    result_model = None
    has_final_step = False
    fold_model = None

    def plan(self, submission):
        """The masked videos of ``submission`` a run of this kind covers (a queryset).

        Default every current masked video (the attack suite trains on attacker training
        material too); what a completed run is compared with to decide it is current
        (``evaluate_all.is_current``).
        """
        return submission.masked_videos.order_by("source_video__name")

    def fresh_folds(self, run, masked_videos) -> list[list[int]]:
        """The folds (masked-video ids each tests) a new run with ``run``'s options would plan.

        Over ``masked_videos`` (``plan``'s, with their current roles); ``[]`` for kinds
        without folds. ``evaluate_all.plan_changes`` compares it with ``run.planned_folds``.
        """
        return []

    def compute_video(self, run, masked_video) -> dict:
        """Heavy per-video work; return the result row's field values. Raise on failure."""
        raise NotImplementedError

    def compute_fold(self, run, fold: int) -> dict:
        """Heavy per-fold work once every video is done; return the fold row's field values."""
        raise NotImplementedError

    def compute_final(self, run):
        """Heavy final step once every video is done; return what ``write_final`` stores."""
        raise NotImplementedError

    def write_final(self, run, result) -> None:
        """Store the final step's rows (inside the completing transaction)."""
        raise NotImplementedError

    def __reduce__(self):
        """Pickled as a reference to its module's instance: a pool worker (``embedded``) uses
        that module-level object, with whatever was set on it, not a copy."""
        return (_module_instance, (type(self).__module__, type(self).__qualname__))


def _module_instance(module: str, qualname: str) -> RunKind:
    """The instance of class ``qualname`` among module ``module``'s globals (unpickling a ``RunKind``)."""
    namespace = vars(importlib.import_module(module))
    return next(value for value in namespace.values() if type(value).__qualname__ == qualname)


def claim(model: type[RunBase], run_id: int) -> bool:
    """Move run ``run_id`` from PENDING to RUNNING by compare-and-set.

    Returns
    -------
    bool
        True for exactly one caller, however many try at once; False if the run was not
        pending (already running, completed, failed or deleted).
    """
    claimed = model.objects.filter(pk=run_id, status=RunStatus.PENDING).update(
        status=RunStatus.RUNNING, started_at=timezone.now(), error=""
    )
    return claimed == 1


def fail(model: type[RunBase], run_id: int, error: BaseException | str) -> bool:
    """Mark a PENDING or RUNNING run FAILED with ``error``; a finished run is left as it is.

    Returns
    -------
    bool
        True if this call failed the run.
    """
    message = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    return (
        model.objects.filter(pk=run_id, status__in=ACTIVE).update(
            status=RunStatus.FAILED, finished_at=timezone.now(), error=message
        )
        == 1
    )


def start_unit(kind: RunKind, run_id: int, unit: str, describe) -> bool:
    """Count one more start of unit ``unit`` of run ``run_id``; fail the run if its worker died too often.

    Called right before a unit's heavy work, once the unit is known not to be done. The
    count is committed at once (the run row locked), so it survives the worker dying in
    the work that follows.

    Parameters
    ----------
    kind : RunKind
    run_id : int
    unit : str
        The unit's key in ``run.deliveries``: ``"video:<masked video id>"``, ``"fold:<n>"``
        or ``"final"``.
    describe : callable () -> str
        The unit for people, e.g. ``"video bbaf2n"`` (called only when failing the run).

    Returns
    -------
    bool
        True: go ahead (this start is counted). False: the run is not RUNNING, or the
        unit was started ``settings.DEID_TASK_MAX_DELIVERIES`` times already without
        storing anything or raising (so its worker died each time): the run was then
        marked FAILED with e.g. ``"video bbaf2n: the worker died 3 times while processing
        it; see the worker log"``.
    """
    limit = settings.DEID_TASK_MAX_DELIVERIES
    with transaction.atomic():
        run = kind.model.objects.select_for_update().filter(pk=run_id, status=RunStatus.RUNNING).first()
        if run is None:
            return False
        deliveries = dict(run.deliveries or {})
        started = int(deliveries.get(unit, 0))
        if started < limit:
            deliveries[unit] = started + 1
            kind.model.objects.filter(pk=run_id).update(deliveries=deliveries)
            return True
    times = "once" if started == 1 else f"{started} times"
    message = f"{describe()}: the worker died {times} while processing it; see the worker log"
    logger.error("%s run %s failed: %s", kind.name, run_id, message)
    fail(kind.model, run_id, message)
    return False


def _video_unit(masked_video_id: int) -> str:
    """``"video <source video name>"`` of a (possibly replaced) masked video, for messages."""
    name = (
        MaskedVideo.all_versions.filter(pk=masked_video_id)
        .values_list("source_video__name", flat=True)
        .first()
    )
    return f"video {name}" if name else f"masked video {masked_video_id}"


def _fold_unit(run, fold: int) -> str:
    """``"fold <n> (testing videos a, b)"`` of an attack run's planned fold, for messages."""
    folds = getattr(run, "planned_folds", None) or []
    planned = folds[fold] if 0 <= fold < len(folds) else []
    names = dict(MaskedVideo.all_versions.filter(pk__in=planned).values_list("pk", "source_video__name"))
    tested = ", ".join(names.get(pk, f"masked video {pk}") for pk in planned)
    return f"fold {fold} (testing videos {tested})" if tested else f"fold {fold}"


def _running(model, run_id):
    return (
        model.objects.filter(pk=run_id, status=RunStatus.RUNNING)
        .select_related("submission__campaign")
        .first()
    )


@dataclass(frozen=True)
class VideoOutcome:
    """What a per-video unit did.

    Attributes
    ----------
    stored : bool
        This call stored the video's result row.
    final_due : bool
        Every planned video (and fold) is done and the kind's final step has yet to run.
    folds_due : bool
        Every planned video is done and some planned fold is not (queue the fold units).
    """

    stored: bool
    final_due: bool
    folds_due: bool = False


def _folds_left(kind: RunKind, run) -> int:
    """Planned folds of ``run`` without a stored result (0 for kinds without folds)."""
    if kind.fold_model is None:
        return 0
    return max(0, run.folds_total - run.folds_done)


def process_video(kind: RunKind, run_id: int, masked_video_id: int) -> VideoOutcome:
    """Run one per-video unit of run ``run_id`` (the body of the per-video tasks).

    Claims a pending run, skips a video already done or a finished run, computes the
    result (``kind.compute_video``) and stores it idempotently; completes the run when
    this was its last video and the kind has no final step.

    Returns
    -------
    VideoOutcome

    Raises
    ------
    Exception
        Whatever ``compute_video`` raised, after the run was marked FAILED with it; a
        masked video deleted since the run was queued fails the run with ``LookupError``
        (one replaced meanwhile is still scored, and reported stale).
    """
    if claim(kind.model, run_id):
        logger.info("%s run %s claimed", kind.name, run_id)
    run = _running(kind.model, run_id)
    if run is None:
        return VideoOutcome(False, False)  # completed, failed or deleted: nothing to do
    if masked_video_id not in run.planned_videos:
        logger.warning(
            "%s run %s: masked video %s is not in its plan; ignored", kind.name, run_id, masked_video_id
        )
        return VideoOutcome(False, False)
    results = kind.result_model.objects.filter(run_id=run_id)
    if not results.filter(masked_video_id=masked_video_id).exists():
        if not start_unit(kind, run_id, f"video:{masked_video_id}", lambda: _video_unit(masked_video_id)):
            return VideoOutcome(False, False)  # failed: its worker died too often in this video
        try:
            masked = (
                # The planned version, even if replaced since: its result is then reported
                # stale (evalsite.staleness), and the other videos' work is kept.
                MaskedVideo.all_versions.select_related("source_video__identity")
                .filter(pk=masked_video_id)
                .first()
            )
            if masked is None:
                raise LookupError(f"masked video {masked_video_id} was deleted after the run was queued")
            values = kind.compute_video(run, masked)
        except Exception as error:  # not SystemExit: a stopping worker's task is redelivered
            fail(kind.model, run_id, error)
            raise
        stored = _store_video(kind, run_id, masked_video_id, values)
    else:
        stored = False
    fields = ["status", "videos_done", "videos_total"]
    run.refresh_from_db(fields=fields + (["folds_done", "folds_total"] if kind.fold_model else []))
    videos_done = run.status == RunStatus.RUNNING and run.videos_done >= run.videos_total
    folds_left = _folds_left(kind, run)
    return VideoOutcome(
        stored, kind.has_final_step and videos_done and not folds_left, videos_done and folds_left > 0
    )


def process_fold(kind: RunKind, run_id: int, fold: int) -> VideoOutcome:
    """Run one per-fold unit of run ``run_id`` (the body of the per-fold tasks).

    A no-op unless the run is RUNNING with every video done and ``fold`` planned and not
    yet stored; the result (``kind.compute_fold``) is stored idempotently and ``folds_done``
    recounted under the run lock.

    Returns
    -------
    VideoOutcome
        ``stored``, and ``final_due`` when every fold is done.

    Raises
    ------
    Exception
        Whatever ``compute_fold`` raised, after the run was marked FAILED with it.
    """
    run = _running(kind.model, run_id)
    if run is None or run.videos_done < run.videos_total or not 0 <= fold < run.folds_total:
        return VideoOutcome(False, False)
    stored = False
    if not kind.fold_model.objects.filter(run_id=run_id, fold=fold).exists():
        if not start_unit(kind, run_id, f"fold:{fold}", lambda: _fold_unit(run, fold)):
            return VideoOutcome(False, False)  # failed: its worker died too often in this fold
        try:
            values = kind.compute_fold(run, fold)
        except Exception as error:  # not SystemExit: a stopping worker's task is redelivered
            fail(kind.model, run_id, error)
            raise
        with transaction.atomic():
            locked = (
                kind.model.objects.select_for_update().filter(pk=run_id, status=RunStatus.RUNNING).first()
            )
            if locked is None:
                return VideoOutcome(False, False)  # failed or deleted meanwhile: drop the result
            _, stored = kind.fold_model.objects.get_or_create(run_id=run_id, fold=fold, defaults=values)
            done = kind.fold_model.objects.filter(run_id=run_id).count()
            kind.model.objects.filter(pk=run_id).update(folds_done=done)
    run.refresh_from_db(fields=["status", "folds_done", "folds_total"])
    final_due = kind.has_final_step and run.status == RunStatus.RUNNING and not _folds_left(kind, run)
    return VideoOutcome(stored, final_due)


def _store_video(kind: RunKind, run_id: int, masked_video_id: int, values: dict) -> bool:
    with transaction.atomic():
        run = kind.model.objects.select_for_update().filter(pk=run_id, status=RunStatus.RUNNING).first()
        if run is None:
            return False  # failed (another video) or deleted meanwhile: drop the result
        _, created = kind.result_model.objects.get_or_create(
            run_id=run_id, masked_video_id=masked_video_id, defaults=values
        )
        done = kind.result_model.objects.filter(run_id=run_id).count()
        fields = {"videos_done": done}
        if done >= run.videos_total and not kind.has_final_step:
            fields.update(status=RunStatus.COMPLETED, finished_at=timezone.now())
            transaction.on_commit(partial(run_completed, kind, run_id))
        kind.model.objects.filter(pk=run_id).update(**fields)
    return created


def run_completed(kind: RunKind, run_id: int) -> None:
    """After the commit that completed run ``run_id``: queue the warming of its campaign's
    reports (``report_tasks.warm_reports_task``; it waits for the campaign's last active
    run), unless ``DEID_WARM_REPORTS`` is off."""
    from .report_tasks import warm_reports_task

    if not settings.DEID_WARM_REPORTS:
        return
    campaign_id = (
        kind.model.objects.filter(pk=run_id).values_list("submission__campaign_id", flat=True).first()
    )
    if campaign_id is not None:
        warm_reports_task.delay(campaign_id)


def run_final_step(kind: RunKind, run_id: int, owner: str) -> bool:
    """Run the kind's final step of run ``run_id`` once, for task id ``owner``.

    The step is claimed by compare-and-set on ``final_task`` (empty or already ``owner``,
    run RUNNING, every video done); any other caller is a no-op. The results and the
    COMPLETED status are written in one transaction that rechecks the run is RUNNING.

    Returns
    -------
    bool
        True if this call completed the run.

    Raises
    ------
    Exception
        Whatever ``compute_final`` or ``write_final`` raised, after the run was marked
        FAILED with it.
    """
    due = kind.model.objects.filter(
        Q(final_task="") | Q(final_task=owner),
        pk=run_id,
        status=RunStatus.RUNNING,
        videos_done__gte=F("videos_total"),
    )
    if kind.fold_model is not None:
        due = due.filter(folds_done__gte=F("folds_total"))
    claimed = due.update(final_task=owner)
    if not claimed:
        return False
    run = _running(kind.model, run_id)
    if run is None or not start_unit(kind, run_id, "final", lambda: f"the {kind.name} summary step"):
        return False
    try:
        result = kind.compute_final(run)
        with transaction.atomic():
            locked = (
                kind.model.objects.select_for_update()
                .filter(pk=run_id, status=RunStatus.RUNNING, final_task=owner)
                .first()
            )
            if locked is None:
                return False  # completed by a duplicate of this task meanwhile
            kind.write_final(locked, result)
            locked.status, locked.finished_at = RunStatus.COMPLETED, timezone.now()
            locked.save()
            transaction.on_commit(partial(run_completed, kind, run_id))
    except Exception as error:  # not SystemExit: a stopping worker's task is redelivered
        fail(kind.model, run_id, error)
        raise
    return True


def pending_videos(kind: RunKind, run: RunBase) -> list[int]:
    """Planned masked-video ids of ``run`` that have no result yet, in plan order."""
    done = set(kind.result_model.objects.filter(run=run).values_list("masked_video_id", flat=True))
    return [pk for pk in run.planned_videos if pk not in done]


def pending_folds(kind: RunKind, run: RunBase) -> list[int]:
    """Planned fold numbers of ``run`` without a result yet (none for kinds without folds)."""
    if kind.fold_model is None:
        return []
    done = set(kind.fold_model.objects.filter(run=run).values_list("fold", flat=True))
    return [fold for fold in range(run.folds_total) if fold not in done]


def take(model: type[RunBase], run_id: int) -> bool:
    """Make this process the in-process owner of active run ``run_id``, unless another live process is.

    Returns
    -------
    bool
        True if this process owns it now (it had no owner, was this process's already, or
        its owner is gone); False if the run is not PENDING or RUNNING, or another process
        that is alive (or on another host) owns it.
    """
    me = processes.this_process()
    owner = model.objects.filter(pk=run_id, status__in=ACTIVE).values_list("owner", flat=True).first()
    if owner is None:
        return False
    if owner == me:
        return True
    if owner and processes.alive(owner) is not False:
        return False
    return adopt(model, run_id, owner)


def adopt(model: type[RunBase], run_id: int, owner: str, new_owner: str | None = None) -> bool:
    """Move active run ``run_id`` from owner ``owner`` to ``new_owner`` (default this process) by compare-and-set.

    ``new_owner=""`` hands the run to a broker. True for exactly one caller however many
    try at once.
    """
    new_owner = processes.this_process() if new_owner is None else new_owner
    return model.objects.filter(pk=run_id, owner=owner, status__in=ACTIVE).update(owner=new_owner) == 1


def count_resume(model: type[RunBase], run_id: int) -> int:
    """Count one more resumption of run ``run_id`` after its owner process was gone (``deliveries["resumed"]``); return the count."""
    with transaction.atomic():
        run = model.objects.select_for_update().filter(pk=run_id).first()
        if run is None:
            return 0
        deliveries = dict(run.deliveries or {})
        deliveries[RESUMED] = int(deliveries.get(RESUMED, 0)) + 1
        model.objects.filter(pk=run_id).update(deliveries=deliveries)
    return deliveries[RESUMED]


def orphans(model: type[RunBase], runs=None, *, unowned_before=None) -> list[RunBase]:
    """The PENDING or RUNNING runs (of ``runs``, a queryset of ``model``; default all) whose owner process is gone.

    A run whose owner runs on another host (``processes.alive`` is None) is not an orphan.
    A run without an owner is one a broker delivers (it redelivers it), so not an orphan,
    unless ``unowned_before`` (a datetime) is given: without a broker nothing else would
    ever run an ownerless run created before then (one left by a version without owners,
    or queued on a broker since removed).
    """
    runs = model.objects.all() if runs is None else runs
    active = runs.filter(status__in=ACTIVE).order_by("pk")
    unowned = Q(owner="", created_at__lt=unowned_before) if unowned_before is not None else Q(pk__in=[])
    return [
        run
        for run in active.filter(~Q(owner="") | unowned)
        if not run.owner or processes.alive(run.owner) is False
    ]


def execute_inline(kind: RunKind, run: RunBase) -> RunBase:
    """Execute every unit of ``run`` left undone in this process, in order (no Celery); return it refreshed.

    The same units the tasks run, so an in-process run and a run shared by workers store
    the same rows. The process first becomes the run's owner (``take``); a run another
    live process owns is left to it (returned as it is). Errors are raised after the run
    was marked FAILED.
    """
    if not take(kind.model, run.pk):
        run.refresh_from_db()
        return run
    for masked_video_id in pending_videos(kind, run):
        process_video(kind, run.pk, masked_video_id)
    run.refresh_from_db()
    if run.status == RunStatus.RUNNING:
        for fold in pending_folds(kind, run):
            process_fold(kind, run.pk, fold)
        run.refresh_from_db()
    if kind.has_final_step and run.status == RunStatus.RUNNING:
        run_final_step(kind, run.pk, owner=f"inline-{run.pk}")
        run.refresh_from_db()
    return run
