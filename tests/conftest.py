"""Shared fixtures: the real public data folder, isolated media/var folders, the GRID files."""

import os
from pathlib import Path

import pytest
from django.conf import settings


#: The test files that take longest (serial seconds on the 2-core machine, --durations).
#: Under pytest-xdist (``make test``: ``-n auto --dist loadfile``) a worker takes one file
#: at a time in collection order; these go first, longest first, so no long file is left
#: to run alone at the end while the other worker idles. A file missing here only runs
#: in its collection place; the numbers are a schedule, not a test.
SLOWEST_FILES = {
    "test_celery_runs.py": 250,
    "test_attack_orl.py": 130,
    "test_attack_finetune.py": 125,
    "test_demo_command.py": 75,
    "test_rater_simulation_http.py": 60,
}


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist, move the files of ``SLOWEST_FILES`` to the front, longest first.

    The sort is stable: each file's tests stay together and in their order, and the other
    files keep theirs. Every worker collects and sorts the same way (xdist checks it).
    """
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda item: -SLOWEST_FILES.get(item.path.name, 0))


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """``settings.DATA_DIR`` (``$DEID_DATA_DIR``, default ``../shared/data``); must exist."""
    path = Path(settings.DATA_DIR)
    if not path.is_dir():
        pytest.fail(f"real test data not found at {path}: set DEID_DATA_DIR")
    return path


@pytest.fixture
def media_root(tmp_path, settings):
    """A private MEDIA_ROOT per test so uploaded files never collide."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.CACHE_DIR = tmp_path / "cache"
    return settings.MEDIA_ROOT


@pytest.fixture(scope="session")
def grid_cache(data_dir) -> Path:
    """Gallery stills, blurred (FFV1) and H.264 copies of the GRID clips, made once.

    Kept in ``settings.CACHE_DIR/trials-tests`` so repeated local runs reuse them (under
    pytest-xdist each worker has its own ``CACHE_DIR``, see tests/settings.py). Used by the
    rating tests and passed as ``--cache-dir`` to the simulation the ops tests start.
    """
    from trials.simulation import prepare_grid_files

    cache = Path(settings.CACHE_DIR) / "trials-tests"
    prepare_grid_files(data_dir, cache)
    return cache
