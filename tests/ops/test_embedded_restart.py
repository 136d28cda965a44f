"""Runs started from the web without a broker survive a server restart (issue 21).

The embedded default, for real: gunicorn on PostgreSQL without ``CELERY_BROKER_URL``, the
tiny real campaign (3 GRID clips) with its ``identity`` baseline. An organizer's
``POST /api/submissions/<id>/evaluate/`` answers at once with both runs pending (they
execute in a thread of the server); once the face run stored its first video, the whole
server is SIGKILLed (master and worker, as a crash or a hard restart does). The runs are
left "running" / "pending" by a process that is gone. A new server's first request resumes
them: both complete, the video done before the crash is kept (not redone), and each run
says it was resumed once.
"""

from __future__ import annotations

import base64
import json
import re
import urllib.error
import urllib.request

from django.conf import settings

from automated.django_app import processes
from tests.evalsite.conftest import write_tiny_dataset
from tests.ops.servers import gunicorn, manage_commands, postgres_database
from tests.ops.test_celery_runs import KILL_EMBEDDER, _query, _wait

PASSWORD = "ops-organizer-password-1"
AUTH = "Basic " + base64.b64encode(f"organizer:{PASSWORD}".encode()).decode()
EVALUATE = {
    # Seconds per video (15 tested frames per clip, dlib's own embedding): time to crash mid-run.
    "face": {"stride": 5, "embedder": KILL_EMBEDDER, "behaviour": False},
    "attack": {"attackers": ["clear", "naive"], "recognizers": ["eigenfaces"], "stride": 25},
}


def _api(server, base_url: str, path: str, body: dict | None = None) -> tuple[int, dict | list]:
    request = urllib.request.Request(
        base_url + path,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": AUTH, "Content-Type": "application/json"},
        method="GET" if body is None else "POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        assert error.code < 500, server.output()[-6000:]
        return error.code, json.loads(error.read() or b"{}")


def _runs(url: str) -> dict:
    """{(kind, id): (status, videos_done, owner, deliveries)} of every run."""
    rows = {}
    for kind, table in (("face", "automatedrun"), ("attack", "attackrun")):
        for row in _query(url, f"SELECT id, status, videos_done, owner, deliveries FROM automated_{table}"):
            rows[(kind, row[0])] = row[1:]
    return rows


def test_runs_started_from_the_web_are_resumed_after_the_server_is_killed(tmp_path):
    dataset = write_tiny_dataset(tmp_path / "dataset", settings.DATA_DIR)
    with postgres_database() as db_url:
        env = {
            "DATABASE_URL": db_url,
            "DEID_VAR_DIR": str(tmp_path / "var"),
            "DEID_DATA_DIR": str(settings.DATA_DIR),
            "CELERY_BROKER_URL": "",  # the embedded default
            # One unit at a time, so exactly one video is interrupted by the kill (a pool
            # worker killed mid-video: tests/ops/test_embedded_pool.py).
            "DEID_WORKERS": "1",
            "DEID_RESUME_RUNS_ON_START": "1",
            "OMP_NUM_THREADS": "1",
            "DEID_TORCH_THREADS": "1",
        }
        # The set-up commands in one process (tests/ops/servers.manage_commands: one Django
        # start-up, about 3 CPU s, instead of three).
        _, out, _ = manage_commands(
            ["import_dataset", str(dataset), "--campaign", "Restart", "--no-web-copies"],
            ["make_baseline", "restart", "--method", "identity", "--no-web-copies"],
            ["createsuperuser", "--noinput", "--username", "organizer", "--email", "organizer@example.org"],
            env={**env, "DJANGO_SUPERUSER_PASSWORD": PASSWORD},
        )
        submission = int(re.search(r"submission (\d+) ", out).group(1))

        with gunicorn(env, tmp_path, workers=1, threads=2) as (base_url, server):
            status, body = _api(server, base_url, f"/api/submissions/{submission}/evaluate/", EVALUATE)
            assert status == 202, body  # answered before any video was evaluated
            parts = [(p["kind"], p["state"], p["run"]["videos_done"]) for p in body["parts"]]
            assert parts == [("face", "started", 0), ("attack", "started", 0)]
            face, attack = (("face", body["parts"][0]["run_id"]), ("attack", body["parts"][1]["run_id"]))
            _wait(lambda: _runs(db_url)[face][1] >= 1, 600, "the face run's first video", server)
            kept = _query(db_url, "SELECT id, masked_video_id FROM automated_videoscore")
            server.kill()  # SIGKILL to master and worker: no clean-up at all
            server.proc.wait(30)

        runs = _runs(db_url)
        owner = runs[face][2]
        assert runs[face][:2] == ("running", len(kept)) and 1 <= len(kept) < 3, runs
        assert runs[attack][:2] == ("pending", 0) and runs[attack][2] == owner
        # The gunicorn worker that ran them is gone (SIGKILLed with its group: on a busy machine
        # it can take a moment to be scheduled and exit, so allow it a while).
        _wait(lambda: processes.alive(owner) is False, 30, "the killed worker's exit")

        with gunicorn(env, tmp_path, workers=1, threads=2) as (base_url, server):
            # The new server's first request resumes them (DEID_RESUME_RUNS_ON_START).
            status, listed = _api(server, base_url, f"/api/submissions/{submission}/runs/")
            assert status == 200 and {r["status"] for r in listed} <= {"pending", "running", "completed"}
            _wait(
                lambda: {row[0] for row in _runs(db_url).values()} == {"completed"},
                900,
                "both runs completed after the restart",
                server,
            )
            status, again = _api(server, base_url, f"/api/submissions/{submission}/evaluate/", EVALUATE)
            assert status == 200 and [p["state"] for p in again["parts"]] == ["up to date", "up to date"]
            assert "Traceback" not in server.output()

        runs = _runs(db_url)
        assert runs[face][:2] == ("completed", 3) and runs[face][3]["resumed"] == 1
        assert runs[attack][0] == "completed" and runs[attack][3]["resumed"] == 1
        scores = _query(db_url, "SELECT id, masked_video_id FROM automated_videoscore")
        assert len(scores) == 3 and set(kept) <= set(scores)  # the video done before the crash: kept
        # Each video was started once, except the one the crash interrupted (started twice).
        starts = sorted(n for unit, n in runs[face][3].items() if unit.startswith("video:"))
        assert starts in ([1, 1, 1], [1, 1, 2]), runs[face][3]
