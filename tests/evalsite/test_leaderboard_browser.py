"""The leaderboard page in real headless Chromium, as an organizer, at 1366x768 and 390x844.

Sorting a column reorders the rows (and again reverses them), the frontier and the
per-video bars load as images, and the page itself never scrolls sideways (the table
scrolls inside its own box on a phone). Screenshots go to ``$DEID_SHOTS_DIR`` (default
``/tmp/shots``).
"""

import os
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.test import Client
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.trials.conftest import media_url_for_live_server  # noqa: F401 (autouse: the live server's media handler)
from tests.trials.test_browser import browser, one_request_at_a_time, server  # noqa: F401
from tests.trials.test_one_screen import set_viewport

from .test_leaderboard import build_leaderboard_campaign

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

VIEWPORTS = {"laptop": (1366, 768, False), "phone": (390, 844, True)}
SHOTS = Path(os.environ.get("DEID_SHOTS_DIR", "/tmp/shots"))

METHODS = "return Array.from(document.querySelectorAll('#leaderboard-table tbody .name .method')).map(c => c.textContent)"
IMAGES_LOADED = "return ['frontier', 'video-bars'].every(id => { var i = document.getElementById(id); return i && i.complete && i.naturalWidth > 0; })"


def _log_in(driver, server, user):
    client = Client()
    client.force_login(user)
    driver.get(f"{server.url}/admin/login/")
    driver.add_cookie(
        {"name": django_settings.SESSION_COOKIE_NAME, "value": client.cookies["sessionid"].value, "path": "/"}
    )


def _sort_by(driver, label):
    header = next(
        th
        for th in driver.find_elements(By.CSS_SELECTOR, "#leaderboard-table th")
        if th.text.startswith(label)
    )
    button = header.find_element(By.TAG_NAME, "button")
    # as a person would: scroll the table until the heading is in sight (beside the sticky names)
    driver.execute_script("arguments[0].scrollIntoView({block: 'center', inline: 'center'})", button)
    button.click()
    return header


@pytest.mark.parametrize("viewport", sorted(VIEWPORTS))
def test_organizer_sorts_the_leaderboard_and_sees_its_plots(
    browser, server, one_request_at_a_time, campaign, viewport
):  # noqa: F811
    organizer, _ = build_leaderboard_campaign(campaign)
    width, height, mobile = VIEWPORTS[viewport]
    driver = browser
    set_viewport(driver, width, height, mobile)
    _log_in(driver, server, organizer)
    driver.get(f"{server.url}/organizer/{campaign.pk}/leaderboard/")
    WebDriverWait(driver, 20).until(
        lambda d: d.find_elements(By.ID, "leaderboard-table"), message=driver.page_source[:2000]
    )
    assert driver.execute_script(METHODS) == ["method-a", "method-b", "blur_face"]

    header = _sort_by(driver, "Behaviour preservation")  # 0.6, 0.85, 0.95: highest first
    assert header.get_attribute("aria-sort") == "descending"
    assert driver.execute_script(METHODS) == ["blur_face", "method-b", "method-a"]
    header = _sort_by(driver, "Behaviour preservation")
    assert header.get_attribute("aria-sort") == "ascending"
    assert driver.execute_script(METHODS) == ["method-a", "method-b", "blur_face"]
    _sort_by(driver, "Face detection failure")  # 0.9, 0.6, 0.2
    assert driver.execute_script(METHODS) == ["method-a", "method-b", "blur_face"]

    WebDriverWait(driver, 30).until(lambda d: d.execute_script(IMAGES_LOADED))
    scroll_width = driver.execute_script("return document.documentElement.scrollWidth")
    assert scroll_width <= width, f"the page scrolls sideways: {scroll_width} > {width}"
    SHOTS.mkdir(parents=True, exist_ok=True)
    driver.execute_script("window.scrollTo(0, 0)")
    driver.save_screenshot(str(SHOTS / f"leaderboard-{viewport}-top.png"))
    for section in ("comparisons", "per-video"):
        driver.execute_script(f"document.getElementById('{section}').scrollIntoView()")
        driver.save_screenshot(str(SHOTS / f"leaderboard-{viewport}-{section}.png"))
