"""``manage.py add_organizer``: a staff login that sees and runs its own campaign only."""

import io
import re

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from evalsite.models import Campaign
from evalsite.organizer_accounts import organizer_permissions


def _run(*args) -> str:
    out = io.StringIO()
    call_command("add_organizer", *args, stdout=out)
    return out.getvalue()


def test_a_new_organizer_logs_in_and_sees_their_campaign_and_not_another(db):
    # before: no way but a superuser; a bare staff user got an empty admin
    ours = Campaign.objects.create(name="Our Campaign", slug="ours")
    theirs = Campaign.objects.create(name="Their Campaign", slug="theirs")
    text = _run("--campaign", str(ours.pk), " alice ")
    assert "alice organizes campaign Our Campaign (ours)." in text
    password = re.search(r"Password: (\S+) \(shown once", text).group(1)
    user = User.objects.get(username="alice")
    assert user.is_staff and not user.is_superuser
    assert set(user.user_permissions.all()) == set(organizer_permissions())
    assert not user.user_permissions.filter(content_type__app_label="auth").exists()
    assert list(ours.organizers.all()) == [user] and not theirs.organizers.exists()

    client = Client()
    login = client.post(
        reverse("admin:login"), {"username": "alice", "password": password, "next": "/admin/"}
    )
    assert login.status_code == 302 and login["Location"] == "/admin/"
    changelist = client.get(reverse("admin:evalsite_campaign_changelist")).content.decode()
    assert "Our Campaign" in changelist and "Their Campaign" not in changelist
    assert client.get(reverse("admin:evalsite_campaign_change", args=[ours.pk])).status_code == 200
    assert client.get(reverse("admin:evalsite_campaign_change", args=[theirs.pk])).status_code == 302
    organizer_list = client.get(reverse("trials:organizer")).content.decode()
    assert "Our Campaign" in organizer_list and "Their Campaign" not in organizer_list
    assert client.get(reverse("trials:organizer_campaign", args=[ours.pk])).status_code == 200
    assert client.get(reverse("trials:organizer_campaign", args=[theirs.pk])).status_code == 404
    assert [c["slug"] for c in client.get("/api/campaigns/").json()] == ["ours"]
    assert client.get(reverse("admin:auth_user_changelist")).status_code == 403  # no account admin


def test_a_second_campaign_keeps_the_password_and_participants_are_refused(submission):
    other = Campaign.objects.create(name="Second", slug="second")
    first = re.search(r"Password: (\S+)", _run("--campaign", "tiny", "bob")).group(1)
    assert "keeps its password" in _run("--campaign", "second", "bob")
    bob = User.objects.get(username="bob")
    assert bob.check_password(first) and set(bob.campaigns.all()) == {submission.campaign, other}
    call_command("add_team_member", "--campaign", "tiny", "Team A", "member", stdout=io.StringIO())
    with pytest.raises(CommandError, match="'member' is a team member's account"):
        _run("--campaign", "tiny", "member")
    assert not User.objects.get(username="member").is_staff
    with pytest.raises(CommandError, match="no campaign with id or slug 'nope'"):
        _run("--campaign", "nope", "carol")
    assert not User.objects.filter(username="carol").exists()
