"""The organizer campaign page and a submission's progress page in real headless Chromium.

At 1366x768 and 390x844: the navigation (campaigns, the campaign, leaderboard, reports,
fairness, admin, log out) lies inside the viewport, the rating roll-up shows each
condition's usable responses against the target above the folded-away per-item table, and
the document never scrolls sideways (wide tables scroll in their own box). Then "Evaluate
everything" is clicked: the runs are held in the queue (as before a worker picks them up)
and the real per-video face tasks are run one by one from the test, while the progress
page updates itself from 0/10 to 10/10 videos. Screenshots go to /tmp/shots/.
"""

import re
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission, User
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from automated.django_app import dispatch, evaluate_all
from automated.django_app.face_models import AutomatedRun
from automated.django_app.face_tasks import face_video_task
from trials import assignment
from trials.models import RatingSession, SessionState

from .test_browser import browser, live_campaign, one_request_at_a_time, server  # noqa: F401
from .test_one_screen import set_viewport

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = Path("/tmp/shots")
VIEWPORTS = {"laptop": (1366, 768, False), "phone": (390, 844, True)}
LAYOUT = """
function box(e) { var r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; }
var nav = Array.from(document.querySelectorAll('.organizer-nav a, .organizer-nav button'));
var items = document.getElementById('items');
return {inner: [window.innerWidth, window.innerHeight],
        scroll: document.documentElement.scrollWidth,
        nav: nav.map(function (e) { return [e.textContent.trim()].concat(box(e)); }),
        rollup: document.getElementById('rollup') ? box(document.getElementById('rollup')) : null,
        items_shown: items ? items.checkVisibility() : null};
"""

# Elements sticking out of a viewport ``arguments[0]`` wide (outside boxes that scroll).
WIDEST = """
var out = [], w = arguments[0];
document.querySelectorAll('body *').forEach(function (e) {
  if (e.parentElement && e.parentElement.closest('.wide')) return;
  var r = e.getBoundingClientRect();
  if (r.right > w + 1) out.push([e.tagName, e.id || e.className, Math.round(r.right)]);
});
return [document.body.getBoundingClientRect().width, document.documentElement.scrollWidth].concat(out.sort(function (a, b) { return b[2] - a[2]; }).slice(0, 6));
"""


def _organizer(campaign):
    user = User.objects.create_user("organizer-browser", password="pw-organizer-1", is_staff=True)
    campaign.organizers.add(user)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label__in=["automated", "evalsite", "trials"])
    )
    return user


def _answer(campaign, code, n):
    """A rater answers ``n`` evaluated trials and holds one more claim."""
    session = assignment.join(campaign, participant_code=code)
    RatingSession.objects.filter(pk=session.pk).update(state=SessionState.RUNNING, plan=["item"] * (n + 1))
    for _ in range(n):
        trial = assignment.current_trial(session)
        assignment.record_response(
            trial, {"choice": assignment.valid_choices(trial)[0], "response_time_ms": 1500}
        )
    assignment.current_trial(session)


def _login(driver, server, user, next_url):
    driver.get(f"{server.url}/admin/login/?next={next_url}")
    driver.find_element(By.ID, "id_username").send_keys(user.username)
    driver.find_element(By.ID, "id_password").send_keys("pw-organizer-1")
    driver.find_element(By.CSS_SELECTOR, "input[type=submit]").click()
    WebDriverWait(driver, 60).until(lambda d: d.current_url.endswith(next_url))


def _check_layout(driver, name, width, height):
    driver.execute_script("window.scrollTo(0, 0)")
    found = driver.execute_script(LAYOUT)
    driver.save_screenshot(str(SHOTS / f"{name}.png"))
    assert found["inner"] == [width, height], (found["inner"], driver.execute_script(WIDEST, width))
    assert found["scroll"] <= width, (name, found["scroll"])  # no sideways scrolling
    labels = [entry[0] for entry in found["nav"]]
    assert labels[:1] == ["Campaigns"] and {"Leaderboard", "Reports", "Fairness", "Admin", "Log out"} <= set(
        labels
    )
    for label, left, top, right, bottom in found["nav"]:
        assert 0 <= left and right <= width and 0 <= top and bottom <= height, (
            name,
            label,
            left,
            right,
            bottom,
        )
        assert bottom - top >= 14, (name, label)
    return found


def test_organizer_campaign_page_and_progress_page_in_chromium(
    browser, server, one_request_at_a_time, live_campaign, settings, monkeypatch
):
    SHOTS.mkdir(parents=True, exist_ok=True)
    settings.TRIALS_PLAUSIBILITY_CHECKS = False  # answered directly, no media fetched
    _answer(live_campaign, "P-browser-1", 3)
    _answer(live_campaign, "P-browser-2", 2)
    monkeypatch.setattr(dispatch, "queue_runs", lambda runs, **kw: None)  # held in the queue
    monkeypatch.setattr(evaluate_all, "DEFAULT_OPTIONS", {"face": {"stride": 40}, "attack": {}})
    organizer = _organizer(live_campaign)
    driver = browser
    page = f"/organizer/{live_campaign.pk}/"
    _login(driver, server, organizer, page)
    for name, (width, height, mobile) in VIEWPORTS.items():
        set_viewport(driver, width, height, mobile)
        driver.get(f"{server.url}{page}")
        found = _check_layout(driver, f"organizer-campaign-{name}", width, height)
        assert found["rollup"] is not None and found["items_shown"] is False  # folded away
        rows = [r.text for r in driver.find_elements(By.CSS_SELECTOR, "#rollup tbody tr")]
        # 8 evaluated clips x action x 2 raters = 16 per condition (the campaign's groups are
        # too thin for identity lineups: trials.design excludes them); 5 answers, 2 open claims.
        assert len(rows) == 2 and "clear videos" in rows[0] and "Evaluate everything" in rows[1]
        counts = [re.search(r"(\d+) / (\d+) \(", r).groups() for r in rows]
        assert [int(total) for _, total in counts] == [16, 16], rows
        usable = sum(int(done) for done, _ in counts)
        assert usable == 5
        assert "more raters" in driver.find_element(By.ID, "raters-needed").text
    driver.find_element(By.CSS_SELECTOR, "#items-details summary").click()
    assert driver.find_element(By.ID, "items").is_displayed()

    # Evaluate everything: the page of the runs, updating itself as the videos are done.
    set_viewport(driver, 1366, 768, False)
    driver.get(f"{server.url}{page}")
    driver.find_element(By.XPATH, "//button[text()='Evaluate everything']").click()
    WebDriverWait(driver, 60).until(lambda d: "/progress/" in d.current_url)
    # Every unit counted: the face run's videos; the attack's videos and its summary step.
    runs_text = driver.find_element(By.ID, "runs").text
    assert "0/10 videos (0%)" in runs_text and "0/10 videos, summary 0/1 (0%)" in runs_text
    run = AutomatedRun.objects.get()
    for done, masked_id in enumerate(run.planned_videos, start=1):
        face_video_task(run.pk, masked_id)
        if done in (4, 10):
            WebDriverWait(driver, 90).until(
                lambda d, n=done: f"{n}/10 videos" in d.find_element(By.ID, f"run-face-{run.pk}").text
            )
        if done == 4:
            _check_layout(driver, "organizer-progress-running-laptop", 1366, 768)
    text = driver.find_element(By.ID, f"run-face-{run.pk}").text
    assert "completed" in text and "10/10 videos (100%)" in text and "finished: 10/10 videos" in text
    assert driver.execute_script(f"return document.querySelector('#run-face-{run.pk} progress').value") == 10
    _check_layout(driver, "organizer-progress-done-laptop", 1366, 768)
    set_viewport(driver, 390, 844, True)
    driver.get(driver.current_url)
    _check_layout(driver, "organizer-progress-phone", 390, 844)
