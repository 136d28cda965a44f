"""Practice from material outside the evaluated subset (issue 9): practice harvests no answers."""

import json
import re

import pytest
from django.test import Client

from evalsite.models import SourceVideo
from trials.checks import campaign_warnings
from trials.models import Item, Trial

RESPOND = re.compile(r'"respond_url": "(/t/[^"]+/respond/)"')
CHOICE = re.compile(r'data-choice="([^"]+)"')
MEDIA = re.compile(r'src="(/m/[^"]+)"')


@pytest.fixture(autouse=True)
def instant_viewing(settings):
    settings.TRIALS_MIN_VIEW_MS = 0


def _practice_replies(campaign, code):
    """(trial, JSON reply) of each practice trial of a new session."""
    client = Client()
    client.post(f"/join/{campaign.join_code}/", {"participant_code": code})
    client.post("/session/consent/", {"agree": "yes"})
    client.post("/session/start/")
    replies = []
    for _ in range(40):
        html = client.get("/session/").content.decode()
        match = RESPOND.search(html)
        if match is None:
            break
        trial = Trial.objects.get(token=match.group(1).split("/")[2])
        if trial.kind != "practice":
            break
        for url in MEDIA.findall(html):
            b"".join(client.get(url).streaming_content)
        body = {"choice": CHOICE.findall(html)[0], "response_time_ms": 1500}
        replies.append(
            (trial, client.post(match.group(1), json.dumps(body), content_type="application/json").json())
        )
    return replies


def test_practice_gives_no_feedback_on_evaluated_videos(grid_campaign):
    assert not SourceVideo.objects.filter(campaign=grid_campaign, in_evaluated_subset=False).exists()
    harvested = 0
    for code in ("throwaway-1", "throwaway-2", "throwaway-3"):
        replies = _practice_replies(grid_campaign, code)
        assert len(replies) == 2
        for trial, reply in replies:
            assert trial.source_video.in_evaluated_subset and reply["stored"]
            harvested += "feedback" in reply
    assert harvested == 0  # old code: every practice answer came back with its correct face
    warnings = " ".join(campaign_warnings(grid_campaign))
    assert "no practice material" in warnings and "give no correctness feedback" in warnings


def test_practice_uses_only_imported_practice_material_with_feedback(grid_campaign):
    practice = list(SourceVideo.objects.filter(campaign=grid_campaign).order_by("name")[:2])
    SourceVideo.objects.filter(pk__in=[v.pk for v in practice]).update(
        practice=True, in_evaluated_subset=False
    )
    for code in ("learner-1", "learner-2", "learner-3"):
        replies = _practice_replies(grid_campaign, code)
        assert len(replies) == 2
        assert {trial.source_video_id for trial, _ in replies} <= {v.pk for v in practice}
        for trial, reply in replies:
            assert reply["feedback"]["correct_choice"] == trial.correct_choice
    # Practice videos are never evaluated: no item of theirs takes trials.
    assert not Item.objects.evaluated(grid_campaign).filter(source_video__in=practice).exists()
    assert not Trial.objects.filter(kind="item", source_video__in=practice).exists()
    assert "no practice material" not in " ".join(campaign_warnings(grid_campaign))
