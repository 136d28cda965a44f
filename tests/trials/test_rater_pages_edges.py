"""Rater-page edges of issue 9: declining consent, a full study, an expired claim."""

import json
import re
from datetime import timedelta

from django.test import Client
from django.utils import timezone

from trials import assignment
from trials.models import Item, Rater, RatingSession, Response, SessionState, Trial

RESPOND = re.compile(r'"respond_url": "(/t/[^"]+/respond/)"')
CHOICE = re.compile(r'data-choice="([^"]+)"')


def test_declining_consent_shows_a_clear_page_and_records_only_the_decline(grid_campaign):
    client = Client()
    client.post(
        f"/join/{grid_campaign.join_code}/?PROLIFIC_PID=abc&STUDY_ID=s1", {"participant_code": "p-no"}
    )
    assert b'id="decline"' in client.get("/session/").content
    client.post("/session/consent/", {"decline": "yes"})
    page = client.get("/session/").content.decode()
    assert "You declined to take part" in page and "no answers are recorded" in page
    session = RatingSession.objects.get(rater__participant_code="p-no")
    assert session.state == SessionState.DECLINED and session.plan == [] and session.consented_at is None
    assert Rater.objects.get(participant_code="p-no").platform_params == {}
    # No way on to trials: start does nothing, no trial is ever made.
    client.post("/session/start/")
    client.post("/session/consent/", {"agree": "yes"})
    assert RatingSession.objects.get(pk=session.pk).state == SessionState.DECLINED
    assert not Trial.objects.filter(session=session).exists()


def test_join_link_closes_with_a_clear_page_when_every_item_is_full(grid_campaign, settings):
    settings.TRIALS_PLAUSIBILITY_CHECKS = False
    returning = assignment.join(grid_campaign, participant_code="p-early")
    # Fill every item: each of 32 items gets its 3 usable responses. GRID has one lineup
    # block, which a session spends on its check or its evaluated identity trial
    # (trials.design.session_layout): about half the sessions serve no identity item.
    for i in range(150):
        session = assignment.join(grid_campaign, participant_code=f"filler-{i}")
        RatingSession.objects.filter(pk=session.pk).update(state=SessionState.RUNNING)
        session.refresh_from_db()
        while (trial := assignment.current_trial(session)) is not None:
            assignment.record_response(
                trial, {"choice": assignment.valid_choices(trial)[0], "response_time_ms": 2000}
            )
        if not Item.objects.least_completed_first(grid_campaign).exists():
            break
    assert not Item.objects.least_completed_first(grid_campaign).exists()
    late = Client().post(f"/join/{grid_campaign.join_code}/", {"participant_code": "p-late"})
    assert late.status_code == 403 and b"This study is full" in late.content
    assert not Rater.objects.filter(participant_code="p-late").exists()
    # A participant who joined before still gets back to their session.
    again = Client().post(f"/join/{grid_campaign.join_code}/", {"participant_code": "p-early"})
    assert (
        again.status_code == 302
        and RatingSession.objects.get(rater__participant_code="p-early").pk == returning.pk
    )


def test_expired_claim_tells_the_rater_instead_of_dropping_the_answer(grid_campaign, settings):
    settings.TRIALS_PLAUSIBILITY_CHECKS = False
    client = Client()
    client.post(f"/join/{grid_campaign.join_code}/", {"participant_code": "p-slow"})
    client.post("/session/consent/", {"agree": "yes"})
    client.post("/session/start/")
    html = client.get("/session/").content.decode()
    for _ in range(5):  # past practice (and any catch) to an evaluated trial
        if Trial.objects.get(token=RESPOND.search(html).group(1).split("/")[2]).kind == "item":
            break
        body = {"choice": CHOICE.findall(html)[0], "response_time_ms": 3000}
        client.post(RESPOND.search(html).group(1), json.dumps(body), content_type="application/json")
        html = client.get("/session/").content.decode()
    trial = Trial.objects.get(token=RESPOND.search(html).group(1).split("/")[2])
    # The claim lapses and other raters fill the item meanwhile.
    Trial.objects.filter(pk=trial.pk).update(claimed_at=timezone.now() - timedelta(hours=2))
    for i in range(trial.item.target_count):
        other = assignment.join(grid_campaign, participant_code=f"o-{i}")
        RatingSession.objects.filter(pk=other.pk).update(state=SessionState.RUNNING)
        Trial.objects.create(
            session=other,
            position=0,
            kind="item",
            task=trial.task,
            item=trial.item,
            source_video=trial.source_video,
            correct_choice="1",
            completed=True,
        )
    reply = client.post(
        RESPOND.search(html).group(1),
        json.dumps({"choice": CHOICE.findall(html)[0], "response_time_ms": 3000}),
        content_type="application/json",
    )
    assert reply.status_code == 409
    assert "went to another rater" in reply.json()["message"] and "not stored" in reply.json()["message"]
    assert not Response.objects.filter(trial=trial).exists()
    script = client.get("/session/").content.decode()
    assert "result.data.message" in script  # the trial page shows it before moving on
