"""Test-only poison for the real-worker test of the redelivery limit (tests/ops/test_celery_runs.py).

Imported by ``tests/settings.py`` only when ``DEID_TEST_KILL_ON_VIDEO`` is set (the test
sets it in the environment of the one worker it starts; the production settings never
import this). In every worker process, the face evaluation of that masked video id
appends the process id to ``DEID_TEST_KILL_LOG`` and then SIGKILLs its own process, as a
decoder crash or the out-of-memory killer would: after the lifecycle counted the start
(``lifecycle.start_unit``), before any result.
"""

from __future__ import annotations

import os
import signal

from celery.signals import worker_process_init

VICTIM = int(os.environ["DEID_TEST_KILL_ON_VIDEO"])
KILL_LOG = os.environ["DEID_TEST_KILL_LOG"]


@worker_process_init.connect
def poison_face_video(**_):
    """Wrap ``FACE_RUN.compute_video`` in this (forked) worker process so VICTIM kills it."""
    from automated.django_app.services import FACE_RUN

    compute_video = FACE_RUN.compute_video

    def dying_compute_video(run, masked):
        if masked.pk == VICTIM:
            with open(KILL_LOG, "a") as log:
                log.write(f"{os.getpid()}\n")
            os.kill(os.getpid(), signal.SIGKILL)
        return compute_video(run, masked)

    FACE_RUN.compute_video = dying_compute_video
