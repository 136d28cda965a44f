"""The embedded executor (no broker): a run's units executed in this process, now or in a thread.

Without ``CELERY_BROKER_URL`` nothing else runs the units: a command executes its run right
here (``background=False``, it waits for it anyway); a web request hands its runs to a
daemon thread of the server process (``background=True``) and answers at once, the
progress page following them. Either way the units are those of ``lifecycle.execute_inline``,
which first makes this process the run's owner (``RunBase.owner``), so a run left unfinished
when the process stops (a server restart) is found by ``lifecycle.orphans`` and resumed by
``dispatch.recover``.

The one place that decides *how* embedded runs execute (``dispatch.queue_runs`` calls it):
a process pool would replace the thread here.
"""

from __future__ import annotations

import logging
import threading

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


def execute(
    work: list[tuple[lifecycle.RunKind, RunBase]], *, background: bool, raise_errors: bool = True
) -> threading.Thread | None:
    """Execute the runs of ``work`` (``(kind, run)`` pairs), one after the other, in this process.

    Parameters
    ----------
    work : list of (RunKind, RunBase)
    background : bool
        True: in a daemon thread started now, with its own database connection (closed at
        the end), so the runs must be committed already; errors are logged (the failed run
        stores its own). Falls back to here-and-now when the
        database cannot be shared with a thread (``background_possible``). False: here
        and now.
    raise_errors : bool, default=True
        Here and now: raise the first failure (False: log it and go on with the next run).

    Returns
    -------
    threading.Thread or None
        The thread (None when executed here, or nothing to do).

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

    def body():
        try:
            _execute_all(work, raise_errors=False)
        finally:
            connections.close_all()

    thread = threading.Thread(target=body, name=THREAD_NAME, daemon=True)
    thread.start()
    return thread
