"""Evaluate everything on real Celery workers (Redis broker, PostgreSQL).

Two processes started together ask to evaluate everything for the same submission (a
double click reaching two web workers; whether their calls overlap depends on timing):
the submission's row lock lets one create the face and the attack run, the other finds
them pending. A worker then runs both; the logs
of the runs list every video and the finish. Setup: ``test_celery_runs.deployment`` (the
tiny real campaign, 3 GRID clips, with two baseline submissions).
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.ops.servers import ROOT, base_env, celery_worker, redis_broker
from tests.ops.test_celery_runs import _query, _run, _wait, deployment  # noqa: F401

OPTIONS = {
    "face": {"stride": 25, "behaviour": False},
    "attack": {"attackers": ["clear", "naive"], "recognizers": ["eigenfaces"], "stride": 10},
}
EVALUATE = (
    "import json; from automated.django_app.evaluate_all import evaluate_everything as e; "
    "from evalsite.models import Submission as S; "
    "print('OUT', json.dumps([o.as_dict() for o in e(S.objects.get(pk={pk}), {options})]))"
)
LOG = (
    "import json; from automated.django_app.run_progress import run_log, submission_runs; "
    "from evalsite.models import Submission as S; "
    "print('OUT', json.dumps({{r._meta.model_name: [e.text for e in run_log(r)] "
    "for r in submission_runs(S.objects.get(pk={pk}))}}))"
)


def _shell(env: dict, code: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "shell", "-c", code],
        cwd=ROOT,
        env=base_env(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _out(process: subprocess.Popen):
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr
    (line,) = [line for line in stdout.splitlines() if line.startswith("OUT ")]
    return json.loads(line[4:])


def test_two_requests_at_once_start_one_set_of_runs_and_a_worker_runs_both(deployment, tmp_path):  # noqa: F811
    env, ids = deployment
    url, pk = env["DATABASE_URL"], ids["identity"]
    with redis_broker() as broker:
        env = {**env, "CELERY_BROKER_URL": broker}
        code = EVALUATE.format(pk=pk, options=repr(OPTIONS))
        first, second = _shell(env, code), _shell(env, code)  # at the same moment, no worker yet
        answers = [_out(first), _out(second)]
        states = sorted(tuple(part["state"] for part in answer) for answer in answers)
        assert states == [("running", "running"), ("started", "started")], answers
        assert [p["run_id"] for p in answers[0]] == [p["run_id"] for p in answers[1]]
        (face,), (attack,) = (
            _query(url, f"SELECT id FROM automated_{table} WHERE submission_id = %s", pk)
            for table in ("automatedrun", "attackrun")
        )
        assert _run(url, "automatedrun", face[0])[:3] == ("pending", 0, 3)
        with celery_worker(env, tmp_path, name="evaluate-all") as worker:
            _wait(
                lambda: _run(url, "attackrun", attack[0])[0] != "pending",
                300,
                "the attack run started",
                worker,
            )
            _wait(
                lambda: _run(url, "attackrun", attack[0])[0] != "running",
                300,
                "the attack run finished",
                worker,
            )
    assert _run(url, "automatedrun", face[0]) == ("completed", 3, 3, "")
    assert _run(url, "attackrun", attack[0]) == ("completed", 3, 3, "")
    logs = _out(_shell({k: v for k, v in env.items() if k != "CELERY_BROKER_URL"}, LOG.format(pk=pk)))
    for log in logs.values():
        assert log[0] == "queued: 3 videos planned" and log[1] == "started"
        assert [line.split(":")[0] for line in log[2:5]] == [
            "video 1/3 done",
            "video 2/3 done",
            "video 3/3 done",
        ]
        assert log[-1].startswith("finished: 3/3 videos in ")
