"""Rater pages through Django's test client: join, consent, trials, answers, media, organizer."""

import json
import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from trials.models import Rater, RatingSession, Response, SessionState, Trial

from .sessions import with_check_first

RESPOND = re.compile(r'"respond_url": "(/t/[^"]+/respond/)"')
CHOICE = re.compile(r'data-choice="([^"]+)"')
MEDIA = re.compile(r'src="(/m/[^"]+)"')


def start_session(client: Client, campaign, code="P-0001"):
    assert client.post(f"/join/{campaign.join_code}/", {"participant_code": code}).status_code == 302
    assert client.post("/session/consent/", {"agree": "yes"}).status_code == 302
    assert client.post("/session/start/").status_code == 302


@pytest.fixture(autouse=True)
def instant_viewing(settings):
    """These tests answer at once: allow it, but they still fetch every medium (checked)."""
    settings.TRIALS_MIN_VIEW_MS = 0
    settings.TRIALS_MIN_WATCH_PERCENT = 0


def fetch_media(client, html):
    for url in MEDIA.findall(html):
        reply = client.get(url)
        if reply.status_code == 200:
            b"".join(reply.streaming_content)  # the bytes sent are counted as the body is read


def answer(client, html, choice=None, **extra):
    fetch_media(client, html)
    url = RESPOND.search(html).group(1)
    body = {
        "choice": choice or CHOICE.findall(html)[0],
        "response_time_ms": 1500,
        "replays": 1,
        "watch_time_ms": 3000,
        **extra,
    }
    return client.post(url, json.dumps(body), content_type="application/json")


def test_consent_is_required_before_trials(grid_campaign):
    client = Client()
    client.post(f"/join/{grid_campaign.join_code}/", {"participant_code": "P-1"})
    page = client.get("/session/")
    assert b"agree" in page.content and RESPOND.search(page.content.decode()) is None
    client.post("/session/consent/", {})  # not ticked: stays on consent
    assert RatingSession.objects.get().state == SessionState.CONSENT
    client.post("/session/consent/", {"agree": "yes"})
    session = RatingSession.objects.get()
    assert session.state == SessionState.INSTRUCTIONS and session.consented_at is not None


def test_rater_goes_from_practice_to_completion_code(grid_campaign):
    client = Client()
    start_session(client, grid_campaign)
    # Laid out to serve its check (GRID's one lineup block goes to the check or to the
    # evaluated identity trial, whichever slot comes first: tests/trials/sessions.py).
    with_check_first(RatingSession.objects.get())
    kinds = []
    for _ in range(40):
        html = client.get("/session/").content.decode()
        if "completion-code" in html:
            break
        trial = Trial.objects.get(token=RESPOND.search(html).group(1).split("/")[2])
        kinds.append(trial.kind)
        data = answer(client, html).json()
        assert data["stored"] and not data["duplicate"]
        # Practice never shows an evaluated person (here: a face and an instruction): its
        # answers come back; no evaluated answer does.
        assert ("feedback" in data) == (trial.kind == "practice")
        if trial.kind == "practice":  # a face and an instruction: no practice material here
            assert trial.source_video_id is None and trial.probe_image_id is not None
    session = RatingSession.objects.get()
    assert session.state == SessionState.COMPLETE
    assert session.completion_code in html
    assert kinds[:2] == ["practice", "practice"]
    # One trial per person, none spent on practice: 10 people, of whom the check's face
    # holds back one (as an evaluated identity trial's target would), so 9 videos and the
    # check: 10 study trials, as many as a session serving its evaluated identity trial.
    assert kinds.count("item") == 9 and kinds.count("catch") == round(10 * 0.1)
    seen = list(
        session.trials.filter(kind__in=["item", "practice"])
        .exclude(source_video=None)  # practice here: a face and an instruction, no video
        .values_list("source_video_id", flat=True)
    )
    assert len(seen) == 9
    assert len(seen) == len(set(seen)), "a source video was shown twice in one session"


def test_reload_shows_the_same_trial_and_a_resent_answer_is_stored_once(grid_campaign):
    client = Client()
    start_session(client, grid_campaign)
    first = client.get("/session/").content.decode()
    again = client.get("/session/").content.decode()
    assert RESPOND.search(first).group(1) == RESPOND.search(again).group(1)
    one = answer(client, first).json()
    two = answer(client, first, choice=CHOICE.findall(first)[-1]).json()
    assert not one["duplicate"] and two["duplicate"]
    assert Response.objects.count() == 1
    assert Response.objects.get().choice == CHOICE.findall(first)[0]
    assert RESPOND.search(client.get("/session/").content.decode()).group(1) != RESPOND.search(first).group(1)


def test_invalid_answers_are_rejected_with_a_reason(grid_campaign):
    client = Client()
    start_session(client, grid_campaign)
    html = client.get("/session/").content.decode()
    assert answer(client, html, choice="9").status_code == 400
    assert answer(client, html, response_time_ms=-5).status_code == 400
    url = RESPOND.search(html).group(1)
    assert client.post(url, "not json", content_type="application/json").status_code == 400
    assert client.get(url).status_code == 405
    assert Response.objects.count() == 0


def test_media_answers_range_requests_and_only_for_the_owner(grid_campaign):
    owner, other = Client(), Client()
    start_session(owner, grid_campaign, "P-owner")
    start_session(other, grid_campaign, "P-other")
    # Advance past practice to an evaluated trial with a video.
    html = owner.get("/session/").content.decode()
    while Trial.objects.get(token=RESPOND.search(html).group(1).split("/")[2]).source_video_id is None:
        answer(owner, html)
        html = owner.get("/session/").content.decode()
    video_url = [u for u in MEDIA.findall(html)][-1]
    full = owner.get(video_url)
    body = b"".join(full.streaming_content)
    assert (
        full.status_code == 200 and full["Accept-Ranges"] == "bytes" and full["Content-Type"] == "video/mp4"
    )
    assert body[4:8] == b"ftyp" and int(full["Content-Length"]) == len(body)
    assert "Content-Disposition" not in full
    part = owner.get(video_url, HTTP_RANGE="bytes=100-199")
    assert part.status_code == 206 and part["Content-Range"] == f"bytes 100-199/{len(body)}"
    assert b"".join(part.streaming_content) == body[100:200]
    tail = owner.get(video_url, HTTP_RANGE="bytes=-10")
    assert b"".join(tail.streaming_content) == body[-10:]
    assert owner.get(video_url, HTTP_RANGE=f"bytes={len(body)}-").status_code == 416
    assert other.get(video_url).status_code == 404
    assert Client().get(video_url).status_code == 404
    # The other rater cannot answer the owner's trial either.
    assert answer(other, html).status_code == 404


def test_rater_account_can_join_without_a_code(grid_campaign):
    user = User.objects.create_user("rater1", password="pw-123456")
    client = Client()
    client.force_login(user)
    client.post(f"/join/{grid_campaign.join_code}/", {"participant_code": ""})
    assert Rater.objects.get().user == user
    assert client.get("/session/").status_code == 200


def test_raters_cannot_reach_admin_or_organizer_pages(grid_campaign):
    client = Client()
    start_session(client, grid_campaign)
    assert client.get("/admin/").status_code == 302
    assert client.get(f"/organizer/{grid_campaign.pk}/").status_code == 302
    user = User.objects.create_user("rater2", password="pw-123456")
    client.force_login(user)
    assert client.get("/organizer/").status_code == 302


def test_closed_campaign_refuses_raters(grid_campaign):
    from trials.services import close_rating

    close_rating(grid_campaign)
    assert Client().get(f"/join/{grid_campaign.join_code}/").status_code == 403


@pytest.mark.parametrize("superuser", [True, False])
def test_organizer_sees_progress_and_foil_warnings_of_own_campaigns(grid_campaign, superuser):
    staff = User.objects.create_user("org", password="pw-123456", is_staff=True, is_superuser=superuser)
    client = Client()
    client.force_login(staff)
    if not superuser:
        assert client.get(f"/organizer/{grid_campaign.pk}/").status_code == 404
        grid_campaign.organizers.add(staff)
    page = client.get(f"/organizer/{grid_campaign.pk}/").content.decode()
    assert "0 of 96 usable responses" in page  # 32 items x 3 raters
    # 4 female speakers: a women-only lineup block needs 6 (5 faces + 1 for target-absent
    # trials), so their videos get no identity trials (trials.design.exposure_plan).
    assert page.count("its group has 4 identities with evaluated videos, a lineup that does not") == 4
    client.post(f"/organizer/{grid_campaign.pk}/rating/", {"open": "0"})
    grid_campaign.refresh_from_db()
    assert not grid_campaign.rating_open


def test_opening_rating_from_the_organizer_page_reports_foil_shortages(grid_campaign):
    from trials.services import close_rating

    close_rating(grid_campaign)
    staff = User.objects.create_user("org", password="pw-123456", is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(staff)
    page = client.post(f"/organizer/{grid_campaign.pk}/rating/", {"open": "1"}, follow=True).content.decode()
    grid_campaign.refresh_from_db()
    assert grid_campaign.rating_open
    assert "Rating open (0 new items)" in page
    assert "subject-grid-p02-code (gender=female): its group has 4 identities with evaluated videos" in page


def test_rater_login_page_and_csrf_protected_answers(grid_campaign):
    assert Client().get("/rater/login/").status_code == 200
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
    assert client.post(url, body, content_type="application/json").status_code == 403
    ok = client.post(
        url, body, content_type="application/json", HTTP_X_CSRFTOKEN=client.cookies["csrftoken"].value
    )
    assert ok.status_code == 200


def test_organizer_is_warned_of_an_empty_consent_text_and_gets_a_full_rater_link(grid_campaign):
    from trials.checks import campaign_warnings

    assert not any("consent" in w for w in campaign_warnings(grid_campaign))
    grid_campaign.consent_text = "  "
    grid_campaign.save()
    assert any("consent text is empty" in w for w in campaign_warnings(grid_campaign))
    staff = User.objects.create_user("org", password="pw-123456", is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(staff)
    page = client.get(f"/organizer/{grid_campaign.pk}/").content.decode()
    assert f"http://testserver/join/{grid_campaign.join_code}/" in page
    # Opening rating says so once; the warnings are listed once, under "Warnings".
    page = client.post(f"/organizer/{grid_campaign.pk}/rating/", {"open": "1"}, follow=True).content.decode()
    assert page.count("consent text is empty") == 1


def test_organizer_progress_separates_answered_from_open_claims(grid_campaign, settings):
    from trials import assignment

    settings.TRIALS_PLAUSIBILITY_CHECKS = False  # answered directly, no media fetched
    session = assignment.join(grid_campaign, participant_code="P-progress")
    RatingSession.objects.filter(pk=session.pk).update(state=SessionState.RUNNING, plan=["item", "item"])
    trial = assignment.current_trial(session)
    assignment.record_response(trial, {"choice": assignment.valid_choices(trial)[0], "response_time_ms": 900})
    assignment.current_trial(session)  # the second item is claimed, not answered
    staff = User.objects.create_user("org", password="pw-123456", is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(staff)
    page = client.get(f"/organizer/{grid_campaign.pk}/").content.decode()
    cells = re.findall(
        r"<td>(\d+)</td><td>0</td><td>(\d+)</td><td>3</td>", page
    )  # usable, excluded, claimed, target
    assert sorted(cells, reverse=True)[:2] == [("1", "0"), ("0", "1")]
    assert sum(int(done) for done, _ in cells) == 1 and sum(int(open_) for _, open_ in cells) == 1
