"""Automated face evaluation of one submission on 1 and on 2 Celery workers (Redis + PostgreSQL).

Set up once, not timed: a fresh PostgreSQL database (``DEID_TEST_POSTGRES_URL``), the demo
dataset (24 real clips: 16 GRID at 360x288, 3 at 720x576, 5 CREMA-D at 480x360; ``evalsite.demo_data``)
imported with ``import_dataset``, and its ``blur_face`` baseline made with
``make_baseline``. Each measurement starts fresh workers (``celery -A evalsite worker
--concurrency 1 --pool prefork``, OpenMP/BLAS/PyTorch limited to one thread, so a worker
uses one core), waits until they are ready, queues the run with ``evaluate --no-wait``
(one task per masked video; the default run, face and behaviour metrics) and takes the
wall time from the run row's ``created_at`` to its ``finished_at`` (queueing included,
worker start-up not). Fresh workers and a fresh ``DEID_CACHE_DIR`` each time, so no
measurement finds the clear-side frames, crops or gallery of an earlier one: each worker
process loads its models and embeds the gallery (11 stills) on its first video.

Two strides: every frame (``stride 1``, about 1 740 frame pairs) and the default 5.

Columns: ``speedup`` is the 1-worker wall time over the n-worker one (target >= 1.7 with 2
workers on this 2-core machine); ``cpu_s`` the CPU seconds the workers' processes used
during the run (``/proc``) and ``cores_used`` = ``cpu_s / wall_s``: 2 workers can only
halve the wall time if the machine gives them 2 free cores, so a ``cores_used`` well
below the worker count means other processes had the cores; ``first_task_s`` is the
slowest worker's first task (models loaded, gallery embedded), ``tasks_per_worker`` how
the videos were shared; ``load_1min`` is the load average when the run was queued.
``DEID_BENCH_REPEATS`` (default 1) repeats each configuration, alternating; the rows are
the medians.
"""

from __future__ import annotations

import contextlib
import os
import re
import statistics
import tempfile
import time
from pathlib import Path

from django.conf import settings

from evalsite import conf

WORKER_COUNTS = (1, 2)
STRIDES = (1, 5)
METHOD = "blur_face"
ONE_THREAD = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "DEID_TORCH_THREADS": "1",
}


def _query(url: str, sql: str, *params):
    import psycopg

    with psycopg.connect(url) as conn:
        return conn.execute(sql, params).fetchall()


def _group_cpu_s(group_ids: set[int]) -> float:
    """CPU seconds (user + system) of the live processes in the process groups ``group_ids``."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) in group_ids:  # field 5 of stat: pgrp
                total += (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
    return total


def _measure(env: dict, tmp: Path, submission_id: int, n_workers: int, stride: int, label: str) -> dict:
    from tests.ops.servers import celery_worker, manage

    url = env["DATABASE_URL"]
    env = {**env, "DEID_CACHE_DIR": str(tmp / f"cache-{label}")}  # cold: no clear side from an earlier run
    with contextlib.ExitStack() as stack:
        workers = [
            stack.enter_context(celery_worker(env, tmp, name=f"{label}-w{i}", concurrency=1))
            for i in range(n_workers)
        ]
        groups = {w.pid for w in workers}  # each worker leads its own process group
        load, cpu_before = os.getloadavg()[0], _group_cpu_s(groups)
        out = manage("evaluate", str(submission_id), "--stride", str(stride), "--no-wait", env=env).stdout
        run_id = int(re.search(r"^run (\d+) of ", out, re.M).group(1))
        deadline = time.monotonic() + 3600
        while True:
            ((status, error, seconds, total),) = _query(
                url,
                "SELECT status, error, EXTRACT(EPOCH FROM finished_at - created_at), videos_total "
                "FROM automated_automatedrun WHERE id = %s",
                run_id,
            )
            if status in ("completed", "failed") or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        cpu_s = _group_cpu_s(groups) - cpu_before
        task_s = [
            [
                float(t)
                for t in re.findall(r"automated\.face_video\[[-\w]+\] succeeded in ([\d.]+)s", w.output())
            ]
            for w in workers
        ]
    if status != "completed":
        raise RuntimeError(f"run {run_id} on {n_workers} worker(s) ended {status}: {error}")
    return {
        "wall_s": float(seconds),
        "videos": total,
        "cpu_s": cpu_s,
        "load_1min": load,
        "first_task_s": max(ts[0] for ts in task_s if ts),
        "tasks_per_worker": "/".join(str(len(ts)) for ts in task_s),
    }


def _rows(measured: dict) -> list[dict]:
    rows = []
    for stride in STRIDES:
        base = statistics.median(m["wall_s"] for m in measured[stride, WORKER_COUNTS[0]])
        for n in WORKER_COUNTS:
            runs = measured[stride, n]
            wall = statistics.median(m["wall_s"] for m in runs)
            cpu = statistics.median(m["cpu_s"] for m in runs)
            rows.append(
                {
                    "stride": stride,
                    "workers": n,
                    "videos": runs[0]["videos"],
                    "wall_s": wall,
                    "speedup": base / wall,
                    "cpu_s": cpu,
                    "cores_used": cpu / wall,
                    "first_task_s": statistics.median(m["first_task_s"] for m in runs),
                    "tasks_per_worker": runs[-1]["tasks_per_worker"],
                    "load_1min": statistics.median(m["load_1min"] for m in runs),
                    "cores": os.cpu_count(),
                }
            )
    return rows


def run() -> list[dict]:
    import django

    django.setup()
    import pytest

    from evalsite.demo_data import build_demo_dataset
    from tests.ops.servers import manage, postgres_database, redis_broker

    repeats = conf.value("DEID_BENCH_REPEATS")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        try:
            with postgres_database() as db_url, redis_broker() as broker:
                env = {
                    "DATABASE_URL": db_url,
                    "CELERY_BROKER_URL": broker,
                    "DEID_VAR_DIR": str(tmp / "var"),
                    "DEID_DATA_DIR": str(settings.DATA_DIR),
                    **ONE_THREAD,
                }
                dataset = build_demo_dataset(settings.DATA_DIR, tmp / "dataset")
                manage(
                    "import_dataset",
                    str(dataset),
                    "--campaign",
                    "Bench",
                    "--no-web-copies",
                    env=env,
                    timeout=1200,
                )
                out = manage(
                    "make_baseline", "bench", "--method", METHOD, "--no-web-copies", env=env, timeout=1200
                ).stdout
                submission_id = int(re.search(r"submission (\d+) ", out).group(1))
                measured = {(s, n): [] for s in STRIDES for n in WORKER_COUNTS}
                for repeat in range(repeats):
                    for stride in STRIDES:
                        for n in WORKER_COUNTS:
                            measured[stride, n].append(
                                _measure(env, tmp, submission_id, n, stride, f"r{repeat}s{stride}n{n}")
                            )
        except pytest.skip.Exception as skipped:  # no PostgreSQL or Redis here: say so
            return [{"workers": "skipped", "reason": str(skipped)}]
    return _rows(measured)
