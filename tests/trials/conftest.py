"""Fixtures: a rating campaign of the 10 real GRID speakers with a blurred submission."""

import pytest
from django.conf import settings

from tests.crowd.simulation import build_grid_campaign
from trials.services import open_rating


@pytest.fixture
def grid_campaign(db, media_root, data_dir, grid_cache):
    """An open campaign: 10 identities (gender-matched foils), 10 clips, 1 blurred submission."""
    campaign = build_grid_campaign(data_dir, grid_cache, raters_per_video=3)
    open_rating(campaign, prepare_media=False)
    return campaign


@pytest.fixture(scope="session", autouse=True)
def media_url_for_live_server():
    """Django's live server wraps itself in a media handler built from ``MEDIA_URL``; the
    project sets it to None (media only through permission-checked views), which crashes
    that handler. Give it a prefix no page uses, before pytest-django starts the server, so
    it still serves no media publicly."""
    if settings.MEDIA_URL is None:
        settings.MEDIA_URL = "/no-public-media-here/"
    yield
