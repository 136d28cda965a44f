"""Per-video score reports and submission summaries, assembled from every app.

Apps contribute without this module importing them: each registers, in its
``AppConfig.ready()``,

- a *video column provider* ``provider(submission) -> pandas.DataFrame`` indexed by
  source-video name, whose columns join the per-video report, and
- a *summary provider* ``provider(submission) -> dict`` whose entries join the
  submission summary under the given section name.

The base report has one row per source video of the campaign with ``video``,
``identity_code``, ``action``, ``has_masked_video`` (False while the submission lacks
a current, valid masked video for it), ``stale`` and ``stale_results`` (the sections
whose result for the video predates a replacement of its masked or clear file:
``evalsite/staleness.py``). :func:`campaign_summary_table` puts the summaries of all
submissions of a campaign side by side (one row per submission, nested sections
flattened to ``section.key`` columns).

Self-explaining (issue 13): every column has an entry in the data dictionary
(``evalsite/dictionary.py``; apps register the entries of their columns beside their
providers). The dictionary fixes the report's shape and types:

- the per-video report always has every documented column of every registered section,
  empty where a result is missing (the column set does not grow once ratings exist);
  per-video columns carry their section prefix (``face_``, ``human_``, ``attack_``,
  ``behaviour_``);
- ``int`` columns stay whole numbers (``Int64``, empty when missing), CSV exports round
  ``float`` columns to the dictionary's precision (JSON keeps full precision);
- ``caveats`` (per video) names what limits a row's reading: providers registered with
  :func:`register_video_caveats` add theirs (e.g. a gallery still taken from the
  evaluated clip), the report adds stale results;
- a summary section whose provider has nothing yet says why: ``{"status": "not run" |
  "pending" | "running" | "failed", "run_id": ...}`` instead of null; sections with a
  result say ``"status": "completed"``; entries marked ``internal`` (timings, internal
  references) are left out of summaries.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from django.apps import apps
from django.utils.text import slugify

from automated.privacy_utility import privacy_utility_score
from automated.serialize import jsonable

from . import dictionary, spreadsheet
from .dictionary import Column
from .report_cache import cached, reads_progress
from .models import MaskedVideo
from .staleness import RUN_SECTIONS, stale_results, stale_videos

# pandas is imported where it is used: slow to import, and Django start-up imports this module.
if TYPE_CHECKING:
    import pandas as pd

VIDEO_COLUMN_PROVIDERS: list[tuple[str, Callable]] = []
SUMMARY_PROVIDERS: list[tuple[str, Callable]] = []
CAVEAT_PROVIDERS: list[tuple[str, Callable]] = []
#: Caveat providers whose texts name an identity or a video's role: organizers only.
ORGANIZER_CAVEATS: set[str] = set()

BASE_COLUMNS = ["video", "identity_code", "action", "has_masked_video", "stale", "stale_results", "caveats"]
CAVEAT_SEPARATOR = "; "

dictionary.register(
    "",
    {
        "video": Column("source-video name (the clear clip the row is about)", "str", source="videos.csv"),
        "identity_code": Column(
            "pseudonymous code of the person in the video (never a name; organizers only)",
            "str",
            source="identities.csv",
            organizers_only=True,
        ),
        "action": Column("action label of the clear video (campaign vocabulary)", "str", source="videos.csv"),
        "has_masked_video": Column(
            "the submission has a current masked video for this source that matches it (frames, size)",
            "bool",
            ideal="true",
        ),
        "stale": Column(
            "a result in this row predates a replacement of the masked or clear file, or a change of "
            "this video's role (attacker training material or not) since its run was planned",
            "bool",
            ideal="false",
        ),
        "stale_results": Column(
            "space-separated sections whose result for this video is stale ('' if none)",
            "str",
            source="evalsite/staleness.py",
        ),
        "caveats": Column(
            "what limits this row's reading, '; '-separated ('' if none): e.g. a gallery still "
            "taken from the evaluated clip (recognition is easier than with a different recording), "
            "stale results, too few ratings",
            "str",
            ideal="''",
        ),
    },
)
dictionary.register(
    "privacy_utility",
    {
        "pu_score": Column(
            "privacy-utility score: (masked / clear human action accuracy) x (1 - face SSIM); "
            "empty without human action ratings of both conditions",
            "float",
            range="[0, 1]",
            ideal="1",
            precision=4,
            source="seeds/004 (PrivHAR-Bench) composite score; automated/privacy_utility.py",
        ),
    },
)
SUMMARY_FACTS = {
    "submission": Column("submission label: team / method", "str"),
    "submission_id": Column("submission id (use it with export_report and the API)", "int", range=">= 1"),
    "campaign": Column("campaign name", "str"),
    "team": Column("team name", "str"),
    "method": Column("the team's name for the masking method (the submission)", "str"),
    "baseline_method": Column("baseline anonymizer name for reference submissions, '' for teams", "str"),
    "complete": Column("every source video has a current, matching masked video", "bool", ideal="true"),
    "masked_videos": Column("current masked videos that match their clear video", "int", unit="videos"),
    "source_videos": Column("source videos of the campaign", "int", unit="videos"),
    "flagged_videos": Column(
        "videos whose masked file no longer matches a replaced clear video (space-separated in CSV)", "list"
    ),
    "stale": Column(
        "some section's result predates a replaced masked or clear file or a video role change",
        "bool",
        ideal="false",
    ),
    "stale_videos": Column("videos with a stale result (space-separated in CSV)", "list"),
    "stale_results": Column(
        "per stale section: {run_id, videos, replaced, plan_changed (video roles or masked videos changed "
        "since the run was planned), reason}",
        "object",
        source="evalsite/staleness.py",
    ),
    "caveats": Column(
        "the per-video caveats with how many videos each affects ('; '-separated in CSV)", "list", ideal="[]"
    ),
    "privacy_utility": Column("submission-level privacy-utility score (section)", "section"),
}
dictionary.register("", SUMMARY_FACTS, level="summary")
dictionary.register(
    "privacy_utility",
    {
        "status": Column(
            "completed, or not available (no video has human action ratings and face SSIM)",
            "str",
            range="completed | not available",
        ),
        "reason": Column("why the section is not available", "str"),
        "videos": Column("videos with every PU input", "int", unit="videos"),
        "action_accuracy_masked": Column(
            "mean human action accuracy on the masked videos",
            "float",
            unit="fraction",
            range="[0, 1]",
            ideal="1",
            precision=4,
        ),
        "action_accuracy_clear": Column(
            "mean human action accuracy on the clear videos",
            "float",
            unit="fraction",
            range="[0, 1]",
            precision=4,
        ),
        "ssim": Column(
            "mean SSIM of masked vs clear frames",
            "float",
            range="[-1, 1]",
            ideal="low (privacy)",
            precision=4,
        ),
        "pu_score": Column(
            "privacy-utility score from the means above: (masked / clear action accuracy) x (1 - SSIM)",
            "float",
            range="[0, 1]",
            ideal="1",
            precision=4,
            source="seeds/004 (PrivHAR-Bench) composite score; automated/privacy_utility.py",
        ),
    },
    level="summary",
)


def _provided(kind: str, name: str, provider: Callable, submission):
    """``provider(submission)``, cached by the campaign's inputs (``report_cache``) inside a request."""
    return cached(submission.campaign_id, (kind, name, submission.pk), lambda: provider(submission))


def register_video_columns(name: str, provider: Callable) -> None:
    """Register ``provider(submission) -> DataFrame`` (index: video name) under ``name``."""
    if name not in {n for n, _ in VIDEO_COLUMN_PROVIDERS}:
        VIDEO_COLUMN_PROVIDERS.append((name, provider))


def video_columns(name: str, submission) -> pd.DataFrame:
    """The per-video columns the provider registered as ``name`` gives for ``submission``.

    An empty frame when no installed app registered ``name`` (e.g. ``"face"``,
    ``"behaviour"``, ``"attack"``).
    """
    import pandas as pd

    provider = dict(VIDEO_COLUMN_PROVIDERS).get(name)
    return _provided("video", name, provider, submission) if provider is not None else pd.DataFrame()


def summary_section(name: str, submission) -> dict | None:
    """The summary section ``name`` (e.g. ``"attack"``) of ``submission``; None if no app registered it."""
    provider = dict(SUMMARY_PROVIDERS).get(name)
    return _provided("summary", name, provider, submission) if provider is not None else None


def register_summary_section(name: str, provider: Callable) -> None:
    """Register ``provider(submission) -> dict`` as the summary section ``name``.

    Also documents the section's ``status`` entries (:func:`section_status`); the
    provider's module documents its own keys (``dictionary.register(name, ..., level="summary")``).
    """
    if name not in {n for n, _ in SUMMARY_PROVIDERS}:
        SUMMARY_PROVIDERS.append((name, provider))
    entries = STATUS_ENTRIES if name in RUN_SECTIONS else {"status": STATUS_ENTRIES["status"]}
    # The provider's module may document its own status (registered before this call).
    missing = {k: c for k, c in entries.items() if dictionary.find(f"{name}.{k}", "summary") is None}
    dictionary.register(name, missing, level="summary")
    if dictionary.find(name, "summary") is None:
        section = Column(f"summary section {name!r} (its keys are documented as {name}.<key>)", "section")
        dictionary.register("", {name: section}, level="summary")


#: Entries every run section has (``section_status``), documented once for all.
STATUS_ENTRIES = {
    "status": Column(
        "state of this section's result: completed (result shown), not run, pending or running "
        "(a run is queued or under way; nothing to show yet), failed (see error), not available",
        "str",
        range="completed | not run | pending | running | failed | not available",
        ideal="completed",
        source="evalsite/reports.py, section_status",
    ),
    "run_id": Column(
        "id of the run whose result the section shows (or that is pending)", "int", range=">= 1"
    ),
    "videos_done": Column(
        "videos the pending/running run has finished", "int", unit="videos", range="0 .. videos_total"
    ),
    "videos_total": Column("videos the pending/running run covers", "int", unit="videos", range=">= 0"),
    "error": Column("why the latest run failed (empty otherwise)", "str"),
}


def register_video_caveats(name: str, provider: Callable, *, organizers_only: bool = False) -> None:
    """Register ``provider(submission) -> {video name: [caveat text, ...]}`` (joined into ``caveats``).

    A caveat is a short, self-contained sentence fragment naming what limits the row,
    e.g. ``"gallery still taken from this clip"``; prefix it with the section it affects.
    ``organizers_only``: its texts name an identity or a video's role, so the team's view
    of the report (``team=True``) leaves them out.
    """
    if name not in {n for n, _ in CAVEAT_PROVIDERS}:
        CAVEAT_PROVIDERS.append((name, provider))
    if organizers_only:
        ORGANIZER_CAVEATS.add(name)


def _stale(submission) -> dict[str, dict]:
    """:func:`staleness.stale_results` for the runs the run sections show now."""
    sections = {
        name: _provided("summary", name, provider, submission)
        for name, provider in SUMMARY_PROVIDERS
        if name in RUN_SECTIONS
    }
    return cached(
        submission.campaign_id, ("stale", submission.pk), lambda: stale_results(submission, sections)
    )


def per_video_report(submission, *, stale: dict | None = None, team: bool = False) -> pd.DataFrame:
    """:func:`compute_per_video_report`, cached by the campaign's inputs inside a request (``report_cache``)."""
    return cached(
        submission.campaign_id,
        ("per_video_report", submission.pk, team),
        lambda: compute_per_video_report(submission, stale=stale, team=team),
    )


def compute_per_video_report(submission, *, stale: dict | None = None, team: bool = False) -> pd.DataFrame:
    """One row per source video of the submission's campaign, with every metric.

    Parameters
    ----------
    submission : Submission
    stale : dict, optional
        :func:`evalsite.staleness.stale_results` if already computed.
    team : bool, default=False
        The team's view: no column the dictionary marks ``organizers_only``
        (``identity_code``) and no caveat naming an identity or a video's role (issue 21).

    Returns
    -------
    pandas.DataFrame
        Columns ``video``, ``identity_code``, ``action``, ``has_masked_video``,
        ``stale`` (bool), ``stale_results`` (space-separated section names, '' if
        none), ``caveats`` (``"; "``-separated, '' if none), then every documented
        column of each provider in registration order, then ``pu_score`` (missing
        values are NaN / <NA>, e.g. a video not yet evaluated). ``int`` columns of the
        dictionary are ``Int64``, ``bool`` ones ``boolean``.
    """
    import pandas as pd

    stale = _stale(submission) if stale is None else stale
    videos = submission.campaign.source_videos.select_related("identity").order_by("name")
    masked = set(
        MaskedVideo.objects.filter(submission=submission).valid().values_list("source_video_id", flat=True)
    )
    base = pd.DataFrame(
        [
            {
                "video": v.name,
                "identity_code": v.identity.code,
                "action": v.action,
                "has_masked_video": v.pk in masked,
                "stale": any(v.name in entry["videos"] for entry in stale.values()),
                "stale_results": " ".join(name for name, entry in stale.items() if v.name in entry["videos"]),
            }
            for v in videos
        ],
        columns=BASE_COLUMNS[:-1],
    ).set_index("video", drop=False)
    for name, provider in VIDEO_COLUMN_PROVIDERS:
        columns = _provided("video", name, provider, submission)
        if columns is not None and len(columns.columns):
            base = base.join(columns, how="left")
    base["caveats"] = _caveats(submission, base, stale, team=team)
    report = base.reindex(columns=_video_column_order(base.columns)).reset_index(drop=True)
    report = dictionary.typed(_with_pu_score(report))
    if team:
        report = report.drop(columns=[c for c in report.columns if dictionary.is_organizers_only(c, "video")])
    return report


def _video_column_order(present) -> list[str]:
    """Base columns, each provider's documented columns (registration order), the rest, extras last.

    Documented columns of the registered sections are always there (stable column set);
    a column a provider emits without an entry is kept at the end (the dictionary test
    names it).
    """
    sections = [name for name, _ in VIDEO_COLUMN_PROVIDERS]
    documented = dictionary.entries("video")
    order = list(BASE_COLUMNS)
    for section in sections:
        order += [e.name for e in documented if e.section == section and not e.is_pattern]
    order += [
        e.name for e in documented if e.section not in sections and e.section != "" and not e.is_pattern
    ]
    order += [c for c in present if c not in order]
    return list(dict.fromkeys(order))


def _caveats(submission, base: pd.DataFrame, stale: dict, team: bool = False) -> list[str]:
    """Per-video ``caveats`` text: each caveat provider's, then the stale results (for a
    team, none that names an identity or a role change)."""
    found: dict[str, list[str]] = {name: [] for name in base.index}
    for name, provider in CAVEAT_PROVIDERS:
        if team and name in ORGANIZER_CAVEATS:
            continue
        for video, caveats in (_provided("caveats", name, provider, submission) or {}).items():
            if video in found:
                found[video] += [c for c in caveats if c not in found[video]]
    for section, entry in stale.items():
        for video in entry["videos"]:
            if video in found and video in entry.get("plan_changed", ()) and not team:
                found[video].append(
                    f"{section}: run planned before this video's role (or masked video) changed"
                )
            elif video in found:
                found[video].append(f"{section}: result predates a replaced video file")
    return [CAVEAT_SEPARATOR.join(found[name]) for name in base.index]


# Human action accuracy (utility) and automated SSIM (privacy) feed the PU score.
PU_INPUTS = ("human_action_accuracy_masked", "human_action_accuracy_clear", "face_ssim")


def _pu_or_nan(masked_accuracy, clear_accuracy, ssim) -> float:
    import pandas as pd

    values = (masked_accuracy, clear_accuracy, ssim)
    if any(v is None or pd.isna(v) for v in values) or clear_accuracy == 0:
        return float("nan")  # not rated / not evaluated yet, or no clear-video utility
    return privacy_utility_score(float(masked_accuracy), float(clear_accuracy), float(ssim))


def _with_pu_score(report: pd.DataFrame) -> pd.DataFrame:
    """Add ``pu_score`` per video when the human and automated inputs are present.

    ``automated.privacy_utility.privacy_utility_score`` (our documented reading of
    PrivHAR-Bench's composite score, seeds/004): (masked / clear human action accuracy)
    x (1 - SSIM), in [0, 1], higher is better. NaN where an input is missing.
    """
    if all(column in report.columns for column in PU_INPUTS):
        report["pu_score"] = [_pu_or_nan(*row) for row in report[list(PU_INPUTS)].itertuples(index=False)]
        if "pu_score_automated" in report.columns:  # the automated stand-in only where humans did not rate
            report.loc[report["pu_score"].notna(), "pu_score_automated"] = np.nan
    return report


def privacy_utility_summary(report: pd.DataFrame) -> dict | None:
    """Submission-level PU score from the per-video means over videos with every input.

    Returns None when the report lacks the inputs (e.g. no human ratings yet).
    """
    import pandas as pd

    if not all(column in report.columns for column in PU_INPUTS):
        return None
    rated = report[list(PU_INPUTS)].apply(pd.to_numeric, errors="coerce").dropna()
    if rated.empty:
        return None
    means = rated.mean()
    return {
        "videos": int(len(rated)),
        "action_accuracy_masked": float(means["human_action_accuracy_masked"]),
        "action_accuracy_clear": float(means["human_action_accuracy_clear"]),
        "ssim": float(means["face_ssim"]),
        "pu_score": _pu_or_nan(*means.to_numpy(dtype=np.float64)),
    }


def submission_summary(submission, team: bool = False) -> dict:
    """:func:`compute_submission_summary`, cached by the campaign's inputs inside a request (``report_cache``)."""
    return cached(
        submission.campaign_id,
        ("submission_summary", submission.pk, team),
        lambda: compute_submission_summary(submission, team=team),
    )


def compute_submission_summary(submission, team: bool = False) -> dict:
    """Nested dict: submission facts plus one section per registered summary provider.

    ``complete`` and ``masked_videos`` count current masked videos that match their
    clear video (replaced ones are kept but not counted; ``flagged_videos`` names those
    that no longer match a replaced clear video). ``stale`` says whether a section's
    result predates a replaced masked or clear file; ``stale_videos`` names the videos
    and ``stale_results`` maps each stale section to its run and videos. ``caveats``
    counts the per-video caveats (``"<caveat> (k of n videos)"``).

    A section whose provider has no result is ``{"status": ..., "run_id": ...}``
    (:func:`section_status`), never None; a section with one gets ``"status":
    "completed"`` unless it states its own. Entries the dictionary marks internal are
    left out; with ``team`` (the team's view) so are entries marked ``organizers_only``
    (e.g. ``attack.format_confounded_identities``) and the videos whose role changed
    (``stale_results.<section>.plan_changed``).
    """
    current = MaskedVideo.objects.filter(submission=submission)
    summary = {
        "submission": str(submission),
        "submission_id": submission.pk,
        "campaign": submission.campaign.name,
        "team": submission.team.name,
        "method": submission.name,
        "baseline_method": submission.baseline_method,
        "complete": submission.is_complete,
        "masked_videos": current.valid().count(),
        "source_videos": submission.campaign.source_videos.count(),
        "flagged_videos": sorted(current.exclude(check_code="").values_list("source_video__name", flat=True)),
    }
    for name, provider in SUMMARY_PROVIDERS:
        summary[name] = _provided("summary", name, provider, submission)
    stale = _stale(submission)
    for name, _ in SUMMARY_PROVIDERS:
        section = summary[name]
        if section is None:
            summary[name] = section_status(submission, name)
        elif isinstance(section, dict):
            summary[name] = {"status": "completed", **_public(name, section, team=team)}
    summary["stale"] = bool(stale)
    summary["stale_videos"] = stale_videos(stale)
    summary["stale_results"] = (
        {section: {k: v for k, v in entry.items() if k != "plan_changed"} for section, entry in stale.items()}
        if team
        else stale
    )
    report = per_video_report(submission, stale=stale, team=team)
    summary["caveats"] = caveat_counts(report)
    pu = privacy_utility_summary(report)
    summary["privacy_utility"] = (
        {"status": "completed", **pu}
        if pu is not None
        else {
            "status": "not available",
            "reason": "needs human action ratings and face SSIM of the same videos",
        }
    )
    return summary


def _public(section: str, entries: dict, team: bool = False) -> dict:
    """``entries`` without the ones the dictionary marks internal (timings, internal paths)
    and, for a team, without those marked ``organizers_only``."""
    return {
        k: v
        for k, v in entries.items()
        if not dictionary.is_internal(f"{section}.{k}")
        and not (team and dictionary.is_organizers_only(f"{section}.{k}"))
    }


def section_status(submission, name: str) -> dict:
    """Why the summary section ``name`` has no result yet.

    Returns
    -------
    dict
        ``status``: ``"not run"`` (no run of the section's kind, or none that produced
        this section), ``"pending"`` / ``"running"`` (the latest run, with
        ``videos_done`` / ``videos_total``), ``"failed"`` (with ``error``), or
        ``"not available"`` for a section without runs; ``run_id`` of that run or None.
    """
    if name not in RUN_SECTIONS:
        return {"status": "not available", "run_id": None}
    label, model_name = RUN_SECTIONS[name]
    try:
        model = apps.get_model(label, model_name)
    except LookupError:
        return {"status": "not available", "run_id": None}
    reads_progress(submission.campaign_id, submission)  # a pending or running run's counters
    run = model.objects.filter(submission=submission).order_by("-created_at", "-pk").first()
    if run is None or run.status == "completed":
        return {"status": "not run", "run_id": None}
    out = {"status": run.status, "run_id": run.pk}
    if run.status in ("pending", "running"):
        out.update(videos_done=run.videos_done, videos_total=run.videos_total)
    else:
        out["error"] = run.error
    return out


def caveat_counts(report: pd.DataFrame) -> list[str]:
    """Each kind of per-video caveat of ``report`` with its count, e.g. ``"... (6 of 10 videos)"``.

    A caveat's kind is its text before any `` (`` (the per-video details), so
    ``"human: fewer ratings than the target of 3 (identity masked 1)"`` and ``"... (action
    clear 2)"`` count as one kind.
    """
    counts: dict[str, int] = {}
    for text in report["caveats"].fillna(""):
        kinds = dict.fromkeys(
            caveat.split(" (", 1)[0] for caveat in str(text).split(CAVEAT_SEPARATOR) if caveat
        )
        for kind in kinds:
            counts[kind] = counts.get(kind, 0) + 1
    return [f"{kind} ({n} of {len(report)} videos)" for kind, n in counts.items()]


def report_as_csv(submission, team: bool = False) -> str:
    """The per-video report as CSV text (header row, one row per video), floats rounded
    to the dictionary's precision, whole numbers without ``.0``, missing values empty
    (``team``: the team's view, :func:`per_video_report`)."""
    return spreadsheet.frame_csv(dictionary.rounded(per_video_report(submission, team=team)))


def report_as_json(submission, team: bool = False) -> str:
    """``{"summary": ..., "videos": [row, ...]}`` as JSON text; NaN becomes null
    (``team``: the team's view, :func:`per_video_report` and :func:`submission_summary`)."""
    rows = per_video_report(submission, team=team).to_dict(orient="records")
    payload = {"summary": submission_summary(submission, team=team), "videos": rows}
    return json.dumps(jsonable(payload), indent=2, default=str)


def _scalar(value) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def summary_row(submission, team: bool = False) -> dict:
    """The submission summary as one flat row: top-level facts plus ``<section>.<key>``
    for every scalar entry of each section (nested tables such as per-group breakdowns
    are left to the JSON report)."""
    row = {}
    for key, value in jsonable(submission_summary(submission, team=team)).items():
        if isinstance(value, dict):
            row.update({f"{key}.{k}": v for k, v in value.items() if _scalar(v)})
        elif _scalar(value):
            row[key] = value
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            row[key] = (CAVEAT_SEPARATOR if key == "caveats" else " ").join(value)  # e.g. stale_videos
    return row


def campaign_summary_table(campaign) -> pd.DataFrame:
    """One row per submission of ``campaign`` (:func:`summary_row`), for comparing teams.

    Returns
    -------
    pandas.DataFrame
        Columns ``submission_id``, ``team``, ``method``, ``baseline_method``,
        ``complete``, ``masked_videos``, ``source_videos``, ``stale``, ``stale_videos``
        (space-separated names), ``flagged_videos``, ``caveats``, then one column per
        scalar summary entry named ``<section>.<key>`` (e.g.
        ``face_evaluation.rank1_rate``): every documented one of each section, empty
        where a submission has none (stable column set), in section order. Documented
        ``int`` columns are ``Int64``. Rows are ordered by team, then method.
    """
    return cached(campaign, ("campaign_summary_table",), lambda: _campaign_summary_table(campaign))


def _campaign_summary_table(campaign) -> pd.DataFrame:
    import pandas as pd

    submissions = campaign.submissions.select_related("team", "campaign").order_by("team__name", "name")
    rows = [summary_row(s) for s in submissions]
    table = pd.DataFrame(rows)
    # A section that is None for some submissions (e.g. no attack run yet) would add a bare,
    # empty column beside the "<section>.<key>" columns of the others.
    sections = {column.split(".", 1)[0] for column in table.columns if "." in column}
    table = table.drop(columns=["submission", "campaign", *sections], errors="ignore")
    for column in table.columns:  # ids and counts stay whole where others are missing (not 1.0)
        present = [row[column] for row in rows if row.get(column) is not None]
        if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
            table[column] = table[column].astype("Int64")
    first = [
        "submission_id",
        "team",
        "method",
        "baseline_method",
        "complete",
        "masked_videos",
        "source_videos",
        "stale",
        "stale_videos",
    ]
    ordered = list(dict.fromkeys(first + _summary_column_order() + list(table.columns)))
    table = table.reindex(
        columns=[c for c in ordered if c not in ("submission", "campaign") and not _nested(c)]
    )
    return dictionary.typed(table, "summary")


def _nested(column: str) -> bool:
    """A documented JSON table or section (None where a provider has none): not a table column."""
    entry = dictionary.find(column, "summary")
    return entry is not None and entry.dtype in ("object", "section")


SCALAR_DTYPES = ("int", "float", "bool", "str")


def _summary_column_order() -> list[str]:
    """Documented summary-table columns: top-level facts, then each section's scalar, public entries."""
    documented = [e for e in dictionary.entries("summary") if not e.is_pattern and not e.column.internal]
    order = [e.name for e in documented if e.section == "" and e.column.dtype not in ("object", "section")]
    for section in [name for name, _ in SUMMARY_PROVIDERS] + ["privacy_utility"]:
        order += [e.name for e in documented if e.section == section and e.column.dtype in SCALAR_DTYPES]
    return order


def warm_reports(campaign) -> None:
    """What the report pages read first, computed into the cache (``report_cache.warm``): the
    campaign summary table ("Reports"), and each submission's per-video report and summary
    as organizers and teams see them (their sections, shared by the other pages)."""
    campaign_summary_table(campaign)
    for submission in campaign.submissions.select_related("team", "campaign").order_by("pk"):
        for team in (False, True):
            per_video_report(submission, team=team)
            submission_summary(submission, team=team)


def summary_table_as_csv(campaign) -> str:
    """:func:`campaign_summary_table` as CSV text, floats rounded to the dictionary's precision."""
    return spreadsheet.frame_csv(dictionary.rounded(campaign_summary_table(campaign), "summary"))


def report_basename(submission) -> str:
    """File name stem for a submission's report, e.g. ``12-baselines-blur_face``."""
    return f"{submission.pk}-{slugify(submission.team.name)}-{slugify(submission.name)}"


def summary_as_dict(submission) -> dict:
    """:func:`submission_summary` made JSON-safe (NaN -> None, numpy scalars -> Python)."""
    return json.loads(json.dumps(jsonable(submission_summary(submission)), default=str))
