"""Every organizer, team and rater page in headless Chromium at 390x844 and 1366x768: no sideways scrolling.

Issue 21: at 390 px the fairness pages were 465-522 px wide and the progress page 703 px;
the "your team" badge overlapped the next cell; validation messages were cut at 1366 px.
One live server and one browser session visit every page at both sizes; a page fails
when ``document.documentElement.scrollWidth`` exceeds the window's width (wide tables
scroll inside their own box instead), and the message names the elements that reach past
the right edge. Screenshots go to ``$DEID_SHOTS_DIR`` (default ``/tmp/shots``) as
``pages-<viewport>-<page>.png``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from automated.django_app.attack_models import AttackRun
from automated.django_app.face_models import AutomatedRun, VideoScore
from evalsite.models import Campaign, LeaderboardVisibility, SubmissionUpload
from evalsite.organizer_accounts import organizer_permissions
from tests.crowd.simulation import build_grid_campaign
from trials.services import open_rating

from ..trials.conftest import media_url_for_live_server  # noqa: F401 (autouse: the live server's media prefix)
from ..trials.test_browser import POLL_S, browser, one_request_at_a_time, server, wait_for_element  # noqa: F401
from ..trials.test_one_screen import VIEWPORTS, set_viewport
from .test_leaderboard import _attack_rows
from .test_team_browser import WIDE

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, reset_sequences=True)]
SHOTS = Path(os.environ.get("DEID_SHOTS_DIR", "/tmp/shots"))
LONG_MESSAGE = (
    "the masked video has 70 frames but its clear video has 75: every frame of the clear video needs its "
    "masked frame, in the same order (re-export the whole clip without dropping or adding frames)"
)


@pytest.fixture
def site(transactional_db, media_root, data_dir, grid_cache):
    """The GRID rating campaign (open), with face and attack results, an organizer and a team member."""
    campaign = build_grid_campaign(data_dir, grid_cache, raters_per_video=2)
    Campaign.objects.filter(pk=campaign.pk).update(
        leaderboard_visibility=LeaderboardVisibility.NAMED, teams_may_upload=True
    )
    open_rating(campaign)
    submission = campaign.submissions.get()
    videos = list(campaign.source_videos.order_by("name"))
    run = AutomatedRun.objects.create(
        submission=submission, config={"stride": 5}, status="completed", finished_at=timezone.now()
    )
    for i, masked in enumerate(submission.masked_videos.order_by("source_video__name")):
        VideoScore.objects.create(
            run=run,
            masked_video=masked,
            frames_tested=15,
            clear_faces=15,
            masked_faces=10,
            detection_failure_rate=0.1 + 0.05 * (i % 5),
            ssim=0.7,
            n_face_tracks=1,
            faces_leaked=i % 2,
        )
    _attack_rows(submission, videos, 1.0)
    organizer = User.objects.create_user("pages-organizer", password="pw-pages-organizer", is_staff=True)
    organizer.user_permissions.set(organizer_permissions())
    campaign.organizers.add(organizer)
    member = User.objects.create_user("pages-team-member", password="pw-pages-member")
    submission.team.members.add(member)
    upload = SubmissionUpload.objects.create(
        submission=submission,
        original_name="owl-masked-videos-second-try-with-a-long-file-name.zip",
        status="done",
        accepted_count=1,
        rejected_count=1,
        report={
            "files": [
                {"file": "bbaf2n.mp4", "status": "accepted", "code": "", "message": ""},
                {
                    "file": "brbk7n.mp4",
                    "status": "rejected",
                    "code": "frame_count_mismatch",
                    "message": LONG_MESSAGE,
                },
            ],
            "missing_videos": [],
        },
    )
    return {
        "campaign": campaign,
        "submission": submission,
        "organizer": organizer,
        "member": member,
        "upload": upload,
        "attack_run": AttackRun.objects.get(submission=submission),
    }


def _pages(site) -> dict[str, list[tuple[str, str]]]:
    c, s = site["campaign"], site["submission"]
    return {
        "organizer": [
            ("campaigns", reverse("trials:organizer")),
            ("campaign", reverse("trials:organizer_campaign", args=[c.pk])),
            ("leaderboard", reverse("leaderboard:page", args=[c.pk])),
            ("report", reverse("leaderboard:report", args=[s.pk])),
            ("fairness-index", reverse("fairness:index")),
            ("fairness-submission", reverse("fairness:submission", args=[s.pk])),
            ("fairness-quality", reverse("fairness:quality", args=[c.pk])),
            ("attack-run", reverse("automated:attack_run_report", args=[site["attack_run"].pk])),
            ("progress", reverse("automated:submission_progress", args=[s.pk])),
        ],
        "team": [
            ("team-home", reverse("team:home")),
            ("team-submission", reverse("team:submission", args=[s.pk])),
            ("team-report", reverse("team:submission_report_page", args=[s.pk])),
            ("team-leaderboard", reverse("team:leaderboard", args=[c.pk])),
            ("team-upload", reverse("team:upload", args=[s.pk])),
            ("team-upload-detail", reverse("team:upload_detail", args=[site["upload"].pk])),
        ],
    }


def _log_in(driver, server, user) -> None:
    client = Client()
    client.force_login(user)
    driver.delete_all_cookies()
    driver.get(f"{server.url}/team/login/")
    driver.add_cookie(
        {"name": django_settings.SESSION_COOKIE_NAME, "value": client.cookies["sessionid"].value, "path": "/"}
    )


def _check(driver, width: int, name: str, viewport: str, problems: list[str]) -> None:
    WebDriverWait(driver, 30, poll_frequency=POLL_S).until(
        lambda d: d.execute_script("return document.readyState") == "complete"
    )
    SHOTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(SHOTS / f"pages-{viewport}-{name}.png"))
    scroll, inner = driver.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
    # A phone zooms out a page wider than the screen: innerWidth grows with it.
    if scroll > width or inner != width:
        problems.append(
            f"{viewport} {name}: {scroll} px wide; past the edge: {driver.execute_script(WIDE, width)[:8]}"
        )


def test_no_page_scrolls_sideways_at_390_or_1366_px(browser, server, one_request_at_a_time, site):  # noqa: F811
    driver = browser
    problems: list[str] = []
    pages = _pages(site)
    for viewport, (width, height, mobile) in sorted(VIEWPORTS.items()):
        set_viewport(driver, width, height, mobile)
        for who, user in (("organizer", site["organizer"]), ("team", site["member"])):
            _log_in(driver, server, user)
            for name, url in pages[who]:
                driver.get(server.url + url)
                assert "Log in" not in driver.title, (name, driver.title)
                _check(driver, width, name, viewport, problems)
        # The rater's pages: join, consent, instructions, the first trial.
        driver.delete_all_cookies()
        driver.get(f"{server.url}/join/{site['campaign'].join_code}/")
        _check(driver, width, "rater-join", viewport, problems)
        driver.find_element(By.NAME, "participant_code").send_keys(f"PAGES-{viewport}")
        driver.find_element(By.ID, "join").click()
        wait_for_element(driver, "agree")
        _check(driver, width, "rater-consent", viewport, problems)
        driver.find_element(By.ID, "agree").click()
        driver.find_element(By.ID, "consent").click()
        wait_for_element(driver, "start")
        _check(driver, width, "rater-instructions", viewport, problems)
        driver.find_element(By.ID, "start").click()
        wait_for_element(driver, "trial-config")
        _check(driver, width, "rater-trial", viewport, problems)
    assert not problems, "\n".join(problems)
    # The validation message is read in full at 1366 px (it wraps inside its cell, never cut).
    set_viewport(driver, 1366, 768, False)
    _log_in(driver, server, site["member"])
    driver.get(server.url + reverse("team:upload_detail", args=[site["upload"].pk]))
    cell = driver.find_element(By.XPATH, "//td[contains(., 'masked video has 70 frames')]")
    box = driver.execute_script(
        "var r = arguments[0].getBoundingClientRect(); var p = arguments[0].closest('.scroll').getBoundingClientRect();"
        "return [r.right, p.right, arguments[0].scrollWidth, arguments[0].clientWidth];",
        cell,
    )
    assert box[0] <= box[1] + 0.5 and box[2] <= box[3], box
