"""A reload keeps replays, watch time and response time; headings count trials of the study
(issue 9: a reload reset all three, and "Trial 3 of 20" showed twice after skipped positions)."""

import json
import re
from datetime import timedelta

import pytest
from django.test import Client

from trials.models import RatingSession, Response, Trial

from .test_views import RESPOND, answer, start_session

CONFIG = re.compile(r'<script id="trial-config" type="application/json">(.*?)</script>', re.S)
HEADING = re.compile(r"<header><strong>(.*?)</strong>", re.S)


@pytest.fixture(autouse=True)
def instant_viewing(settings):
    settings.TRIALS_MIN_VIEW_MS = 0
    settings.TRIALS_MIN_WATCH_PERCENT = 0


def _page(client):
    html = client.get("/session/").content.decode()
    return html, json.loads(CONFIG.search(html).group(1))


def _state(client, config, **values):
    return client.post(config["state_url"], json.dumps(values), content_type="application/json")


def test_a_reload_keeps_replays_watch_time_and_response_time(grid_campaign):
    client = Client()
    start_session(client, grid_campaign)
    html, config = _page(client)
    trial = Trial.objects.get(token=RESPOND.search(html).group(1).split("/")[2])
    assert (config["replays"], config["watch_time_ms"]) == (0, 0) and config["elapsed_ms"] < 5000
    # The page and its video were served 30 s ago (reported watch times are capped by the
    # server-side time since the video's first request); the page reports its counts when
    # hidden; then the rater reloads.
    earlier = trial.shown_at - timedelta(seconds=30)
    Trial.objects.filter(pk=trial.pk).update(shown_at=earlier, media_fetched_at=earlier)
    assert _state(client, config, replays=2, watch_time_ms=7400).status_code == 204
    html_again, again = _page(client)
    assert RESPOND.search(html_again).group(1) == RESPOND.search(html).group(1)  # the same trial
    assert again["replays"] == 3  # 2 clicks + the reload, which starts the video again
    assert again["watch_time_ms"] == 7400
    assert again["elapsed_ms"] >= 30_000  # the response time runs on from the first show
    # A late report of the first load's lower counts changes nothing.
    assert _state(client, again, replays=1, watch_time_ms=100).status_code == 204
    trial.refresh_from_db()
    assert (trial.replays, trial.watch_time_ms, trial.page_views) == (3, 7400, 2)
    # An answer whose counts were lost (0) still stores what the server kept.
    reply = answer(client, html_again, replays=0, watch_time_ms=0, response_time_ms=31_000)
    assert reply.status_code == 200
    stored = Response.objects.get(trial=trial)
    assert (stored.replays, stored.watch_time_ms, stored.response_time_ms) == (3, 7400, 31_000)
    assert stored.server_time_ms >= 30_000
    # The trial is answered: its state is closed; another rater cannot touch it.
    assert _state(client, again, replays=9, watch_time_ms=9).status_code == 404
    other = Client()
    start_session(other, grid_campaign, code="P-other")
    assert _state(other, again, replays=9, watch_time_ms=9).status_code == 404
    assert Client().post(again["state_url"], "{}", content_type="application/json").status_code == 403
    assert _state(other, again, replays=-1, watch_time_ms=9).status_code in (400, 404)


def test_headings_count_practice_and_study_trials_separately(grid_campaign):
    client = Client()
    start_session(client, grid_campaign)
    headings, bars = [], []
    for _ in range(40):
        html = client.get("/session/").content.decode()
        if RESPOND.search(html) is None:
            break
        headings.append(HEADING.search(html).group(1))
        bars.append(re.search(r'<progress id="progress" value="(\d+)" max="(\d+)"', html).groups())
        assert answer(client, html).status_code == 200
    session = RatingSession.objects.get()
    n_practice = session.plan.count("practice")
    n_study = len(session.plan) - n_practice
    assert headings[:n_practice] == [f"Practice {i} of {n_practice}" for i in range(1, n_practice + 1)]
    study = headings[n_practice:]
    assert study == [f"Trial {i} of {n_study}" for i in range(1, len(study) + 1)]  # never twice
    assert [int(v) for v, _ in bars[n_practice:]] == list(range(len(study)))
