"""The results package (evalsite/portal/package.py, ``manage.py export_package``; issue 23).

The leaderboard test's hand-made campaign (teams Aurora and Borealis, the blur_face
baseline, 5 raters with participant codes and crowd IDs): the zip's MANIFEST must verify,
its human responses must hold every response under pseudonyms only, and a team's package
only its own runs.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import zipfile

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from evalsite.models import Submission, Team
from evalsite.portal import leaderboard
from evalsite.portal.package import package_files
from trials.models import Rater, Response

from .test_leaderboard import build_leaderboard_campaign

CROWD_IDS = [f"PROLIFIC_PID:5f3a9c{index}e7d0b1a2" for index in range(5)]


@pytest.fixture
def board(campaign):
    organizer, submissions = build_leaderboard_campaign(campaign)
    for rater, crowd_id in zip(
        Rater.objects.filter(campaign=campaign).order_by("pk"), CROWD_IDS, strict=True
    ):
        rater.platform_id, rater.platform_params = crowd_id, {"PROLIFIC_PID": crowd_id.split(":")[1]}
        rater.save()
    return campaign, organizer, submissions


def _members(path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {name.split("/", 1)[1]: archive.read(name) for name in archive.namelist()}


def _verify_manifest(files: dict[str, bytes]) -> None:
    lines = files["MANIFEST.sha256"].decode().splitlines()
    listed = dict(reversed(line.split("  ", 1)) for line in lines)
    assert set(listed) == set(files) - {"MANIFEST.sha256"}
    for name, digest in listed.items():
        assert hashlib.sha256(files[name]).hexdigest() == digest, name


def test_the_campaign_package_verifies_and_holds_no_participant_code_or_crowd_id(board, tmp_path):
    campaign, _, submissions = board
    output = tmp_path / "package.zip"
    call_command("export_package", campaign=campaign.slug, output=str(output), stdout=io.StringIO())
    files = _members(output)
    _verify_manifest(files)
    labels = {
        key: f"{'team-aurora' if key == 'A' else 'team-borealis' if key == 'B' else 'baselines'}-"
        for key in submissions
    }
    runs = list(csv.DictReader(io.StringIO(files["runs.csv"].decode())))
    assert sorted(r["name"] for r in runs) == ["blur_face", "method-a", "method-b"]
    for key, run in submissions.items():
        folder = next(r["run"] for r in runs if r["name"] == run.name)
        assert folder.startswith(labels[key])
        per_video = list(csv.DictReader(io.StringIO(files[f"runs/{folder}/per_video.csv"].decode())))
        assert [row["video"] for row in per_video] == ["bbaf2n", "brbk7n", "id2_vcd_swwp2s"]
        assert "identity" not in per_video[0]  # the teams' form: no identity codes
        config = json.loads(files[f"runs/{folder}/configuration.json"])
        assert config["face_evaluation_runs"][0]["config"] == {"stride": 5, "behaviour": True}
        assert config["attack_runs"][0]["config"]["recognizers"] == ["lbph"]
    # The leaderboard and comparisons as the organizer's page computes them.
    expected = leaderboard.as_csv(leaderboard.leaderboard_frame(campaign)).encode()
    assert files["leaderboard.csv"] == expected
    assert "comparisons/human_masking_success.csv" in files and files["plots/frontier.svg"].startswith(
        b"<?xml"
    )
    # Human responses: every one, raters as pseudonyms in join order.
    responses = list(csv.DictReader(io.StringIO(files["human_responses.csv"].decode())))
    assert len(responses) == Response.objects.filter(trial__item__campaign=campaign).count()
    assert sorted({r["rater"] for r in responses}) == [f"rater-{i:03d}" for i in range(1, 6)]
    assert {r["excluded"] for r in responses if r["rater"] == "rater-005"} == {"True"}
    blob = b"\n".join(files.values())
    for rater in Rater.objects.filter(campaign=campaign):
        assert rater.participant_code.encode() not in blob
        assert rater.platform_id.split(":")[1].encode() not in blob
    provenance = json.loads(files["provenance.json"])
    assert provenance["code_version"].startswith(("git ", "deid-eval "))
    dlib = [
        m for m in provenance["models"] if m["file"].endswith("dlib_face_recognition_resnet_model_v1.dat")
    ]
    assert len(dlib) == 1 and len(dlib[0]["sha256"]) == 64 and dlib[0]["bytes"] == 22466066
    checksums = list(csv.DictReader(io.StringIO(files["data_checksums.csv"].decode())))
    clear = {r["video"]: r["sha256"] for r in checksums if r["kind"] == "clear video"}
    source = campaign.source_videos.get(name="bbaf2n")
    with source.file.open("rb") as handle:
        assert clear["bbaf2n"] == hashlib.sha256(handle.read()).hexdigest()
    assert "human_responses.csv" in files["README.md"].decode()


def test_a_team_package_holds_its_own_runs_and_the_staff_button_serves_the_same(board, tmp_path):
    campaign, organizer, submissions = board
    output = tmp_path / "aurora.zip"
    call_command(
        "export_package",
        campaign=str(campaign.pk),
        output=str(output),
        team="Team Aurora",
        stdout=io.StringIO(),
    )
    files = _members(output)
    _verify_manifest(files)
    assert [r["name"] for r in csv.DictReader(io.StringIO(files["runs.csv"].decode()))] == ["method-a"]
    assert "human_responses.csv" not in files
    assert not [name for name in files if "borealis" in name]
    # The leaderboard is not published to teams: the team's package shows its own row only.
    board_rows = list(csv.DictReader(io.StringIO(files["leaderboard.csv"].decode())))
    assert [r["method"] for r in board_rows] == ["method-a"]
    with pytest.raises(
        CommandError,
        match="no team named 'Team Nobody' in campaign 'tiny' \\(teams: Baselines, Team Aurora, Team Borealis\\)",
    ):
        call_command("export_package", campaign=campaign.slug, output=str(output), team="Team Nobody")
    client = Client()
    client.force_login(organizer)
    response = client.get(
        reverse("leaderboard:package", args=[campaign.pk]), {"team": submissions["A"].team.pk}
    )
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    served = _members(io.BytesIO(response.content))
    assert sorted(served) == sorted(files)
    assert served["runs.csv"] == files["runs.csv"]
    assert (
        'id="package-download"'
        in client.get(reverse("leaderboard:page", args=[campaign.pk])).content.decode()
    )


def test_team_run_names_and_descriptions_starting_with_a_formula_character_are_text(board):
    """Team ``@Aurora``, run ``+method-a`` described as ``=HYPERLINK(...)`` (OWASP "CSV
    Injection"): text in runs.csv and leaderboard.csv; the figures stay numbers."""
    campaign, _, submissions = board
    Team.objects.filter(pk=submissions["A"].team_id).update(name="@Aurora")
    description = '=HYPERLINK("http://x","y")'
    Submission.objects.filter(pk=submissions["A"].pk).update(name="+method-a", description=description)
    files = package_files(campaign, team=Team.objects.get(name="@Aurora"))
    runs = list(csv.DictReader(io.StringIO(files["runs.csv"].decode())))
    assert [(r["team"], r["name"], r["description"]) for r in runs] == [
        ("'@Aurora", "'+method-a", "'" + description)
    ]
    board_rows = list(csv.DictReader(io.StringIO(files["leaderboard.csv"].decode())))
    assert [(r["team"], r["method"]) for r in board_rows] == [("'@Aurora", "'+method-a")]
    assert float(board_rows[0]["face_detection_failure_rate"]) == pytest.approx(0.9)
