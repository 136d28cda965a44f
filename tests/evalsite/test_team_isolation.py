"""A team member sees nothing private of another team, on every URL the site has.

Built on ``test_isolation``'s world (campaign A with "Team Alpha Secret", campaign B with
"Team Beta") and its URL enumeration (every pattern of ``get_resolver()``, parameters
filled with A's ids and tokens), so team pages added later are covered without touching
this file. Campaign A also gets "Team Gamma" with its own upload; both campaigns publish
their leaderboard (A anonymised, B named) and let teams upload, the most a team can see.

- Beta's member (campaign B only) may see nothing of campaign A at all.
- Gamma's member (campaign A) legitimately sees A's name, identity codes and video names
  (in Gamma's own per-video report) but nothing of Team Alpha: its name and method (the
  leaderboard is anonymised), its upload, tokens, raters, reports.

Every GET and POST is made logged in (the session is renewed before each request, as a
POST to a logout URL ends it) and must change no row of campaign A. The positive
control: Alpha's own member sees Alpha's secrets on the team pages.
"""

from __future__ import annotations

import dataclasses

import pytest
from django.contrib import admin
from django.contrib.auth.models import User
from django.test import Client
from django.urls import get_resolver

from evalsite import reports
from evalsite.models import Campaign, LeaderboardVisibility, Submission, Team
from evalsite.services import create_submission
from evalsite.validation import ingest_submission_zip

from .conftest import make_zip
from .test_isolation import (  # noqa: F401
    ALPHA_CODES,
    ALPHA_VIDEOS,
    UNNAMED_ALLOWED,
    _leaks,
    _request,
    _urls_of,
    _walk,
    world,
)

TEAM_PAGES = {
    "team:home",
    "team:submission",
    "team:submission_report",
    "team:upload_detail",
    "team:upload_report",
    "team:leaderboard",
}


@pytest.fixture
def members(world, tmp_path, masked_files):
    """Members of Team Alpha Secret and Team Beta, and Team Gamma (campaign A) with its member."""
    gamma = create_submission(world.a, "Team Gamma", "method-gamma")
    archive = make_zip(tmp_path / "gamma.zip", {"alphaclipxb.mp4": masked_files["good_brbk7n"]})
    ingest_submission_zip(gamma, archive, original_name="gamma-upload.zip", web_copies=False)
    Campaign.objects.filter(pk=world.a.pk).update(
        leaderboard_visibility=LeaderboardVisibility.ANONYMISED, teams_may_upload=True
    )
    Campaign.objects.filter(pk=world.b.pk).update(
        leaderboard_visibility=LeaderboardVisibility.NAMED, teams_may_upload=True
    )
    # The report measures the clear videos' face quality once, on demand (fairness): done
    # here, so that the requests below would change nothing of campaign A.
    reports.submission_summary(gamma)
    accounts = {}
    for team, username in [
        ("Team Alpha Secret", "member-alpha"),
        ("Team Beta", "member-beta"),
        ("Team Gamma", "member-gamma"),
    ]:
        accounts[username] = User.objects.create_user(username, password="pw-member-123")
        Team.objects.get(name=team).members.add(accounts[username])
    return accounts


def _reachable(world):
    """(name, url, values used) for every URL pattern, filled with A's ids and tokens."""
    found = []
    for route, name, chain, entry in _walk(get_resolver()):
        if getattr(entry.callback, "__name__", "") in UNNAMED_ALLOWED and name is None:
            continue
        urls = _urls_of(route, name, chain, entry, world, admin.site)
        assert urls is not None, f"{route} ({name}): no URL could be built"
        found += [(name, url, used) for url, used in urls]
    return found


def _findings(viewer, world, reachable) -> list[str]:
    client, findings, before = Client(raise_request_exception=False), [], world.fingerprint()
    for name, url, used in reachable:
        for method in ("get", "post"):
            client.force_login(viewer)
            response = _request(client, method, url, {"open": "1", "excluded": "1", "post": "yes"})
            findings += [f"{method.upper()} {url}: {leak}" for leak in _leaks(response, world, known=used)]
    after = world.fingerprint()
    if after != before:
        changed = sorted(label for label in before if before[label] != after[label])
        findings.append(f"{viewer}'s requests changed rows of campaign A: {changed}")
    return findings


def test_a_member_of_a_team_of_another_campaign_sees_nothing_of_it_on_any_url(world, members):
    reachable = _reachable(world)
    assert TEAM_PAGES <= {name for name, _, _ in reachable}  # the team pages are enumerated
    assert _findings(members["member-beta"], world, reachable) == []


def test_a_member_of_another_team_of_the_same_campaign_sees_nothing_of_that_team(world, members):
    campaign_wide = {world.a.name, world.a.slug, *ALPHA_CODES.values(), *ALPHA_VIDEOS.values()}
    team_private = dataclasses.replace(world, secrets=world.secrets - campaign_wide)
    assert {
        "Team Alpha Secret",
        "method-alpha-secret",
        "method-alpha-secret-upload.zip",
    } <= team_private.secrets
    reachable = _reachable(world)
    assert _findings(members["member-gamma"], team_private, reachable) == []
    # Gamma's own pages answer (its member is not simply locked out of everything).
    client = Client()
    client.force_login(members["member-gamma"])
    home = client.get("/team/").content.decode()
    assert "method-gamma" in home and "Alpha Secret Campaign" in home
    leaderboard = client.get(f"/team/campaign/{world.a.pk}/leaderboard/")
    assert leaderboard.status_code == 200 and "Team Gamma" in leaderboard.content.decode()
    # The frontier figures (the enumeration fills their format with json/csv): Alpha's are 404,
    # Gamma's own SVG names no other team.
    alpha = Submission.objects.get(campaign=world.a, team__name="Team Alpha Secret")
    gamma = Submission.objects.get(campaign=world.a, team__name="Team Gamma")
    for fmt in ("png", "svg"):
        assert client.get(f"/team/submission/{alpha.pk}/frontier.{fmt}").status_code == 404
    own_svg = client.get(f"/team/submission/{gamma.pk}/frontier.svg")
    assert own_svg.status_code == 200 and _leaks(own_svg, team_private) == []


def test_positive_control_the_own_teams_member_sees_its_secrets_on_the_same_urls(world, members):
    client, shown = Client(), set()
    for name, url, used in _reachable(world):
        if name in TEAM_PAGES:
            client.force_login(members["member-alpha"])
            response = client.get(url)
            if response.status_code == 200 and _leaks(response, world, known=used):
                shown.add(name)
    assert shown == TEAM_PAGES
