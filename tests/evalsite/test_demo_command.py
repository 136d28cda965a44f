"""``manage.py demo`` on a new checkout whose database was never migrated (README's quick look)."""

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

MANAGE = Path(__file__).resolve().parents[2] / "manage.py"


def test_demo_sets_up_an_unmigrated_database_before_anything_else(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env.update(DEID_VAR_DIR=str(tmp_path / "var"), DEID_DATA_DIR=str(tmp_path / "no-data"))
    done = subprocess.run(
        [sys.executable, str(MANAGE), "demo", "--method", "identity"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    # It migrates, then stops on the missing data with the clear error (not "no such table").
    assert "Setting up the database (manage.py migrate)" in done.stdout
    assert done.returncode == 1
    assert "real data not found at" in done.stderr and "no such table" not in done.stderr
    with sqlite3.connect(tmp_path / "var" / "db.sqlite3") as db:
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"evalsite_campaign", "trials_rater", "auth_user"} <= tables
