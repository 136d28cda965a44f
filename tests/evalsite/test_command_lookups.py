"""Every command names a campaign the same way (id or slug), a team the same way (ignoring
case, with a warning), and overwrites files by one rule (``--force``, unless unchanged)."""

import io

import pytest
from django.core.management import call_command, get_commands, load_command_class
from django.core.management.base import CommandError

from evalsite.models import Submission, Team

OUR_APPS = ("evalsite", "evalsite.portal", "automated.django_app", "fairness.django_app", "trials")

#: Every command that takes an existing campaign, with the other arguments it needs
#: (``CAMPAIGN`` stands for the campaign's id or slug).
CAMPAIGN_COMMANDS = {
    "create_submission": ["--campaign", "CAMPAIGN", "--team", "T", "--name", "m"],
    "export_summary": ["--campaign", "CAMPAIGN"],
    "compute_face_quality": ["--campaign", "CAMPAIGN"],
    "make_baseline": ["CAMPAIGN", "--all"],
    "add_team_member": ["--campaign", "CAMPAIGN", "Team A", "someone"],
    "add_organizer": ["--campaign", "CAMPAIGN", "someone"],
    "rating": ["--campaign", "CAMPAIGN", "open"],
    "list_submissions": ["--campaign", "CAMPAIGN"],
    "export_package": ["--campaign", "CAMPAIGN", "--output", "unused.zip"],
    "rerun_campaign": ["--campaign", "CAMPAIGN"],
    "add_practice_faces": ["--campaign", "CAMPAIGN"],
}
#: ``import_dataset --campaign NAME`` names the campaign it creates.
NEW_CAMPAIGN_COMMANDS = {"import_dataset"}


def _call(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def _takes_a_campaign(name: str, app: str) -> bool:
    parser = load_command_class(app, name).create_parser("manage.py", name)
    return any("campaign" in action.dest for action in parser._actions)


def test_the_table_lists_every_command_that_takes_a_campaign():
    ours = {name: app for name, app in get_commands().items() if app in OUR_APPS}
    taking = {name for name, app in ours.items() if _takes_a_campaign(name, app)}
    assert taking - NEW_CAMPAIGN_COMMANDS == set(CAMPAIGN_COMMANDS)


@pytest.mark.django_db
@pytest.mark.parametrize("name", sorted(CAMPAIGN_COMMANDS))
def test_every_command_looks_campaigns_up_by_id_or_slug(name):
    # before: create_submission, export_summary, compute_face_quality and make_baseline took a
    # slug only ("no campaign with slug '2'" for the id list_campaigns prints)
    args = [a if a != "CAMPAIGN" else "999999" for a in CAMPAIGN_COMMANDS[name]]
    with pytest.raises(
        CommandError, match=r"^no campaign with id or slug '999999' \(manage.py list_campaigns"
    ):
        _call(name, *args)


def test_a_slug_of_digits_is_refused_and_a_stored_one_is_never_hidden(campaign, tiny_dataset):
    # before: a campaign whose slug was another campaign's id could not be named by any command
    from django.core.exceptions import ValidationError

    from evalsite.importer import DatasetError, import_dataset
    from evalsite.management.campaigns import find_campaign
    from evalsite.models import Campaign

    with pytest.raises(DatasetError) as refused:
        import_dataset(tiny_dataset, "2021", web_copies=False)
    assert refused.value.problems == [
        "campaign name '2021': its slug '2021' would be made only of digits, which the commands "
        "read as a campaign id; add a letter to the name"
    ]
    legacy = Campaign.objects.create(name="Legacy", slug=str(campaign.pk))  # stored before the rule
    with pytest.raises(ValidationError) as invalid:
        legacy.full_clean()  # the admin's form
    assert invalid.value.message_dict["slug"] == [
        f"slug '{campaign.pk}' is made only of digits, which the commands read as a campaign id: "
        f"add a letter, e.g. 'campaign-{campaign.pk}'"
    ]
    with pytest.raises(CommandError) as ambiguous:
        _call("export_summary", "--campaign", str(campaign.pk))
    assert str(ambiguous.value) == (
        f"'{campaign.pk}' is the id of campaign 'Tiny' and the slug of campaign 'Legacy': take 'Tiny' "
        f"by its slug 'tiny' or 'Legacy' by its id {legacy.pk}, and give 'Legacy' a slug with a letter (admin)"
    )
    assert find_campaign("tiny") == campaign and find_campaign(str(legacy.pk)) == legacy
    lone = Campaign.objects.create(name="Lone", slug="424242")  # no campaign has that id
    assert find_campaign("424242") == lone


def test_commands_take_the_campaign_id_that_list_campaigns_prints(submission, tmp_path):
    campaign = submission.campaign
    assert str(campaign.pk) in _call("list_campaigns")
    out = _call("create_submission", "--campaign", str(campaign.pk), "--team", "Team B", "--name", "m2")
    assert Submission.objects.get(name="m2").campaign == campaign and "Created submission" in out
    assert "Team A,method-1" in _call("export_summary", "--campaign", str(campaign.pk)).replace('"', "")
    assert _call("export_summary", "--campaign", campaign.slug) == _call(
        "export_summary", "--campaign", str(campaign.pk)
    )


def test_a_team_name_in_other_case_finds_the_team_and_warns(submission):
    # before: --team "team a" silently made a second team beside "Team A"
    out = _call("create_submission", "--campaign", "tiny", "--team", "team a ", "--name", "m2")
    assert (
        "Warning: team 'team a ' taken as the existing team 'Team A' (names are matched ignoring case)" in out
    )
    assert list(Team.objects.values_list("name", flat=True)) == ["Team A"]
    assert Submission.objects.get(name="m2").team == submission.team
    exact = _call("create_submission", "--campaign", "tiny", "--team", "Team A", "--name", "m3")
    assert "Warning" not in exact
    with pytest.raises(CommandError, match="team 'Team A' already has a submission 'm3'"):
        _call("create_submission", "--campaign", "tiny", "--team", "TEAM A", "--name", "m3")
    joined = _call("add_team_member", "--campaign", "tiny", "TEAM a", "member-1")
    assert "taken as the existing team 'Team A'" in joined
    assert list(submission.team.members.values_list("username", flat=True)) == ["member-1"]


def test_the_api_returns_the_team_name_warning_the_commands_print(submission):
    # before: POST /api/submissions/ with "team a" used "Team A" without a word
    from django.contrib.auth.models import User
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(User.objects.create_superuser("root", "r@example.org", "pw"))
    campaign = submission.campaign.pk
    created = client.post("/api/submissions/", {"campaign": campaign, "team": "team a", "name": "m2"})
    assert created.status_code == 201 and created.json()["team"] == "Team A"
    assert created.json()["warnings"] == [
        "team 'team a' taken as the existing team 'Team A' (names are matched ignoring case)"
    ]
    assert Submission.objects.get(pk=created.json()["id"]).team == submission.team
    exact = client.post("/api/submissions/", {"campaign": campaign, "team": "Team A", "name": "m3"})
    assert exact.status_code == 201 and exact.json()["warnings"] == []
    new = client.post("/api/submissions/", {"campaign": campaign, "team": "Team C", "name": "m4"})
    assert new.json()["warnings"] == [] and list(Team.objects.values_list("name", flat=True)) == [
        "Team A",
        "Team C",
    ]


def test_an_exact_match_wins_over_teams_that_differ_only_in_case(submission):
    from evalsite.models import find_team

    older = Team.objects.create(campaign=submission.campaign, name="TEAM A")  # made before the rule
    assert find_team(submission.campaign, "TEAM A") == older
    assert find_team(submission.campaign, " Team A") == submission.team
    assert find_team(submission.campaign, "team a") == min(older, submission.team, key=lambda t: t.pk)
    assert find_team(submission.campaign, "Team Z") is None


def test_reports_of_two_submissions_share_one_folder_and_its_dictionary(submission, tmp_path):
    # before: the second export_report refused because of the first one's dictionary.csv
    from evalsite.services import create_submission

    second = create_submission(submission.campaign, "Team B", "method-2")
    out_dir = tmp_path / "reports"
    first_out = _call("export_report", str(submission.pk), "--output", str(out_dir / "a.csv"))
    out = _call("export_report", str(second.pk), "--output", str(out_dir / "b.csv"))
    assert f"Wrote {out_dir / 'dictionary.csv'} (what every column means)" in first_out
    assert out.splitlines() == [
        f"Wrote {out_dir / 'b.csv'}",
        f"Kept {out_dir / 'dictionary.csv'} (already up to date)",
    ]
    assert sorted(p.name for p in out_dir.iterdir()) == ["a.csv", "b.csv", "dictionary.csv"]


def test_export_dictionary_follows_the_same_overwrite_rule(tmp_path):
    # before: export_dictionary replaced any file without a word
    target = tmp_path / "d.json"
    assert _call("export_dictionary", "--output", str(target)) == f"Wrote {target}\n"
    assert target.read_text().startswith("[")  # the format follows the suffix
    assert _call("export_dictionary", "--output", str(target)) == f"Kept {target} (already up to date)\n"
    target.write_text("my notes\n")
    with pytest.raises(CommandError, match=f"^{target} already exists; pass --force to overwrite"):
        _call("export_dictionary", "--output", str(target))
    assert target.read_text() == "my notes\n"
    assert _call("export_dictionary", "--output", str(target), "--force") == f"Wrote {target}\n"
    assert target.read_text().startswith("[")


@pytest.mark.django_db
def test_export_package_refuses_an_existing_zip_without_force(tmp_path):
    from evalsite.models import Campaign

    Campaign.objects.create(name="Empty", slug="empty")
    target = tmp_path / "package.zip"
    target.write_bytes(b"an older package")
    with pytest.raises(CommandError, match=f"^{target} already exists; pass --force to overwrite"):
        _call("export_package", "--campaign", "empty", "--output", str(target))
    assert target.read_bytes() == b"an older package"
