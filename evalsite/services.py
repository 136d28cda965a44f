"""Catalogue operations shared by the admin, the API and the management commands."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from automated.video import VideoInfo

from . import reports
from .models import (
    Campaign,
    MaskedVideo,
    Phase,
    SourceVideo,
    Submission,
    Team,
    check_team_name,
    delete_stored,
    find_team,
)
from .phases import create_run
from .signals import source_video_replaced
from .storage import store_video
from .validation import MaskedVideoError, compare_with_source, source_spec

REPORT_FORMATS = ("csv", "json")


def create_submission(
    campaign: Campaign,
    team_name: str,
    method: str,
    *,
    description: str = "",
    phase: str | Phase | None = None,
) -> Submission:
    """Create the submission ``method`` of team ``team_name`` in ``campaign``.

    The team is the campaign's team of that name, ignoring case (:func:`evalsite.models.find_team`:
    "team tester" is "Team Tester"), created if the campaign has none: a team of the same
    name in another campaign is another team and is never touched. The submission's
    ``team.name`` says which team was used.
    With ``phase`` (a :class:`Phase` or its name) the submission is a run of that phase
    (:func:`evalsite.phases.create_run`: numbered, primary if the team's first, quota and
    deadline checked).

    Raises
    ------
    ValueError
        If the team already has a submission of that name in the campaign, a name is
        empty, or ``phase`` names no phase of the campaign.
    evalsite.phases.Refused
        If the phase refuses a new run (closed, not open yet, the team's run quota used).
    """
    team_name, method = team_name.strip(), method.strip()
    if not team_name or not method:
        raise ValueError(f"team and method names must not be empty, got {team_name!r} and {method!r}")
    team_name = check_team_name(team_name)
    if isinstance(phase, str):
        found = campaign.phases.filter(name=phase.strip()).first()
        if found is None:
            known = ", ".join(campaign.phases.values_list("name", flat=True)) or "none"
            raise ValueError(f"campaign {campaign.slug!r} has no phase {phase!r}; its phases: {known}")
        phase = found
    if phase is not None and phase.campaign_id != campaign.pk:
        raise ValueError(f"phase {phase.name!r} is not a phase of campaign {campaign.slug!r}")
    team = find_team(campaign, team_name) or Team.objects.create(campaign=campaign, name=team_name)
    if phase is not None:
        return create_run(phase, team, method, description=description)
    try:
        with transaction.atomic():  # a savepoint, so the caller's transaction survives the error
            return Submission.objects.create(
                campaign=campaign, team=team, name=method, description=description
            )
    except IntegrityError:
        raise ValueError(
            f"team {team.name!r} already has a submission {method!r} in campaign {campaign.slug!r}"
        ) from None


def render_report(submission: Submission, fmt: str, team: bool = False) -> str:
    """The per-video report of ``submission`` as ``csv`` or ``json`` text (``team``: the
    team's view, without identity codes or video roles: :func:`evalsite.reports.per_video_report`)."""
    if fmt == "csv":
        return reports.report_as_csv(submission, team=team)
    if fmt == "json":
        return reports.report_as_json(submission, team=team)
    raise ValueError(f"format must be one of {REPORT_FORMATS}, got {fmt!r}")


def write_report(submission: Submission, fmt: str, path) -> Path:
    """Write the per-video report (``csv`` or ``json``) to ``path``; return the path."""
    path = Path(path)
    text = render_report(submission, fmt)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def write_summary(campaign: Campaign, path) -> Path:
    """Write the cross-submission summary CSV of ``campaign`` (one row per submission)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(reports.summary_table_as_csv(campaign), encoding="utf-8")
    return path


@dataclass(frozen=True)
class SourceReplacement:
    """Outcome of :func:`replace_source_video`: masked videos now flagged and now matching again."""

    flagged: list[MaskedVideo]
    cleared: list[MaskedVideo]


def replace_source_video(source: SourceVideo, new_file, *, name: str = "") -> SourceReplacement:
    """Replace the clear file of ``source``, its browser copy, and re-check its masked videos.

    The new file is probed (``DEID_FFMPEG_TIMEOUT_S``) and transcoded for browsers
    (``DEID_TRANSCODE_TIMEOUT_S``) before anything changes, so raters never get the old
    clip afterwards and a bad file changes nothing. Then, in one transaction, the row
    takes the new files and metadata and ``file_replaced_at`` (results computed before
    are reported stale; receivers of ``signals.source_video_replaced``, e.g. the trials
    app, set aside what was measured on the old file), and every current masked video of ``source`` is compared with
    the new clear video (frames, size, duration): a mismatch sets its ``check_code`` and
    ``check_message`` (its submission becomes incomplete, its rating items take no new
    trials), a match clears them. The old files are deleted after the commit.

    Parameters
    ----------
    source : SourceVideo
    new_file : path-like or binary file object
        The new clear video (e.g. an ``UploadedFile``).
    name : str
        File name whose suffix the stored file keeps (default: the path's name).

    Returns
    -------
    SourceReplacement

    Raises
    ------
    automated.video.VideoError
        If the new file is not a readable video, or probing/transcoding fails or times
        out (``VideoTimeout``); nothing is changed then.
    """
    name = name or (Path(new_file).name if isinstance(new_file, (str, Path)) else "video.mp4")
    with tempfile.TemporaryDirectory() as tmp:
        local = Path(tmp) / (Path(name).name or "video")  # probe messages name the given file
        if isinstance(new_file, (str, Path)):
            shutil.copyfile(new_file, local)
        else:
            with local.open("wb") as writer:
                shutil.copyfileobj(new_file, writer)
        info = VideoInfo.from_video_path(local, timeout_s=settings.DEID_FFMPEG_TIMEOUT_S)
        old_files = [f.name for f in (source.file, source.web_file) if f]
        stored = store_video(source, local, info, name=name, web_copy=True)
    try:
        with transaction.atomic():
            source.file_replaced_at = timezone.now()
            source.save()
            outcome = _recheck_masked_videos(source)
            source_video_replaced.send(sender=SourceVideo, source=source)
    except Exception:
        delete_stored(stored)
        raise
    storage = source.file.storage
    transaction.on_commit(lambda: [storage.delete(n) for n in old_files])
    return outcome


def _recheck_masked_videos(source: SourceVideo) -> SourceReplacement:
    spec = source_spec(source)
    flagged, cleared = [], []
    for masked in (
        MaskedVideo.objects.select_for_update().filter(source_video=source).select_related("submission")
    ):
        try:
            compare_with_source(
                masked.frame_count,
                (masked.width, masked.height),
                masked.fps,
                masked.duration_s,
                spec,
                shown=f"masked video of '{source.name}' in {masked.submission}",
            )
        except MaskedVideoError as error:
            masked.check_code, masked.check_message = (
                error.code,
                f"{error} (after the clear video was replaced)",
            )
            flagged.append(masked)
        else:
            if masked.check_code:
                cleared.append(masked)
            masked.check_code, masked.check_message = "", ""
        masked.save(update_fields=["check_code", "check_message"])
    return SourceReplacement(flagged, cleared)
