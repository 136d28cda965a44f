"""Team names are shared across campaigns: an organizer who puts their own (staff) account
into a team of that name must not read another campaign's submission of the team.

Found by the hostile test of issue 13: organizer B created "Team Owl" in the admin (a team
without a submission is editable by every organizer) with B's account as a member;
organizer A later registered Team Owl's submission in campaign A (``create_submission``
reuses the team by name), and B's account read A's per-video report, its CSV and A's
published leaderboard on the team pages.
"""

from __future__ import annotations

from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse

from evalsite.importer import import_dataset
from evalsite.models import Campaign, LeaderboardVisibility, Team
from evalsite.services import create_submission


def _organizer(name: str) -> User:
    user = User.objects.create_user(name, password="pw-squat-123", is_staff=True)
    user.user_permissions.set(
        Permission.objects.exclude(content_type__app_label__in=["auth", "contenttypes", "sessions", "admin"])
    )
    return user


def test_an_organizer_in_a_squatted_team_name_sees_no_other_campaigns_submission_of_it(
    db, media_root, tiny_dataset
):
    organizer_a, organizer_b = _organizer("organizer-a"), _organizer("organizer-b")
    campaign_a = import_dataset(tiny_dataset, "Alpha", organizers=[organizer_a], web_copies=False).campaign
    import_dataset(tiny_dataset, "Beta", organizers=[organizer_b], web_copies=False)
    member = User.objects.create_user("owl-member", password="pw-owl-123")
    b_admin = Client()
    b_admin.force_login(organizer_b)
    added = b_admin.post(
        reverse("admin:evalsite_team_add"), {"name": "Team Owl", "members": [organizer_b.pk, member.pk]}
    )
    assert added.status_code == 302
    assert set(Team.objects.get(name="Team Owl").members.values_list("username", flat=True)) == {
        "organizer-b",
        "owl-member",
    }
    submission = create_submission(campaign_a, "Team Owl", "owl-secret-method")
    Campaign.objects.filter(pk=campaign_a.pk).update(leaderboard_visibility=LeaderboardVisibility.NAMED)
    urls = [
        reverse("team:submission", args=[submission.pk]),
        reverse("team:submission_report", args=[submission.pk, "csv"]),
        reverse("team:submission_frontier", args=[submission.pk, "svg"]),
        reverse("team:leaderboard", args=[campaign_a.pk]),
        reverse("team:leaderboard_csv", args=[campaign_a.pk]),
    ]
    spy = Client()
    spy.force_login(organizer_b)
    assert "owl-secret-method" not in spy.get(reverse("team:home")).content.decode()
    assert [spy.get(url).status_code for url in urls] == [404] * len(urls)
    # Positive control: a plain member account of the team reads them.
    plain = Client()
    plain.force_login(member)
    assert "owl-secret-method" in plain.get(reverse("team:home")).content.decode()
    assert [plain.get(url).status_code for url in urls] == [200] * len(urls)
