"""The results package of a campaign (or of one team): one zip for the overview paper and
the teams' working notes (issue 23).

:func:`write_package` writes, under one folder named after the campaign:

- ``README.md``: what each file is;
- ``runs.csv``: every run (team, name, phase, run number, primary, description, whether
  a system-description PDF is included), ``runs/<run>/per_video.csv`` (the per-video
  report), ``runs/<run>/summary.json`` and ``runs/<run>/configuration.json`` (every
  automated run's settings, status and times), ``runs/<run>/system_description.pdf``;
- ``summary.csv`` (one row per run), ``leaderboard.csv`` (figures with 95 % intervals) and
  ``comparisons/<figure>.csv`` (paired comparisons), ``plots/frontier.png`` and ``.svg``;
- ``data_dictionary.csv``: what every column means;
- ``human_responses.csv`` (campaign package only): every evaluated response, raters as
  pseudonyms (``rater-001`` ...) numbered in order of joining; no participant code,
  platform ID, address or time;
- ``provenance.json``: code version, package versions, model files' SHA-256;
  ``data_checksums.csv``: SHA-256 of every clear video and every included masked video;
- ``MANIFEST.sha256``: one ``<sha256>  <path>`` line per file (``sha256sum -c`` reads it).

Reports are the teams' form (``team=True``): no identity codes, no video roles, so the
package can be shared as it is. A team's package holds its own runs (every phase whose
results are released to it) and the leaderboard as published to it
(:func:`evalsite.phases.leaderboard_submissions`); a run of a blind phase is listed with
no results.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path

from django.utils import timezone
from django.utils.text import slugify

from automated.django_app.attack_models import AttackRun
from automated.django_app.face_models import AutomatedRun
from automated.django_app.frontier_view import frontier_points
from evalsite import dictionary, phases, provenance, reports
from evalsite.models import Campaign, LeaderboardVisibility, MaskedVideo, Submission, Team
from evalsite.spreadsheet import SafeDictWriter
from trials.models import Response, TrialKind

from . import leaderboard

MANIFEST = "MANIFEST.sha256"
RESPONSE_COLUMNS = [
    "rater",
    "excluded",
    "run",
    "video",
    "condition",
    "task",
    "choice",
    "correct",
    "target_present",
    "response_time_ms",
    "watch_time_ms",
    "replays",
]


def _csv(rows: list[dict], columns: list[str]) -> str:
    out = io.StringIO()
    writer = SafeDictWriter(out, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def run_label(run: Submission) -> str:
    """A run's folder name: ``<team>-<name>`` slugged (pk appended, so names never clash)."""
    return f"{slugify(run.team.name)}-{slugify(run.name)}-{run.pk}"


def _run_rows(runs, shown) -> list[dict]:
    return [
        {
            "run": run_label(run),
            "team": run.team.name,
            "name": run.name,
            "phase": run.phase.name if run.phase_id else "",
            "run_number": run.run_number or "",
            "primary": run.primary if run.phase_id else "",
            "baseline_method": run.baseline_method,
            "description": run.description,
            "system_description_pdf": bool(run.description_pdf),
            "results_included": run.pk in shown,
        }
        for run in runs
    ]


def _configuration(run: Submission) -> dict:
    def rows(model):
        return [
            {
                "id": r.pk,
                "status": r.status,
                "config": r.config,
                "created_at": r.created_at.isoformat(),
                "finished_at": r.finished_at.isoformat() if r.finished_at else None,
            }
            for r in model.objects.filter(submission=run).order_by("pk")
        ]

    return {"face_evaluation_runs": rows(AutomatedRun), "attack_runs": rows(AttackRun)}


def human_responses(campaign: Campaign, runs) -> str:
    """Every evaluated response of ``campaign``'s clear items and of ``runs``' masked items, as CSV.

    Raters are pseudonyms (``rater-001``, numbered by join order); no participant code,
    platform ID, address or time is written. Columns: :data:`RESPONSE_COLUMNS`.
    """
    labels = {run.pk: run_label(run) for run in runs}
    responses = (
        Response.objects.filter(trial__kind=TrialKind.ITEM, trial__item__campaign=campaign)
        .select_related("trial__session__rater", "trial__item__source_video", "trial__item__masked_video")
        .order_by("trial__session__rater_id", "trial__session_id", "trial__position")
    )
    raters = sorted({r.trial.session.rater_id for r in responses})
    pseudonym = {rater: f"rater-{i:03d}" for i, rater in enumerate(raters, start=1)}
    rows = []
    for response in responses:
        item, trial = response.trial.item, response.trial
        masked = item.masked_video
        if masked is not None and masked.submission_id not in labels:
            continue
        rows.append(
            {
                "rater": pseudonym[trial.session.rater_id],
                "excluded": trial.session.rater.excluded,
                "run": "" if masked is None else labels[masked.submission_id],
                "video": item.source_video.name,
                "condition": "clear" if masked is None else "masked",
                "task": item.task,
                "choice": response.choice,
                "correct": response.correct,
                "target_present": trial.target_present,
                "response_time_ms": response.response_time_ms,
                "watch_time_ms": response.watch_time_ms,
                "replays": response.replays,
            }
        )
    return _csv(rows, RESPONSE_COLUMNS)


def _checksums(campaign: Campaign, runs) -> str:
    rows = [
        {"kind": "clear video", "run": "", "video": v.name, "sha256": provenance.stored_sha256(v.file)}
        for v in campaign.source_videos.order_by("name")
        if v.file
    ]
    for run in runs:
        for masked in (
            MaskedVideo.objects.filter(submission=run)
            .select_related("source_video")
            .order_by("source_video__name")
        ):
            if masked.file and masked.file.storage.exists(masked.file.name):
                rows.append(
                    {
                        "kind": "masked video",
                        "run": run_label(run),
                        "video": masked.source_video.name,
                        "sha256": provenance.stored_sha256(masked.file),
                    }
                )
    return _csv(rows, ["kind", "run", "video", "sha256"])


def _readme(campaign: Campaign, team: Team | None, files: dict) -> str:
    scope = f"team {team.name}" if team else "every team"
    lines = [
        f"# Results package: {campaign.name} ({scope})",
        "",
        f"Written {timezone.now():%Y-%m-%d %H:%M %Z} by deid-eval `manage.py export_package`.",
        "Check it with `sha256sum -c MANIFEST.sha256` inside this folder.",
        "",
        "| file | what it holds |",
        "|---|---|",
    ]
    described = {
        "runs.csv": "every run: team, name, phase, run number, primary flag, system description; "
        "`results_included` false for a run whose phase keeps its results blind",
        "runs/<run>/per_video.csv": "per-video report of one run (columns: data_dictionary.csv)",
        "runs/<run>/summary.json": "summary figures of one run",
        "runs/<run>/configuration.json": "settings, status and times of every automated run of it",
        "runs/<run>/system_description.pdf": "the team's system description, where given",
        "summary.csv": "one summary row per run",
        "leaderboard.csv": "headline figures with 95 % intervals and n (videos) per run",
        "comparisons/<figure>.csv": "paired comparisons of every pair of runs on one figure",
        "plots/frontier.png, .svg": "privacy-utility frontier of the runs",
        "data_dictionary.csv": "meaning, unit, range and source of every column",
        "human_responses.csv": "evaluated human responses; raters as pseudonyms, no participant codes, "
        "no crowd IDs, no times",
        "provenance.json": "code version, package versions and model files' SHA-256",
        "data_checksums.csv": "SHA-256 of every clear video and masked video the results are computed on",
        MANIFEST: "SHA-256 of every other file of the package",
    }
    for name, text in described.items():
        if any(f == name or f.startswith(name.split("<", 1)[0].split(",")[0]) for f in [*files, MANIFEST]):
            lines.append(f"| `{name}` | {text} |")
    lines += [
        "",
        "Reports are the teams' form: identity codes and video roles are left out.",
        "Figures of a blind phase appear only once the organizer releases them.",
    ]
    return "\n".join(lines) + "\n"


def package_files(campaign: Campaign, *, team: Team | None = None) -> dict[str, bytes]:
    """Every file of the package (path inside the package -> bytes), MANIFEST and README included.

    Parameters
    ----------
    campaign : Campaign
    team : Team, optional
        A team of ``campaign``: its own runs (results of released phases only) and the
        leaderboard as published to it; no human responses. Default: the organizer's
        package, every run of the campaign.

    Raises
    ------
    ValueError
        If ``team`` belongs to another campaign.
    """
    if team is not None and team.campaign_id != campaign.pk:
        raise ValueError(f"team {team.name!r} is not a team of campaign {campaign.slug!r}")
    if team is None:
        runs = list(campaign.submissions.select_related("team", "phase").order_by("team__name", "name"))
        shown = {run.pk for run in runs}
        board = leaderboard.campaign_scores(campaign)
    else:
        runs = list(team.submissions.select_related("team", "phase").order_by("name"))
        shown = {run.pk for run in runs if phases.team_sees_results(run)}
        published = campaign.leaderboard_visibility != LeaderboardVisibility.HIDDEN
        visible = phases.leaderboard_submissions(campaign, viewer_teams=[team])
        board = leaderboard.campaign_scores(campaign, visible if published else visible.filter(team=team))
    anonymise = team is not None and campaign.leaderboard_visibility == LeaderboardVisibility.ANONYMISED
    names = {"anonymise_teams": anonymise, "viewer_team": team, "scores": board}
    files: dict[str, bytes] = {}
    files["runs.csv"] = _csv(
        _run_rows(runs, shown),
        [
            "run",
            "team",
            "name",
            "phase",
            "run_number",
            "primary",
            "baseline_method",
            "description",
            "system_description_pdf",
            "results_included",
        ],
    ).encode()
    summaries = []
    for run in runs:
        folder = f"runs/{run_label(run)}"
        if run.description_pdf:
            with run.description_pdf.open("rb") as handle:
                files[f"{folder}/system_description.pdf"] = handle.read()
        if run.pk not in shown:
            continue
        files[f"{folder}/per_video.csv"] = reports.report_as_csv(run, team=True).encode()
        summary = json.loads(
            json.dumps(reports.jsonable(reports.submission_summary(run, team=True)), default=str)
        )
        files[f"{folder}/summary.json"] = json.dumps(summary, indent=2).encode()
        files[f"{folder}/configuration.json"] = json.dumps(_configuration(run), indent=2).encode()
        summaries.append({"run": run_label(run), **reports.summary_row(run, team=True)})
    if summaries:
        columns = list(dict.fromkeys(k for row in summaries for k in row))
        files["summary.csv"] = _csv(summaries, columns).encode()
    frame = leaderboard.leaderboard_frame(campaign, **names)
    files["leaderboard.csv"] = leaderboard.as_csv(frame).encode()
    for entry in leaderboard.HEADLINES:
        if entry.key not in leaderboard.HUMAN_TASKS and entry.key not in board.per_video:
            continue  # a figure without per-video values (e.g. the declared attacker's): no paired test
        pairs = leaderboard.comparison_frame(campaign, entry.key, **names)
        if len(pairs):
            files[f"comparisons/{entry.key}.csv"] = leaderboard.as_csv(pairs).encode()
    points = frontier_points(campaign) if team is None else []  # a team's package: the table only
    if points:
        # imported here: automated.behaviour is slow to import and Django start-up imports this module
        from automated.behaviour.frontier import frontier_figure

        figures = frontier_figure(points, title=f"Privacy-utility frontier: {campaign.name}")
        for fmt, data in figures.items():
            files[f"plots/frontier.{fmt}"] = data if isinstance(data, bytes) else data.encode()
    files["data_dictionary.csv"] = dictionary.as_csv().encode()
    included = [run for run in runs if run.pk in shown]
    if team is None:
        files["human_responses.csv"] = human_responses(campaign, runs).encode()
    files["provenance.json"] = json.dumps(provenance.provenance(), indent=2).encode()
    files["data_checksums.csv"] = _checksums(campaign, included).encode()
    files["README.md"] = _readme(campaign, team, files).encode()
    files[MANIFEST] = "".join(
        f"{hashlib.sha256(data).hexdigest()}  {name}\n" for name, data in sorted(files.items())
    ).encode()
    return files


def write_zip(campaign: Campaign, target, *, team: Team | None = None) -> str:
    """Write :func:`package_files` as a zip into ``target`` (a path or binary file), every file
    under ``<campaign slug>[-<team>]/``; return that folder name. Raises as :func:`package_files`."""
    root = campaign.slug + (f"-{slugify(team.name)}" if team else "")
    files = package_files(campaign, team=team)
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in sorted(files.items()):
            archive.writestr(f"{root}/{name}", data)
    return root


def write_package(campaign: Campaign, output, *, team: Team | None = None) -> Path:
    """Write the package zip (:func:`write_zip`) at ``output``; return the path."""
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    write_zip(campaign, output, team=team)
    return output
