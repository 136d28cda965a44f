"""Shared fixtures: the real public data folder and isolated media/var folders."""

from pathlib import Path

import pytest
from django.conf import settings


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
