"""The trial page's heartbeat in real headless Chromium (issue 19): an open trial page keeps
its claim alive past the claim timeout; once the page is left, the claim lapses."""

import os
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from selenium.webdriver import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.trials.test_browser import (  # noqa: F401 (fixtures)
    browser,
    live_campaign,
    one_request_at_a_time,
    server,
    trial_token,
    wait_for_element,
    wait_for_new_page,
)
from trials.models import Trial, TrialKind

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, reset_sequences=True)]


def _live(trial) -> bool:
    return Trial.objects.filter(pk=trial.pk).live().exists()


def test_open_trial_page_keeps_its_claim_and_a_left_page_loses_it(
    browser, server, one_request_at_a_time, live_campaign, settings
):
    settings.TRIALS_PLAUSIBILITY_CHECKS = False
    # A short timeout, so the test waits out three of them (and then one) in seconds: the
    # page sends a heartbeat every second (the floor of trials.views' quarter of the timeout).
    timeout = timedelta(seconds=2)
    settings.TRIALS_CLAIM_TIMEOUT_S = timeout.seconds
    driver = browser
    driver.get(f"{server.url}/join/{live_campaign.join_code}/")
    driver.find_element(By.NAME, "participant_code").send_keys("p-heartbeat")
    driver.find_element(By.ID, "join").click()
    wait_for_element(driver, "agree").click()
    driver.find_element(By.ID, "consent").click()
    wait_for_element(driver, "start").click()
    wait_for_element(driver, "trial-config")
    for _ in range(10):  # practice and checks until an evaluated item
        token = trial_token(driver)
        trial = Trial.objects.get(token=token)
        if trial.kind == TrialKind.ITEM:
            break
        ActionChains(driver).send_keys("1").perform()  # the first face or action, by key
        if trial.kind == TrialKind.PRACTICE:  # feedback, then "Continue"
            WebDriverWait(driver, 20).until(
                lambda d: [e for e in d.find_elements(By.ID, "continue") if e.is_displayed()]
            )[0].click()
        wait_for_new_page(driver, token)
    assert trial.kind == TrialKind.ITEM
    shots = Path(os.environ.get("DEID_SHOTS_DIR", "/tmp/shots"))
    shots.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(shots / "heartbeat_trial_page.png"))
    first = trial.claimed_at
    # Heartbeats renew the claim again and again: it is still live three timeouts later.
    WebDriverWait(driver, 30, poll_frequency=0.5).until(
        lambda d: Trial.objects.get(pk=trial.pk).claimed_at - first > 3 * timeout
    )
    assert _live(trial) and not Trial.objects.get(pk=trial.pk).completed
    # The rater leaves the page without answering: no heartbeat, the claim lapses.
    driver.get("about:blank")
    WebDriverWait(driver, 30, poll_frequency=0.5).until(lambda d: not _live(trial))
    trial.refresh_from_db()
    assert not trial.completed and timezone.now() - trial.claimed_at > timeout
