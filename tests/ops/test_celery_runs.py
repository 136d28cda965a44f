"""Automated runs on real Celery workers (Redis broker, PostgreSQL), issues 8 and 11.

A fresh PostgreSQL database holds the tiny real campaign (3 GRID clips, 3 identities,
``tests/evalsite/conftest.write_tiny_dataset``) and two baseline submissions: ``identity``
(masked = clear) and ``block_permute_fixed``; the attack runs use a second campaign, the
tiny one plus a second clip of two identities (``write_fold_dataset``: 5 clips, so the
cross-video protocol has 4 leave-one-video-out folds), with the same two baselines.
Everything is set up and started the way an organizer does it: ``import_dataset``,
``make_baseline``, ``evaluate`` / ``attack`` (which queue one task per masked video on
Redis, then one per fold for the attack, and print progress while a worker runs them);
commands that follow one another run in one ``manage.py`` process (``call_command``, the
same argument parsing: ``tests/ops/servers.manage_commands``), which saves a Django
start-up (3-4 CPU s) per command. Face runs here skip the behaviour metrics (``--no-behaviour``): the face scores are compared.

- A worker evaluates both submissions (face evaluation and attack suite); the stored rows
  equal those of the same runs executed in-process (no broker).
- A worker killed with SIGKILL in the middle of a video (face run) and in the middle of an
  attack fold (after it stored another fold): the broker redelivers the task to a second
  worker, which shares the folds; the run completes once, with one row per video / fold /
  result cell and the same values as an undisturbed run.
- A poison video (its worker SIGKILLed on every delivery, ``tests/ops/poison.py``): the
  run fails after exactly ``DEID_TASK_MAX_DELIVERIES`` (3) deliveries, naming the video,
  while another run on the same worker completes.
- Claiming a run is exactly-once among processes racing on PostgreSQL.
"""

from __future__ import annotations

import contextlib
import csv
import re
import subprocess
import sys
import time

import pytest
from django.conf import settings

from tests.evalsite.conftest import TINY, write_tiny_dataset
from tests.ops.servers import (
    ROOT,
    base_env,
    celery_worker,
    manage,
    manage_commands,
    postgres_database,
    redis_broker,
)

FACE_STRIDE = "25"  # 3 tested frames per clip: the undisturbed runs are quick
# 15 tested frames per clip with dlib's own (slower) embedding: seconds per video (about 3.5 CPU s,
# 0.24 per frame pair, of which 82 % in dlib's compute_face_descriptor), time to kill mid-video
# (the kill comes 0.5 s into a video), as in tests/ops/test_embedded_restart.py. Stride 2 (38
# frames, 9 CPU s a video) cost about 40 CPU s more over the doomed worker, the rescuer and the
# reference, for the same assertions.
KILL_STRIDE, KILL_EMBEDDER = "5", "dlib_resnet_native"
ATTACK = ["--attackers", "clear", "naive", "parrot", "--recognizers", "lbph", "eigenfaces", "--stride", "10"]
# The heavy folds to kill: the small CNN trains for each attacker in every fold.
KILL_ATTACK = ["--attackers", "clear", "naive", "parrot", "--recognizers", "lbph", "cnn", "--stride", "5"]
# The attack campaign: the tiny one plus a second clip of ID01 (GRID s1) and ID03 (s2).
SECOND_CLIPS = {"ID01": "grid_identity_clips/s1/bbal6n.mpg", "ID03": "grid_talking_heads/pwij3p.mpg"}
FOLDS = 4  # leave one video out over the 4 clips of ID01 and ID03; ID02's one clip only trains
PAIRS = 2 * 3  # recognizers x attackers of ATTACK and of KILL_ATTACK
FACE_COLUMNS = (
    "frames_tested, clear_faces, masked_faces, mean_iou, detection_failure_rate, "
    "match_rate, rank1_rate, mean_rank, mean_genuine_distance, clear_match_rate, clear_rank1_rate, "
    "chance_level, n_identities, ssim, psnr_db, psnr_identical_frames"
)


def _query(url: str, sql: str, *params):
    import psycopg

    with psycopg.connect(url) as conn:
        return conn.execute(sql, params).fetchall()


def _wait(predicate, timeout_s: float, what: str, server=None):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.3)
    raise AssertionError(
        f"{what} not within {timeout_s} s" + (f":\n{server.output()[-4000:]}" if server else "")
    )


def write_fold_dataset(folder, data_dir):
    """``write_tiny_dataset`` plus SECOND_CLIPS: 5 clips, two identities with two each."""
    write_tiny_dataset(folder, data_dir)
    with (folder / "videos.csv").open("a", newline="") as handle:
        for code, clip in SECOND_CLIPS.items():
            name = clip.rsplit("/", 1)[-1]
            assert name not in {video for video, _ in TINY.values()}
            csv.writer(handle).writerow([name, code, "talking"])
            (folder / "videos" / name).write_bytes((data_dir / "videos" / clip).read_bytes())
    return folder


#: ``make_baseline`` arguments after the campaign: the two baselines of every campaign here.
BASELINES = ["--method", "identity", "--method", "block_permute_fixed", "--no-web-copies"]


def _baseline_ids(out: str) -> dict:
    """{method: submission id} from ``make_baseline``'s output."""
    ids = {name: int(pk) for pk, name in re.findall(r"submission (\d+) Baselines / (\w+)", out)}
    assert set(ids) == {"identity", "block_permute_fixed"}, out
    return ids


def _import_with_baselines(env: dict, dataset, campaign: str, slug: str) -> dict:
    """``import_dataset`` then ``make_baseline`` (one process: ``manage_commands``); {method: submission id}."""
    _, out = manage_commands(
        ["import_dataset", str(dataset), "--campaign", campaign, "--no-web-copies"],
        ["make_baseline", slug, *BASELINES],
        env=env,
    )
    return _baseline_ids(out)


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    """PostgreSQL with the campaign and the two baseline submissions; yields (env, {name: submission id})."""
    tmp = tmp_path_factory.mktemp("celery_runs")
    dataset = write_tiny_dataset(tmp / "dataset", settings.DATA_DIR)
    with postgres_database() as db_url:
        env = {
            "DATABASE_URL": db_url,
            "DEID_VAR_DIR": str(tmp / "var"),
            "DEID_DATA_DIR": str(settings.DATA_DIR),
            # A dead worker's task comes back within seconds instead of the production hour
            # (above the longest task here, so a live worker's task is not redelivered).
            "DEID_BROKER_VISIBILITY_TIMEOUT_S": "25",
            "OMP_NUM_THREADS": "1",
            "DEID_TORCH_THREADS": "1",
            # Commands without a broker (make_baseline, the in-process references) work in
            # their own process, not in a pool of spawned ones (each would start Django,
            # PyTorch and MediaPipe again: about 6 CPU s): the rows are the same
            # (tests/ops/test_embedded_pool.py). What `make test` (pytest -n 2) gives them anyway.
            "DEID_WORKERS": "1",
        }
        yield env, _import_with_baselines(env, dataset, "Workers", "workers")


@pytest.fixture(scope="module")
def fold_submissions(deployment, tmp_path_factory):
    """The attack campaign in the same database; {name: submission id} of its two baselines."""
    env, _ = deployment
    dataset = write_fold_dataset(tmp_path_factory.mktemp("fold_runs") / "dataset", settings.DATA_DIR)
    return _import_with_baselines(env, dataset, "Fold workers", "fold-workers")


def _in_process(env: dict, code: str) -> str:
    """Run ``code`` in ``manage.py shell`` without a broker (the embedded in-process mode)."""
    local = {k: v for k, v in env.items() if k != "CELERY_BROKER_URL"}
    return manage("shell", "-c", code, env=local, timeout=1200).stdout


@contextlib.contextmanager
def _in_process_meanwhile(env: dict, code: str, folder):
    """``_in_process`` started in the background; yields a function that waits for it and returns its stdout.

    For work that is independent of what the test does meanwhile (a reference run while
    a worker waits for a redelivery): both cores compute instead of one waiting. Its
    output goes to files in ``folder`` (a pipe nobody reads would stall it). Killed if
    the test leaves before waiting for it.
    """
    local = {k: v for k, v in env.items() if k != "CELERY_BROKER_URL"}
    out_path, err_path = folder / "in-process.out", folder / "in-process.err"
    with out_path.open("w") as out, err_path.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, str(ROOT / "manage.py"), "shell", "-c", code],
            cwd=ROOT,
            env=base_env(**local),
            stdout=out,
            stderr=err,
            text=True,
        )

    def result() -> str:
        if proc.wait(1200):
            raise RuntimeError(f"manage.py shell failed:\n{out_path.read_text()}\n{err_path.read_text()}")
        return out_path.read_text()

    try:
        yield result
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)


def _face_rows(url: str, run_id: int) -> dict:
    rows = _query(
        url, f"SELECT masked_video_id, {FACE_COLUMNS} FROM automated_videoscore WHERE run_id = %s", run_id
    )
    return {row[0]: row[1:] for row in rows}


def _attack_rows(url: str, run_id: int) -> dict:
    """The cross-video rows: per pair, the mean accuracy over folds, its spread and sizes."""
    rows = _query(
        url,
        "SELECT recognizer, attacker, selection, subset_size, repeat, accuracy, n_folds, sd, "
        "min_accuracy, max_accuracy, n_train, n_test FROM automated_attackresult WHERE run_id = %s",
        run_id,
    )
    return {row[:5]: row[5:] for row in rows}


def _scene_rows(url: str, run_id: int) -> dict:
    """The within-video (scene-memorisation) table stored apart on the run: accuracy per pair."""
    ((table,),) = _query(url, "SELECT scene_memorisation FROM automated_attackrun WHERE id = %s", run_id)
    return {(row["recognizer"], row["attacker"], row["selection"]): row["accuracy"] for row in table}


def _folds(url: str, run_id: int) -> tuple:
    """(folds_done, folds_total, stored fold rows) of attack run ``run_id``."""
    (row,) = _query(
        url,
        "SELECT folds_done, folds_total, (SELECT count(*) FROM automated_attackfold WHERE run_id = %s) "
        "FROM automated_attackrun WHERE id = %s",
        run_id,
        run_id,
    )
    return row


def _assert_same(reference: dict, rows: dict) -> None:
    """Equal rows; floats up to dlib's float32 rounding (embeddings differ by ~1e-8 between processes)."""
    assert reference.keys() == rows.keys()
    for key, row in rows.items():
        assert [v if v is None else pytest.approx(v, rel=1e-6) for v in row] == list(reference[key]), key


def _run(url: str, table: str, run_id: int) -> tuple:
    (row,) = _query(
        url, f"SELECT status, videos_done, videos_total, error FROM automated_{table} WHERE id = %s", run_id
    )
    return row


def _reference_code(faces=(), attacks=()) -> str:
    """The ``manage.py shell`` code of ``_reference_runs``."""
    lines = [
        "from automated.django_app.services import run_face_evaluation as face",
        "from automated.django_app.attack_service import run_attack as attack",
        "from evalsite.models import Submission as S",
    ]
    for submission_id, stride, embedder in faces:
        lines.append(
            f"print('FACE', face(S.objects.get(pk={submission_id}), stride={stride}, "
            f"embedder={embedder!r}, behaviour=False).pk)"
        )
    for submission_id, options in attacks:
        attackers = options[options.index("--attackers") + 1 : options.index("--recognizers")]
        recognizers = options[options.index("--recognizers") + 1 : options.index("--stride")]
        stride = options[options.index("--stride") + 1]
        lines.append(
            f"print('ATTACK', attack(S.objects.get(pk={submission_id}), attackers={attackers!r}, "
            f"recognizers={recognizers!r}, stride={stride}).pk)"
        )
    return "\n".join(lines)


def _reference_ids(out: str) -> tuple[list[int], list[int]]:
    """(face run ids, attack run ids) printed by ``_reference_code``."""
    return [int(pk) for pk in re.findall(r"^FACE (\d+)$", out, re.M)], [
        int(pk) for pk in re.findall(r"^ATTACK (\d+)$", out, re.M)
    ]


def _reference_runs(env, faces=(), attacks=()) -> tuple[list[int], list[int]]:
    """The same runs executed in-process (no broker, no worker); (face run ids, attack run ids).

    ``faces``: (submission id, stride, embedder) each; ``attacks``: (submission id, options
    as for the ``attack`` command) each. All in one ``manage.py shell``, one after the
    other: every process that evaluates pays about 6 CPU s to start (Django, then PyTorch
    and MediaPipe on the first unit), and the runs are independent of each other (their
    rows are the same whichever process computes them: tests/ops/test_embedded_pool.py).
    """
    return _reference_ids(_in_process(env, _reference_code(faces, attacks)))


def test_a_worker_evaluates_two_submissions_with_face_and_attack_runs(deployment, fold_submissions, tmp_path):
    env, ids = deployment
    url = env["DATABASE_URL"]
    with redis_broker() as broker:
        env = {**env, "CELERY_BROKER_URL": broker}
        with celery_worker(env, tmp_path, name="solo") as worker:
            # The four commands (evaluate, then attack, per submission, each waiting for its
            # run) in one process, one after the other: one Django start-up instead of four
            # (tests/ops/servers.manage_commands, about 3 CPU s each).
            outs = manage_commands(
                *[
                    command
                    for name, submission_id in ids.items()
                    for command in (
                        ["evaluate", str(submission_id), "--stride", FACE_STRIDE, "--no-behaviour"],
                        ["attack", str(fold_submissions[name]), *ATTACK],
                    )
                ],
                env=env,
                timeout=1200,
            )
            runs = {}
            for name, out, attack_out in zip(ids, outs[::2], outs[1::2], strict=True):
                face = int(
                    re.search(r"^run (\d+) of .*: (pending|running) \(\d/3 videos\)$", out, re.M).group(1)
                )
                # The command printed progress while the worker ran it, and the summary.
                assert "  completed: 3/3 videos" in out and "rank1_rate" in out, out
                out = attack_out
                attack = int(
                    re.search(
                        r"^attack run (\d+) of .*: (pending|running) \(\d/5 videos\)$", out, re.M
                    ).group(1)
                )
                assert "  completed: 5/5 videos" in out and "worst case" in out, out
                runs[name] = face, attack
            log = worker.output()
    assert log.count("automated.face_video[") >= 2 * 6  # received + succeeded, 3 videos x 2 submissions
    # The attack's units: 5 videos, then one task per cross-video fold, then the summary.
    assert len(re.findall(r"automated\.attack_video\[[-\w]+\] succeeded", log)) == 2 * 5
    assert len(re.findall(r"automated\.attack_fold\[[-\w]+\] succeeded", log)) == 2 * FOLDS
    assert len(re.findall(r"automated\.attack_suite\[[-\w]+\] succeeded", log)) == 2

    # The references of all four runs in one process (see _reference_runs).
    names = list(runs)
    reference_faces, reference_attacks = _reference_runs(
        env,
        faces=[(ids[name], FACE_STRIDE, "dlib_resnet") for name in names],
        attacks=[(fold_submissions[name], ATTACK) for name in names],
    )
    assert len(reference_faces) == len(reference_attacks) == len(names)
    for name, reference_face, reference in zip(names, reference_faces, reference_attacks, strict=True):
        face, attack = runs[name]
        assert _run(url, "automatedrun", face) == ("completed", 3, 3, "")
        assert _run(url, "attackrun", attack) == ("completed", 5, 5, "")
        assert _folds(url, attack) == (FOLDS, FOLDS, FOLDS)
        scores = _face_rows(url, face)
        assert len(scores) == 3
        results = _attack_rows(url, attack)
        assert (
            len(results)
            == PAIRS
            == _query(url, "SELECT count(*) FROM automated_attackresult WHERE run_id = %s", attack)[0][0]
        )
        assert {row[1] for row in results.values()} == {FOLDS}  # n_folds: every pair over every fold
        scene = _scene_rows(url, attack)
        assert len(scene) == PAIRS and scene.keys() == {key[:3] for key in results}
        # Same values as the same runs executed in-process (no broker, no worker).
        _assert_same(_face_rows(url, reference_face), scores)
        assert _attack_rows(url, reference) == results and _scene_rows(url, reference) == scene
    # Real values: masked = clear, so every tested frame is recognised (rank 1) and
    # the attacker trained on masked faces does exactly as well as the clear bound, in
    # every fold (the same sd and range) and in the scene-memorisation table.
    identity_face, identity_attack = runs["identity"]
    assert {row[7] for row in _face_rows(url, identity_face).values()} == {1.0}  # rank1_rate
    results = {key[:2]: value[:5] for key, value in _attack_rows(url, identity_attack).items()}
    scene = {key[:2]: value for key, value in _scene_rows(url, identity_attack).items()}
    for recognizer in ("lbph", "eigenfaces"):
        assert results[recognizer, "naive"] == results[recognizer, "parrot"] == results[recognizer, "clear"]
        assert scene[recognizer, "naive"] == scene[recognizer, "parrot"] == scene[recognizer, "clear"]


def _kill_mid_task(worker, task: str, timeout_s: float = 180) -> str:
    """SIGKILL ``worker`` (whole process group) while it runs a ``task``; return that task's id."""
    started = {}

    def running():
        log = worker.output()
        for task_id in re.findall(rf"Task {re.escape(task)}\[([-\w]+)\] received", log):
            started.setdefault(task_id, time.monotonic())
            busy = time.monotonic() - started[task_id]
            if (
                f"{task}[{task_id}] succeeded" not in log
                and f"{task}[{task_id}] raised" not in log
                and busy > 0.5
            ):
                started["victim"] = task_id
                return True
        return False

    _wait(running, timeout_s, f"a {task} task running for 0.5 s", worker)
    worker.kill()
    assert f"{task}[{started['victim']}] succeeded" not in worker.output()
    return started["victim"]


def test_a_worker_killed_mid_run_is_redelivered_and_the_run_completes_once(
    deployment, fold_submissions, tmp_path
):
    env, ids = deployment
    url = env["DATABASE_URL"]
    submission_id = ids["block_permute_fixed"]
    attack_submission = fold_submissions["block_permute_fixed"]
    with redis_broker() as broker:
        env = {**env, "CELERY_BROKER_URL": broker}
        # Both runs queued by one process (one Django start-up, tests/ops/servers.manage_commands):
        # the face run's 3 videos, then the attack run's 5, in that order on the queue.
        face_out, attack_out = manage_commands(
            [
                "evaluate",
                str(submission_id),
                "--no-behaviour",
                "--stride",
                KILL_STRIDE,
                "--embedder",
                KILL_EMBEDDER,
                "--no-wait",
            ],
            ["attack", str(attack_submission), *KILL_ATTACK, "--no-wait"],
            env=env,
        )
        face = int(re.search(r"^run (\d+) of ", face_out, re.M).group(1))
        attack = int(re.search(r"^attack run (\d+) of ", attack_out, re.M).group(1))
        with celery_worker(env, tmp_path, name="doomed") as doomed:
            victim = _kill_mid_task(doomed, "automated.face_video")
        status, done, total, _ = _run(url, "automatedrun", face)
        assert status == "running" and done < 3 == total

        with celery_worker(env, tmp_path, name="doomed-folds") as doomed_folds:
            # It stores a fold first, then dies in the middle of another one.
            _wait(lambda: _folds(url, attack)[0] >= 1, 300, "a fold stored", doomed_folds)
            fold_victim = _kill_mid_task(doomed_folds, "automated.attack_fold")
        assert _run(url, "attackrun", attack)[:3] == ("running", 5, 5)
        done_before, total, stored = _folds(url, attack)
        assert 1 <= done_before == stored < total == FOLDS
        assert not _attack_rows(url, attack)

        # The undisturbed reference runs (see _reference_runs) meanwhile, in a process of
        # their own without a broker: the rescuer sits idle for most of the visibility
        # timeout before the killed fold comes back, and these runs share nothing with the
        # worker's but the database and the caches (atomic files, the same values).
        reference = _reference_code(
            faces=[(submission_id, KILL_STRIDE, KILL_EMBEDDER)], attacks=[(attack_submission, KILL_ATTACK)]
        )
        with _in_process_meanwhile(env, reference, tmp_path) as reference_out:
            with celery_worker(env, tmp_path, name="rescuer") as rescuer:
                _wait(
                    lambda: _run(url, "automatedrun", face)[0] != "running", 180, "face run finished", rescuer
                )
                _wait(
                    lambda: _run(url, "attackrun", attack)[0] != "running",
                    300,
                    "attack run finished",
                    rescuer,
                )
                later_logs = doomed_folds.output() + rescuer.output()
            (reference_face,), (reference_attack,) = _reference_ids(reference_out())
    # The killed tasks themselves were redelivered (same ids) to a later worker (the face
    # task may reach the second one, started within the visibility timeout's reach).
    assert f"automated.face_video[{victim}] received" in later_logs
    assert f"automated.attack_fold[{fold_victim}] received" in rescuer.output()
    assert f"automated.attack_fold[{fold_victim}] succeeded" in rescuer.output()
    assert re.search(r"automated\.attack_suite\[[-\w]+\] succeeded in [\d.]+s: True", rescuer.output())
    # The folds were shared: each stored once, by the doomed worker before it died or by the rescuer.
    stored_by = [
        len(re.findall(r"automated\.attack_fold\[[-\w]+\] succeeded in [\d.]+s: True", log.output()))
        for log in (doomed_folds, rescuer)
    ]
    assert stored_by == [done_before, FOLDS - done_before]
    assert _run(url, "automatedrun", face) == ("completed", 3, 3, "")
    assert _run(url, "attackrun", attack) == ("completed", 5, 5, "")
    assert _folds(url, attack) == (FOLDS, FOLDS, FOLDS)
    scores, results = _face_rows(url, face), _attack_rows(url, attack)
    counts = _query(
        url,
        "SELECT (SELECT count(*) FROM automated_videoscore WHERE run_id = %s), "
        "(SELECT count(*) FROM automated_attackresult WHERE run_id = %s), "
        "(SELECT count(*) FROM automated_attackextraction WHERE run_id = %s)",
        face,
        attack,
        attack,
    )
    assert counts == [(3, PAIRS, 5)] and len(scores) == 3 and len(results) == PAIRS
    scene = _scene_rows(url, attack)
    assert len(scene) == PAIRS
    # The same values as undisturbed runs.
    _assert_same(_face_rows(url, reference_face), scores)
    assert _attack_rows(url, reference_attack) == results and _scene_rows(url, reference_attack) == scene


def test_a_video_that_kills_its_worker_every_time_fails_its_run_after_n_deliveries(deployment, tmp_path):
    """A poison video: the worker dies (SIGKILL) on every delivery; its run fails after 3, the other completes."""
    env, ids = deployment
    url = env["DATABASE_URL"]
    with redis_broker() as broker:
        env = {**env, "CELERY_BROKER_URL": broker}
        names = ("block_permute_fixed", "identity")  # queued in this order, videos in plan order
        outs = manage_commands(  # both in one process (one Django start-up)
            *[
                ["evaluate", str(ids[name]), "--stride", FACE_STRIDE, "--no-behaviour", "--no-wait"]
                for name in names
            ],
            env=env,
        )
        runs = {name: int(re.search(r"^run (\d+) of ", out, re.M).group(1)) for name, out in zip(names, outs)}
        poisoned, healthy = runs["block_permute_fixed"], runs["identity"]
        ((planned,),) = _query(
            url, "SELECT planned_videos FROM automated_automatedrun WHERE id = %s", poisoned
        )
        victim = planned[-1]  # its last video: the two before it are scored first
        ((victim_name,),) = _query(
            url,
            "SELECT s.name FROM evalsite_maskedvideo m JOIN evalsite_sourcevideo s ON s.id = m.source_video_id "
            "WHERE m.id = %s",
            victim,
        )
        kills = tmp_path / "kills.log"
        poison = {
            "DEID_TEST_KILL_ON_VIDEO": str(victim),  # tests/settings.py -> tests/ops/poison.py
            "DEID_TEST_KILL_LOG": str(kills),
            "DEID_TASK_MAX_DELIVERIES": "3",
            # A killed pool process's task is requeued at once (reject_on_worker_lost); a long
            # visibility timeout keeps Redis from also redelivering a slow live task here.
            "DEID_BROKER_VISIBILITY_TIMEOUT_S": "900",
        }
        with celery_worker({**env, **poison}, tmp_path, name="poisoned") as worker:
            finished = lambda: all(  # noqa: E731
                _run(url, "automatedrun", run)[0] in ("completed", "failed") for run in (poisoned, healthy)
            )
            _wait(finished, 300, "both runs finished", worker)
            log = worker.output()
    message = f"video {victim_name}: the worker died 3 times while processing it; see the worker log"
    assert _run(url, "automatedrun", poisoned) == ("failed", 2, 3, message)
    assert _run(url, "automatedrun", healthy) == ("completed", 3, 3, "")
    # Exactly 3 deliveries ran the video, each in a worker process that then died...
    pids = kills.read_text().split()
    assert len(pids) == len(set(pids)) == 3
    assert len(re.findall(r"exited with 'signal 9 \(SIGKILL\)'", log)) == 3
    # ... and the 4th delivery of the same task failed the run instead, without running it.
    received = re.findall(r"Task automated\.face_video\[([-\w]+)\] received", log)
    victim_task = max(set(received), key=received.count)
    assert received.count(victim_task) == 4 and len(received) == 4 + 2 + 3
    assert re.search(rf"automated\.face_video\[{victim_task}\] succeeded in [\d.]+s: False", log)
    deliveries = dict(
        _query(
            url, "SELECT id, deliveries FROM automated_automatedrun WHERE id IN (%s, %s)", poisoned, healthy
        )
    )
    assert deliveries[poisoned] == {f"video:{pk}": 3 if pk == victim else 1 for pk in planned}
    ((healthy_planned,),) = _query(
        url, "SELECT planned_videos FROM automated_automatedrun WHERE id = %s", healthy
    )
    assert deliveries[healthy] == {f"video:{pk}": 1 for pk in healthy_planned}
    # The other run's scores are real: masked = clear, every tested frame is recognised.
    assert {row[7] for row in _face_rows(url, healthy).values()} == {1.0}  # rank1_rate
    assert len(_face_rows(url, poisoned)) == 2


def test_claiming_a_run_is_exactly_once_among_racing_processes(deployment):
    env, ids = deployment
    out = _in_process(
        env,
        "from automated.django_app.face_models import AutomatedRun as R; "
        f"print('RUN', R.objects.create(submission_id={ids['identity']}).pk)",
    )
    run_id = int(re.search(r"RUN (\d+)", out).group(1))
    start_at = time.time() + 6  # after every process has started Django
    code = (
        "import time; from automated.django_app import lifecycle; "
        "from automated.django_app.face_models import AutomatedRun as R; R.objects.exists(); "
        f"time.sleep(max(0, {start_at} - time.time())); "
        f"print('CLAIMED' if lifecycle.claim(R, {run_id}) else 'LOST')"
    )
    racers = [
        subprocess.Popen(
            [sys.executable, str(ROOT / "manage.py"), "shell", "-c", code],
            cwd=ROOT,
            env=base_env(**env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    outputs = [racer.communicate(timeout=120)[0] for racer in racers]
    assert sorted(o.strip().splitlines()[-1] for o in outputs) == ["CLAIMED", "LOST", "LOST", "LOST"], outputs
    assert _query(env["DATABASE_URL"], "SELECT status FROM automated_automatedrun WHERE id = %s", run_id) == [
        ("running",)
    ]
