"""The demo's web server: gunicorn started as soon as the demo campaign is imported (issue 20).

``manage.py demo --serve HOST:PORT`` (what ``make demo`` runs) serves the site while the
baselines are masked, evaluated and attacked behind it, so a newcomer can log in at once
and watch the progress pages and the leaderboard fill in; it keeps serving after the demo
until Ctrl-C. The server is the production one (``evalsite.gunicorn_conf``, DEBUG off,
static files by WhiteNoise); its access and error log go to a file, not the terminal the
demo prints its progress to.
"""

from __future__ import annotations

import http.client
import os
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.core.management import call_command

#: Seconds gunicorn has to answer a first request after it is started (its workers import
#: the site: a few seconds on an idle machine).
START_TIMEOUT_S = 120.0


def start_site(bind: str, *, log_path: Path) -> subprocess.Popen:
    """Collect the static files, then start gunicorn on ``bind``; return once it answers a request.

    Parameters
    ----------
    bind : str
        ``host:port`` (``DEID_WEB_BIND`` for the child; ``demo.site_url`` checked it).
    log_path : Path
        gunicorn's access and error log (appended to).

    Raises
    ------
    RuntimeError
        If gunicorn exits or does not answer within ``START_TIMEOUT_S``
        (the message names the log); it is stopped then.
    """
    call_command("collectstatic", interactive=False, verbosity=0)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "DEID_WEB_BIND": bind, "DEID_DEBUG": "0"}
    env.setdefault("DEID_WEB_WORKERS", "2")  # the demo's own work needs the cores
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "-c",
                "python:evalsite.gunicorn_conf",
                "evalsite.wsgi:application",
            ],
            cwd=settings.BASE_DIR,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    host, _, port = bind.rpartition(":")
    host = "127.0.0.1" if host in ("0.0.0.0", "[::]", "::", "*", "") else host.strip("[]")
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline and process.poll() is None:
        if _answers(host, int(port)):
            return process
        time.sleep(0.2)
    stop_site(process)
    raise RuntimeError(f"the demo's web server did not start on {bind}: see {log_path}")


def _answers(host: str, port: int) -> bool:
    """True if a worker answers ``HEAD /`` at all (any status): the port alone is bound by
    gunicorn's master before a worker has loaded the site."""
    connection = http.client.HTTPConnection(host, port, timeout=5)
    try:
        connection.request("HEAD", "/")
        connection.getresponse()
        return True
    except OSError:
        return False
    finally:
        connection.close()


def stop_site(process: subprocess.Popen) -> None:
    """Stop gunicorn: SIGTERM (graceful), then SIGKILL after 10 s."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def serve_until_interrupted(process: subprocess.Popen) -> int:
    """Wait for gunicorn to end; Ctrl-C stops it. Returns its exit status (0 after Ctrl-C)."""
    try:
        return process.wait()
    except KeyboardInterrupt:
        stop_site(process)
        return 0
