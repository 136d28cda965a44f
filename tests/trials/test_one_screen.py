"""Every trial on one screen (issue 9) in real headless Chromium, at 1366x768 and 390x844.

The video, the 5 faces and every answer button lie inside the viewport without scrolling;
the video plays only while on screen. The rater here really watches (each video plays
through before the answer) with the plausibility checks on, as in production, and must
not be flagged. Screenshots go to ``tmp_path``.
"""

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from trials.models import Rater, RatingSession, SessionState, Trial

from .test_browser import (  # noqa: F401
    POLL_S,
    browser,
    live_campaign,
    one_request_at_a_time,
    server,
    trial_token,
    wait_for_element,
    wait_for_new_page,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, reset_sequences=True)]

VIEWPORTS = {"laptop": (1366, 768, False), "phone": (390, 844, True)}

# Bounding boxes of what a rater needs, in CSS pixels of the viewport.
BOXES = """
var pick = Array.from(document.querySelectorAll('#video, .gallery .choice, #not-present, .actions .choice, #replay'));
return {inner: [window.innerWidth, window.innerHeight],
        scroll: [document.documentElement.scrollWidth, document.documentElement.scrollHeight],
        boxes: pick.map(function (e) { var r = e.getBoundingClientRect();
          return [e.id || e.className + ':' + e.dataset.choice, r.left, r.top, r.right, r.bottom]; })};
"""


def set_viewport(driver, width, height, mobile):
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile},
    )


def assert_on_one_screen(driver, width, height, name, shots):
    driver.execute_script("window.scrollTo(0, 0)")
    WebDriverWait(driver, 20, poll_frequency=POLL_S).until(
        lambda d: d.execute_script(
            "return Array.from(document.querySelectorAll('.gallery img')).every(i => i.complete && i.naturalWidth)"
        )
    )
    found = driver.execute_script(BOXES)
    assert found["inner"] == [width, height], found["inner"]
    boxes = found["boxes"]
    kinds = [b[0] for b in boxes]
    assert "video" in kinds and "replay" in kinds
    if "not-present" in kinds:
        assert sum(k.startswith("choice:") for k in kinds) == 5  # the 5 faces
    for label, left, top, right, bottom in boxes:
        assert right - left > 20 and bottom - top > 20, (name, label, left, top, right, bottom)
        assert 0 <= left and right <= width and 0 <= top and bottom <= height, (
            name,
            label,
            top,
            bottom,
            height,
        )
    assert found["scroll"][0] <= width, found["scroll"]  # no horizontal scrolling either
    path = shots / f"{name}.png"
    driver.save_screenshot(str(path))
    return path


def watch_through(driver):
    """Wait until the video has started, and then until it ended (a rater who looks)."""
    WebDriverWait(driver, 20, poll_frequency=POLL_S).until(
        lambda d: d.execute_script(
            "var v = document.getElementById('video'); return v.currentTime > 0.1 && !v.paused;"
        )
    )
    WebDriverWait(driver, 30, poll_frequency=POLL_S).until(
        lambda d: d.execute_script("return document.getElementById('video').ended")
    )


@pytest.mark.parametrize("viewport", sorted(VIEWPORTS))
def test_video_faces_and_answers_fit_one_screen_and_a_watching_rater_is_not_flagged(
    browser,
    server,
    one_request_at_a_time,
    live_campaign,
    settings,
    tmp_path,
    viewport,  # noqa: F811
):
    settings.TRIALS_PLAUSIBILITY_CHECKS = True
    settings.TRIALS_MIN_VIEW_MS = 1000
    settings.TRIALS_MIN_VIDEO_PERCENT = 50
    width, height, mobile = VIEWPORTS[viewport]
    driver = browser
    set_viewport(driver, width, height, mobile)
    driver.delete_all_cookies()
    driver.get(f"{server.url}/join/{live_campaign.join_code}/")
    driver.find_element(By.NAME, "participant_code").send_keys(f"screen-{viewport}")
    driver.find_element(By.ID, "join").click()
    wait_for_element(driver, "agree").click()
    driver.find_element(By.ID, "consent").click()
    wait_for_element(driver, "start").click()
    wait_for_element(driver, "trial-config")
    shots, seen = [], set()
    for step in range(6):  # 2 practice trials (identity, action) and evaluated ones
        token = trial_token(driver)
        if token is None:
            break
        trial = Trial.objects.get(token=token)
        shots.append(
            assert_on_one_screen(
                driver, width, height, f"{viewport}-{step}-{trial.kind}-{trial.task}", tmp_path
            )
        )
        seen.add(trial.task)
        watch_through(driver)
        if trial.task == "identity":
            driver.find_element(By.ID, "not-present").click()
        else:
            driver.find_elements(By.CSS_SELECTOR, ".actions .choice")[0].click()
        if trial.kind == "practice":
            WebDriverWait(driver, 10, poll_frequency=POLL_S).until(
                lambda d: d.find_element(By.ID, "feedback").text
            )
            driver.find_element(By.ID, "continue").click()
        wait_for_new_page(driver, token)
    assert seen == {"identity", "action"}
    rater = Rater.objects.get(participant_code=f"screen-{viewport}")
    assert not rater.flagged and not rater.excluded, rater.flag_reason
    answered = Trial.objects.filter(session__rater=rater, completed=True)
    assert answered.count() == 6
    assert all(t.video_bytes_served >= t.video_size * 0.5 > 0 for t in answered)
    assert all(t.response.server_time_ms >= 1000 for t in answered)
    print("screenshots:", *shots, sep="\n  ")


def test_video_plays_only_while_on_screen(browser, server, one_request_at_a_time, live_campaign, settings):  # noqa: F811
    settings.TRIALS_PLAUSIBILITY_CHECKS = False
    driver = browser
    set_viewport(driver, 390, 844, True)
    driver.delete_all_cookies()
    driver.get(f"{server.url}/join/{live_campaign.join_code}/")
    driver.find_element(By.NAME, "participant_code").send_keys("screen-observer")
    driver.find_element(By.ID, "join").click()
    wait_for_element(driver, "agree").click()
    driver.find_element(By.ID, "consent").click()
    wait_for_element(driver, "start").click()
    wait_for_element(driver, "trial-config")
    # Push the video off screen: it pauses; back on screen: it plays again.
    WebDriverWait(driver, 20, poll_frequency=POLL_S).until(
        lambda d: d.execute_script(
            "var v = document.getElementById('video'); return v.currentTime > 0.1 && !v.paused;"
        )
    )
    driver.execute_script(
        "document.querySelector('.stage').style.marginTop = '3000px'; window.scrollTo(0, 0);"
    )
    WebDriverWait(driver, 5, poll_frequency=POLL_S).until(
        lambda d: d.execute_script("return document.getElementById('video').paused")
    )
    paused_at = driver.execute_script("return document.getElementById('video').currentTime")
    driver.execute_script("document.querySelector('.stage').style.marginTop = '0';")
    WebDriverWait(driver, 5, poll_frequency=POLL_S).until(
        lambda d: d.execute_script(
            "var v = document.getElementById('video'); return !v.paused && v.currentTime > arguments[0];",
            paused_at,
        )
    )
    assert RatingSession.objects.get(rater__participant_code="screen-observer").state == SessionState.RUNNING
