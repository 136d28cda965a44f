"""The organizer chooses which submissions humans rate, and a late submission can be added
while rating runs (issue 9): opening rating used to take every submission, incomplete
ones included, and a submission made later never got items."""

import json
from collections import Counter

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from evalsite.models import MaskedVideo, Submission, Team
from trials.models import Item, RatedSubmission
from trials.services import CannotOpenRating, open_rating, set_submission_rated


def _copy_submission(campaign, name, *, n_videos=None) -> Submission:
    """A second team's submission reusing the stored blurred files (``n_videos``: only the
    first n source videos, i.e. incomplete)."""
    team = Team.objects.create(campaign=campaign, name=f"team {name}")
    submission = Submission.objects.create(campaign=campaign, team=team, name=name)
    blurred = MaskedVideo.objects.filter(submission__campaign=campaign).order_by("source_video__name")
    for masked in list(blurred)[:n_videos]:
        if MaskedVideo.objects.filter(submission=submission, source_video=masked.source_video).exists():
            continue
        MaskedVideo.objects.create(
            submission=submission,
            source_video=masked.source_video,
            file=masked.file.name,
            web_file=masked.web_file.name,
        )
    return submission


def _organizer(campaign) -> Client:
    user = User.objects.create_user("org", password="pw-123456", is_staff=True)
    campaign.organizers.add(user)
    client = Client()
    client.force_login(user)
    return client


def test_first_opening_rates_complete_submissions_only(grid_campaign):
    blurred = grid_campaign.submissions.get()
    assert RatedSubmission.objects.get(submission=blurred).included  # complete: rated
    partial = _copy_submission(grid_campaign, "partial", n_videos=4)
    assert not partial.is_complete
    grid_campaign.rating_open = False
    grid_campaign.save(update_fields=["rating_open"])
    open_rating(grid_campaign, prepare_media=False)
    assert not RatedSubmission.objects.get(submission=partial).included  # incomplete: not rated
    assert not Item.objects.filter(masked_video__submission=partial).exists()
    # The organizer chooses: only the partial one this time; the blurred one's items stop.
    result = open_rating(grid_campaign, prepare_media=False, submissions=[partial.pk])
    # 4 masked videos x action + the 3 men's among them x identity (the 4 women's videos get
    # no identity items: too few for a women-only lineup block, trials.design.exposure_plan).
    assert result.items_created == 4 + 3
    evaluated = Item.objects.evaluated(grid_campaign)
    assert evaluated.filter(masked_video__submission=partial).count() == 7
    assert not evaluated.filter(masked_video__submission=blurred).exists()
    assert Item.objects.filter(masked_video__submission=blurred).count() == 16  # kept, not evaluated
    with pytest.raises(CannotOpenRating, match=r"has no submission\(s\) \[999999\]"):
        open_rating(grid_campaign, prepare_media=False, submissions=[999999])


def test_a_late_submission_is_added_on_the_organizer_page_and_gets_items(grid_campaign):
    assert grid_campaign.rating_open
    late = _copy_submission(grid_campaign, "late")
    assert late.is_complete and not Item.objects.filter(masked_video__submission=late).exists()
    client = _organizer(grid_campaign)
    page = client.get(f"/organizer/{grid_campaign.pk}/").content.decode()
    assert "Submissions rated by humans" in page and "not yet (new)" in page
    response = client.post(f"/organizer/{grid_campaign.pk}/submissions/{late.pk}/rated/", {"rated": "1"})
    assert response.status_code == 302
    assert Item.objects.evaluated(grid_campaign).filter(masked_video__submission=late).count() == 16
    assert "rated by humans (16 new items)" in client.get(f"/organizer/{grid_campaign.pk}/").content.decode()
    # Taking it out stops new trials of its items; adding it again creates nothing twice.
    client.post(f"/organizer/{grid_campaign.pk}/submissions/{late.pk}/rated/", {"rated": "0"})
    assert not Item.objects.evaluated(grid_campaign).filter(masked_video__submission=late).exists()
    assert set_submission_rated(late, True, prepare_media=False) == 0
    assert Item.objects.evaluated(grid_campaign).filter(masked_video__submission=late).count() == 16


def test_api_chooses_the_rated_submissions(grid_campaign):
    late = _copy_submission(grid_campaign, "late", n_videos=3)
    user = User.objects.create_user("api-org", password="pw-123456", is_staff=True)
    grid_campaign.organizers.add(user)
    api = APIClient()
    api.force_authenticate(user)
    url = f"/api/campaigns/{grid_campaign.pk}/rating/"
    reply = api.post(
        url, json.dumps({"open": True, "submissions": [late.pk]}), content_type="application/json"
    )
    # 3 masked videos x action + the 2 men's among them x identity (women: thin group).
    assert reply.status_code == 200 and reply.json()["items_created"] == 5
    assert Item.objects.evaluated(grid_campaign).filter(masked_video__submission=late).count() == 5
    assert (
        not Item.objects.evaluated(grid_campaign)
        .exclude(masked_video=None)
        .exclude(masked_video__submission=late)
        .exists()
    )
    bad = api.post(url, json.dumps({"open": True, "submissions": ["x"]}), content_type="application/json")
    assert bad.status_code == 400 and "submissions" in bad.json()


def test_checks_follow_a_submission_into_rating_and_out_of_it(
    grid_campaign, django_capture_on_commit_callbacks
):
    """Hostile pass h61: attention-check probes stand on clear clips and the masked copies of
    the submissions in rating, in the identity items' shares (``trials.media``). A
    submission entering rating got no probe (the draw moved, the probes were kept: a third
    of the identity trials, the new team's, were never a check), and one taken out kept its
    probes until rating opened again (11 of 40 checks on footage no evaluated trial showed).
    GRID's 6 men's probes, one block: clear and blurred 3 each; with a second submission,
    2 per condition; taken out again, none on it."""
    from evalsite.models import GalleryImage
    from trials import assignment
    from trials.models import GalleryCrop
    from trials.tasks import prepare_campaign_media

    plans, _ = assignment.identity_plans(grid_campaign)
    men = {identity for plan in plans.values() for identity in plan.block}

    def conditions() -> Counter:
        shown = GalleryCrop.objects.filter(
            gallery_image__identity__in=men, gallery_image__identity__campaign=grid_campaign
        ).exclude(catch_frames=None)
        submission_of = dict(MaskedVideo.objects.values_list("pk", "submission__name"))
        return Counter(submission_of.get(crop.catch_masked_pk, "clear") for crop in shown)

    prepare_campaign_media(grid_campaign.pk)
    assert GalleryImage.objects.filter(identity__in=men).count() == 6
    blurred = MaskedVideo.objects.filter(submission__campaign=grid_campaign).first().submission.name
    assert conditions() == Counter({"clear": 3, blurred: 3})
    second = _copy_submission(grid_campaign, "second")
    with django_capture_on_commit_callbacks(execute=True):
        set_submission_rated(second, True)
    assert conditions() == Counter({"clear": 2, blurred: 2, "second": 2})
    with django_capture_on_commit_callbacks(execute=True):
        set_submission_rated(second, False)
    assert conditions() == Counter({"clear": 3, blurred: 3})
    # Back in (its items kept, none created): the probes follow again (helper-57's review).
    with django_capture_on_commit_callbacks(execute=True):
        assert set_submission_rated(second, True) == 0
    assert conditions() == Counter({"clear": 2, blurred: 2, "second": 2})
