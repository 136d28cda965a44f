"""The embedded pool starts its workers with the real standard error (``standard_error_kept``).

A worker process started while another thread has descriptor 2 on the null device (a
MediaPipe graph being built, ``native_logs.native_stderr_silenced``) keeps the null device
as its standard error for life, and its errors are lost. ``embedded.map_in_pool`` makes the
pool and submits its units (where ``ProcessPoolExecutor`` spawns the workers) inside
``standard_error_kept``, which waits for such a block to end. Before this test, removing
that ``with`` from embedded.py failed nothing.
"""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from automated import native_logs
from automated.django_app import embedded


def test_map_in_pool_waits_for_a_silencing_block_before_it_starts_workers(monkeypatch):
    monkeypatch.delenv("DEID_VERBOSE", raising=False)  # verbose: nothing is silenced, no lock
    silenced, release = threading.Event(), threading.Event()
    released_at: list[float] = []
    submitted_at: list[float] = []

    class RecordingExecutor(ThreadPoolExecutor):
        """Where a process pool would spawn a worker: the moment of each submit."""

        def submit(self, *args, **kwargs):
            submitted_at.append(time.monotonic())
            return super().submit(*args, **kwargs)

    executor = RecordingExecutor(2)
    monkeypatch.setattr(embedded, "pool_possible", lambda: True)
    monkeypatch.setattr(embedded, "_executor", lambda: executor)

    def build_graph():
        with native_logs.native_stderr_silenced():
            silenced.set()
            release.wait(10)
            released_at.append(time.monotonic())

    builder = threading.Thread(target=build_graph)
    builder.start()
    try:
        assert silenced.wait(10)
        threading.Timer(0.5, release.set).start()
        outcomes = embedded.map_in_pool(divmod, [(7, 2), (9, 4)])
    finally:
        release.set()
        builder.join(10)
        executor.shutdown()
    assert outcomes == [(3, 1), (2, 1)]
    assert len(submitted_at) == 2 and released_at
    assert min(submitted_at) >= released_at[0]  # no worker started while fd 2 was the null device
