"""The team view in real headless Chromium at 1366x768 and 390x844: log in, own submission, leaderboard.

A team member logs in through the team login page, opens their submission (headline
figures, per-video report) and the published leaderboard. Wide tables scroll inside
their own box: the page itself never scrolls sideways. Screenshots go to
``$DEID_SHOTS_DIR`` (default ``/tmp/shots``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from selenium.webdriver.common.by import By

from evalsite.models import Campaign, LeaderboardVisibility
from evalsite.services import create_submission
from evalsite.validation import ingest_submission_zip

from ..trials.conftest import media_url_for_live_server  # noqa: F401 (autouse: the live server's media prefix)
from ..trials.test_browser import browser, one_request_at_a_time, server, wait_for_element  # noqa: F401
from ..trials.test_one_screen import VIEWPORTS, set_viewport
from .conftest import make_zip

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SHOTS = Path(os.environ.get("DEID_SHOTS_DIR", "/tmp/shots"))

LAYOUT = """
return {inner: [window.innerWidth, window.innerHeight],
        scroll: document.documentElement.scrollWidth,
        boxes: Array.from(document.querySelectorAll(arguments[0])).map(function (e) {
          var r = e.getBoundingClientRect(); return [e.id || e.tagName, r.left, r.right, r.width]; })};
"""


def _face_rows(submission, value: float) -> None:
    """A completed face-evaluation run with one score row per masked video (as runs write them)."""
    from automated.django_app.face_models import AutomatedRun, VideoScore
    from automated.face_eval import METRIC_FIELDS

    counts = {"frames_tested", "clear_faces", "masked_faces", "n_identities", "psnr_identical_frames"}
    run = AutomatedRun.objects.create(submission=submission, config={"stride": 5}, status="completed")
    for masked in submission.masked_videos.all():
        VideoScore.objects.create(
            run=run, masked_video=masked, **{name: 15 if name in counts else value for name in METRIC_FIELDS}
        )


@pytest.fixture
def team_campaign(transactional_db, media_root, tiny_dataset, masked_files, tmp_path):
    from evalsite.importer import import_dataset

    campaign = import_dataset(tiny_dataset, "Team View Campaign", web_copies=False).campaign
    Campaign.objects.filter(pk=campaign.pk).update(
        leaderboard_visibility=LeaderboardVisibility.ANONYMISED, teams_may_upload=True
    )
    mine = create_submission(campaign, "Team Owl", "owl-blur-v2", description="Gaussian blur, sigma 12")
    other = create_submission(campaign, "Team Hidden", "hidden-method")
    for submission in (mine, other):
        archive = make_zip(tmp_path / f"{submission.name}.zip", {"bbaf2n.mp4": masked_files["good_bbaf2n"]})
        ingest_submission_zip(submission, archive, original_name=f"{submission.name}.zip", web_copies=False)
        _face_rows(submission, 0.8 if submission == mine else 0.4)
    member = User.objects.create_user("owl-member", password="pw-owl-member-1")
    mine.team.members.add(member)
    return campaign, mine


# Elements reaching past the viewport's right edge outside any scrolling box (what widens the page).
WIDE = """
var limit = arguments[0] + 0.5;
function clipped(e) {
  for (var p = e.parentElement; p; p = p.parentElement) { if (getComputedStyle(p).overflowX !== 'visible') return true; }
  return false;
}
return Array.from(document.querySelectorAll('body *')).filter(function (e) {
  return e.getBoundingClientRect().right > limit && !clipped(e);
}).map(function (e) { return e.tagName + (e.id ? '#' + e.id : '') + ' ' + Math.round(e.getBoundingClientRect().right); });
"""


def _check_layout(driver, width, height, selector, name):
    wide = driver.execute_script(WIDE, width)
    assert wide == [], (name, wide)
    found = driver.execute_script(LAYOUT, selector)
    assert found["inner"] == [width, height], (name, found["inner"])
    assert found["scroll"] <= width, (name, found["scroll"])  # no sideways scrolling of the page
    for label, left, right, box_width in found["boxes"]:
        assert box_width > 0 and left >= 0 and right <= width + 0.5, (name, label, left, right)
    SHOTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(SHOTS / f"team-{name}.png"))


@pytest.mark.parametrize("viewport", sorted(VIEWPORTS))
def test_a_team_member_logs_in_and_reads_their_report_and_the_leaderboard(
    browser,
    server,
    one_request_at_a_time,
    team_campaign,
    viewport,  # noqa: F811
):
    campaign, mine = team_campaign
    width, height, mobile = VIEWPORTS[viewport]
    driver = browser
    set_viewport(driver, width, height, mobile)
    driver.delete_all_cookies()
    driver.get(f"{server.url}/team/")
    assert "/team/login/" in driver.current_url, driver.page_source[:2000]
    _check_layout(driver, width, height, "form.card, #login", f"{viewport}-login")
    driver.find_element(By.NAME, "username").send_keys("owl-member")
    driver.find_element(By.NAME, "password").send_keys("pw-owl-member-1")
    driver.find_element(By.ID, "login").click()
    wait_for_element(driver, f"team-{mine.team.pk}")
    page = driver.page_source
    assert "owl-blur-v2" in page and "Team View Campaign" in page and "hidden-method" not in page
    _check_layout(driver, width, height, "section.team, .campaign", f"{viewport}-home")

    driver.find_element(By.LINK_TEXT, "owl-blur-v2").click()
    wait_for_element(driver, "per-video")
    rows = driver.find_elements(By.CSS_SELECTOR, "#per-video tbody tr")
    assert [r.find_element(By.TAG_NAME, "td").text for r in rows] == ["bbaf2n", "brbk7n", "id2_vcd_swwp2s"]
    assert "Gaussian blur, sigma 12" in driver.page_source
    own = driver.find_elements(By.CSS_SELECTOR, "#leaderboard-table tbody tr")
    assert len(own) == 1 and "owl-blur-v2" in own[0].text
    _check_layout(driver, width, height, "h1, .facts, .scroll, .leaderboard-wrap", f"{viewport}-submission")

    driver.get(f"{server.url}/team/campaign/{campaign.pk}/leaderboard/")
    wait_for_element(driver, "leaderboard-table")
    names = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#leaderboard-table tbody .team")]
    assert names == ["Team Owl", "Anonymised team A"], names  # own team first, named; the other anonymised
    assert "Team Hidden" not in driver.page_source and "hidden-method" not in driver.page_source
    _check_layout(driver, width, height, "h1, .leaderboard-wrap, #comparisons", f"{viewport}-leaderboard")
