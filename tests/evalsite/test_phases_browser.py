"""A team's view of a blind test phase in real headless Chromium, before and after results release.

One live server, one browser: the team member logs in, opens their test-phase run (a
notice naming the release time, no per-video table, no headline figures) and the
published leaderboard (their test run absent, so is the other team's); the organizer's
release time passes; the same pages then show the run's scores and both teams' test runs.
Screenshots go to ``$DEID_SHOTS_DIR`` (default ``/tmp/shots``): ``phase-before-*.png``,
``phase-after-*.png``.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from selenium.webdriver.common.by import By

from evalsite.models import LeaderboardVisibility, MaskedVideo, Phase, ResultVisibility
from evalsite.services import create_submission

from ..trials.conftest import media_url_for_live_server  # noqa: F401 (autouse: the live server's media prefix)
from ..trials.test_browser import browser, one_request_at_a_time, server, wait_for_element  # noqa: F401
from .test_team_browser import _face_rows

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SHOTS = Path(os.environ.get("DEID_SHOTS_DIR", "/tmp/shots"))


@pytest.fixture
def blind_phase(transactional_db, media_root, tiny_dataset):
    from evalsite.importer import import_dataset

    campaign = import_dataset(tiny_dataset, "Phase View Campaign", web_copies=False).campaign
    campaign.leaderboard_visibility = LeaderboardVisibility.NAMED
    campaign.save()
    release = (timezone.now() + dt.timedelta(days=2)).replace(second=0, microsecond=0)
    test = Phase.objects.create(
        campaign=campaign, name="test", results_visibility=ResultVisibility.PUBLIC, results_release_at=release
    )
    mine = create_submission(campaign, "Team Owl", "owl-test-run", phase=test, description="blur, sigma 12")
    other = create_submission(campaign, "Team Lark", "lark-test-run", phase=test)
    for run, value in ((mine, 0.8125), (other, 0.4375)):
        for video in campaign.source_videos.all():
            MaskedVideo.objects.create(
                submission=run, source_video=video, file=f"masked/{run.pk}-{video.name}.mp4"
            )
        _face_rows(run, value)
    member = User.objects.create_user("owl-member", password="pw-owl-member-1")
    mine.team.members.add(member)
    return campaign, test, mine


def _log_in(driver, server):
    driver.delete_all_cookies()
    driver.get(f"{server.url}/team/login/")
    driver.find_element(By.NAME, "username").send_keys("owl-member")
    driver.find_element(By.NAME, "password").send_keys("pw-owl-member-1")
    driver.find_element(By.ID, "login").click()


def _board(driver, server, campaign) -> list[str]:
    driver.get(f"{server.url}/team/campaign/{campaign.pk}/leaderboard/")
    wait_for_element(driver, "leaderboard-table")
    return sorted(e.text for e in driver.find_elements(By.CSS_SELECTOR, "#leaderboard-table tbody .method"))


def test_a_team_sees_its_blind_test_results_only_after_release(
    browser, server, one_request_at_a_time, blind_phase
):
    campaign, test, mine = blind_phase
    driver = browser
    driver.set_window_size(1366, 900)
    SHOTS.mkdir(parents=True, exist_ok=True)
    _log_in(driver, server)
    wait_for_element(driver, f"team-{mine.team.pk}")
    driver.get(f"{server.url}/team/submission/{mine.pk}/")
    notice = wait_for_element(driver, "results-hidden")
    release = timezone.localtime(test.results_release_at, dt.UTC)
    assert notice.text == f"Results of the test phase are released on {release:%Y-%m-%d %H:%M} UTC."
    assert not driver.find_elements(By.ID, "per-video") and not driver.find_elements(
        By.ID, "leaderboard-table"
    )
    assert "0.8125" not in driver.page_source and "0.812" not in driver.page_source
    assert "run 1 (primary)" in driver.find_element(By.CSS_SELECTOR, ".facts").text
    driver.save_screenshot(str(SHOTS / "phase-before-submission.png"))
    assert _board(driver, server, campaign) == []  # neither team's test run before release
    driver.save_screenshot(str(SHOTS / "phase-before-leaderboard.png"))

    Phase.objects.filter(pk=test.pk).update(results_release_at=timezone.now() - dt.timedelta(minutes=1))
    driver.get(f"{server.url}/team/submission/{mine.pk}/")
    wait_for_element(driver, "per-video")
    assert not driver.find_elements(By.ID, "results-hidden")
    rows = driver.find_elements(By.CSS_SELECTOR, "#per-video tbody tr")
    assert [r.find_element(By.TAG_NAME, "td").text for r in rows] == ["bbaf2n", "brbk7n", "id2_vcd_swwp2s"]
    headers = [h.text for h in driver.find_elements(By.CSS_SELECTOR, "#per-video thead th")]
    ssim = [r.find_elements(By.TAG_NAME, "td")[headers.index("face_ssim")].text for r in rows]
    assert ssim == ["0.8125"] * 3, ssim
    driver.save_screenshot(str(SHOTS / "phase-after-submission.png"))
    assert _board(driver, server, campaign) == ["lark-test-run", "owl-test-run"]
    driver.save_screenshot(str(SHOTS / "phase-after-leaderboard.png"))
