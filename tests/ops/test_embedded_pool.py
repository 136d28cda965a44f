"""The embedded executor's process pool (no broker, issue 20): the rows of one process, on every core.

PostgreSQL (the pool's workers share the database with the process that starts the run),
the attack campaign of tests/ops/test_celery_runs.py (5 real GRID clips, 3 identities, 4
leave-one-video-out folds) and its ``block_permute_fixed`` baseline. Runs are started in
``manage.py shell`` without a broker (``services.run_face_evaluation``,
``attack_service.run_attack``), each with cold caches of its own (``DEID_CACHE_DIR``), so
the pool recomputes everything the single process computed:

- ``DEID_WORKERS=2`` stores the rows ``DEID_WORKERS=1`` stores (face scores, attack
  results, scene memorisation, every fold);
- a pool worker SIGKILLed in the middle of a video (``tests/ops/poison.py``, once) breaks
  the pool; a new one redoes that video, and the run completes once: one row per video, the
  values of the undisturbed run, the video started twice.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings

from tests.ops.servers import manage, manage_commands, postgres_database
from tests.ops.test_celery_runs import (
    ATTACK,
    FACE_STRIDE,
    FOLDS,
    _assert_same,
    _attack_rows,
    _face_rows,
    _folds,
    _query,
    _run,
    _scene_rows,
    write_fold_dataset,
)

EVALUATED = 5  # the fold campaign's clips, none of them attacker training material


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    """(env, submission id, tmp folder): the campaign and its baseline in a fresh database."""
    tmp = tmp_path_factory.mktemp("embedded_pool")
    dataset = write_fold_dataset(tmp / "dataset", settings.DATA_DIR)
    with postgres_database() as db_url:
        env = {
            "DATABASE_URL": db_url,
            "DEID_VAR_DIR": str(tmp / "var"),
            "DEID_DATA_DIR": str(settings.DATA_DIR),
            "CELERY_BROKER_URL": "",  # the embedded default
            "OMP_NUM_THREADS": "1",
            "DEID_TORCH_THREADS": "1",
        }
        # One process for both set-up commands (tests/ops/servers.manage_commands); masking
        # in it, not in a pool (DEID_WORKERS=1, as under `make test`): the pool is tested below.
        _, out = manage_commands(
            ["import_dataset", str(dataset), "--campaign", "Pool", "--no-web-copies"],
            ["make_baseline", "pool", "--method", "block_permute_fixed", "--no-web-copies"],
            env={**env, "DEID_WORKERS": "1"},
        )
        yield env, int(re.search(r"submission (\d+) ", out).group(1)), tmp


def _shell(env: dict, workers: int, cache: Path, code: str) -> str:
    """``code`` in ``manage.py shell`` with ``DEID_WORKERS=workers`` and its own cache folder;
    prints (and checks) whether the pool is used."""
    probe = "from automated.django_app import embedded; print('POOL', embedded.pool_possible()); "
    env = {**env, "DEID_WORKERS": str(workers), "DEID_CACHE_DIR": str(cache)}
    out = manage("shell", "-c", probe + code, env=env, timeout=900).stdout
    assert f"POOL {workers > 1}" in out, out
    return out


FACE = (
    "from automated.django_app.services import run_face_evaluation as r; "
    "from evalsite.models import Submission as S; "
    "print('FACE', r(S.objects.get(pk={submission}), stride=%s, behaviour=False).pk)" % FACE_STRIDE
)
ATTACK_RUN = (
    "from automated.django_app.attack_service import run_attack as r; "
    "from evalsite.models import Submission as S; "
    "print('ATTACK', r(S.objects.get(pk={submission}), attackers=%r, recognizers=%r, stride=%s).pk)"
    % (
        ATTACK[ATTACK.index("--attackers") + 1 : ATTACK.index("--recognizers")],
        ATTACK[ATTACK.index("--recognizers") + 1 : ATTACK.index("--stride")],
        ATTACK[-1],
    )
)


def _face_run(env, workers: int, cache: Path, submission: int) -> int:
    out = _shell(env, workers, cache, FACE.format(submission=submission))
    return int(re.search(r"FACE (\d+)", out).group(1))


def _face_and_attack_runs(env, workers: int, cache: Path, submission: int) -> tuple[int, int]:
    """The face run, then the attack run, in one process (one pool when ``workers`` > 1).

    One process, not one each: a process and each of its pool's workers start Django,
    PyTorch and MediaPipe (about 6 CPU s each on the 2-core machine); the pool's workers
    keep their models for the process's later runs (``embedded``), as a server's do.
    """
    out = _shell(
        env,
        workers,
        cache,
        FACE.format(submission=submission) + "\n" + ATTACK_RUN.format(submission=submission),
    )
    return int(re.search(r"FACE (\d+)", out).group(1)), int(re.search(r"ATTACK (\d+)", out).group(1))


def _fold_rows(url: str, run_id: int) -> list:
    """Every fold's tested videos, per-pair rows (timings left out) and per-frame predictions."""
    folds = _query(
        url,
        "SELECT fold, test_videos, rows, predictions FROM automated_attackfold WHERE run_id = %s ORDER BY fold",
        run_id,
    )
    untimed = [
        [{k: v for k, v in row.items() if not k.endswith("_s")} for row in rows] for _, _, rows, _ in folds
    ]
    assert all(rows for rows in untimed)
    return [(fold, tested, rows, predictions) for (fold, tested, _, predictions), rows in zip(folds, untimed)]


@pytest.fixture(scope="module")
def serial(campaign):
    """(face run id, attack run id) of ``DEID_WORKERS=1``."""
    env, submission, tmp = campaign
    return _face_and_attack_runs(env, 1, tmp / "cache-serial", submission)


@pytest.fixture(scope="module")
def serial_face(serial):
    return serial[0]


def test_the_pool_stores_the_rows_of_one_process(campaign, serial):
    env, submission, tmp = campaign
    url = env["DATABASE_URL"]
    serial_face, serial_attack = serial
    pooled_face, pooled_attack = _face_and_attack_runs(env, 2, tmp / "cache-pool", submission)
    assert _run(url, "automatedrun", pooled_face) == ("completed", EVALUATED, EVALUATED, "")
    reference = _face_rows(url, serial_face)
    assert len(reference) == EVALUATED
    _assert_same(reference, _face_rows(url, pooled_face))

    assert _run(url, "attackrun", pooled_attack) == ("completed", EVALUATED, EVALUATED, "")
    assert _folds(url, pooled_attack) == _folds(url, serial_attack) == (FOLDS, FOLDS, FOLDS)
    results = _attack_rows(url, pooled_attack)
    assert len(results) == 6 and {row[1] for row in results.values()} == {
        FOLDS
    }  # 2 recognizers x 3 attackers
    assert results == _attack_rows(url, serial_attack)
    assert _scene_rows(url, pooled_attack) == _scene_rows(url, serial_attack)
    assert _fold_rows(url, pooled_attack) == _fold_rows(url, serial_attack)


def test_a_pool_worker_killed_mid_video_leaves_a_run_that_completes_once(campaign, serial_face):
    env, submission, tmp = campaign
    url = env["DATABASE_URL"]
    victim = _query(
        url, "SELECT id FROM evalsite_maskedvideo WHERE submission_id = %s ORDER BY id LIMIT 1", submission
    )[0][0]
    kill_log = tmp / "killed.log"
    poisoned = {
        **env,
        "DEID_TEST_KILL_ON_VIDEO": str(victim),
        "DEID_TEST_KILL_LOG": str(kill_log),
        "DEID_TEST_KILL_TIMES": "1",
    }
    run = _face_run(poisoned, 2, tmp / "cache-killed", submission)
    killed = kill_log.read_text().split()
    assert len(killed) == 1  # one pool worker died in the victim's unit
    assert _run(url, "automatedrun", run) == ("completed", EVALUATED, EVALUATED, "")
    scores = _face_rows(url, run)
    count = "SELECT count(*) FROM automated_videoscore WHERE run_id = %s"
    assert len(scores) == _query(url, count, run)[0][0] == EVALUATED  # no duplicate row
    _assert_same(_face_rows(url, serial_face), scores)
    ((deliveries,),) = _query(url, "SELECT deliveries FROM automated_automatedrun WHERE id = %s", run)
    assert deliveries[f"video:{victim}"] == 2  # started, killed, started again
