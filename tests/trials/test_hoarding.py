"""Claim hoarding (issue 19): claims live on a heartbeat from the trial page, lapse within
minutes without it, are limited per browser and address, and a study is never "full"
while responses are missing (over-assignment)."""

import json
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from trials import assignment
from trials.models import (
    FlagKind,
    Item,
    Rater,
    RaterFlag,
    RatingSession,
    Response,
    SessionState,
    Trial,
    TrialKind,
)

RESPOND = re.compile(r'"respond_url": "(/t/[^"]+)/respond/"')
CONFIG = re.compile(r'<script id="trial-config" type="application/json">(.*?)</script>', re.S)


@pytest.fixture(autouse=True)
def no_plausibility_checks(settings):
    settings.TRIALS_PLAUSIBILITY_CHECKS = False  # scripted raters fetch no media


def _running(campaign, code, **join):
    session = assignment.join(campaign, participant_code=code, **join)
    RatingSession.objects.filter(pk=session.pk).update(state=SessionState.RUNNING)
    session.refresh_from_db()
    return session


def _answer(trial):
    return assignment.record_response(
        trial, {"choice": assignment.valid_choices(trial)[0], "response_time_ms": 2000}
    )


def _to_item(session, now=None):
    """Answer practice and checks until the session holds an evaluated item."""
    while (trial := assignment.current_trial(session, now=now)) is not None and trial.kind != TrialKind.ITEM:
        _answer(trial)
    return trial


def _page_trial(client, campaign, code):
    """Join through the pages; the trial page of the first evaluated item, and its config."""
    client.post(f"/join/{campaign.join_code}/", {"participant_code": code})
    client.post("/session/consent/", {"agree": "yes"})
    client.post("/session/start/")
    session = RatingSession.objects.get(rater__participant_code=code)
    _to_item(session)
    html = client.get("/session/").content.decode()
    token = RESPOND.search(html).group(1).split("/")[2]
    return Trial.objects.get(token=token), json.loads(CONFIG.search(html).group(1))


def test_claims_lapse_without_heartbeat_and_live_with_it(grid_campaign, settings):
    settings.TRIALS_CLAIM_TIMEOUT_S = 60
    settings.TRIALS_CLAIM_MAX_HOLD_S = 600
    client = Client()
    trial, config = _page_trial(client, grid_campaign, "p-beat")
    # The page sends a heartbeat every quarter of the timeout.
    assert config["heartbeat_url"] == f"/t/{trial.token}/heartbeat/" and config["heartbeat_ms"] == 15000
    live = Trial.objects.filter(item=trial.item).live
    assert live().count() == 1
    # No heartbeat for 61 s: the claim no longer holds the item.
    Trial.objects.filter(pk=trial.pk).update(claimed_at=timezone.now() - timedelta(seconds=61))
    assert live().count() == 0
    # A heartbeat takes a lapsed claim up again while its item has room, and renews a live one.
    assert client.post(config["heartbeat_url"]).status_code == 204
    trial.refresh_from_db()
    assert live().count() == 1 and timezone.now() - trial.claimed_at < timedelta(seconds=30)
    assert client.get(config["heartbeat_url"]).status_code == 405
    assert Client().post(config["heartbeat_url"]).status_code == 403  # another browser
    # Renewed for at most TRIALS_CLAIM_MAX_HOLD_S after the page was first shown: then it lapses.
    Trial.objects.filter(pk=trial.pk).update(
        shown_at=timezone.now() - timedelta(seconds=601), claimed_at=timezone.now() - timedelta(seconds=50)
    )
    assert client.post(config["heartbeat_url"]).status_code == 204  # still within its last minute
    Trial.objects.filter(pk=trial.pk).update(claimed_at=timezone.now() - timedelta(seconds=61))
    reply = client.post(config["heartbeat_url"])
    assert reply.status_code == 409 and reply.json()["next"] == "/session/"
    assert live().count() == 0


def test_study_is_not_full_while_responses_are_missing_and_hoarded_items_go_to_others(
    grid_campaign, settings
):
    settings.TRIALS_CLAIM_TIMEOUT_S = 180
    Item.objects.update(target_count=1)
    n_items = Item.objects.evaluated(grid_campaign).count()
    # Hoarders: one claim each on every item, never answered (no heartbeat either).
    settings.TRIALS_OVERASSIGN = False  # while they take every item's room
    hoarded, i = set(), 0
    while Item.objects.least_completed_first(grid_campaign).exists():
        trial = _to_item(_running(grid_campaign, f"hoarder-{i}"))
        hoarded |= {trial.item_id} if trial else set()
        i += 1
    assert len(hoarded) == n_items and i < 2 * n_items
    settings.TRIALS_OVERASSIGN = True
    assert Response.objects.filter(trial__kind=TrialKind.ITEM).count() == 0
    # A new participant is welcome: responses are missing, whatever the claims.
    client = Client()
    joined = client.post(f"/join/{grid_campaign.join_code}/", {"participant_code": "p-honest"})
    assert joined.status_code == 302
    RatingSession.objects.filter(rater__participant_code="p-honest").update(state=SessionState.RUNNING)
    honest = RatingSession.objects.get(rater__participant_code="p-honest")
    trial = _to_item(honest)
    assert trial is not None and trial.item_id in hoarded  # over-assigned
    response, created = _answer(trial)
    assert created
    # The hoarder of that item answers after it was filled: not stored, next trial.
    hoarder = Trial.objects.get(item=trial.item, kind=TrialKind.ITEM, completed=False, released=False)
    with pytest.raises(assignment.TrialExpired):
        _answer(hoarder)
    assert Response.objects.filter(trial__item=trial.item).count() == 1
    # Without heartbeats the hoarders' claims lapse: every item missing responses has room again.
    later = timezone.now() + timedelta(seconds=181)
    open_items = Item.objects.least_completed_first(grid_campaign, now=later)
    assert open_items.count() == n_items - 1
    # Full means every response is in.
    for item in Item.objects.evaluated(grid_campaign).exclude(pk=trial.item_id):
        held = Trial.objects.get(item=item, completed=False, released=False)
        _answer(held)
    late = Client().post(f"/join/{grid_campaign.join_code}/", {"participant_code": "p-late"})
    assert late.status_code == 403 and b"This study is full" in late.content


def test_open_claims_are_limited_per_address_and_per_browser(grid_campaign, settings):
    settings.TRIALS_MAX_SESSIONS_PER_ADDRESS = 10
    settings.TRIALS_MAX_SESSIONS_PER_BROWSER = 10
    settings.TRIALS_MAX_OPEN_CLAIMS_PER_ADDRESS = 2
    settings.TRIALS_MAX_OPEN_CLAIMS_PER_BROWSER = 1
    nets = [_running(grid_campaign, f"net-{i}", address_hash="a" * 64) for i in range(4)]
    # Codes sharing an address are excluded (they claim no item); the organizer included them again.
    Rater.objects.filter(participant_code__startswith="net-").update(excluded=False)
    one_address = [_to_item(session) for session in nets]
    still_open = Trial.objects.filter(pk__in=[t.pk for t in one_address], released=False)
    # Each new claim released the oldest beyond the limit: the 2 newest are held.
    assert sorted(still_open.values_list("pk", flat=True)) == sorted(t.pk for t in one_address[-2:])
    jars = [_running(grid_campaign, f"jar-{i}", browser_hash="b" * 64) for i in range(3)]
    # Codes sharing a browser are excluded (they claim no item); the organizer included them again.
    assert RaterFlag.objects.filter(kind=FlagKind.SHARED_BROWSER).count() == 3
    Rater.objects.filter(participant_code__startswith="jar-").update(excluded=False)
    one_browser = [_to_item(session) for session in jars]
    still_open = Trial.objects.filter(pk__in=[t.pk for t in one_browser], released=False)
    assert list(still_open.values_list("pk", flat=True)) == [one_browser[-1].pk]
    # A released claim's rater is told at once when answering, and gets a new trial.
    with pytest.raises(assignment.TrialExpired):
        assignment.record_response(one_browser[0], {"choice": "1", "response_time_ms": 2000})


def test_heartbeat_after_the_maximum_hold_is_the_same_for_checks_and_evaluated_trials(
    grid_campaign, settings
):
    settings.TRIALS_CLAIM_TIMEOUT_S = 60
    settings.TRIALS_CLAIM_MAX_HOLD_S = 600
    check_client = Client()
    check_client.post(f"/join/{grid_campaign.join_code}/", {"participant_code": "p-check"})
    check_client.post("/session/consent/", {"agree": "yes"})
    check_client.post("/session/start/")
    html = check_client.get("/session/").content.decode()
    check = Trial.objects.get(token=RESPOND.search(html).group(1).split("/")[2])
    assert check.kind != TrialKind.ITEM and check.item_id is None  # the session opens with practice
    item_client = Client()
    item, _ = _page_trial(item_client, grid_campaign, "p-item")
    replies = {}
    for ago in (50, 61):  # the last renewal within / beyond the claim timeout, past the maximum hold
        for name, client, trial in (("check", check_client, check), ("item", item_client, item)):
            Trial.objects.filter(pk=trial.pk).update(
                shown_at=timezone.now() - timedelta(seconds=601),
                claimed_at=timezone.now() - timedelta(seconds=ago),
            )
            replies[name, ago] = client.post(f"/t/{trial.token}/heartbeat/").status_code
    assert replies == {("check", 50): 204, ("item", 50): 204, ("check", 61): 409, ("item", 61): 409}
    # Within the hold a check's heartbeat renews it, like an evaluated trial's.
    Trial.objects.filter(pk=check.pk).update(
        shown_at=timezone.now(), claimed_at=timezone.now() - timedelta(seconds=61)
    )
    assert check_client.post(f"/t/{check.token}/heartbeat/").status_code == 204
    check.refresh_from_db()
    assert timezone.now() - check.claimed_at < timedelta(seconds=30)
