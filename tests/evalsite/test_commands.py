"""Management commands (thin wrappers) and the demo, end to end on real clips."""

import csv
import io
import json

import pytest
from django.contrib.auth import authenticate
from django.core.management import CommandError, call_command

from automated.django_app.attack_models import AttackRun
from automated.django_app.face_models import AutomatedRun
from evalsite.portal.demo import run_demo
from evalsite.models import Campaign, MaskedVideo, Submission

from .conftest import make_zip


def _call(*args, **kwargs) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, **kwargs)
    return out.getvalue()


@pytest.mark.django_db
def test_import_dataset_command_imports_and_reports_problems(media_root, tiny_dataset, tmp_path):
    assert "Imported campaign 'Cmd' (slug cmd): 3 identities, 3 gallery images, 3 source videos" in _call(
        "import_dataset", str(tiny_dataset), "--campaign", "Cmd", "--no-web-copies"
    )
    with pytest.raises(CommandError, match="campaign 'Cmd' already exists"):
        _call("import_dataset", str(tiny_dataset), "--campaign", "Cmd", "--no-web-copies")
    with pytest.raises(CommandError, match="dataset folder not found"):
        _call("import_dataset", str(tmp_path / "nope"), "--campaign", "X")


def test_create_upload_and_export_commands(campaign, masked_files, tmp_path):
    out = _call("create_submission", "--campaign", "tiny", "--team", "Team C", "--name", "pixels")
    submission = Submission.objects.get(team__name="Team C", name="pixels")
    assert f"Created submission {submission.pk}" in out
    with pytest.raises(CommandError, match="already has a submission 'pixels'"):
        _call("create_submission", "--campaign", "tiny", "--team", "Team C", "--name", "pixels")
    archive = make_zip(
        tmp_path / "c.zip", {"bbaf2n.mp4": masked_files["good_bbaf2n"], "brbk7n.mp4": masked_files["text"]}
    )
    out = _call("upload_submission", str(submission.pk), str(archive))
    assert "accepted  accepted" in out and "unreadable_container" in out
    assert "1 accepted, 1 rejected; missing: brbk7n, id2_vcd_swwp2s" in out
    with pytest.raises(
        CommandError, match=r"failed \(nothing_accepted\).*already_uploaded, unreadable_container"
    ):
        _call("upload_submission", str(submission.pk), str(archive))
    assert MaskedVideo.objects.count() == 1

    _call("export_report", str(submission.pk), "--format", "csv", "--output", str(tmp_path / "r.csv"))
    with (tmp_path / "r.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["video"], r["has_masked_video"]) for r in rows] == [
        ("bbaf2n", "True"),
        ("brbk7n", "False"),
        ("id2_vcd_swwp2s", "False"),
    ]
    _call("export_report", str(submission.pk), "--format", "json", "--output", str(tmp_path / "r.json"))
    payload = json.loads((tmp_path / "r.json").read_text())
    assert payload["summary"]["masked_videos"] == 1 and len(payload["videos"]) == 3
    # The data dictionary goes beside each export (what every column means).
    entries = {r["name"]: r for r in json.loads((tmp_path / "dictionary.json").read_text())}
    assert entries["has_masked_video"]["dtype"] == "bool" and set(payload["videos"][0]) <= set(entries)
    with (tmp_path / "dictionary.csv").open() as handle:
        documented = {r["name"]: r for r in csv.DictReader(handle) if r["level"] == "video"}
    assert set(rows[0]) <= set(documented) and documented["face_ssim"]["precision"] == "4"
    (tmp_path / "dictionary.csv").unlink()
    out = _call("export_summary", "--campaign", "tiny", "--output", str(tmp_path / "s.csv"))
    assert f"Wrote {tmp_path / 'dictionary.csv'}" in out
    with (tmp_path / "s.csv").open() as handle:
        assert [r["method"] for r in csv.DictReader(handle)] == ["pixels"]
    _call(
        "export_summary", "--campaign", "tiny", "--output", str(tmp_path / "t" / "s.csv"), "--no-dictionary"
    )
    assert sorted(p.name for p in (tmp_path / "t").iterdir()) == ["s.csv"]
    printed = json.loads(_call("export_dictionary", "--format", "json"))
    assert {"face_match_rate", "human_masking_success", "face_evaluation.threshold"} <= {
        r["name"] for r in printed
    }
    with pytest.raises(CommandError, match="no submission with id 999999"):
        _call("export_report", "999999")
    with pytest.raises(CommandError, match="no campaign with id or slug 'nope'"):
        _call("export_summary", "--campaign", "nope")


def test_export_commands_refuse_to_overwrite_existing_files_without_force(submission, tmp_path):
    report, summary, beside = tmp_path / "r.csv", tmp_path / "s.csv", tmp_path / "dictionary.csv"
    beside.write_text("kept\n")
    # before: dictionary.csv was replaced without a word
    with pytest.raises(
        CommandError,
        match=f"^{beside} already exists; pass --force to overwrite, or choose another --output$",
    ):
        _call("export_report", str(submission.pk), "--output", str(report))
    assert not report.exists() and beside.read_text() == "kept\n"  # nothing written
    _call("export_report", str(submission.pk), "--output", str(report), "--no-dictionary")
    assert report.read_text().startswith("video,") and beside.read_text() == "kept\n"
    report.write_text("old\n")
    with pytest.raises(CommandError, match=f"^{report}, {beside} already exist; pass --force"):
        _call("export_report", str(submission.pk), "--output", str(report))
    with pytest.raises(CommandError, match=f"^{report} already exists; pass --force"):
        _call("export_report", str(submission.pk), "--output", str(report), "--no-dictionary")
    assert report.read_text() == "old\n"
    out = _call("export_report", str(submission.pk), "--output", str(report), "--force")
    assert f"Wrote {report}" in out and f"Wrote {beside}" in out
    assert report.read_text().startswith("video,") and beside.read_text().startswith("level,section,name,")
    summary.write_text("old\n")
    # the dictionary beside it already holds what would be written: only the summary clashes
    with pytest.raises(CommandError, match=f"^{summary} already exists; pass --force"):
        _call("export_summary", "--campaign", "tiny", "--output", str(summary))
    assert summary.read_text() == "old\n"
    _call("export_summary", "--campaign", "tiny", "--output", str(summary), "--force")
    with summary.open() as handle:
        assert [r["method"] for r in csv.DictReader(handle)] == ["method-1"]


@pytest.mark.slow
@pytest.mark.django_db
def test_demo_runs_on_the_real_clips_and_is_idempotent(media_root, data_dir, tmp_path):
    lines = []
    first = run_demo(data_dir=data_dir, var_dir=tmp_path, stride=25, methods=["identity"], log=lines.append)
    assert not first.failures
    campaign = Campaign.objects.get()
    evaluated = campaign.source_videos.filter(practice=False)
    assert evaluated.count() == 24 and campaign.identities.filter(practice=False).count() == 11
    # The London practice people (issue 22): 12 practice identities with a face and a clip
    # each (already a browser copy), outside the evaluated subset, never masked.
    practice = campaign.source_videos.filter(practice=True)
    assert campaign.identities.filter(practice=True).count() == 12 == practice.count()
    assert (
        not practice.filter(in_evaluated_subset=True).exists() and not practice.filter(web_file="").exists()
    )
    assert "12 practice people (London face set) added for the practice trials" in lines
    # No browser copy on the evaluation's path: rating is not open (opening it makes them).
    assert not evaluated.exclude(web_file="").exists()
    assert not MaskedVideo.objects.exclude(web_file="").exists()
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == sorted(
        [p.name for p in first.report_paths] + ["summary.csv", "dictionary.csv"]
    )
    with first.summary_path.open() as handle:
        (row,) = list(csv.DictReader(handle))
    # The unmasked baseline is the worst case: the true identity is found at rank 1.
    assert row["method"] == "identity" and row["complete"] == "True"
    assert float(row["face_evaluation.rank1_rate"]) >= 0.9
    # The demo attack suite ran: unmasked frames are re-identified far above chance (1/11).
    assert float(row["attack.chance_level"]) == pytest.approx(1 / 11, abs=5e-4)  # CSV: 3 decimals
    assert float(row["attack.worst_case_accuracy"]) >= 0.5
    report = json.loads(next(p for p in first.report_paths if p.suffix == ".json").read_text())
    assert report["summary"]["fairness"] is not None
    assert authenticate(username="organizer", password=first.password) is not None
    member = authenticate(username="team-baselines", password=first.team_password)
    assert not member.is_staff and list(member.teams.values_list("name", flat=True)) == ["Baselines"]

    del lines[:]
    second = run_demo(data_dir=data_dir, var_dir=tmp_path, stride=25, methods=["identity"], log=lines.append)
    assert Campaign.objects.count() == 1 and Submission.objects.count() == 1
    assert AutomatedRun.objects.count() == 1 and MaskedVideo.objects.count() == 24
    assert AttackRun.objects.count() == 1
    assert campaign.identities.filter(practice=True).count() == 12  # added once
    assert "already imported" in lines[0] and "already evaluated" in lines[-1]
    assert [line.split(":")[0] for line in lines[1:-1]] == ["phase development", "phase test"]
    assert second.password != first.password
    assert authenticate(username="organizer", password=first.password) is None
    assert authenticate(username="organizer", password=second.password).is_staff
