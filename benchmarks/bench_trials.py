"""Rater server time per trial page and per answer with 100 concurrent simulated raters (SQLite).

Runs ``python -m tests.crowd.simulation`` in a fresh process on a fresh default database (a
SQLite file with the project's settings: ``BEGIN IMMEDIATE``, 30 s busy timeout): a
campaign of the 10 real GRID speakers, their clips x 3 source-video rows (30 videos),
one blurred submission, 2 tasks, 10 raters per item (1200 evaluated responses), and 100
raters in 100 client threads (10 % abandoning mid-session) served by a pool of 4 request
workers (``tests.crowd.simulation.ServerSlots``, as a WSGI server would). Times are measured
around Django's test client inside a worker, i.e. the whole server-side request
(middleware, views, queries, template) including waits for the SQLite write lock, but
not queueing for a free worker; no network.
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from django.conf import settings

RATERS = 100


def run() -> list[dict]:
    import django

    django.setup()
    with tempfile.TemporaryDirectory() as var_dir:
        # A fresh var folder holds no stored secret key: the child uses this process's.
        env = {
            **os.environ,
            "DEID_VAR_DIR": var_dir,
            "DEID_DATA_DIR": str(settings.DATA_DIR),
            "DEID_SECRET_KEY": settings.SECRET_KEY,
        }
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "tests.crowd.simulation",
                "--raters",
                str(RATERS),
                "--threads",
                str(RATERS),
                "--copies",
                "3",
                "--raters-per-video",
                "10",
                "--abandon",
                "0.1",
                "--waves",
                "0",
                "--claim-timeout",
                "600",
                "--cache-dir",
                str(Path(settings.CACHE_DIR) / "grid"),
            ],
            capture_output=True,
            text=True,
            env=env,
            cwd=settings.BASE_DIR,
            check=False,
        )
    if result.returncode != 0:
        raise RuntimeError(f"simulation failed: {result.stderr[-2000:]}")
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    common = {
        "raters": RATERS,
        "server_workers": 4,
        "database": "sqlite (file)",
        "items": summary["items"],
        "over_target": summary["items_over_target"],
        "lost": summary["lost"],
        "errors": summary["n_errors"],
    }
    return [
        {
            "request": "trial page (GET)",
            "n": summary["pages"],
            "median_ms": summary["page_ms_median"],
            "p95_ms": summary["page_ms_p95"],
            **common,
        },
        {
            "request": "answer (POST JSON)",
            "n": summary["answers_sent"],
            "median_ms": summary["respond_ms_median"],
            "p95_ms": summary["respond_ms_p95"],
            **common,
        },
        {
            "request": "whole run",
            "n": summary["pages"] + summary["answers_sent"],
            "median_ms": "",
            "p95_ms": "",
            "elapsed_s": summary["elapsed_s"],
            **common,
        },
    ]
