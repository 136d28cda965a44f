"""The device gate's screen-out path (trials/screening.py, issue 23): phone browsers and small
screens leave at consent with the campaign's own screen-out code and redirect URL."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from evalsite.models import Campaign
from trials import crowd, screening
from trials.models import Rater, RatingSession, SessionState
from trials.views import SESSION_KEY

pytestmark = pytest.mark.django_db

IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148 Safari/604.1"
)
DESKTOP = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36"


@pytest.fixture
def gated():
    return Campaign.objects.create(
        name="Gated",
        slug="gated",
        consent_text="You watch short videos.",
        desktop_only=True,
        min_screen_width=1024,
        min_screen_height=700,
        screen_out_code="SCRN-7Q2",
        screen_out_url="https://app.prolific.com/submissions/complete?cc={screen_out_code}",
    )


def _consenting(campaign, code: str) -> tuple[Client, RatingSession]:
    rater = Rater.objects.create(campaign=campaign, participant_code=code)
    session = RatingSession.objects.create(rater=rater, campaign=campaign, state=SessionState.CONSENT)
    client = Client()
    store = client.session
    store[SESSION_KEY] = session.pk
    store.save()
    return client, session


@pytest.mark.parametrize(
    ("agent", "width", "height", "state", "reason"),
    [
        (
            IPHONE,
            "390",
            "844",
            SessionState.SCREENED_OUT,
            "a phone or tablet browser; this study needs a desktop",
        ),
        (DESKTOP, "800", "600", SessionState.SCREENED_OUT, "screen 800x600 smaller than 1024x700 pixels"),
        (DESKTOP, "1366", "768", SessionState.INSTRUCTIONS, ""),
        (DESKTOP, "", "", SessionState.INSTRUCTIONS, ""),  # no script: size unknown, not gated by size
    ],
)
def test_the_device_gate_at_consent(gated, agent, width, height, state, reason):
    client, session = _consenting(gated, f"p-{width or 'none'}-{len(agent)}")
    form = {"agree": "yes", "screen_width": width, "screen_height": height}
    response = client.post(reverse("trials:consent"), form, HTTP_USER_AGENT=agent)
    assert response.status_code == 302
    session.refresh_from_db()
    assert session.state == state and session.screen_out_reason.startswith(reason)
    page = client.get(reverse("trials:session")).content.decode()
    if state == SessionState.SCREENED_OUT:
        assert '<strong id="screen-out-code">SCRN-7Q2</strong>' in page
        assert 'href="https://app.prolific.com/submissions/complete?cc=SCRN-7Q2"' in page
        assert session.completion_code not in page and session.plan == []
    else:
        assert "screen-out-code" not in page


def test_screened_out_raters_are_listed_apart_in_the_crowd_bookkeeping(gated):
    client, session = _consenting(gated, "phone-user")
    client.post(reverse("trials:consent"), {"agree": "yes"}, HTTP_USER_AGENT=IPHONE)
    row = crowd.rater_decisions(gated).set_index("participant_code").loc["phone-user"]
    assert (row["decision"], row["reason"]) == (
        "screened_out",
        "device gate: a phone or tablet browser; this study needs a desktop or laptop computer",
    )
    assert crowd.export(gated, "prolific-approve") == ""
    # Nothing gated without the campaign's settings.
    open_campaign = Campaign.objects.create(name="Open", slug="open")
    assert screening.screen_out_reason(open_campaign, IPHONE, 320, 480) == ""
