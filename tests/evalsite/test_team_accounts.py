"""``manage.py add_team_member``: a team login that opens the team pages and nothing else."""

from __future__ import annotations

import io
import re

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client


def _run(*args) -> str:
    out = io.StringIO()
    call_command("add_team_member", "--campaign", "tiny", *args, stdout=out)
    return out.getvalue()


def test_a_new_member_gets_a_random_password_that_logs_in_at_the_team_page(submission):
    text = _run("Team A", "  new-member ")
    password = re.search(r"Password: (\S+) \(shown once", text).group(1)
    assert "new-member is a member of team Team A (tiny)." in text and len(password) == 16
    user = User.objects.get(username="new-member")
    assert not user.is_staff and not user.user_permissions.exists()
    assert list(user.teams.values_list("name", flat=True)) == ["Team A"]
    client = Client()
    response = client.post("/team/login/", {"username": "new-member", "password": password})
    assert response.status_code == 302 and response["Location"] == "/team/"
    assert "method-1" in client.get("/team/").content.decode()
    # Run again: the account keeps its password unless asked; with --new-password the old one stops working.
    assert "keeps its password" in _run("Team A", "new-member")
    assert User.objects.get(username="new-member").check_password(password)
    second = re.search(r"Password: (\S+)", _run("Team A", "new-member", "--new-password")).group(1)
    user.refresh_from_db()
    assert second != password and user.check_password(second) and not user.check_password(password)


def test_unknown_teams_and_staff_accounts_are_refused_and_nothing_changes(submission):
    User.objects.create_user("an-organizer", is_staff=True, password="organizer-pw-1")
    with pytest.raises(CommandError, match=r"no team named 'Team Z' in campaign 'tiny' \(teams: Team A\)"):
        _run("Team Z", "someone")
    with pytest.raises(CommandError, match="'an-organizer' is a staff account"):
        _run("Team A", "an-organizer", "--new-password")
    with pytest.raises(CommandError, match="the username must not be empty"):
        _run("Team A", "   ")
    assert not User.objects.filter(username="someone").exists()
    organizer = User.objects.get(username="an-organizer")
    assert organizer.check_password("organizer-pw-1") and not organizer.teams.exists()


def test_the_team_is_looked_up_in_the_named_campaign_only(submission):
    from evalsite.models import Campaign
    from evalsite.services import create_submission

    other = Campaign.objects.create(name="Other", slug="other")
    elsewhere = create_submission(other, "Team A", "method-elsewhere").team
    _run("Team A", "tiny-member")  # campaign tiny
    assert list(User.objects.get(username="tiny-member").teams.all()) == [submission.team]
    assert not elsewhere.members.exists() and submission.team != elsewhere
    with pytest.raises(CommandError, match=r"no team named 'Team B' in campaign 'other' \(teams: Team A\)"):
        call_command("add_team_member", "--campaign", str(other.pk), "Team B", "x", stdout=io.StringIO())
    with pytest.raises(CommandError, match="no campaign with id or slug 'nope'"):
        call_command("add_team_member", "--campaign", "nope", "Team A", "x", stdout=io.StringIO())
