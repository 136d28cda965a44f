"""Shared fixtures: the real public data folder, isolated media/var folders, the GRID files."""

import os
import resource
from pathlib import Path

import pytest
from django.conf import settings


#: The test files that take longest (seconds on the 2-core machine: CPU seconds of a test
#: file and its child processes in a pytest-xdist run, or the serial CI run's wall time).
#: Under pytest-xdist (``make test``: ``-n <cores + 1> --dist loadfile``) a worker takes one file
#: at a time in collection order; these go first, longest first, then every other file with
#: a ``slow`` or ``browser`` mark or in tests/ops (real models, Chromium, servers), then the
#: rest, so no long file is left to run alone at the end while the other worker idles. The
#: numbers are a schedule, not a test.
SLOWEST_FILES = {  # full run of a1e4de0 (2 workers, 3 December 2026), seconds
    "test_rater_simulation_http.py": 290,
    "test_celery_runs.py": 207,
    "test_catch_and_timing.py": 141,
    "test_bytes_carry_nothing.py": 116,
    "test_page_queries.py": 106,
    "test_embedded_pool.py": 99,
    "test_commands.py": 94,
    "test_finetune.py": 88,
    "test_cheating.py": 82,
    "test_one_screen.py": 81,
    "test_report_dictionary.py": 72,
    "test_attack_service.py": 67,
    "test_simulation.py": 65,
    "test_behaviour_runs.py": 64,
    "test_face_services.py": 63,
    "test_isolation.py": 62,
    "test_run_start.py": 54,
    "test_team_isolation.py": 50,
    "test_orl.py": 44,
    "test_check_placement.py": 39,
}
SLOW_MARKS = ("slow", "browser")


def _schedule_weight(items) -> dict[Path, float]:
    """{test file: weight}: ``SLOWEST_FILES`` seconds, else 1 for slow ones, else 0."""
    weights: dict[Path, float] = {}
    for item in items:
        slow = "ops" in item.path.parts or any(item.get_closest_marker(m) for m in SLOW_MARKS)
        weight = SLOWEST_FILES.get(item.path.name, 1.0 if slow else 0.0)
        weights[item.path] = max(weights.get(item.path, 0.0), weight)
    return weights


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist, order the test files by ``_schedule_weight``, heaviest first.

    The sort is stable: each file's tests stay together and in their order, and files of
    equal weight keep theirs. Every worker collects and sorts the same way (xdist checks it).
    """
    if os.environ.get("PYTEST_XDIST_WORKER"):
        weights = _schedule_weight(items)
        items.sort(key=lambda item: -weights[item.path])


_FILE_SECONDS: dict[str, list] = {}
_CPU_MARK = pytest.StashKey[float]()


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its children reaped so far (servers a fixture
    started count when it stops them): unlike wall time, not inflated by the other worker."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Each phase's report carries its CPU seconds (``cpu_s``; xdist sends it to the controller)."""
    outcome = yield
    started = item.stash.get(_CPU_MARK, None)
    now = _cpu_seconds()
    if started is not None:
        outcome.get_result().user_properties.append(("cpu_s", now - started))
    item.stash[_CPU_MARK] = now


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    item.stash[_CPU_MARK] = _cpu_seconds()


def pytest_runtest_logreport(report):
    """Add each phase's duration and CPU seconds to its file (the controller sees every worker's reports)."""
    entry = _FILE_SECONDS.setdefault(report.nodeid.split("::")[0], [0.0, 0.0, 0])
    entry[0] += report.duration
    entry[1] += dict(report.user_properties).get("cpu_s", 0.0)
    entry[2] += report.when == "call"


def pytest_terminal_summary(terminalreporter):
    """The 25 test files that took longest (setup + call + teardown, all workers), with their
    CPU seconds, and the sums: the data ``SLOWEST_FILES`` is kept from."""
    if not _FILE_SECONDS or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    total = sum(entry[0] for entry in _FILE_SECONDS.values())
    cpu = sum(entry[1] for entry in _FILE_SECONDS.values())
    terminalreporter.write_sep(
        "=", f"slowest 25 files of {len(_FILE_SECONDS)} ({total:.0f} s in all, {cpu:.0f} CPU s)"
    )
    ranked = sorted(_FILE_SECONDS.items(), key=lambda kv: -kv[1][0])
    for path, (seconds, cpu_seconds, tests) in ranked[:25]:
        terminalreporter.write_line(f"{seconds:8.1f}s {cpu_seconds:7.1f} CPU s {tests:4d} tests  {path}")


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """``settings.DATA_DIR`` (``$DEID_DATA_DIR``, default ``../shared/data``); must exist."""
    path = Path(settings.DATA_DIR)
    if not path.is_dir():
        pytest.fail(f"real test data not found at {path}: set DEID_DATA_DIR")
    return path


@pytest.fixture(autouse=True)
def _fresh_report_cache():
    """Each test starts with an empty cache: test databases reuse ids, so a report cached by
    another test's campaign (``evalsite.report_cache``) must never be found."""
    from django.core.cache import cache

    cache.clear()
    yield


def _memo_folder(tmp_path_factory, name: str) -> Path:
    """The folder of a memo of files: under pytest-xdist one for the whole run, shared by the
    workers (in the run's base temporary folder, the parent of each worker's own), so what
    one worker made the other copies instead of making it again; else one of this process."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        folder = tmp_path_factory.getbasetemp().parent / name
        folder.mkdir(exist_ok=True)
        return folder
    return tmp_path_factory.mktemp(name)


def _keep_in_memo(path, target: Path) -> None:
    """Copy ``path`` to ``target`` whole (``automated.cache_files.atomic_file``): the other
    worker never copies half a file, and two writers of the same entry leave one whole copy."""
    import shutil

    from automated.cache_files import atomic_file

    with open(path, "rb") as source, atomic_file(target) as handle:
        shutil.copyfileobj(source, handle)


#: Baselines whose masked file is a function of the source, the method and the key alone
#: (no per-video nonce, no noise: ``automated.anonymizers.registry``).
DETERMINISTIC_BASELINES = {
    "identity", "blur_face", "blur_frame", "pixelate_face", "eye_mask", "block_permute_fixed", "canny",
}  # fmt: skip
_MASKING_MEMO: dict = {"folder": None}


def memoised_mask_video(source_path, masked_path, method: str, key: bytes):
    """``services._mask_video``, each (source bytes, method, key) masked once per run (:func:`_memo_folder`).

    Tests mask the same GRID clips with the same deterministic baselines and fixed keys
    again and again (``create_baseline_submission`` in a function-scoped fixture); the
    masking itself is tested in tests/automated/test_anonymizers*.py. A later call copies
    the first call's file and returns its ``VideoInfo``. Nothing is kept of a call that
    raised, of a method with a nonce or noise, or while a test has replaced
    ``anonymize_video``.
    """
    import dataclasses
    import hashlib
    import pickle
    import shutil

    from automated.cache_files import atomic_file
    from automated.django_app import services

    folder = _MASKING_MEMO["folder"]
    if (
        folder is None
        or method not in DETERMINISTIC_BASELINES
        or services.anonymize_video is not _REAL["anonymize"]
    ):
        return _REAL["mask"](source_path, masked_path, method, key)
    digest = hashlib.sha256(
        Path(source_path).read_bytes() + b"\0" + method.encode() + b"\0" + key
    ).hexdigest()
    kept = folder / f"{digest}.info"  # the VideoInfo, pickled: written after the file
    if kept.exists():
        shutil.copyfile(folder / digest, masked_path)
        return dataclasses.replace(pickle.loads(kept.read_bytes()), path=Path(masked_path))
    info = _REAL["mask"](source_path, masked_path, method, key)
    _keep_in_memo(masked_path, folder / digest)
    with atomic_file(kept) as handle:
        pickle.dump(info, handle)
    return info


_REAL: dict = {}


@pytest.fixture(scope="session", autouse=True)
def _baseline_masking_memo(tmp_path_factory):
    """Install :func:`memoised_mask_video` for the session (in this worker's process; the memo's
    files are the run's)."""
    from automated.django_app import services

    _REAL.update(mask=services._mask_video, anonymize=services.anonymize_video)
    _MASKING_MEMO["folder"] = _memo_folder(tmp_path_factory, "masking-memo")
    services._mask_video = memoised_mask_video
    yield
    services._mask_video = _REAL["mask"]
    _MASKING_MEMO["folder"] = None


def _arguments_digest(first, options: dict) -> str:
    """SHA-256 of an array argument and keyword arguments: arrays and lists of arrays by
    their bytes (and shape and type), everything else by ``repr``."""
    import hashlib

    import numpy as np

    digest = hashlib.sha256()

    def add_array(array):
        array = np.ascontiguousarray(array)
        digest.update(repr((array.shape, array.dtype.str)).encode())
        digest.update(array.data)

    add_array(first)
    for name, value in sorted(options.items()):
        digest.update(name.encode())
        if isinstance(value, np.ndarray):
            add_array(value)
        elif isinstance(value, list) and value and isinstance(value[0], np.ndarray):
            for array in value:
                add_array(array)
        else:
            digest.update(repr(value if not isinstance(value, range) else list(value)).encode())
    return digest.hexdigest()


_PROBE_MEMO: dict = {"frames": {}, "real": None, "tracks": {}, "real_track": None}
#: Probes kept per worker: one GRID campaign's 10 identities and a few more (23 MB each).
PROBE_MEMO_SIZE = 12


def memoised_catch_video_frames(crop_rgb, **options):
    """``trials.media.catch_video_frames``, each probe made once per worker (its frames copied).

    A probe is a function of its arguments alone (seeded); a GRID campaign built the same way in
    test after test gets the same crops, walls and seeds (primary keys repeat after each test's
    rollback), so its 10 probes (about 1 CPU s each) are made once. Probes themselves are tested
    in tests/trials/test_catch_and_timing.py.
    """
    key = _arguments_digest(crop_rgb, options)
    memo = _PROBE_MEMO["frames"]
    if key not in memo:
        memo[key] = _PROBE_MEMO["real"](crop_rgb, **options)
        while len(memo) > PROBE_MEMO_SIZE:
            memo.pop(next(iter(memo)))
    return [frame.copy() for frame in memo[key]]


def memoised_clip_eye_track(frames):
    """``trials.media.clip_eye_track``, each clip's track found once per worker (a copy
    returned): a GRID campaign's probes stand on the same clips test after test, and the
    detector takes about 0.3 CPU s a clip. The track itself is tested in
    tests/trials/test_catch_and_timing.py."""
    import numpy as np

    key = _arguments_digest(np.zeros(0), {"frames": list(frames)})
    memo = _PROBE_MEMO["tracks"]
    if key not in memo:
        memo[key] = _PROBE_MEMO["real_track"](frames)
    track = memo[key]
    return None if track is None else track.copy()


@pytest.fixture(scope="session", autouse=True)
def _catch_probe_memo():
    """Install :func:`memoised_catch_video_frames` and :func:`memoised_clip_eye_track` for the
    session (this worker's process only)."""
    from trials import media

    _PROBE_MEMO["real"] = media.catch_video_frames
    _PROBE_MEMO["real_track"] = media.clip_eye_track
    media.catch_video_frames = memoised_catch_video_frames
    media.clip_eye_track = memoised_clip_eye_track
    yield
    media.catch_video_frames = _PROBE_MEMO["real"]
    media.clip_eye_track = _PROBE_MEMO["real_track"]
    _PROBE_MEMO["frames"].clear()
    _PROBE_MEMO["tracks"].clear()


#: Modules that call ``automated.video.transcode_for_web`` by a name of their own.
TRANSCODING_MODULES = ("automated.video", "evalsite.storage", "trials.media", "trials.practice")
_TRANSCODE_MEMO: dict = {"folder": None, "real": None}


def memoised_transcode_for_web(input_path, output_path, *, timeout_s=None):
    """``automated.video.transcode_for_web``, each input file's bytes transcoded once per run (:func:`_memo_folder`).

    Test after test uploads the same GRID clips and masks them the same way, and opening
    rating encodes the same attention-check probes (memoised frames, so equal bytes): each
    a browser copy of one to two seconds. ffmpeg's output is a function of its input bytes
    and the fixed command, so a later call copies the first call's file. Nothing is kept
    of a call that raised; a call with a time limit below the default (a test of the
    timeout) and a replaced ffmpeg (a test of its failure) always run the real thing. The
    transcoding itself is tested in tests/automated/test_video.py against its own files.
    """
    import hashlib
    import shutil

    from automated import video

    folder = _TRANSCODE_MEMO["folder"]
    real = _TRANSCODE_MEMO["real"]
    if folder is None or video.transcode_timeout_s(timeout_s) < video.DEFAULT_TRANSCODE_TIMEOUT_S:
        return real(input_path, output_path, timeout_s=timeout_s)
    digest = hashlib.sha256(Path(input_path).read_bytes())
    digest.update(video.ffmpeg_executable().encode())
    key = digest.hexdigest()
    output_path = Path(output_path)
    if (folder / key).exists():
        output_path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(folder / key, output_path)
        return output_path
    result = real(input_path, output_path, timeout_s=timeout_s)
    _keep_in_memo(output_path, folder / key)
    return result


@pytest.fixture(scope="session", autouse=True)
def _transcode_memo(tmp_path_factory):
    """Install :func:`memoised_transcode_for_web` in every module that calls it (this worker's
    process only; servers and commands a test starts transcode for real)."""
    import importlib

    from automated import video

    _TRANSCODE_MEMO.update(
        folder=_memo_folder(tmp_path_factory, "transcode-memo"), real=video.transcode_for_web
    )
    modules = [importlib.import_module(name) for name in TRANSCODING_MODULES]
    for module in modules:
        module.transcode_for_web = memoised_transcode_for_web
    yield
    for module in modules:
        module.transcode_for_web = _TRANSCODE_MEMO["real"]
    _TRANSCODE_MEMO.update(folder=None)


@pytest.fixture
def media_root(tmp_path, settings):
    """A private MEDIA_ROOT per test so uploaded files never collide."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.CACHE_DIR = tmp_path / "cache"
    return settings.MEDIA_ROOT


@pytest.fixture(scope="session")
def grid_cache(data_dir) -> Path:
    """Gallery stills, blurred (FFV1) and H.264 copies of the GRID clips, made once.

    Kept in ``settings.CACHE_DIR/trials-tests`` so repeated local runs reuse them. Under
    pytest-xdist the workers share one copy beside their own folders (``var/xdist/grid``,
    see tests/settings.py), made by the first worker that needs it while the others wait on
    a lock: each worker making its own cost about 28 CPU s (blur, web copies, stills). A
    ``.complete`` file is written last; a folder without it (a run stopped while making it)
    is made again from scratch. The files are only read after that (``probes.json`` is
    replaced whole). The folder's name ends in ``grid_files_version()`` (of the code that
    makes the files, tests/crowd/simulation.py), so a changed blur, detector or web-copy command makes them anew and
    the folders of other versions are removed. Used by the rating tests and passed as
    ``--cache-dir`` to the simulation the ops tests start.
    """
    import fcntl
    import shutil

    from tests.crowd.simulation import grid_files_version, prepare_grid_files

    worker_var = os.environ.get("DEID_TEST_WORKER_VAR_DIR")
    prefix = "grid" if worker_var else "trials-tests"
    parent = Path(worker_var).parent if worker_var else Path(settings.CACHE_DIR)
    cache = parent / f"{prefix}-{grid_files_version()}"
    parent.mkdir(parents=True, exist_ok=True)
    complete = cache / ".complete"  # written last: a folder without it was cut short (Ctrl-C, a kill)
    with open(parent / f".{prefix}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes (or the process dies)
        for stale in parent.glob(f"{prefix}*"):  # made by other code (the lock keeps readers out)
            if stale.is_dir() and stale != cache:
                shutil.rmtree(stale, ignore_errors=True)
        if not complete.exists():
            shutil.rmtree(cache, ignore_errors=True)  # a half-written clip would be taken as made
            prepare_grid_files(data_dir, cache)
            complete.touch()
    return cache
