"""Many simulated raters at once on a file-based SQLite database (the default settings).

Runs ``python -m tests.crowd.simulation`` in a fresh process with its own ``DEID_VAR_DIR`` so
that the threads share a real SQLite file (``BEGIN IMMEDIATE``, 30 s busy timeout), as in
production, rather than the test runner's in-memory database. The same raters over real
HTTP against gunicorn + PostgreSQL: ``tests/ops/test_rater_simulation_http.py``.
"""

import json
import os
import subprocess
import sys

from django.conf import settings


def test_concurrent_raters_fill_every_item_exactly_with_nothing_lost(tmp_path, grid_cache):
    env = {
        **os.environ,
        "DEID_VAR_DIR": str(tmp_path / "var"),
        "DEID_DATA_DIR": str(settings.DATA_DIR),
        "TRIALS_PLAUSIBILITY_CHECKS": "0",
    }  # scripted raters fetch no media and answer at once
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.crowd.simulation",
            "--raters",
            "40",
            "--threads",
            "8",
            "--abandon",
            "0.3",
            "--raters-per-video",
            "3",
            "--claim-timeout",
            "2",
            "--cache-dir",
            str(grid_cache),
            "--media-pages",
            "1",
            # GRID's one lineup block serves a session's check or its identity trial
            # (trials.design.session_layout): identity items need about twice the sessions.
            "--waves",
            "12",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=settings.BASE_DIR,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["errors"] == []
    # 10 videos x (clear, blurred) x action + 6 men's videos x (clear, blurred) x identity
    # (4 women are too few for a women-only lineup block: trials.design.exposure_plan).
    assert summary["items"] == 32
    assert summary["items_at_target"] == 32 and summary["items_over_target"] == 0
    assert summary["evaluated_responses"] == 32 * 3
    assert summary["lost"] == 0 and summary["unacknowledged_stored"] == 0
    assert summary["responses"] == summary["acknowledged"]
    assert summary["duplicates_sent"] > 0  # resent answers happened and were stored once
    assert summary["raters"] > summary["raters_finished"]  # some raters abandoned
    assert summary["stored_twice"] == 0 and summary["same_video_twice"] == 0
    # Every rater's first trial page loads its media; crops are made by the first requests.
    assert summary["media_fetched"] >= summary["raters"] and summary["media_not_prepared"] == 0
