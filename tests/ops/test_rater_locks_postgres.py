"""The rater paths' row locks on PostgreSQL: one order (session, item, trial), short item locks.

``tests/ops/lock_probe.py`` runs the real paths (:mod:`trials.assignment`) in a child
process on a fresh PostgreSQL database with the GRID campaign and records every
``SELECT ... FOR UPDATE`` statement. Before issue 8, answering locked trial (with its
session, campaign and rater rows, by a join), then item, then session, while reloading
locked session then item: the opposite order, a deadlock when a rater answers and reloads
at once. A pick kept the lock of every item it tried.

``tests/ops/upload_quota_probe.py`` (same database): a double-clicked upload passes a
phase's upload quota once (``evalsite.uploads.receive_upload`` checks and records under
the team's row lock).
"""

import json
import subprocess
import sys

import pytest
from django.conf import settings

from tests.ops.servers import ROOT, base_env, postgres_database


def run(module_args, env, timeout=600):
    proc = subprocess.run(
        [sys.executable, "-m", *module_args],
        cwd=ROOT,
        # The probe answers at once without fetching media: the plausibility checks would
        # exclude its raters (and so change which trials they get).
        env=base_env(TRIALS_PLAUSIBILITY_CHECKS="0", **env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def tables(locks):
    return [lock["table"] for lock in locks]


@pytest.fixture(scope="module")
def postgres_env(tmp_path_factory):
    """A fresh, migrated PostgreSQL database for this module's probes (migrated once)."""
    with postgres_database() as url:
        yield {
            "DATABASE_URL": url,
            "DEID_VAR_DIR": str(tmp_path_factory.mktemp("pg") / "var"),
            "DEID_DATA_DIR": str(settings.DATA_DIR),
        }


def test_every_rater_path_locks_session_then_item_then_trial(postgres_env, grid_cache):
    cache = grid_cache  # the GRID files tests/trials makes (made once per run)
    env = postgres_env
    setup = run(
        ["tests.crowd.simulation", "--setup-only", "--raters-per-video", "10", "--cache-dir", str(cache)],
        env,
    )
    report = run(["tests.ops.lock_probe", str(setup["campaign"])], env)

    assert tables(report["record_response"]) == ["trials_ratingsession", "trials_item", "trials_trial"]
    assert tables(report["current_trial_lapsed_claim"]) == ["trials_ratingsession", "trials_item"]
    assert report["lapsed_claim_kept"]
    assert tables(report["renew_claim"]) == ["trials_ratingsession", "trials_item", "trials_trial"]
    assert report["heartbeat_renewed"]
    # A new claim: the session, then one item, tried without waiting for a busy one.
    new = report["current_trial_new_item"]
    assert tables(new) == ["trials_ratingsession", "trials_item"]
    assert new[1]["skip_locked"]
    # No locking statement locks the rows it joins (campaign, rater, source video).
    every = [lock for path in report.values() if isinstance(path, list) for lock in path]
    assert every and not any(lock["joined"] for lock in every)
    # With every candidate item but one locked by another transaction, the pick takes the
    # free one at once instead of waiting for the others' commit.
    pick = report["pick_while_locked"]
    assert pick["candidates"] > 10 and pick["first_choice_skipped"]
    assert pick["picked_free_item"] and pick["seconds"] < 5


def test_a_double_clicked_upload_passes_the_phase_quota_once(postgres_env, tmp_path):
    # Two requests of one team at once against a quota of one upload: before the fix both
    # passed the check (neither record existed yet) and both were stored.
    archive = tmp_path / "double.zip"
    archive.write_bytes(b"PK not a zip")  # fails validation; failed uploads count here
    report = run(["tests.ops.upload_quota_probe", str(archive)], postgres_env)
    assert report == {
        "A": "stored (failed)",
        "B": "refused (upload_quota)",
        "b_passed_the_check_while_a_paused": False,
        "stored": 1,
    }


def test_two_runs_made_primary_at_once_leave_one_primary_and_no_error(postgres_env):
    # Before the team lock, the second choice often broke the one-primary constraint (IntegrityError).
    report = run(["tests.ops.upload_quota_probe", "--primaries"], postgres_env)
    assert report == {"errors": [], "primaries_after_each_round": [1]}
