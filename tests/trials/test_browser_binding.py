"""Sessions bound to the browser that joined (issue 9): each test named after the leak it closes."""

import hashlib
import json
import re
from html import unescape

import pytest
from django.test import Client

from trials import browser
from trials.models import Rater, RatingSession, Response, SessionState

RESPOND = re.compile(r'"respond_url": "(/t/[^"]+/respond/)"')
CHOICE = re.compile(r'data-choice="([^"]+)"')
MEDIA = re.compile(r'src="(/m/[^"]+)"')


@pytest.fixture(autouse=True)
def instant_viewing(settings):
    settings.TRIALS_MIN_VIEW_MS = 0
    settings.TRIALS_MIN_WATCH_PERCENT = 0


def _join(campaign, code, client=None, query=""):
    client = client or Client()
    reply = client.post(f"/join/{campaign.join_code}/{query}", {"participant_code": code})
    return client, reply


def _started(campaign, code, query=""):
    client, reply = _join(campaign, code, query=query)
    assert reply.status_code == 302
    client.post("/session/consent/", {"agree": "yes"})
    client.post("/session/start/")
    return client


def _finish(client):
    for _ in range(40):
        html = client.get("/session/").content.decode()
        match = RESPOND.search(html)
        if match is None:
            return html
        for url in MEDIA.findall(html):
            b"".join(client.get(url).streaming_content)
        body = {"choice": CHOICE.findall(html)[0], "response_time_ms": 1500}
        client.post(match.group(1), json.dumps(body), content_type="application/json")
    raise AssertionError("session did not finish")


def test_join_sets_a_secret_httponly_lax_cookie_and_stores_only_its_hash(grid_campaign, settings):
    settings.SESSION_COOKIE_SECURE = True
    client, reply = _join(grid_campaign, "p-cookie")
    cookie = reply.cookies[browser.COOKIE_NAME]
    assert cookie["httponly"] and cookie["samesite"] == "Lax" and cookie["secure"]
    key = cookie.value
    assert len(key) >= 40  # 32 random bytes, URL-safe base64
    session = RatingSession.objects.get(rater__participant_code="p-cookie")
    assert session.browser_key_hash == hashlib.sha256(key.encode()).hexdigest() != key
    # The same browser joining again keeps its key and its session.
    again = client.post(f"/join/{grid_campaign.join_code}/", {"participant_code": "P-COOKIE"})
    assert again.status_code == 302 and again.cookies[browser.COOKIE_NAME].value == key


def test_second_device_with_same_code_sees_no_completion_code(grid_campaign):
    owner = _started(grid_campaign, "p-owner")
    page = _finish(owner)
    session = RatingSession.objects.get(rater__participant_code="p-owner")
    assert session.state == SessionState.COMPLETE and session.completion_code in page
    thief, reply = _join(grid_campaign, "p-owner")
    assert reply.status_code == 403
    html = reply.content.decode()
    assert "open in another browser" in html and session.completion_code not in html
    assert "contact the organizer" in html
    # Its Django session points nowhere: the session page shows no code either.
    page = thief.get("/session/")
    assert page.status_code == 403 and session.completion_code not in page.content.decode()


def test_second_device_with_same_code_answers_no_trials(grid_campaign):
    owner = _started(grid_campaign, "p-owner2")
    html = owner.get("/session/").content.decode()
    respond_url = RESPOND.search(html).group(1)
    media = MEDIA.findall(html)
    thief, reply = _join(grid_campaign, "P-Owner2")  # another case is the same participant
    assert reply.status_code == 403
    answer = thief.post(
        respond_url, json.dumps({"choice": "1", "response_time_ms": 9000}), content_type="application/json"
    )
    assert answer.status_code == 403 and Response.objects.count() == 0
    assert all(thief.get(url).status_code == 404 for url in media)


def test_copied_django_session_cookie_without_the_browser_key_is_refused(grid_campaign):
    owner = _started(grid_campaign, "p-copied")
    html = owner.get("/session/").content.decode()
    copy = Client()
    copy.cookies["sessionid"] = owner.cookies["sessionid"].value  # no browser key
    page = copy.get("/session/")
    assert page.status_code == 403 and b"open in another browser" in page.content
    reply = copy.post(
        RESPOND.search(html).group(1),
        json.dumps({"choice": "1", "response_time_ms": 9000}),
        content_type="application/json",
    )
    assert reply.status_code == 403 and Response.objects.count() == 0


def test_organizer_contact_is_shown_to_a_refused_browser(grid_campaign):
    grid_campaign.organizer_contact = "study-team@example.org"
    grid_campaign.save()
    _started(grid_campaign, "p-contact")
    _, reply = _join(grid_campaign, "p-contact")
    assert b"study-team@example.org" in reply.content


def test_crowd_platform_parameters_of_the_join_link_are_recorded(grid_campaign):
    query = "?PROLIFIC_PID=5f1a2b3c4d&STUDY_ID=study-77&SESSION_ID=sess-9&evil=%3Cscript%3E"
    client, reply = _join(grid_campaign, "5f1a2b3c4d", query=query)
    assert reply.status_code == 302
    rater = Rater.objects.get(participant_code="5f1a2b3c4d")
    assert rater.platform_params == {
        "PROLIFIC_PID": "5f1a2b3c4d",
        "STUDY_ID": "study-77",
        "SESSION_ID": "sess-9",
    }
    # The join page pre-fills the code from the platform's parameter.
    page = Client().get(f"/join/{grid_campaign.join_code}/{query}").content.decode()
    assert 'value="5f1a2b3c4d"' in page


def test_completion_redirects_to_the_campaigns_platform_url_with_the_code(grid_campaign):
    grid_campaign.completion_url = "https://app.prolific.com/submissions/complete?cc={completion_code}"
    grid_campaign.save()
    page = _finish(_started(grid_campaign, "p-redirect"))
    code = RatingSession.objects.get(rater__participant_code="p-redirect").completion_code
    url = f"https://app.prolific.com/submissions/complete?cc={code}"
    assert f'content="8;url={url}"' in page and f'href="{url}"' in page and code in page


def test_completion_page_without_url_shows_only_the_code(grid_campaign):
    page = _finish(_started(grid_campaign, "p-plain"))
    assert "http-equiv" not in page and "Paste it into your crowd-sourcing platform" in page


@pytest.mark.parametrize(
    ("typed", "stored"),
    [("ABC-12", "abc-12"), ("  abc-12 ", "abc-12"), ("ＡＢＣ－１２", "abc-12"), ("x_y.z", "x_y.z")],
)
def test_case_and_width_variants_of_a_code_are_one_participant(typed, stored):
    assert browser.normalise_participant_code(typed) == stored


@pytest.mark.parametrize("typed", ["аbc", "ab c", "abc/1", "ab\u200bc", "a" * 65])
def test_look_alike_or_foreign_characters_in_a_code_are_refused(typed):
    with pytest.raises(browser.BadParticipantCode, match="participant code"):
        browser.normalise_participant_code(typed)


def test_look_alike_code_gets_a_clear_message_and_creates_no_rater(grid_campaign):
    _, reply = _join(grid_campaign, "p-\u0430dmin")  # Cyrillic а
    assert reply.status_code == 200
    html = unescape(reply.content.decode())
    assert "may contain only a-z, 0-9" in html and "'а'" in html
    assert not Rater.objects.exists()


def test_rater_account_moves_its_session_to_a_new_browser(grid_campaign, django_user_model):
    user = django_user_model.objects.create_user("rater-x", password="pw-rater-x1")
    first = Client()
    first.force_login(user)
    first.post(f"/join/{grid_campaign.join_code}/", {"participant_code": ""})
    second = Client()
    second.force_login(user)
    assert second.post(f"/join/{grid_campaign.join_code}/", {"participant_code": ""}).status_code == 302
    assert second.get("/session/").status_code == 200
    assert first.get("/session/").status_code == 403  # the old browser lost it
    assert RatingSession.objects.count() == 1
