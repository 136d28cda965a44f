"""The rater answer endpoint with bodies that do not decode: a 4xx with a reason, never a 500.

DEBUG is off here as in production; Django's test client re-raises any exception a view
lets escape (a RecursionError used to), so each case would fail loudly with a 500.
"""

import json

import pytest
from django.test import Client

from trials.models import Response

from .test_views import CHOICE, RESPOND, answer, start_session


@pytest.mark.parametrize(
    "body, content_type, status, error",
    [
        ("[" * 100000, "application/json", 400, "JSON nested deeper than 32 levels"),
        (
            '{"choice": ' + "[" * 900 + "]" * 900 + ', "response_time_ms": 1}',
            "application/json",
            400,
            "JSON nested deeper than 32 levels",
        ),
        (
            b'{"choice": "\xc3\x28", "response_time_ms": 1}',
            "application/json",
            400,
            "body is not utf-8 text (byte 12)",
        ),
        (
            '{"choice": "1", "response_time_ms": NaN}',
            "application/json",
            400,
            "body is not valid JSON: NaN is not valid JSON",
        ),
        (" ", "application/json", 400, "body is not valid JSON: Expecting value: line 1 column 2 (char 1)"),
        ("", "", 415, "send the body as JSON (Content-Type: application/json)"),
        ('["1", 1500]', "application/json", 400, "body must be a JSON object"),
        (
            "choice=1&response_time_ms=1500",
            "application/x-www-form-urlencoded",
            415,
            "send the body as JSON (Content-Type: application/json)",
        ),
        ('{"choice": "' + "1" * 1100000 + '"}', "application/json", 413, "body longer than 1048576 bytes"),
    ],
)
def test_undecodable_answers_get_a_client_error_and_store_nothing(
    grid_campaign, body, content_type, status, error
):
    client = Client()
    start_session(client, grid_campaign)
    url = RESPOND.search(client.get("/session/").content.decode()).group(1)
    response = client.generic("POST", url, body, content_type=content_type)
    assert response.status_code == status
    assert response.json() == {"error": error}
    assert Response.objects.count() == 0


def test_the_same_trial_still_takes_a_good_answer_afterwards(grid_campaign):
    client = Client()
    start_session(client, grid_campaign)
    html = client.get("/session/").content.decode()
    url = RESPOND.search(html).group(1)
    assert client.generic("POST", url, "[" * 100000, content_type="application/json").status_code == 400
    stored = answer(client, html)
    assert stored.status_code == 200 and stored.json()["stored"] is True
    assert Response.objects.get().choice == CHOICE.findall(html)[0]
    assert json.loads(stored.content)["duplicate"] is False


def test_an_answer_failing_the_csrf_check_gets_a_json_reason_the_page_can_show(grid_campaign):
    client = Client(enforce_csrf_checks=True)
    client.get(f"/join/{grid_campaign.join_code}/")
    token = client.cookies["csrftoken"].value
    client.post(
        f"/join/{grid_campaign.join_code}/", {"participant_code": "P-csrf", "csrfmiddlewaretoken": token}
    )
    client.post("/session/consent/", {"agree": "yes", "csrfmiddlewaretoken": token})
    client.post("/session/start/", {"csrfmiddlewaretoken": token})
    html = client.get("/session/").content.decode()
    url = RESPOND.search(html).group(1)
    body = json.dumps({"choice": CHOICE.findall(html)[0], "response_time_ms": 10})
    refused = client.post(url, body, content_type="application/json")  # no X-CSRFToken header
    assert refused.status_code == 403
    assert refused.json() == {"error": "security check failed: reload the page and answer again"}
    # A browser form post still gets Django's plain page, without the reason (DEBUG off).
    page = client.post("/session/consent/", {"agree": "yes"})
    assert page.status_code == 403 and b"CSRF verification failed" in page.content
    assert b"CSRF token missing" not in page.content
    assert Response.objects.count() == 0
