"""Answers with odd-typed values, another rater's tokens and odd Range headers: 4xx, never 500."""

import json

import pytest
from django.test import Client

from trials.models import Response

from .test_views import MEDIA, RESPOND, start_session


@pytest.mark.parametrize(
    "body",
    [
        '{"choice": ["a"], "response_time_ms": 1}',
        '{"choice": {"a": 1}, "response_time_ms": 1}',
        '{"choice": 1e400, "response_time_ms": 1}',
        '{"choice": "x", "response_time_ms": 1e400}',
        '{"choice": "x", "response_time_ms": -1e400}',
        '{"choice": "x", "response_time_ms": ' + "9" * 5000 + "}",
        '{"choice": "x", "response_time_ms": 1.5}',
        '{"choice": "x", "response_time_ms": true}',
        '{"choice": "\\ud800", "response_time_ms": 1}',
        '{"choice": "\\u0000", "response_time_ms": 1}',
        '{"choice": "x", "response_time_ms": "12", "replays": "\\ud800"}',
        '{"choice": "x", "response_time_ms": 1, "replays": 1e308}',
        '{"choice": "x", "response_time_ms": 1, "watch_time_ms": [1]}',
        '{"choice": null, "response_time_ms": null}',
        "{}",
    ],
)
def test_odd_typed_answers_are_client_errors(grid_campaign, body):
    client = Client()
    start_session(client, grid_campaign)
    url = RESPOND.search(client.get("/session/").content.decode()).group(1)
    response = client.generic(
        "POST", url, body.encode("utf-8", "surrogatepass"), content_type="application/json"
    )
    assert 400 <= response.status_code < 500, (response.status_code, response.content[:300])
    assert Response.objects.count() == 0


def test_another_raters_trial_and_media_tokens_are_404(grid_campaign):
    alice, mallory = Client(), Client()
    start_session(alice, grid_campaign, code="P-alice")
    start_session(mallory, grid_campaign, code="P-mallory")
    html = alice.get("/session/").content.decode()
    url = RESPOND.search(html).group(1)
    body = json.dumps({"choice": "x", "response_time_ms": 1500})
    assert mallory.post(url, body, content_type="application/json").status_code == 404
    for media in MEDIA.findall(html):
        assert mallory.get(media).status_code == 404
        assert mallory.get(media, HTTP_RANGE="bytes=0-10").status_code == 404
    assert Client().post(url, body, content_type="application/json").status_code == 403
    for bad in ["/t/%00/respond/", "/t/" + "a" * 5000 + "/respond/", "/m/%ff%fe", "/m/" + "x" * 5000]:
        assert 400 <= mallory.post(bad, body, content_type="application/json").status_code < 500
        assert 400 <= mallory.get(bad).status_code < 500


def test_odd_range_headers_on_own_media_are_not_server_errors(grid_campaign):
    client = Client()
    start_session(client, grid_campaign)
    html = client.get("/session/").content.decode()
    for media in MEDIA.findall(html):
        for header in [
            "bytes=999999999-",
            "bytes=10-5",
            "bytes=-0",
            "bytes=0-1,3-4",
            "items=0-1",
            "bytes=a-b",
            "bytes=" + "9" * 5000 + "-",
        ]:
            reply = client.get(media, HTTP_RANGE=header)
            assert reply.status_code in (200, 206, 416), (header, reply.status_code)
            if hasattr(reply, "streaming_content"):
                b"".join(reply.streaming_content)
