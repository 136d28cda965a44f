"""Test-only poison for the real-worker test of the redelivery limit (tests/ops/test_celery_runs.py).

Imported by ``tests/settings.py`` only when ``DEID_TEST_KILL_ON_VIDEO`` is set (the test
sets it in the environment of the one worker it starts; the production settings never
import this). In every worker process (a Celery worker's, or a pool worker of the embedded
executor, ``processes.worker_ready``), the face evaluation of that masked video id
appends the process id to ``DEID_TEST_KILL_LOG`` and then SIGKILLs its own process, as a
decoder crash or the out-of-memory killer would: after the lifecycle counted the start
(``lifecycle.start_unit``), before any result. With ``DEID_TEST_KILL_TIMES=n`` only while
the log holds fewer than n lines (a worker killed once, then the unit goes through;
tests/ops/test_embedded_pool.py).
"""

from __future__ import annotations

import os
import signal

from celery.signals import worker_process_init

from automated.django_app.processes import worker_ready

VICTIM = int(os.environ["DEID_TEST_KILL_ON_VIDEO"])
KILL_LOG = os.environ["DEID_TEST_KILL_LOG"]
KILL_TIMES = int(os.environ.get("DEID_TEST_KILL_TIMES") or 0)  # 0: every time


def _killed_before() -> int:
    try:
        with open(KILL_LOG) as log:
            return len(log.read().split())
    except FileNotFoundError:
        return 0


@worker_process_init.connect
def poison_face_video(**_):
    """Wrap ``FACE_RUN.compute_video`` in this (forked) worker process so VICTIM kills it."""
    from automated.django_app.services import FACE_RUN

    compute_video = FACE_RUN.compute_video

    def dying_compute_video(run, masked):
        if masked.pk == VICTIM and (not KILL_TIMES or _killed_before() < KILL_TIMES):
            with open(KILL_LOG, "a") as log:
                log.write(f"{os.getpid()}\n")
            os.kill(os.getpid(), signal.SIGKILL)
        return compute_video(run, masked)

    FACE_RUN.compute_video = dying_compute_video


worker_ready.connect(poison_face_video)  # the embedded executor's pool workers (strong: the module holds it)
