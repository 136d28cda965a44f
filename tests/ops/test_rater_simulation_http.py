"""100 concurrent raters over real HTTP against gunicorn + PostgreSQL (issue 8, "Done means").

A fresh PostgreSQL database gets the GRID rating campaign (10 real speakers, clear and
blurred clips, identity and action tasks: 32 items, 5 responses each) built and opened
by ``python -m tests.crowd.simulation --setup-only``; gunicorn serves it with the production
configuration (``evalsite.gunicorn_conf``: gthread workers, keep-alive) at 4 workers x 4
threads, database connections kept for 60 s as in the production ``.env``; then ``python -m
tests.crowd.simulation --base-url`` runs 100 raters at once, each a thread with its own
keep-alive HTTP/1.1 connection, 30 % abandoning mid-session and 20 %
of answers double-clicked (sent twice at the same moment on two connections), fetching the
media of their first trial pages; later waves fill what abandoned claims (4 s timeout)
left. Five responses per item, not the study's ten: GRID's six men form one lineup block,
which a session spends on its attention check or on its one evaluated identity trial
(trials.design.session_layout), so each identity response costs about two sessions; with
100 raters contending for 160 responses every item is fought over all the same. Gallery
crops are not prepared ahead, so the first face requests race for them across the four
worker processes.
"""

import json
import re
from collections import Counter
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

from django.conf import settings

from tests.ops.servers import POSTGRES_URL, ROOT, base_env, gunicorn, postgres_database

#: status, method, path, server time in microseconds and worker process id of every request
#: (gunicorn access log)
ACCESS_FORMAT = "access %(s)s %(m)s %(U)s %(D)s %(p)s"  # %(p)s is "<pid>"
ACCESS_LINE = re.compile(r"^access (\d{3}) (\w+) (\S+) (\d+) <(\d+)>$", re.MULTILINE)


def simulation(*args: str, env: dict, timeout: float) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "tests.crowd.simulation", *args],
        cwd=ROOT,
        env=base_env(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def database_facts(url: str) -> dict:
    """Deadlocks PostgreSQL counted in the test database, and its gallery crop rows."""
    import psycopg

    name = urlparse(url).path.lstrip("/")
    with psycopg.connect(POSTGRES_URL) as conn:
        deadlocks = conn.execute(
            "SELECT deadlocks FROM pg_stat_database WHERE datname = %s", (name,)
        ).fetchone()
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT file, catch_video FROM trials_gallerycrop").fetchall()
        crops = [row[0] for row in rows]
        catch_videos = [row[1] for row in rows if row[1]]  # made on first use of a check
        identities = conn.execute("SELECT count(*) FROM evalsite_galleryimage").fetchone()[0]
    return {
        "deadlocks": deadlocks[0],
        "crops": crops,
        "catch_videos": catch_videos,
        "gallery_images": identities,
    }


def test_100_raters_over_http_on_gunicorn_and_postgresql(tmp_path, grid_cache):
    cache = grid_cache  # the GRID files tests/trials makes (made once per run)
    with postgres_database() as url:
        env = {
            "DATABASE_URL": url,
            "DEID_VAR_DIR": str(tmp_path / "var"),
            "DEID_DATA_DIR": str(settings.DATA_DIR),
            "DEID_DEBUG": "0",
            "TRIALS_CLAIM_TIMEOUT_S": "4",
            "TRIALS_PLAUSIBILITY_CHECKS": "0",  # scripted raters fetch few media and answer at once
            "TRIALS_TRUSTED_PROXIES": "1",  # each simulated rater sends its own X-Forwarded-For
            # Connections kept between requests, as in the production .env (docs/campaign.md;
            # docs/benchmarks.md: one per request halves the throughput). With one per request
            # every page, answer and face paid a PostgreSQL backend start and a SCRAM login.
            "DEID_DB_CONN_MAX_AGE": "60",
        }
        setup = simulation(
            "--setup-only", "--raters-per-video", "5", "--cache-dir", str(cache), env=env, timeout=900
        )
        # 10 videos x (clear, blurred) x action + 6 men x (clear, blurred) x identity (the
        # 4 women are a group too thin for identity trials: trials.design)
        assert setup["items"] == 32
        options = ("-c", "python:evalsite.gunicorn_conf", "--access-logformat", ACCESS_FORMAT)
        with gunicorn(env, tmp_path, workers=4, threads=4, extra_args=options) as (base_url, server):
            summary = simulation(
                "--base-url",
                base_url,
                "--campaign",
                str(setup["campaign"]),
                "--raters",
                "100",
                "--abandon",
                "0.3",
                "--resend",
                "0.2",
                # Each rater's first video is a per-trial copy encoded on request
                # (trials.variants, ~0.4 s of CPU): 100 at once on 2 cores queue for
                # longer than a browser's 60 s only because the test runs them all at once.
                "--http-timeout",
                "300",
                env=env,
                timeout=900,
            )
        log = server.output()  # the server has stopped: its database sessions are closed
        facts = database_facts(url)
    print(json.dumps({**summary, **facts, "crops": len(facts["crops"])}))  # figures in the test log

    # Transport: no reset, refused or timed-out connection; no unexpected status anywhere.
    # (keepalive_retries, printed above, counts requests resent because the server had
    # closed the idle keep-alive connection just then, which every browser resends.)
    assert summary["n_connection_errors"] == 0, summary["connection_errors"]
    assert summary["n_errors"] == 0, summary["errors"]
    requests = ACCESS_LINE.findall(log)
    assert len(requests) >= summary["pages"] + summary["answers_sent"] + summary["media_fetched"]
    assert [r for r in requests if r[0].startswith("5")] == []
    # The crowd is spread over the four workers (DEID_WEB_CONNECTIONS): with gunicorn's
    # default of 1000 connections per worker, one worker took nearly all 100 raters and
    # the test ran on one core (7 CPU minutes against 17 s for each of the other three).
    per_worker = Counter(r[4] for r in requests)
    assert len(per_worker) == 4 and max(per_worker.values()) < 0.5 * len(requests), per_worker
    assert "Traceback" not in log and "deadlock detected" not in log, log[-3000:]
    # No worker crashed or was killed for a stuck request: four booted, at start only
    # (so a request resent after an idle keep-alive close, as browsers do, hid no crash).
    assert log.count("Booting worker") == 4 and "WORKER TIMEOUT" not in log, log[-3000:]
    assert facts["deadlocks"] == 0
    # Every item exactly at its target; nothing acknowledged is lost, nothing stored twice.
    assert summary["items"] == 32 and summary["items_at_target"] == 32 and summary["items_over_target"] == 0
    assert summary["evaluated_responses"] == 32 * 5
    assert summary["lost"] == 0 and summary["unacknowledged_stored"] == 0
    assert summary["responses"] == summary["acknowledged"]
    assert summary["stored_twice"] == 0 and summary["same_video_twice"] == 0
    assert summary["double_clicks"] > 0 and summary["duplicates_sent"] > 0  # resent answers stored once
    assert summary["raters"] >= 100 and summary["raters"] > summary["raters_finished"]  # some abandoned
    # Media: every fetch was a PNG or MP4 (checked by the simulation); the crops raced for
    # by the first requests exist once per gallery image shown (the 6 men: the 4 women are
    # a group too thin for lineups, evaluated or attention checks), with no file left over.
    assert summary["media_fetched"] > 100 and summary["media_not_prepared"] == 0
    assert facts["gallery_images"] == 10 and len(facts["crops"]) == 6
    crop_files = sorted(p.name for p in (tmp_path / "var/media/crops").iterdir())
    assert crop_files == sorted(Path(name).name for name in facts["crops"] + facts["catch_videos"])
