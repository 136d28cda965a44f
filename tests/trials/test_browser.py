"""A rater's whole session in real headless Chromium (Debian's chromium + chromedriver).

Consent, instructions, practice with feedback, identity and action trials on real GRID
clips (transcoded H.264) with ORL-free, frame-extracted gallery faces, a replay, seeking
(HTTP Range), a reload that resumes the same trial, a double click and a resent answer
that store one response each, and the completion code.
"""

import threading

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver import ActionChains
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from evalsite.models import SourceVideo
from trials.models import RatingSession, Response, SessionState, Trial, TrialKind
from trials.services import open_rating
from tests.crowd.simulation import build_grid_campaign

# reset_sequences: each test's rows get the primary keys a fresh database gives (a rolled-back
# test's do anyway; a flushed one's would go on counting), so a GRID campaign built again gets
# the same catch probes (seeded by the crop's key: trials.media._make_catch_video) and the
# worker's memo of them serves it (tests/conftest.memoised_catch_video_frames): about 10 CPU s
# per campaign build after the first. Also in the browser tests that use its fixtures.
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, reset_sequences=True)]
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,1000",
    "--autoplay-policy=no-user-gesture-required",
]
#: Seconds between two looks of a wait here (one WebDriver call each). Selenium's default,
#: 0.5 s, loses a quarter of a second per wait on average, and a rater's session waits dozens
#: of times (each page, each video); what is waited for is the same.
POLL_S = 0.1


@pytest.fixture(scope="module")
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


@pytest.fixture
def server(live_server):
    """The live server (its MEDIA_URL work-around is in ``conftest.py``)."""
    return live_server


@pytest.fixture
def live_campaign(transactional_db, media_root, data_dir, grid_cache):
    campaign = build_grid_campaign(data_dir, grid_cache, raters_per_video=2)
    # Two clips imported as practice material: practice shows its answers only on those.
    first_two = SourceVideo.objects.filter(campaign=campaign).order_by("name")[:2]
    SourceVideo.objects.filter(pk__in=[v.pk for v in first_two]).update(
        practice=True, in_evaluated_subset=False
    )
    # Media prepared when rating opens, as in production: the live server's request threads
    # share one in-memory SQLite connection, so they must not create crops at the same time.
    open_rating(campaign)
    return campaign


@pytest.fixture
def one_request_at_a_time(server):
    """Serve the live server's requests one at a time (bodies read under the lock too).

    Its request threads share one in-memory SQLite connection, where a write (a face's
    fetch time) during another thread's read fails with "database table is locked"; real
    servers have a connection per thread. Test harness only.
    """
    httpd = server.thread.httpd
    app, lock = httpd.get_app(), threading.Lock()

    def serial(environ, start_response):
        with lock:
            body = app(environ, start_response)
            try:
                return [b"".join(body)]
            finally:
                getattr(body, "close", lambda: None)()

    httpd.set_app(serial)
    yield server
    httpd.set_app(app)


def trial_token(driver) -> str | None:
    url = driver.execute_script(
        "var e = document.getElementById('trial-config');"
        "return e ? JSON.parse(e.textContent).respond_url : null;"
    )
    return url.split("/")[2] if url else None


def wait_for_element(driver, element_id, timeout=20):
    return WebDriverWait(driver, timeout, poll_frequency=POLL_S).until(
        lambda d: (d.find_elements(By.ID, element_id) or [None])[0]
    )


def wait_for_new_page(driver, old_token, timeout=20):
    WebDriverWait(
        driver, timeout, poll_frequency=POLL_S, ignored_exceptions=[StaleElementReferenceException]
    ).until(lambda d: d.find_elements(By.ID, "completion-code") or (trial_token(d) not in (None, old_token)))


def wait_for_video_playing(driver):
    WebDriverWait(driver, 20, poll_frequency=POLL_S).until(
        lambda d: d.execute_script(
            "var v = document.getElementById('video'); return v && v.readyState >= 2 && v.currentTime > 0.2;"
        )
    )


def test_rater_session_in_chromium(browser, server, one_request_at_a_time, live_campaign, settings):
    # This script answers at once (double clicks, resent fetches before the video loads):
    # plausibility checks are tested in test_cheating.py.
    settings.TRIALS_PLAUSIBILITY_CHECKS = False
    driver = browser
    driver.get(f"{server.url}/join/{live_campaign.join_code}/")
    assert "participant_code" in driver.page_source, driver.page_source[:3000]
    driver.find_element(By.NAME, "participant_code").send_keys("PROLIFIC-123")
    driver.find_element(By.ID, "join").click()
    wait_for_element(driver, "agree").click()
    driver.find_element(By.ID, "consent").click()
    start = wait_for_element(driver, "start")
    assert "most obvious" in driver.page_source
    start.click()
    wait_for_element(driver, "trial-config")

    # Practice 1 (identity): the video plays, is replayed, answered with the keyboard; feedback follows.
    token = trial_token(driver)
    trial = Trial.objects.get(token=token)
    assert trial.kind == TrialKind.PRACTICE and trial.task == "identity"
    assert len(driver.find_elements(By.CSS_SELECTOR, ".gallery img")) == 5
    WebDriverWait(driver, 20, poll_frequency=POLL_S).until(
        lambda d: d.execute_script(
            "return Array.from(document.querySelectorAll('.gallery img')).every(i => i.complete && i.naturalWidth)"
        )
    )
    sizes = driver.execute_script(
        "return Array.from(document.querySelectorAll('.gallery img')).map(i => [i.naturalWidth, i.naturalHeight])"
    )
    assert sizes == [[160, 160]] * 5  # every face cropped to one size
    # "Not present" looks like a button (it was borderless text beside framed photos).
    border = driver.execute_script(
        "var s = getComputedStyle(document.getElementById('not-present'));"
        "return [s.borderTopStyle, s.borderTopColor, parseFloat(s.borderTopWidth)];"
    )
    assert border[0] == "solid" and border[1] not in ("rgba(0, 0, 0, 0)", "transparent") and border[2] >= 1, (
        border
    )
    wait_for_video_playing(driver)
    driver.find_element(By.ID, "replay").click()
    wait_for_video_playing(driver)
    ActionChains(driver).send_keys("1").perform()
    WebDriverWait(driver, 10, poll_frequency=POLL_S).until(lambda d: d.find_element(By.ID, "feedback").text)
    assert driver.find_elements(By.CSS_SELECTOR, ".choice.correct")  # the right answer is shown
    # The media of an answered trial are a 404 now, and the feedback needs none: the
    # video replays from what the browser holds, the faces stay shown.
    status = driver.execute_async_script(
        "var done = arguments[0]; fetch(document.getElementById('video').currentSrc, "
        "{credentials: 'same-origin'}).then(function (r) { done(r.status); });"
    )
    assert status == 404
    driver.find_element(By.ID, "replay").click()
    WebDriverWait(driver, 10, poll_frequency=POLL_S).until(
        lambda d: d.execute_script(
            "var v = document.getElementById('video'); return !v.paused && v.currentTime > 0.3 && !v.error;"
        )
    )
    assert driver.execute_script(
        "return Array.from(document.querySelectorAll('.gallery img')).every(i => i.complete && i.naturalWidth)"
    )
    driver.find_element(By.ID, "continue").click()
    wait_for_new_page(driver, token)
    first = Response.objects.get(trial__token=token)
    assert first.choice == "1" and first.replays == 1
    assert first.watch_time_ms > 200 and first.response_time_ms >= first.watch_time_ms / 2

    # Practice 2 (action): a click on an action, feedback, continue.
    token = trial_token(driver)
    assert Trial.objects.get(token=token).task == "action"
    action_border = driver.execute_script(
        "return getComputedStyle(document.querySelector('.actions .choice')).borderTopColor"
    )
    assert action_border not in ("rgba(0, 0, 0, 0)", "transparent")
    driver.find_elements(By.CSS_SELECTOR, ".actions .choice")[0].click()
    WebDriverWait(driver, 10, poll_frequency=POLL_S).until(lambda d: d.find_element(By.ID, "feedback").text)
    driver.find_element(By.ID, "continue").click()
    wait_for_new_page(driver, token)

    # First evaluated trial: seeking works (Range), a reload resumes the same trial.
    token = trial_token(driver)
    assert Trial.objects.get(token=token).kind in (TrialKind.ITEM, TrialKind.CATCH)
    if driver.find_elements(By.ID, "video"):
        wait_for_video_playing(driver)
        driver.execute_script("var v = document.getElementById('video'); v.pause(); v.currentTime = 2.0;")
        WebDriverWait(driver, 10, poll_frequency=POLL_S).until(
            lambda d: d.execute_script("return document.getElementById('video').currentTime") > 1.9
        )
    driver.refresh()
    assert trial_token(driver) == token

    # A double click stores one response.
    first_choice = driver.find_elements(By.CSS_SELECTOR, ".choice")[0]
    ActionChains(driver).double_click(first_choice).perform()
    wait_for_new_page(driver, token)
    assert Response.objects.filter(trial__token=token).count() == 1

    # A resent answer (dropped connection) stores one response and reports the duplicate.
    token = trial_token(driver)
    duplicates = driver.execute_async_script("""
        var done = arguments[arguments.length - 1];
        var config = JSON.parse(document.getElementById('trial-config').textContent);
        var choice = document.querySelector('.choice').dataset.choice;
        var csrf = document.cookie.match(/csrftoken=([^;]+)/)[1];
        function post() {
          return fetch(config.respond_url, {method: 'POST', credentials: 'same-origin',
            headers: {'Content-Type': 'application/json', 'X-CSRFToken': csrf},
            body: JSON.stringify({choice: choice, response_time_ms: 1234, replays: 0, watch_time_ms: 3000})
          }).then(function (r) { return r.json(); });
        }
        // Sequential: the live server shares one in-memory SQLite connection between threads;
        // concurrent answers are exercised on a file database in test_simulation.py.
        post().then(function (a) { post().then(function (b) { done([a.duplicate, b.duplicate]); }); });
    """)
    assert sorted(duplicates) == [False, True]
    assert Response.objects.filter(trial__token=token).count() == 1
    driver.refresh()
    assert trial_token(driver) != token

    # The rest by keyboard (identity: 0 = not present; action: 1 = first action) to the end.
    for _ in range(20):
        if driver.find_elements(By.ID, "completion-code"):
            break
        token = trial_token(driver)
        ActionChains(driver).send_keys("1").perform()
        wait_for_new_page(driver, token)
    code = driver.find_element(By.ID, "completion-code").text
    session = RatingSession.objects.get()
    assert session.state == SessionState.COMPLETE and code == session.completion_code
    # GRID: one lineup block, taken by the check or by the evaluated identity trial
    # (trials.design.session_layout), either of which holds back one person: 8 evaluated
    # people (2 clips are practice) for 9 study positions, so one position is skipped
    # and 8 study trials are served whichever it was (the length tells nothing).
    served = session.trials.active()
    n_checks = served.filter(kind=TrialKind.CATCH).count()
    assert Response.objects.count() == served.count() == len(session.plan) - 1
    assert n_checks <= 1 and served.filter(kind=TrialKind.ITEM).count() == 8 - n_checks
    assert int(driver.execute_script("return document.querySelector('progress') ? 1 : 0")) == 0
