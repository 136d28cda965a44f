"""Team names of one campaign give nothing of another (teams belong to one campaign).

Found by the hostile tests of issue 13, when teams were global and shared by name:

- organizer B created "Team Owl" in the admin with B's own account and a plain account as
  members; organizer A later registered Team Owl's submission in campaign A
  (``create_submission`` reused the team by name), and both accounts read A's per-video
  report, its CSV, frontier and A's published leaderboard on the team pages;
- B posted ``{"campaign": B, "team": "Team Alpha Secret"}`` to the API: B's admin page of
  that team then listed A's member usernames, and the admin's member picker listed every
  account (other campaigns' team members).

Now ``Team.campaign`` makes the same name in two campaigns two teams, and the member picker
offers only plain accounts already in teams of the organizer's campaigns.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from evalsite.importer import import_dataset
from evalsite.models import Campaign, LeaderboardVisibility, Team
from evalsite.services import create_submission
from evalsite.team_accounts import add_team_member


def _organizer(name: str) -> User:
    user = User.objects.create_user(name, password="pw-squat-123", is_staff=True)
    user.user_permissions.set(
        Permission.objects.exclude(content_type__app_label__in=["auth", "contenttypes", "sessions", "admin"])
    )
    return user


@pytest.fixture
def two(db, media_root, tiny_dataset):
    """Campaigns Alpha (organizer-a) and Beta (organizer-b)."""
    organizer_a, organizer_b = _organizer("organizer-a"), _organizer("organizer-b")
    alpha = import_dataset(tiny_dataset, "Alpha", organizers=[organizer_a], web_copies=False).campaign
    beta = import_dataset(tiny_dataset, "Beta", organizers=[organizer_b], web_copies=False).campaign
    return alpha, beta, organizer_a, organizer_b


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _team_urls(submission, campaign) -> list[str]:
    return [
        reverse("team:submission", args=[submission.pk]),
        reverse("team:submission_report", args=[submission.pk, "csv"]),
        reverse("team:submission_frontier", args=[submission.pk, "svg"]),
        reverse("team:leaderboard", args=[campaign.pk]),
        reverse("team:leaderboard_csv", args=[campaign.pk]),
    ]


def test_accounts_b_puts_into_a_same_named_team_see_nothing_of_a(two):
    alpha, beta, organizer_a, organizer_b = two
    b_admin = _client(organizer_b)
    # B's own (staff) account is not even offered as a member; a new plain account is created.
    refused = b_admin.post(
        reverse("admin:evalsite_team_add"),
        {"campaign": beta.pk, "name": "Team Owl", "members": [organizer_b.pk]},
    )
    assert refused.status_code == 200 and "is not one of the available choices" in refused.content.decode()
    added = b_admin.post(
        reverse("admin:evalsite_team_add"),
        {"campaign": beta.pk, "name": "Team Owl", "members": [], "new_members": "owl-member\n"},
        follow=True,
    )
    assert "New member account owl-member (password: " in added.content.decode()
    b_team = Team.objects.get(campaign=beta, name="Team Owl")
    assert list(b_team.members.values_list("username", flat=True)) == ["owl-member"]
    # A registers Team Owl's submission in Alpha: a team of Alpha, not B's team.
    submission = create_submission(alpha, "Team Owl", "owl-secret-method")
    assert (
        submission.team != b_team
        and submission.team.campaign == alpha
        and not submission.team.members.exists()
    )
    Campaign.objects.filter(pk=alpha.pk).update(leaderboard_visibility=LeaderboardVisibility.NAMED)
    urls = _team_urls(submission, alpha)
    for spy in (User.objects.get(username="owl-member"), organizer_b):
        client = _client(spy)
        assert "owl-secret-method" not in client.get(reverse("team:home")).content.decode()
        assert [client.get(url).status_code for url in urls] == [404] * len(urls)
    # Positive control: a member A adds to A's Team Owl reads them.
    a_member, _ = add_team_member(submission.team, "alpha-owl")
    client = _client(a_member)
    assert "owl-secret-method" in client.get(reverse("team:home")).content.decode()
    assert [client.get(url).status_code for url in urls] == [200] * len(urls)


def test_bs_api_post_with_as_team_name_makes_bs_own_team_and_shows_no_a_member(two):
    alpha, beta, organizer_a, organizer_b = two
    a_team = create_submission(alpha, "Team Alpha Secret", "alpha-method").team
    add_team_member(a_team, "alpha-secret-member")
    api = APIClient()
    api.force_authenticate(organizer_b)
    created = api.post(
        "/api/submissions/", {"campaign": beta.pk, "team": "Team Alpha Secret", "name": "beta-m"}
    )
    assert created.status_code == 201 and created.json()["team"] == "Team Alpha Secret"
    b_team = Team.objects.get(campaign=beta, name="Team Alpha Secret")
    assert b_team != a_team and not b_team.members.exists()
    assert list(a_team.submissions.values_list("name", flat=True)) == ["alpha-method"]
    page = _client(organizer_b).get(reverse("admin:evalsite_team_change", args=[b_team.pk])).content.decode()
    assert "Team Alpha Secret" in page and "alpha-secret-member" not in page
    # B cannot open A's team of that name at all.
    assert (
        _client(organizer_b).get(reverse("admin:evalsite_team_change", args=[a_team.pk])).status_code == 302
    )


def test_bs_admin_member_picker_lists_no_member_of_as_teams(two):
    alpha, beta, organizer_a, organizer_b = two
    add_team_member(create_submission(alpha, "Team Alpha", "a-method").team, "alpha-only-member")
    b_team = create_submission(beta, "Team Beta", "b-method").team
    add_team_member(b_team, "beta-member")
    User.objects.create_user("loose-account")  # in no team at all
    shared, _ = add_team_member(Team.objects.get(campaign=alpha, name="Team Alpha"), "in-both")
    b_team.members.add(shared)

    def options(user, url) -> set[str]:
        form = _client(user).get(url).context["adminform"].form
        return {u.username for u in form.fields["members"].queryset}

    for url in (reverse("admin:evalsite_team_add"), reverse("admin:evalsite_team_change", args=[b_team.pk])):
        assert options(organizer_b, url) == {"beta-member", "in-both"}
        page = _client(organizer_b).get(url).content.decode()
        assert "alpha-only-member" not in page and "loose-account" not in page and "organizer-a" not in page
    a_url = reverse("admin:evalsite_team_add")
    assert options(organizer_a, a_url) == {"alpha-only-member", "in-both"}
    # A new-account name that is taken is refused without adding anyone.
    taken = _client(organizer_b).post(
        reverse("admin:evalsite_team_add"),
        {"campaign": beta.pk, "name": "Team New", "members": [], "new_members": "alpha-only-member"},
    )
    assert "These login names are taken" in taken.content.decode()
    assert not Team.objects.filter(name="Team New").exists()
    # The campaign choices are B's own campaigns only.
    form = _client(organizer_b).get(reverse("admin:evalsite_team_add")).context["adminform"].form
    assert list(form.fields["campaign"].queryset) == [beta]


def test_a_submission_cannot_join_a_team_of_another_campaign(two):
    from evalsite.models import Submission

    alpha, beta, *_ = two
    a_team = create_submission(alpha, "Team Alpha", "a-method").team
    with pytest.raises(ValueError, match="belongs to campaign id"):
        Submission.objects.create(campaign=beta, team=a_team, name="sneaky")
    assert not Submission.objects.filter(name="sneaky").exists()


def test_a_team_of_no_campaign_is_for_superusers_and_names_repeat_only_across_campaigns(two):
    alpha, beta, organizer_a, organizer_b = two
    orphan = Team.objects.create(name="Team Orphan")  # as the migration leaves a team without submissions
    add_team_member(orphan, "orphan-member")
    for organizer in (organizer_a, organizer_b):
        client = _client(organizer)
        assert "Team Orphan" not in client.get(reverse("admin:evalsite_team_changelist")).content.decode()
        assert client.get(reverse("admin:evalsite_team_change", args=[orphan.pk])).status_code == 302
        form = client.get(reverse("admin:evalsite_team_add")).context["adminform"].form
        assert "orphan-member" not in {u.username for u in form.fields["members"].queryset}
    assert (
        _client(User.objects.get(username="orphan-member")).get(reverse("team:home")).context["campaigns"]
        == []
    )
    boss = _client(User.objects.create_superuser("boss", password="pw-boss-123"))
    url = reverse("admin:evalsite_team_change", args=[orphan.pk])
    member = User.objects.get(username="orphan-member")
    assert (
        boss.post(url, {"campaign": beta.pk, "name": "Team Orphan", "members": [member.pk]}).status_code
        == 302
    )
    orphan.refresh_from_db()
    assert orphan.campaign == beta and list(orphan.members.all()) == [member]
    # Once in a campaign the team stays there; a second team of the same name in it is refused.
    assert (
        boss.post(url, {"campaign": alpha.pk, "name": "Team Orphan", "members": [member.pk]}).status_code
        == 302
    )
    assert Team.objects.get(pk=orphan.pk).campaign == beta
    twin = boss.post(
        reverse("admin:evalsite_team_add"), {"campaign": beta.pk, "name": "Team Orphan", "members": []}
    )
    assert (
        twin.status_code == 200
        and "Team with this Campaign and Name already exists." in twin.content.decode()
    )
    assert (
        boss.post(
            reverse("admin:evalsite_team_add"), {"campaign": alpha.pk, "name": "Team Orphan", "members": []}
        ).status_code
        == 302
    )
    assert sorted(Team.objects.filter(name="Team Orphan").values_list("campaign__name", flat=True)) == [
        "Alpha",
        "Beta",
    ]


BEFORE = [("evalsite", "0008_sourcevideo_attacker_train")]
AFTER = [("evalsite", "0009_team_campaign")]


def test_the_migration_splits_a_team_entered_in_several_campaigns(transactional_db):
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        old = executor.loader.project_state(BEFORE).apps
        OldUser, OldCampaign = old.get_model("auth", "User"), old.get_model("evalsite", "Campaign")
        OldTeam, OldSubmission = old.get_model("evalsite", "Team"), old.get_model("evalsite", "Submission")
        c1 = OldCampaign.objects.create(name="One", slug="one")
        c2 = OldCampaign.objects.create(name="Two", slug="two")
        shared = OldTeam.objects.create(name="Team Shared")
        single = OldTeam.objects.create(name="Team Single")
        idle = OldTeam.objects.create(name="Team Idle")
        alice, bob = OldUser.objects.create(username="alice"), OldUser.objects.create(username="bob")
        shared.members.set([alice, bob])
        idle.members.set([bob])
        s1 = OldSubmission.objects.create(campaign=c1, team=shared, name="m1")
        s2 = OldSubmission.objects.create(campaign=c2, team=shared, name="m2")
        s3 = OldSubmission.objects.create(campaign=c2, team=shared, name="m3")
        s4 = OldSubmission.objects.create(campaign=c2, team=single, name="m4")

        executor.loader.build_graph()
        executor.migrate(AFTER)
        new = executor.loader.project_state(AFTER).apps
        Team, Submission = new.get_model("evalsite", "Team"), new.get_model("evalsite", "Submission")
        rows = sorted(
            (t.name, t.campaign_id, sorted(t.members.values_list("username", flat=True)))
            for t in Team.objects.all()
        )
        assert rows == sorted(
            [
                ("Team Shared", c1.pk, ["alice", "bob"]),  # the original row, earliest submission's campaign
                ("Team Shared", c2.pk, ["alice", "bob"]),  # the copy, members copied
                ("Team Single", c2.pk, []),
                ("Team Idle", None, ["bob"]),  # no submission: no campaign (superusers only)
            ]
        )
        assert Team.objects.get(name="Team Shared", campaign_id=c1.pk).pk == shared.pk
        copy = Team.objects.get(name="Team Shared", campaign_id=c2.pk)
        placed = {s.pk: (s.team_id, s.campaign_id) for s in Submission.objects.all()}
        assert placed == {
            s1.pk: (shared.pk, c1.pk),
            s2.pk: (copy.pk, c2.pk),
            s3.pk: (copy.pk, c2.pk),
            s4.pk: (single.pk, c2.pk),
        }
        # Going back is refused while a name is in two campaigns (the old names were unique).
        executor.loader.build_graph()
        with pytest.raises(RuntimeError, match="in several campaigns: Team Shared"):
            executor.migrate(BEFORE)
    finally:
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
