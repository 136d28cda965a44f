"""The body of the embedded executor's pool workers (``embedded``): their start and their units.

A worker is a fresh process (``spawn``) that imports this module before Django is set up
(to unpickle :func:`init_worker`), so it imports no model at module level: Django and the
lifecycle are imported once :func:`init_worker` has set Django up.
"""

from __future__ import annotations

import os
import threading
import time


def _watch_parent(parent: int) -> None:
    """Exit this worker once its parent process is gone (a killed server): no orphan keeps computing."""
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


def init_worker(snapshot: dict, threads: int) -> None:
    """A worker's start: the parent's settings (``snapshot``), Django, ``threads`` per library.

    ``threads`` bounds PyTorch (unless ``DEID_TORCH_THREADS`` sets it per unit), OpenCV
    and BLAS/OpenMP (numpy, scikit-learn), so the pool's workers together use the cores
    once. Sends ``processes.worker_ready`` at the end.
    """
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    # threadpool_limits below bounds the libraries loaded by then only; those the science
    # imports where it runs (SciPy's OpenBLAS, scikit-learn's OpenMP) read these when they load.
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = str(threads)
    from django.conf import settings

    for name, value in snapshot.items():
        setattr(settings, name, value)
    import django

    django.setup()
    import cv2
    import torch
    from threadpoolctl import threadpool_limits

    threadpool_limits(threads)
    cv2.setNumThreads(threads)
    if settings.TORCH_NUM_THREADS is None:
        torch.set_num_threads(threads)
    from .processes import worker_ready

    worker_ready.send(sender=None)


def unit(kind, step: str, run_id: int, key) -> None:
    """One unit of run ``run_id``: ``lifecycle.process_video`` (``step="video"``, ``key`` the
    masked video id), ``lifecycle.process_fold`` (``"fold"``, ``key`` the fold number) or
    ``lifecycle.run_final_step`` (``"final"``, ``key`` the step's owner)."""
    from . import lifecycle

    if step == "video":
        lifecycle.process_video(kind, run_id, key)
    elif step == "fold":
        lifecycle.process_fold(kind, run_id, key)
    else:
        lifecycle.run_final_step(kind, run_id, key)
