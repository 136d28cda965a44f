"""Opening rating: one code path (trials.services.open_rating) from the admin, the API and
the organizer page, with the same checks, so a campaign that opens can always be rated.

The tiny campaign (conftest) has 3 identities with a gallery face; by default an identity
trial shows 5 faces (4 foils), so it cannot be rated. With 2 foils a trial shows 3 faces,
but a target-absent trial shows 3 faces none of which is the person, so it needs 4
identities: only without target-absent trials (or with 1 foil) can it open.
"""

import io
import json
import random
import re

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import CommandError, call_command
from django.forms.models import model_to_dict
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from evalsite.models import Campaign
from trials import design
from trials.assignment import identity_pool
from trials.models import Item, Response, Trial
from trials.services import CannotOpenRating, open_rating

NEEDS_5 = "campaign 'Tiny': 3 identities with a gallery face, an identity trial needs 5"
ABSENT_NEEDS_4 = (
    "campaign 'Tiny': 3 identities with a gallery face, a target-absent identity trial needs 4 "
    "(3 faces, none of them the person in the video); add an identity or set the target-absent share to 0"
)


def _organizer(campaign, name="org") -> User:
    user = User.objects.create_user(name, password="pw-123456", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label__in=["evalsite", "trials"]))
    campaign.organizers.add(user)
    return user


def _change_form(campaign, **changes) -> dict:
    """The admin change form of ``campaign`` as the browser posts it, with ``changes``."""
    data = model_to_dict(campaign, exclude=["id", "join_code", "rating_open"])
    data.update(changes)
    for name in ("action_vocabulary", "demographic_attributes"):
        data[name] = json.dumps(data[name])
    data["organizers"] = [user.pk for user in data["organizers"]]
    data = {name: "" if value is None else value for name, value in data.items()}  # an empty field
    if data.pop("rating_open", False) or changes.get("rating_open"):
        data["rating_open"] = "on"
    return data


def _post_change(client, campaign, **changes):
    url = reverse("admin:evalsite_campaign_change", args=[campaign.pk])
    return client.post(url, _change_form(campaign, **changes), follow=True)


def test_admin_tick_with_a_foil_shortage_shows_the_error_and_stays_closed(client, campaign):
    client.force_login(_organizer(campaign))
    page = _post_change(client, campaign, rating_open=True, description="edited")
    html = page.content.decode()
    assert page.status_code == 200 and "errornote" in html  # the form again, not saved
    assert NEEDS_5.replace("'", "&#x27;") in html
    campaign.refresh_from_db()
    assert not campaign.rating_open and campaign.description == ""
    assert not Item.objects.filter(campaign=campaign).exists()


def test_admin_checks_the_edited_values_target_absent_trials_need_one_identity_more(client, campaign):
    client.force_login(_organizer(campaign))
    # Exactly the lineup the rater page would fail to build (a 500 before):
    pool = identity_pool(campaign)
    with pytest.raises(design.FoilShortageError):
        design.build_lineup_relaxed(
            next(iter(pool)),
            pool,
            campaign.demographic_attributes,
            n_foils=2,
            target_present=False,
            rng=random.Random(0),
        )
    html = _post_change(client, campaign, rating_open=True, foils_per_trial=2).content.decode()
    assert ABSENT_NEEDS_4.replace("'", "&#x27;") in html
    campaign.refresh_from_db()
    assert not campaign.rating_open and campaign.foils_per_trial == 4

    page = _post_change(client, campaign, rating_open=True, foils_per_trial=2, target_absent_share=0)
    campaign.refresh_from_db()
    assert campaign.rating_open and campaign.foils_per_trial == 2
    # open_rating ran: one action item per evaluated video; no identity items, since each
    # group (2 men, 1 woman) is thinner than a 3-face lineup block (trials.design.exposure_plan).
    assert Item.objects.filter(campaign=campaign).count() == 3
    assert not Item.objects.filter(campaign=campaign, task="identity").exists()
    assert "Tiny: rating open (3 new items" in page.content.decode()
    _post_change(client, campaign, rating_open=False)
    campaign.refresh_from_db()
    assert not campaign.rating_open


def test_admin_action_opens_through_the_same_checks(client, campaign):
    client.force_login(_organizer(campaign))
    changelist = reverse("admin:evalsite_campaign_changelist")
    page = client.post(
        changelist, {"action": "open_rating_action", "_selected_action": [campaign.pk]}, follow=True
    )
    assert f"Rating stays closed: {NEEDS_5}".replace("'", "&#x27;") in page.content.decode()
    campaign.refresh_from_db()
    assert not campaign.rating_open
    Campaign.objects.filter(pk=campaign.pk).update(foils_per_trial=2, target_absent_share=0)
    client.post(changelist, {"action": "open_rating_action", "_selected_action": [campaign.pk]})
    assert Campaign.objects.get(pk=campaign.pk).rating_open


def test_a_campaign_that_opens_can_be_rated_to_the_end(client, campaign, settings):
    # A scripted rater answers without watching: the plausibility checks would exclude it.
    settings.TRIALS_PLAUSIBILITY_CHECKS = False
    # 1 foil: 2 faces per trial, 3 for a target-absent one: 3 identities are enough.
    Campaign.objects.filter(pk=campaign.pk).update(foils_per_trial=1, target_absent_share=0.5)
    campaign.refresh_from_db()
    staff = _organizer(campaign)
    client.force_login(staff)
    client.post(reverse("trials:organizer_rating", args=[campaign.pk]), {"open": "1"})
    campaign.refresh_from_db()
    assert campaign.rating_open
    rater = Client()
    rater.post(reverse("trials:join", args=[campaign.join_code]), {"participant_code": "P-END-1"})
    rater.post(reverse("trials:consent"), {"agree": "yes"})
    rater.post(reverse("trials:start"))
    for _ in range(40):
        page = rater.get(reverse("trials:session"))
        assert page.status_code == 200
        found = re.search(r"/t/([\w-]+)/respond/", page.content.decode())
        if found is None:
            break
        trial = Trial.objects.get(token=found.group(1))
        choice = "0" if trial.task == "identity" else campaign.action_vocabulary[0]
        answer = {"choice": choice, "response_time_ms": 900}
        stored = rater.post(found.group(0), json.dumps(answer), content_type="application/json")
        assert stored.status_code == 200, stored.content
    assert "completion code" in page.content.decode().lower()
    answered = Response.objects.filter(trial__session__campaign=campaign)
    assert answered.count() == Trial.objects.filter(session__campaign=campaign).count() >= 3


def test_api_opens_with_the_same_checks_and_queues_media_on_commit(
    campaign, django_capture_on_commit_callbacks
):
    staff = _organizer(campaign)
    api = APIClient()
    api.force_authenticate(staff)
    url = f"/api/campaigns/{campaign.pk}/rating/"
    refused = api.post(url, {"open": True}, format="json")
    assert refused.status_code == 400
    assert refused.json() == {"open": [{"message": NEEDS_5, "code": "cannot_open_rating"}]}
    assert not Campaign.objects.get(pk=campaign.pk).rating_open
    assert api.post(url, {"open": "maybe"}, format="json").status_code == 400

    Campaign.objects.filter(pk=campaign.pk).update(foils_per_trial=2)
    refused = api.post(url, {"open": True}, format="json")
    assert refused.json()["open"][0]["message"] == ABSENT_NEEDS_4

    Campaign.objects.filter(pk=campaign.pk).update(target_absent_share=0)
    with django_capture_on_commit_callbacks() as queued:
        opened = api.post(url, {"open": True}, format="json")
    assert opened.status_code == 200
    body = opened.json()
    assert body["rating_open"] is True and body["items_created"] == 3  # action only: thin groups
    assert len(queued) == 1  # media preparation, after the commit
    assert api.get(f"/api/campaigns/{campaign.pk}/").json()["rating_open"] is True
    assert api.post(url, {"open": False}, format="json").json() == {"rating_open": False}
    assert not Campaign.objects.get(pk=campaign.pk).rating_open

    stranger = APIClient()
    stranger.force_authenticate(User.objects.create_user("stranger", password="pw-123456", is_staff=True))
    assert stranger.post(url, {"open": True}, format="json").status_code == 404
    assert not Campaign.objects.get(pk=campaign.pk).rating_open


def test_organizer_page_refuses_with_the_same_message(client, campaign):
    client.force_login(_organizer(campaign))
    page = client.post(reverse("trials:organizer_rating", args=[campaign.pk]), {"open": "1"}, follow=True)
    assert NEEDS_5.replace("'", "&#x27;") in page.content.decode()
    assert not Campaign.objects.get(pk=campaign.pk).rating_open


def test_service_refuses_no_foils(campaign):
    campaign.foils_per_trial = 0
    with pytest.raises(CannotOpenRating, match="foils per identity trial must be at least 1, got 0"):
        open_rating(campaign, prepare_media=False)


NO_CONSENT = (
    "campaign 'Tiny' has no consent text: raters are asked to agree to it before their first trial; "
    "write it first (admin: the campaign's 'consent text' field, or consent_text in the dataset's "
    "campaign.json)"
)


def test_rating_refuses_to_open_without_a_consent_text_everywhere(client, campaign):
    # before: an empty consent text was only a warning, and rating opened
    Campaign.objects.filter(pk=campaign.pk).update(
        consent_text="  \n", foils_per_trial=2, target_absent_share=0
    )
    campaign.refresh_from_db()
    with pytest.raises(CannotOpenRating) as refused:
        open_rating(campaign, prepare_media=False)
    assert refused.value.problems == [NO_CONSENT]
    staff = _organizer(campaign)
    api = APIClient()
    api.force_authenticate(staff)
    answer = api.post(f"/api/campaigns/{campaign.pk}/rating/", {"open": True}, format="json")
    assert answer.status_code == 400
    assert answer.json() == {"open": [{"message": NO_CONSENT, "code": "cannot_open_rating"}]}
    client.force_login(staff)
    changelist = reverse("admin:evalsite_campaign_changelist")
    page = client.post(
        changelist, {"action": "open_rating_action", "_selected_action": [campaign.pk]}, follow=True
    )
    assert f"Rating stays closed: {NO_CONSENT}".replace("'", "&#x27;") in page.content.decode()
    page = client.post(reverse("trials:organizer_rating", args=[campaign.pk]), {"open": "1"}, follow=True)
    assert NO_CONSENT.replace("'", "&#x27;") in page.content.decode()
    with pytest.raises(CommandError, match=re.escape(f"rating stays closed:\n- {NO_CONSENT}")):
        call_command("rating", "--campaign", str(campaign.pk), "open", stdout=io.StringIO())
    # every problem at once: with the default 4 foils the lineups are short too
    campaign.foils_per_trial = 4
    with pytest.raises(CannotOpenRating) as refused:
        open_rating(campaign, prepare_media=False)
    assert refused.value.problems == [NO_CONSENT, NEEDS_5]
    assert not Campaign.objects.get(pk=campaign.pk).rating_open
    assert not Item.objects.filter(campaign=campaign).exists()
    Campaign.objects.filter(pk=campaign.pk).update(
        consent_text="You agree to watch short videos.", foils_per_trial=2
    )
    out = io.StringIO()
    call_command("rating", "--campaign", "tiny", "open", stdout=out)
    assert out.getvalue().startswith("Rating of Tiny is open (3 rating items created).\n")
    assert Campaign.objects.get(pk=campaign.pk).rating_open
    call_command("rating", "--campaign", "tiny", "close", stdout=io.StringIO())
    assert not Campaign.objects.get(pk=campaign.pk).rating_open


def test_campaign_page_says_not_opened_yet_before_rating_was_ever_opened(client, submission):
    # before: "0 / 0 (100%)" per condition and "no more raters needed"
    campaign = submission.campaign
    Campaign.objects.filter(pk=campaign.pk).update(foils_per_trial=2, target_absent_share=0)
    client.force_login(_organizer(campaign))
    page = client.get(reverse("trials:organizer_campaign", args=[campaign.pk])).content.decode()
    usable = re.search(r'<p id="usable">(.*?)</p>', page, re.S).group(1)
    needed = re.search(r'<p id="raters-needed">(.*?)</p>', page, re.S).group(1)
    assert re.sub(r"\s+", " ", usable) == (
        "Rating <strong>not opened yet</strong>: no responses are collected and no raters are counted until it opens."
    )
    assert needed == "Rating not opened yet: the raters needed are estimated once it opens."
    rollup = page[
        page.index('<table id="rollup">') : page.index("</table>", page.index('<table id="rollup">'))
    ]
    assert rollup.count("not opened yet") == 2  # clear videos, method-1
    assert "(100%)" not in rollup and "no more raters needed" not in page
    # once opened (and closed again), the figures come back
    open_rating(Campaign.objects.get(pk=campaign.pk), prepare_media=False)
    client.post(reverse("trials:organizer_rating", args=[campaign.pk]), {"open": "0"})
    page = client.get(reverse("trials:organizer_campaign", args=[campaign.pk])).content.decode()
    assert "not opened yet" not in page and "0 of 30 usable responses" in page
