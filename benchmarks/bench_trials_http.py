"""Rater request times at 100 concurrent raters over real HTTP: gunicorn + PostgreSQL beside runserver + SQLite.

For each server the benchmark starts everything itself: a fresh database (a new
PostgreSQL database on ``DEID_TEST_POSTGRES_URL``, or a SQLite file with the project's
settings: WAL, ``BEGIN IMMEDIATE``, 30 s busy timeout), the GRID rating campaign (10
real speakers x 2 source-video rows = 20 videos, clear and blurred, identity and action:
80 items, 10 responses each) built and opened by ``python -m tests.crowd.simulation
--setup-only``, then the server, then ``python -m tests.crowd.simulation --base-url``: 100
raters at once, each a thread with its own keep-alive HTTP/1.1 connection, 10 %
abandoning, 20 % of answers double-clicked, media of the first 2 trial pages fetched.

- gunicorn: the production configuration (``evalsite.gunicorn_conf``: gthread workers,
  workers and threads as on this machine by default), ``DEID_DEBUG=0``; once with a new
  database connection per request (``DEID_DB_CONN_MAX_AGE=0``, the default) and once
  with connections kept for 60 s.
- runserver: the threaded ``WSGIServer`` ``manage.py runserver`` serves with, started by
  :mod:`benchmarks.timed_devserver` to log each request's time, ``DEID_DEBUG=0``.

``client`` times run from sending a request to its last byte on loopback, so they
include waiting for a free server thread (100 raters without pauses, far fewer threads:
the server is saturated, and by Little's law the mean is raters / throughput); ``server``
times are the server's own (gunicorn's ``%(D)s`` access-log field: request read to
response sent; the same span for runserver's server). The GET /session/ rows include each rater's consent and
instructions pages (2 of about 20 page loads). ``conn_errors`` counts resets, refused
connections and timeouts: raters who hit one stop, so such a server also serves fewer
requests; ``keepalive_retries`` counts requests resent (as browsers do) after the server
closed an idle keep-alive connection just as it was reused. ``at_target`` stays a few
items short of ``items``: abandoned claims hold their items for ``TRIALS_CLAIM_TIMEOUT_S``
(30 min) and no later wave runs here (the tests run them).
"""

import json
import re
import statistics
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path

from django.conf import settings

from tests.crowd.simulation import grid_files_version, percentile

RATERS = 100
COPIES = 2
RATERS_PER_VIDEO = 10
ACCESS_FORMAT = "access %(s)s %(m)s %(U)s %(D)s"
ACCESS_LINE = re.compile(r"^access (\d{3}) (\w+) (\S+) (\d+)$", re.MULTILINE)


def _simulation(*args: str, env: dict) -> dict:
    from tests.ops.servers import ROOT, base_env

    proc = subprocess.run(
        [sys.executable, "-m", "tests.crowd.simulation", *args],
        cwd=ROOT,
        env=base_env(**env),
        capture_output=True,
        text=True,
        timeout=3600,
    )
    if proc.returncode:
        raise RuntimeError(f"tests.crowd.simulation {' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _setup(env: dict) -> dict:
    # the GRID files the tests make (reused while the code that makes them is unchanged)
    cache = Path(settings.CACHE_DIR) / f"trials-tests-{grid_files_version()}"
    return _simulation(
        "--setup-only",
        "--copies",
        str(COPIES),
        "--raters-per-video",
        str(RATERS_PER_VIDEO),
        "--prepare-media",
        "--cache-dir",
        str(cache),
        env=env,
    )


def _rate(base_url: str, campaign: int, env: dict) -> dict:
    return _simulation(
        "--base-url",
        base_url,
        "--campaign",
        str(campaign),
        "--raters",
        str(RATERS),
        "--abandon",
        "0.1",
        "--resend",
        "0.2",
        "--waves",
        "0",
        "--media-pages",
        "2",
        env=env,
    )


def _server_ms(log: str) -> dict:
    """p50/p95 of gunicorn's own request times (ms) for trial pages and answers."""
    times = {"page": [], "answer": []}
    for status, method, path, micros in ACCESS_LINE.findall(log):
        if method == "GET" and path == "/session/":
            times["page"].append(int(micros) / 1000)
        elif method == "POST" and path.startswith("/t/"):
            times["answer"].append(int(micros) / 1000)
    return {
        kind: (statistics.median(v), percentile(v, 0.95)) if v else (None, None) for kind, v in times.items()
    }


def _gunicorn_postgres(tmp: Path, conn_max_age: int) -> tuple[dict, dict]:
    from evalsite import gunicorn_conf
    from tests.ops.servers import gunicorn, postgres_database

    with postgres_database() as url:
        env = {
            "DATABASE_URL": url,
            "DEID_VAR_DIR": str(tmp / f"var-pg-{conn_max_age}"),
            "DEID_DEBUG": "0",
            "TRIALS_PLAUSIBILITY_CHECKS": "0",
            "TRIALS_TRUSTED_PROXIES": "1",  # each simulated rater sends its own X-Forwarded-For
            "DEID_DATA_DIR": str(settings.DATA_DIR),
            "DEID_DB_CONN_MAX_AGE": str(conn_max_age),
        }
        setup = _setup(env)
        options = ("-c", "python:evalsite.gunicorn_conf", "--access-logformat", ACCESS_FORMAT)
        workers, threads = gunicorn_conf.workers, gunicorn_conf.threads
        with gunicorn(env, tmp, workers=workers, threads=threads, extra_args=options) as (base_url, server):
            summary = _rate(base_url, setup["campaign"], env)
        summary["server_ms"] = _server_ms(server.output())
        reuse = f", connections kept {conn_max_age} s" if conn_max_age else ""
        summary["server_label"] = f"gunicorn {workers}x{threads} gthread + PostgreSQL{reuse}"
    return summary, setup


def _runserver_sqlite(tmp: Path) -> tuple[dict, dict]:
    from tests.ops.servers import Server, base_env, free_port, wait_for_port

    env = {
        "DEID_VAR_DIR": str(tmp / "var-sqlite"),
        "DEID_DEBUG": "0",
        "TRIALS_PLAUSIBILITY_CHECKS": "0",
        "TRIALS_TRUSTED_PROXIES": "1",  # each simulated rater sends its own X-Forwarded-For
        "DEID_DATA_DIR": str(settings.DATA_DIR),
    }
    setup = _setup(env)
    port = free_port()
    server = Server(
        [sys.executable, "-m", "benchmarks.timed_devserver", str(port)],
        base_env(**env),
        tmp / "runserver.log",
    )
    try:
        wait_for_port(port, server)
        summary = _rate(f"http://127.0.0.1:{port}", setup["campaign"], env)
    finally:
        server.stop()
    summary["server_ms"] = _server_ms(server.output())
    summary["server_label"] = "runserver's server (threaded) + SQLite file"
    return summary, setup


def _rows(summary: dict) -> list[dict]:
    common = {
        "server": summary["server_label"],
        "raters": RATERS,
        "items": summary["items"],
        "at_target": summary["items_at_target"],
        "over": summary["items_over_target"],
        "lost": summary["lost"],
        "conn_errors": summary["n_connection_errors"],
        "errors": summary["n_errors"],
        "keepalive_retries": summary["keepalive_retries"],
        "first_problem": (summary["connection_errors"] + summary["errors"] + [""])[0][:80],
        "rating_s": summary["elapsed_s"],
        "req_per_s": (summary["pages"] + summary["answers_sent"] + summary["media_fetched"])
        / summary["elapsed_s"],
    }
    rows = []
    for label, kind, n, p50, p95 in (
        (
            "trial page (GET /session/)",
            "page",
            summary["pages"],
            summary["page_ms_median"],
            summary["page_ms_p95"],
        ),
        (
            "answer (POST JSON)",
            "answer",
            summary["answers_sent"],
            summary["respond_ms_median"],
            summary["respond_ms_p95"],
        ),
    ):
        server_p50, server_p95 = summary["server_ms"][kind]
        rows.append(
            {
                "request": label,
                "n": n,
                "server_p50_ms": server_p50,
                "server_p95_ms": server_p95,
                "client_p50_ms": p50,
                "client_p95_ms": p95,
                "client_mean_ms": summary[f"{kind}_ms_mean"],
                **common,
            }
        )
    return rows


def run() -> list[dict]:
    import django

    django.setup()
    import pytest

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for start in (
            partial(_gunicorn_postgres, conn_max_age=0),
            partial(_gunicorn_postgres, conn_max_age=60),
            _runserver_sqlite,
        ):
            try:
                summary, _ = start(Path(tmp))
            except pytest.skip.Exception as skipped:  # no PostgreSQL here: say so, measure the rest
                rows.append({"request": "skipped", "server": "gunicorn + PostgreSQL", "reason": str(skipped)})
                continue
            rows += _rows(summary)
    return rows
