"""The embedded executor (no broker): a run's units executed in this process, now or in a thread.

Without ``CELERY_BROKER_URL`` nothing else runs the units: a command executes its run right
here (``background=False``, it waits for it anyway); a web request hands its runs to the
server process's runner thread (``background=True``), which executes them one at a time,
and answers at once, the progress page following them. Either way the units are those of ``lifecycle.execute_inline``,
which first makes this process the run's owner (``RunBase.owner``), so a run left unfinished
when the process stops (a server restart) is found by ``lifecycle.orphans`` and resumed by
``dispatch.recover``.

The one place that decides *how* embedded runs execute (``dispatch.queue_runs`` calls it):
a process pool would replace the runner thread here.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import deque

from django.db import connections

from . import lifecycle
from .run_models import RunBase

logger = logging.getLogger(__name__)

#: Name of the thread that executes embedded runs.
THREAD_NAME = "automated-runs"


def background_possible() -> bool:
    """True unless the database is an in-memory SQLite one, which another thread cannot see (tests)."""
    connection = connections["default"]
    return not (connection.vendor == "sqlite" and connection.is_in_memory_db())


def _execute_all(work: list[tuple[lifecycle.RunKind, RunBase]], *, raise_errors: bool) -> None:
    for kind, run in work:
        try:
            lifecycle.execute_inline(kind, run)
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
