"""``manage.py list_campaigns`` and ``list_submissions``: ids, counts and states as stored."""

from __future__ import annotations

import csv
import io

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError

from automated.django_app.attack_models import AttackRun
from automated.django_app.face_models import AutomatedRun
from evalsite.importer import import_dataset
from evalsite.services import create_submission
from evalsite.validation import ingest_submission_zip
from trials.services import open_rating

from .conftest import make_zip


def _run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def _csv(*args) -> list[dict]:
    return list(csv.DictReader(io.StringIO(_run(*args, "--format", "csv"))))


@pytest.fixture
def two_campaigns(campaign, tiny_dataset, masked_files, tmp_path):
    """'Tiny' (3 identities, 3 videos; organizers ann and ben; two teams, rating open) and
    'Empty Too' (same dataset, no organizer, no submission)."""
    ann, ben = User.objects.create_user("ann", is_staff=True), User.objects.create_user("ben", is_staff=True)
    campaign.organizers.add(ben, ann)
    first = create_submission(campaign, "Team A", "method-1")
    second = create_submission(campaign, "Team B", "method-2")
    archive = make_zip(
        tmp_path / "two.zip",
        {"bbaf2n.mp4": masked_files["good_bbaf2n"], "brbk7n.mp4": masked_files["good_brbk7n"]},
    )
    ingest_submission_zip(first, archive, web_copies=False)
    bad = make_zip(tmp_path / "bad.zip", {"bbaf2n.mp4": masked_files["short"]})
    ingest_submission_zip(second, bad, web_copies=False)
    AutomatedRun.objects.create(submission=first, status="completed", videos_total=2, videos_done=2)
    AutomatedRun.objects.create(submission=first, status="running", videos_total=2, videos_done=1)
    AttackRun.objects.create(submission=first, status="failed", videos_total=2, videos_done=0)
    campaign.foils_per_trial, campaign.target_absent_share = 2, 0  # 3 identities: lineups of 3
    campaign.save()
    open_rating(campaign, prepare_media=False)
    other = import_dataset(tiny_dataset, "Empty Too", web_copies=False).campaign
    return campaign, other, first, second


def test_list_campaigns_gives_ids_organizers_counts_and_rating_state(two_campaigns):
    campaign, other, *_ = two_campaigns
    assert _csv("list_campaigns") == [
        {
            "id": str(campaign.pk),
            "name": "Tiny",
            "slug": campaign.slug,
            "organizers": "ann, ben",
            "identities": "3",
            "source_videos": "3",
            "submissions": "2",
            "teams": "2",
            "rating_open": "yes",
        },
        {
            "id": str(other.pk),
            "name": "Empty Too",
            "slug": other.slug,
            "organizers": "-",
            "identities": "3",
            "source_videos": "3",
            "submissions": "0",
            "teams": "0",
            "rating_open": "no",
        },
    ]
    table = _run("list_campaigns").splitlines()
    assert table[0].split() == [
        "id",
        "name",
        "slug",
        "organizers",
        "identities",
        "source_videos",
        "submissions",
        "teams",
        "rating_open",
    ]
    assert table[1].split() == [
        str(campaign.pk),
        "Tiny",
        campaign.slug,
        "ann,",
        "ben",
        "3",
        "3",
        "2",
        "2",
        "yes",
    ]
    assert len(table) == 3


def test_list_submissions_gives_valid_videos_uploads_and_the_latest_run_of_each_kind(two_campaigns):
    campaign, other, first, second = two_campaigns
    rows = _csv("list_submissions", "--campaign", str(campaign.pk))
    keys = ["id", "campaign", "team", "name", "baseline", "videos", "upload", "face", "attack"]
    assert list(rows[0])[: len(keys)] == keys
    assert [[row[k] for k in keys] for row in rows] == [
        # the latest run of each kind, not the latest completed one
        [
            str(first.pk),
            str(campaign.pk),
            "Team A",
            "method-1",
            "-",
            "2/3",
            "done",
            "running 1/2",
            "failed 0/2",
        ],
        # its only file was rejected (70 of 75 frames): no valid video, the upload failed (nothing_accepted)
        [str(second.pk), str(campaign.pk), "Team B", "method-2", "-", "0/3", "failed", "-", "-"],
    ]
    assert all(row[k] == "-" for row in rows for k in list(row)[len(keys) :])  # other kinds: never run
    assert _csv("list_submissions", "--campaign", campaign.slug) == rows  # a slug works too
    assert _csv("list_submissions") == rows  # 'Empty Too' has none
    table = _run("list_submissions").splitlines()
    assert table[0].split()[: len(keys)] == keys and len(table) == 3
    assert table[1].split()[:8] == [
        str(first.pk),
        str(campaign.pk),
        "Team",
        "A",
        "method-1",
        "-",
        "2/3",
        "done",
    ]
    assert _run("list_submissions", "--campaign", str(other.pk)).strip() == "No submissions in this campaign."
    with pytest.raises(
        CommandError, match=r"no campaign with id or slug '999999' \(manage.py list_campaigns"
    ):
        _run("list_submissions", "--campaign", "999999")


def test_list_submissions_shows_a_completed_run_as_stale_once_its_videos_are_replaced(
    two_campaigns, masked_files, tmp_path
):
    campaign, _, first, _ = two_campaigns
    planned = list(first.masked_videos.values_list("pk", flat=True))
    AttackRun.objects.create(
        submission=first, status="completed", videos_total=2, videos_done=2, planned_videos=planned
    )

    def attack_column() -> str:
        return _csv("list_submissions", "--campaign", campaign.slug)[0]["attack"]

    assert attack_column() == "completed 2/2"
    for name, expected in (("bbaf2n", "1 video"), ("brbk7n", "2 videos")):
        # the other clip's file (same size and length): the very same bytes would be identical_to_current
        other = "good_brbk7n" if name == "bbaf2n" else "good_bbaf2n"
        archive = make_zip(tmp_path / f"{name}.zip", {f"{name}.mp4": masked_files[other]})
        assert ingest_submission_zip(first, archive, replace=True, web_copies=False).accepted
        # before: still "completed 2/2", as if the scores described the current files
        assert attack_column() == f"completed 2/2, stale: {expected} replaced since"
    assert _csv("list_submissions")[0]["face"] == "running 1/2"  # only completed runs report results
    assert "completed 2/2, stale: 2 videos replaced since" in _run("list_submissions")


def test_every_argument_of_every_evalsite_command_has_a_help_text():
    from importlib import import_module
    from pathlib import Path

    import evalsite.management.commands as catalogue
    import evalsite.portal.management.commands as portal

    modules = {
        p.stem: f"{package.__name__}.{p.stem}"
        for package in (catalogue, portal)  # the catalogue's commands and those combining apps
        for p in Path(package.__file__).parent.glob("*.py")
        if p.stem != "__init__"
    }
    names = sorted(modules)
    assert {"demo", "list_campaigns", "list_submissions", "export_report", "upload_submission"} <= set(names)
    missing = []
    for name in names:
        command = import_module(modules[name]).Command()
        parser = command.create_parser("manage.py", name)
        missing += [f"{name} {a.dest}" for a in parser._actions if not (a.help and a.help.strip())]
        assert command.help, name
    assert missing == []


@pytest.mark.parametrize("command", ["list_campaigns", "list_submissions"])
def test_on_an_unmigrated_database_the_list_commands_say_to_migrate(command, tmp_path):
    """A fresh database: the command names the fix instead of failing with 'no such table'."""
    import subprocess
    import sys
    from pathlib import Path

    from tests.ops.servers import base_env

    root = Path(__file__).resolve().parents[2]
    env = base_env(DATABASE_URL=f"sqlite:///{tmp_path / 'fresh.sqlite3'}", DEID_VAR_DIR=str(tmp_path))
    proc = subprocess.run(
        [sys.executable, str(root / "manage.py"), command], cwd=root, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "is not migrated" in proc.stderr and "run `manage.py migrate` first" in proc.stderr, proc.stderr
    assert "no such table" not in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.django_db
def test_list_csv_output_is_formula_safe_and_keeps_its_placeholder():
    # before: list_campaigns/list_submissions --format csv wrote '=HYPERLINK(...)' names raw
    # (a live formula in a spreadsheet); the '-' placeholder stays readable, the table raw
    from evalsite.models import Campaign

    evil = '=HYPERLINK("http://x","y")'
    campaign = Campaign.objects.create(name=evil, slug="evil")
    submission = create_submission(campaign, "@team", "+method")
    assert _csv("list_campaigns") == [
        {
            "id": str(campaign.pk),
            "name": "'" + evil,
            "slug": "evil",
            "organizers": "-",
            "identities": "0",
            "source_videos": "0",
            "submissions": "1",
            "teams": "1",
            "rating_open": "no",
        }
    ]
    assert _csv("list_submissions", "--campaign", "evil") == [
        {
            "id": str(submission.pk),
            "campaign": str(campaign.pk),
            "team": "'@team",
            "name": "'+method",
            "baseline": "-",
            "videos": "0/0",
            "upload": "-",
            "face": "-",
            "attack": "-",
        }
    ]
    assert evil in _run("list_campaigns")  # the aligned table is for reading in a terminal
    from evalsite.spreadsheet import spreadsheet_safe

    assert spreadsheet_safe("-") == "-" and spreadsheet_safe("--") == "'--"  # only the lone placeholder
