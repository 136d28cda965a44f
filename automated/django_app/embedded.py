"""The embedded executor (no broker): a run's units executed by this process and its worker pool.

Without ``CELERY_BROKER_URL`` nothing else runs the units: a command executes its run right
here (``background=False``, it waits for it anyway); a web request hands its runs to the
server process's runner thread (``background=True``), which executes them one at a time,
and answers at once, the progress page following them. Either way this process first makes
itself the run's owner (``lifecycle.take``, ``RunBase.owner``), so a run left unfinished
when the process stops (a server restart) is found by ``lifecycle.orphans`` and resumed by
``dispatch.recover``.

Every core (:func:`execute_run`): the run's per-video units, then its attack folds, are
executed by a pool of ``DEID_WORKERS`` processes (default the machine's cores), then its
final step by one of them (where the models are loaded already). The units are the Celery
tasks' bodies (``lifecycle.process_video``, ``process_fold``, ``run_final_step``), so the pool inherits their idempotent lifecycle: a unit stores its row
once under the run lock, a redone unit stores nothing twice. A worker killed mid-unit (out
of memory, a decoder crash) breaks the pool: a new pool redoes the units without a row,
each start counted (``lifecycle.start_unit``: a unit that kills its worker every time fails
the run, naming it). Workers are started with ``spawn`` (no fork of a process with threads
and loaded models), take this process's settings, load their models once (module caches)
and keep them for later runs; PyTorch and BLAS threads are matched to the pool (cores /
workers each). A worker whose parent process is gone (a killed server) stops within a
second. One worker, an in-memory SQLite database or a caller inside an open transaction
(the workers would not see its rows: tests) execute the units here, one after the other
(``lifecycle.execute_inline``); the rows are the same.

The one place that decides *how* embedded runs execute: ``dispatch.queue_runs``,
``services.run_face_evaluation`` and ``attack_service.run_attack`` call it.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import pickle
import threading
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from django.conf import settings
from django.db import connections
from automated.native_logs import standard_error_kept

from . import lifecycle, pool_worker
from .run_models import RunBase, RunStatus

logger = logging.getLogger(__name__)

#: Name of the thread that executes embedded runs.
THREAD_NAME = "automated-runs"


def background_possible() -> bool:
    """True unless the database is an in-memory SQLite one, which another thread cannot see (tests)."""
    connection = connections["default"]
    return not (connection.vendor == "sqlite" and connection.is_in_memory_db())


def worker_count() -> int:
    """Processes of the pool: ``settings.DEID_WORKERS`` (default the machine's cores, evalsite/conf.py)."""
    return settings.DEID_WORKERS


def pool_possible() -> bool:
    """True when the pool's processes can share the work: more than one worker, and a database
    they see as this process does (not an in-memory SQLite one, no open transaction)."""
    return worker_count() > 1 and background_possible() and not connections["default"].in_atomic_block


_pool: dict = {"executor": None, "pid": None, "size": 0}
_pool_lock = threading.Lock()


def _settings_snapshot() -> dict:
    """This process's settings that pickle (the database a test switched to, its media folder...)."""
    snapshot = {}
    for name in dir(settings):
        if name.isupper():
            try:
                value = getattr(settings, name)
                pickle.dumps(value)
            except Exception:  # e.g. a lazy object or a class: the worker's own settings keep it
                continue
            snapshot[name] = value
    return snapshot


def _executor() -> ProcessPoolExecutor:
    """This process's pool, started on first use (after a fork, the child starts its own)."""
    with _pool_lock:
        size = worker_count()
        if _pool["executor"] is None or _pool["pid"] != os.getpid() or _pool["size"] != size:
            _pool.update(
                executor=ProcessPoolExecutor(
                    size,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=pool_worker.init_worker,
                    initargs=(_settings_snapshot(), max(1, (os.cpu_count() or 1) // size)),
                ),
                pid=os.getpid(),
                size=size,
            )
        return _pool["executor"]


def shutdown_pool() -> None:
    """Stop this process's pool (its workers and their models); the next run starts a new one."""
    with _pool_lock:
        executor, _pool["executor"] = _pool["executor"], None
    if executor is not None and _pool["pid"] == os.getpid():
        executor.shutdown(wait=True, cancel_futures=True)


def _discard_broken_pool(executor: ProcessPoolExecutor) -> None:
    with _pool_lock:
        if _pool["executor"] is executor:
            _pool["executor"] = None
    executor.shutdown(wait=False, cancel_futures=True)


def map_in_pool(function, items: list[tuple]) -> list:
    """``function(*item)`` for each of ``items``, by the pool when :func:`pool_possible`, in order.

    For per-video work outside a run's lifecycle (masking a campaign's videos with a
    baseline method): ``function`` must be a module-level function and its arguments and
    result picklable. Each outcome is the result, or the exception it raised (returned,
    not raised, so the caller keeps the other items' results).

    Raises
    ------
    concurrent.futures.process.BrokenProcessPool
        If a worker died (the pool is replaced at the next use).
    """
    if len(items) < 2 or not pool_possible():
        return [_outcome(function, item) for item in items]
    # The pool (its resource tracker) and, in submit(), its workers start with the real stderr.
    with standard_error_kept():
        executor = _executor()
        futures = [executor.submit(_outcome, function, item) for item in items]
    try:
        return [future.result() for future in futures]
    except BrokenProcessPool:
        _discard_broken_pool(executor)
        raise
    except BaseException:
        for future in futures:
            future.cancel()
        raise


def _outcome(function, item: tuple):
    try:
        return function(*item)
    except Exception as error:
        return error


def _in_pool(kind: lifecycle.RunKind, run: RunBase, step: str) -> None:
    """Every undone unit of ``step`` ("video", "fold" or "final") of ``run`` by the pool, until none is left.

    A broken pool (a worker died) is replaced and the units still without a row are
    submitted again; a unit's error (the run marked FAILED by the lifecycle) is raised
    once the units already running have ended.
    """
    pending = {
        "video": lifecycle.pending_videos,
        "fold": lifecycle.pending_folds,
        "final": lambda kind, run: [f"inline-{run.pk}"] if run.status == RunStatus.RUNNING else [],
    }[step]
    while True:
        run.refresh_from_db()
        units = pending(kind, run) if run.status in lifecycle.ACTIVE else []
        if not units:
            return
        started = dict(run.deliveries or {})
        with standard_error_kept():
            executor = _executor()
            futures = [executor.submit(pool_worker.unit, kind, step, run.pk, key) for key in units]
        try:
            for future in futures:
                future.result()
            return
        except BrokenProcessPool as error:
            _discard_broken_pool(executor)
            run.refresh_from_db()
            if (run.deliveries or {}) == started:  # no unit even started: the workers cannot start
                lifecycle.fail(
                    kind.model, run.pk, f"the worker processes stopped before any unit started ({error})"
                )
                raise
            logger.warning("%s run %s: a worker process died; its unit is done again", kind.name, run.pk)
        except BaseException:
            for future in futures:
                future.cancel()
            raise


def execute_run(kind: lifecycle.RunKind, run: RunBase) -> RunBase:
    """Execute every unit of ``run`` left undone, on every core; return it refreshed.

    The units of ``lifecycle.execute_inline``, the same rows: per-video units, folds and the
    final step by the pool (:func:`pool_possible`), else here one after the other.
    This process first becomes the run's owner (``lifecycle.take``); a run another live
    process owns is left to it (returned as it is).

    Raises
    ------
    Exception
        A unit's error, after the run was marked FAILED with it.
    """
    if not pool_possible():
        return lifecycle.execute_inline(kind, run)
    if not lifecycle.take(kind.model, run.pk):
        run.refresh_from_db()
        return run
    _in_pool(kind, run, "video")
    if kind.fold_model is not None:
        _in_pool(kind, run, "fold")
    if kind.has_final_step:  # in a worker too: its models are loaded there already
        _in_pool(kind, run, "final")
    run.refresh_from_db()
    return run


def _execute_all(work: list[tuple[lifecycle.RunKind, RunBase]], *, raise_errors: bool) -> None:
    for kind, run in work:
        try:
            execute_run(kind, run)
        except Exception:  # stored on the run as failed (lifecycle); the next run still goes
            if raise_errors:
                raise
            logger.exception("%s run %s failed", kind.name, run.pk)


#: Work handed to this process's runner thread, in order (``execute``), and whether a thread drains it.
_queue: deque = deque()
_lock = threading.Lock()
_draining = {"pid": None}


def _drain() -> None:
    """The runner thread's body: execute queued work until none is left, then end."""
    try:
        while True:
            with _lock:
                if not _queue:
                    _draining["pid"] = None
                    return
                work = _queue.popleft()
            _execute_all(work, raise_errors=False)
    finally:
        connections.close_all()


def execute(
    work: list[tuple[lifecycle.RunKind, RunBase]], *, background: bool, raise_errors: bool = True
) -> threading.Thread | None:
    """Execute the runs of ``work`` (``(kind, run)`` pairs), one after the other, in this process.

    Parameters
    ----------
    work : list of (RunKind, RunBase)
    background : bool
        True: queued for this process's runner thread, a daemon thread with its own
        database connection (closed when it ends) that executes queued work in order, one
        run at a time (several requests' runs do not compete for the cores); started now
        if none is running, so the runs must be committed already. Errors are logged (the
        failed run stores its own). Falls back to here-and-now when the database cannot be
        shared with a thread (``background_possible``). False: here and now.
    raise_errors : bool, default=True
        Here and now: raise the first failure (False: log it and go on with the next run).

    Returns
    -------
    threading.Thread or None
        The runner thread this call started (None when executed here, nothing to do, or
        a runner thread was running already and takes the work).

    Raises
    ------
    Exception
        Here and now with ``raise_errors`` only: the first run's failure (stored on it as
        FAILED); the runs after it are not executed.
    """
    if not work:
        return None
    if not (background and background_possible()):
        _execute_all(work, raise_errors=raise_errors)
        return None
    with _lock:
        _queue.append(list(work))
        if _draining["pid"] == os.getpid():
            return None  # the running thread takes it
        _draining["pid"] = os.getpid()  # (after a fork the parent's thread is not ours)
        thread = threading.Thread(target=_drain, name=THREAD_NAME, daemon=True)
        thread.start()
    return thread


def reset() -> None:
    """Forget queued work and the runner thread (tests that stand in for the thread)."""
    with _lock:
        _queue.clear()
        _draining["pid"] = None
