"""Issue 21: no page or download a reader gets names the project's files instead of saying things.

The data dictionary's downloads and every report, leaderboard and fairness page of a small
campaign (teams A and B and the blur_face baseline of ``test_leaderboard``) cite papers by
title and the platform's code by what it computes: no ``seeds/NNN_...txt`` file, no ``.py``
file and no dotted module path such as ``automated.attack.crossvideo``.
"""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from evalsite.models import Campaign, LeaderboardVisibility, SourceVideo

from .test_leaderboard import build_leaderboard_campaign

INTERNAL_NAMES = re.compile(
    r"seeds/\d{3}_"  # a source paper's file
    r"|\b\w+\.py\b"  # a source file
    r"|\b(?:automated|evalsite|trials)\.[a-z_]+"  # a module path (fairness.<key> also names a summary entry)
    r"|\bfairness\.[a-z_]+\.[a-z_]+"
    r"|\bissue \d+"  # the tracker's issue numbers
)
# What a reader gets of a page: its text and attributes (tooltips), not its style sheet or comments.
UNREAD = re.compile(r"<style\b.*?</style>|<script\b.*?</script>|<!--.*?-->", re.DOTALL)


@pytest.fixture
def pages(campaign, settings):
    settings.TRIALS_OUTLIER_ALPHA = 1e-12  # scripted raters (as test_leaderboard's board)
    organizer, submissions = build_leaderboard_campaign(campaign)
    Campaign.objects.filter(pk=campaign.pk).update(leaderboard_visibility=LeaderboardVisibility.NAMED)
    member = User.objects.create_user("aurora-member", password="pw-aurora-123")
    submissions["A"].team.members.add(member)
    staff, team = Client(), Client()
    staff.force_login(organizer)
    team.force_login(member)
    urls = {
        "dictionary csv": (staff, "/api/dictionary/?format=csv"),
        "dictionary json": (staff, "/api/dictionary/?format=json"),
        "organizer leaderboard": (staff, reverse("leaderboard:page", args=[campaign.pk])),
        "leaderboard api": (staff, reverse("campaign-leaderboard", args=[campaign.pk])),
        "team leaderboard": (team, reverse("team:leaderboard", args=[campaign.pk])),
        "team report page": (team, reverse("team:submission_report_page", args=[submissions["A"].pk])),
        "team submission page": (team, reverse("team:submission", args=[submissions["A"].pk])),
        "fairness quality": (staff, reverse("fairness:quality", args=[campaign.pk])),
    }
    for key, submission in submissions.items():
        urls[f"organizer report {key}"] = (staff, reverse("leaderboard:report", args=[submission.pk]))
        urls[f"fairness {key}"] = (staff, reverse("fairness:submission", args=[submission.pk]))
    return urls


def test_no_download_or_page_names_a_source_file_or_module(pages):
    found = {}
    for name, (client, url) in pages.items():
        response = client.get(url)
        assert response.status_code == 200, (name, response.status_code)
        text = UNREAD.sub("", response.content.decode())
        found[name] = sorted({m.group() for m in INTERNAL_NAMES.finditer(text)})
    assert found == {name: [] for name in pages}
    # ... and says instead what they are: a paper's title, what the code computes.
    words = pages["dictionary csv"][0].get(pages["dictionary csv"][1]).content.decode()
    assert "A False Sense of Privacy" in words and "the platform's re-identification attacks" in words
    # The admin's help beside a source video's "in evaluated subset" box too.
    help_text = SourceVideo._meta.get_field("in_evaluated_subset").help_text
    assert not INTERNAL_NAMES.search(help_text) and "MediaEval 2021" in help_text
