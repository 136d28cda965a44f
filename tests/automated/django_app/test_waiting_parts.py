"""A part of "evaluate everything" that cannot start yet says why on the organizer pages.

The organizer's campaign page and the submission's progress page show, for a part never
run, the reason ``evaluate_everything`` gives when it leaves that part waiting
(``evaluate_all.waiting_reason``, the same check), instead of "not run". Real runs on the
tiny real GRID campaign (``test_evaluate_all``'s fixtures).
"""

import pytest
from django.urls import reverse
from django.utils.html import escape

from automated.django_app.attack_models import AttackRun
from automated.django_app.face_models import AutomatedRun

from .test_evaluate_all import FAST_ATTACK, FAST_FACE, _api, _evaluate, _web, campaign, organizer, submission  # noqa: F401

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def test_the_pages_say_why_the_attack_waits_for_its_inputs(organizer, submission):  # noqa: F811
    web = _web(organizer)
    campaign_page = reverse("trials:organizer_campaign", args=[submission.campaign.pk])
    progress_page = reverse("automated:submission_progress", args=[submission.pk])
    # Complete and never evaluated: each part could start, so it is just "not run", and
    # looking did not create a run.
    page = web.get(campaign_page).content.decode()
    assert '<span class="run">face: not run</span>' in page
    assert '<span class="run">attack: not run</span>' in page
    assert "<li>face: not run</li><li>attack: not run</li>" in web.get(progress_page).content.decode()
    assert not AutomatedRun.objects.exists() and not AttackRun.objects.exists()

    submission.masked_videos.get(source_video__name="lwbsza").delete()
    response = _evaluate(
        _api(organizer), submission, {"face": {**FAST_FACE, "allow_incomplete": True}, "attack": FAST_ATTACK}
    )
    face, attack = response.json()["parts"]
    assert face["run"]["status"] == "completed" and attack["state"] == "waiting"
    pk = submission.pk
    expected = (
        "attack: waiting: submission 'Baselines / identity' is incomplete: 1 of 3 source videos have no "
        "masked video (lwbsza); upload them, or run on the masked ones anyway: "
        f"`manage.py attack {pk} --allow-incomplete`, or in the API POST /api/submissions/{pk}/runs/ "
        '{"kind": "attack", "allow_incomplete": true} (/evaluate/: {"attack": {"allow_incomplete": true}})'
    )
    assert f"attack: waiting: {attack['detail']}" == expected  # the words "evaluate everything" said
    page = web.get(campaign_page).content.decode()
    assert f'<span class="run">{escape(expected)}</span>' in page and "attack: not run" not in page
    assert f'<span class="run">face run {face["run_id"]}: completed: 2/2 videos</span>' in page
    progress = web.get(progress_page).content.decode()
    assert f'<ul id="not-run"><li>{escape(expected)}</li></ul>' in progress
    assert not AttackRun.objects.exists()
