"""Uploads validated by a real Celery worker on Redis, with PostgreSQL (issue 8).

The record exists (``queued``) before any worker runs; a worker validates it. A worker
killed with SIGKILL mid-upload leaves the record ``processing`` with the members checked
so far; the broker redelivers the task to a second worker, which resumes the upload: every
member stored exactly once, every stored file with its row.
"""

import re
import time
from pathlib import Path

import pytest
from django.conf import settings

from tests.ops.servers import celery_worker, manage, manage_commands, postgres_database, redis_broker

from .conftest import GRID, make_zip


def _query(url: str, sql: str, *params):
    import psycopg

    with psycopg.connect(url) as conn:
        return conn.execute(sql, params).fetchall()


def _upload_state(url: str, upload_id: int) -> tuple[str, int]:
    ((status, report),) = _query(
        url, "SELECT status, report FROM evalsite_submissionupload WHERE id = %s", upload_id
    )
    return status, len((report or {}).get("files", []))


def _wait(predicate, timeout_s: float, what: str, server=None):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.3)
    raise AssertionError(
        f"{what} not within {timeout_s} s" + (f":\n{server.output()[-3000:]}" if server else "")
    )


@pytest.fixture
def deployment(tmp_path, tiny_dataset):
    """PostgreSQL + Redis environment with the tiny campaign and one submission; yields (env, submission id)."""
    with postgres_database() as db_url, redis_broker() as broker:
        env = {
            "DATABASE_URL": db_url,
            "CELERY_BROKER_URL": broker,
            "DEID_VAR_DIR": str(tmp_path / "var"),
            "DEID_DATA_DIR": str(settings.DATA_DIR),
            "DEID_DEBUG": "0",
            # Redelivery of a dead worker's task within seconds instead of the production hour.
            "DEID_BROKER_VISIBILITY_TIMEOUT_S": "4",
        }
        # Both set-up commands in one process (one Django start-up, 3-4 CPU s, instead of two).
        _, out = manage_commands(
            ["import_dataset", str(tiny_dataset), "--campaign", "Worker", "--no-web-copies"],
            ["create_submission", "--campaign", "worker", "--team", "W", "--name", "m"],
            env=env,
        )
        yield env, int(re.search(r"Created submission (\d+)", out).group(1))


def test_a_worker_validates_a_queued_upload_and_a_killed_worker_is_resumed_by_another(
    deployment, tmp_path, masked_files, data_dir
):
    env, submission_id = deployment
    archive = make_zip(
        tmp_path / "team.zip",
        {
            "bbaf2n.mp4": masked_files["good_bbaf2n"],
            "brbk7n.mp4": masked_files["good_brbk7n"],
            "id2_vcd_swwp2s.mpg": data_dir / GRID / "id2_vcd_swwp2s.mpg",
            "notes.txt": masked_files["text"],
        },
    )
    # No worker yet: the zip and its record are stored, the task waits in Redis.
    out = manage("upload_submission", str(submission_id), str(archive), "--no-wait", env=env).stdout
    upload_id = int(re.search(r"upload (\d+) queued", out).group(1))
    assert _upload_state(env["DATABASE_URL"], upload_id) == ("queued", 0)

    first = celery_worker(env, tmp_path, name="first")
    worker = first.__enter__()
    try:
        # Kill it (the whole process group, SIGKILL) once it has checked a member.
        _wait(
            lambda: _upload_state(env["DATABASE_URL"], upload_id)[1] >= 1, 120, "first member checked", worker
        )
        worker.kill()
    finally:
        first.__exit__(None, None, None)
    status, checked = _upload_state(env["DATABASE_URL"], upload_id)
    assert status == "processing" and checked < 4, (status, checked)  # the record says how far it got

    # The worker that resumes the upload stays for the last step (a worker running while the
    # command waits): one worker start less (about 3 CPU s) than a third worker of its own.
    with celery_worker(env, tmp_path, name="second") as second:
        _wait(
            lambda: _upload_state(env["DATABASE_URL"], upload_id)[0] == "done",
            120,
            "redelivered upload done",
            second,
        )
        rows = _query(
            env["DATABASE_URL"], "SELECT report FROM evalsite_submissionupload WHERE id = %s", upload_id
        )
        report = rows[0][0]
        assert [(f["file"], f["code"]) for f in report["files"]] == [
            ("bbaf2n.mp4", "accepted"),
            ("brbk7n.mp4", "accepted"),
            ("id2_vcd_swwp2s.mpg", "accepted"),
            ("notes.txt", "not_a_video_file"),
        ]
        assert report["complete"] is True
        masked = _query(
            env["DATABASE_URL"], "SELECT source_video_id, upload_id, file, web_file FROM evalsite_maskedvideo"
        )
        assert len(masked) == 3 and len({m[0] for m in masked}) == 3 and {m[1] for m in masked} == {upload_id}
        media = Path(env["DEID_VAR_DIR"]) / "media"
        stored = {str(p.relative_to(media)) for p in (media / "masked").rglob("*") if p.is_file()}
        ((zip_name,),) = _query(
            env["DATABASE_URL"], "SELECT file FROM evalsite_submissionupload WHERE id = %s", upload_id
        )
        assert stored == {name for m in masked for name in m[2:] if name}  # nothing without its row
        assert (media / zip_name).is_file()

        # With a worker running, the command waits and prints the report (a replacement here).
        # another file (the very same bytes would be refused as identical_to_current)
        again = make_zip(tmp_path / "again.zip", {"bbaf2n.mp4": masked_files["good_brbk7n"]})
        out = manage(
            "upload_submission", str(submission_id), str(again), "--replace", "--wait-timeout", "120", env=env
        ).stdout
    assert "accepted  replaced" in out and "1 accepted, 0 rejected; submission complete" in out
    assert _query(
        env["DATABASE_URL"], "SELECT count(*), count(*) FILTER (WHERE current) FROM evalsite_maskedvideo"
    ) == [(4, 3)]
