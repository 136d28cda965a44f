"""Phases and runs: deadlines, quotas, primary runs and who sees which results (issue 23).

A campaign may have phases (:class:`evalsite.models.Phase`, e.g. *development* with open
scores and a blind *test*); a team's submission in a phase is a *run* with a number, a
name, a system description and a primary flag (MediaEval: up to N runs, one primary).
The rules live here, in one place, for every path (admin, API, team pages, commands):

- **Opening and deadline**: an upload before ``opens_at`` or after ``closes_at`` is
  refused (:class:`Refused`, code ``phase_not_open`` / ``deadline_passed``) naming the
  time; an organizer may override the deadline, and the upload records it
  (``SubmissionUpload.late``, ``deadline_overridden_by``).
- **Quotas**: at most ``max_runs`` runs per team (``run_quota``), ``max_uploads`` uploads
  per team in the phase (``upload_quota``) and ``max_uploads_per_day`` per UTC day
  (``daily_upload_quota``); an upload that failed as a whole counts only when
  ``failed_uploads_count`` is set. Quotas bind teams and organizers alike.
- **Result visibility**: :func:`team_sees_results` (a team's own results: page, CSV,
  JSON, figures) and :func:`public_results` (the phase's rows on the leaderboard teams
  see). Organizers always see everything. Runs without a phase are always visible, as
  before phases existed.
"""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Max, Q, QuerySet
from django.utils import timezone

from .booleans import parse_boolean
from .models import Phase, ResultVisibility, Submission, SubmissionUpload, Team, UploadStatus

#: ``%PDF-``: the first bytes of every PDF file (ISO 32000-1, section 7.5.2).
PDF_MAGIC = b"%PDF-"


class Refused(ValueError):
    """An upload or a new run the phase's rules refuse; ``code`` names the rule.

    Codes: ``phase_not_open``, ``deadline_passed``, ``run_quota``, ``upload_quota``,
    ``daily_upload_quota``, ``not_a_pdf``, ``pdf_too_large``.
    """

    def __init__(self, message: str, code: str):
        super().__init__(message)
        self.code = code


def _when(moment: dt.datetime) -> str:
    return timezone.localtime(moment, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


# --- results ------------------------------------------------------------------------


def released(phase: Phase | None, now: dt.datetime | None = None) -> bool:
    """True when teams may see results of ``phase`` (no phase: always).

    Released means: visibility not ``hidden`` and the release time (if any) has passed.
    """
    if phase is None:
        return True
    if phase.results_visibility == ResultVisibility.HIDDEN:
        return False
    return phase.results_release_at is None or (now or timezone.now()) >= phase.results_release_at


def team_sees_results(submission: Submission, now: dt.datetime | None = None) -> bool:
    """Whether the submission's own team may see its results (report, summary, figures) now."""
    return released(submission.phase, now)


def public_results(phase: Phase | None, now: dt.datetime | None = None) -> bool:
    """Whether other teams may see the phase's rows on a published leaderboard now."""
    return phase is None or (released(phase, now) and phase.results_visibility == ResultVisibility.PUBLIC)


def hidden_message(phase: Phase) -> str:
    """What a team is told instead of its results in ``phase``."""
    if phase.results_visibility == ResultVisibility.HIDDEN:
        return f"Results of the {phase.name} phase are hidden: the organizer has not released them."
    return f"Results of the {phase.name} phase are released on {_when(phase.results_release_at)}."


def leaderboard_submissions(
    campaign, *, viewer_teams=None, primary_only: bool = False, now: dt.datetime | None = None
) -> QuerySet[Submission]:
    """The campaign's runs a team's leaderboard may show: runs of public, released phases (or
    of no phase), plus the viewer's own runs of released phases; ``primary_only`` keeps
    primary runs (and runs of no phase: baselines, campaigns without phases).

    ``viewer_teams`` None: what the organizer sees (every run), filtered only by
    ``primary_only``.
    """
    runs = Submission.objects.filter(campaign=campaign)
    if primary_only:
        runs = runs.filter(Q(phase__isnull=True) | Q(primary=True))
    if viewer_teams is None:
        return runs
    teams = [t.pk if isinstance(t, Team) else t for t in viewer_teams]
    public = [p.pk for p in campaign.phases.all() if public_results(p, now)]
    own = [p.pk for p in campaign.phases.all() if released(p, now)]
    return runs.filter(Q(phase__isnull=True) | Q(phase__in=public) | Q(phase__in=own, team__in=teams))


def runs_from_query(campaign, params, *, viewer_teams=None) -> QuerySet[Submission]:
    """:func:`leaderboard_submissions` narrowed by a request's ``?phase=<name or id>`` and
    ``?primary=1`` (primary runs only; read by :func:`evalsite.booleans.parse_boolean`).

    Raises
    ------
    NotABoolean
        (a ``ValueError``) If ``primary`` is given but is no yes/no word: ``?primary=maybe``
        must not quietly show every run (issue 21).
    ValueError
        If ``phase`` names no phase of the campaign (naming the campaign's phases).
    """
    primary = "primary" in params and parse_boolean(params["primary"], "primary")
    runs = leaderboard_submissions(campaign, viewer_teams=viewer_teams, primary_only=primary)
    wanted = str(params.get("phase", "")).strip()
    if wanted:
        phases = campaign.phases.all()
        phase = next((p for p in phases if wanted in (str(p.pk), p.name)), None)
        if phase is None:
            known = ", ".join(p.name for p in phases) or "none"
            raise ValueError(f"campaign {campaign.slug!r} has no phase {wanted!r}; its phases: {known}")
        runs = runs.filter(phase=phase)
    return runs


# --- uploads ------------------------------------------------------------------------


def counted_uploads(team: Team, phase: Phase) -> QuerySet[SubmissionUpload]:
    """Uploads of ``team`` to its runs in ``phase`` that count against the quotas."""
    uploads = SubmissionUpload.objects.filter(submission__team=team, submission__phase=phase)
    if not phase.failed_uploads_count:
        uploads = uploads.exclude(status=UploadStatus.FAILED)
    return uploads


def check_open(phase: Phase, now: dt.datetime, *, override_deadline: bool = False) -> bool:
    """Raise :class:`Refused` if ``phase`` takes nothing at ``now``; return True when late
    (after ``closes_at``, accepted only with ``override_deadline``)."""
    if phase.opens_at and now < phase.opens_at:
        raise Refused(
            f"the {phase.name} phase opens on {_when(phase.opens_at)}: nothing can be submitted before",
            "phase_not_open",
        )
    if phase.closes_at and now >= phase.closes_at:
        if not override_deadline:
            raise Refused(
                f"the {phase.name} phase closed on {_when(phase.closes_at)} (the submission deadline): "
                "uploads are no longer accepted; ask the organizer if you believe this is wrong",
                "deadline_passed",
            )
        return True
    return False


def check_upload(
    submission: Submission, *, now: dt.datetime | None = None, override_deadline: bool = False
) -> bool:
    """Raise :class:`Refused` if the run's phase refuses an upload now; return True if it is late.

    Checks the opening time, the deadline (``override_deadline``: an organizer accepts it
    late), and the team's upload quotas (total and per UTC day) counting
    :func:`counted_uploads`. A run of no phase is never refused.
    """
    phase = submission.phase
    if phase is None:
        return False
    now = now or timezone.now()
    late = check_open(phase, now, override_deadline=override_deadline)
    uploads = counted_uploads(submission.team, phase)
    failed = "" if phase.failed_uploads_count else " (failed uploads do not count)"
    if phase.max_uploads is not None and uploads.count() >= phase.max_uploads:
        raise Refused(
            f"team {submission.team.name!r} has used its {phase.max_uploads} upload(s) of the {phase.name} "
            f"phase{failed}",
            "upload_quota",
        )
    if phase.max_uploads_per_day is not None:
        day = now.astimezone(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        today = uploads.filter(uploaded_at__gte=day, uploaded_at__lt=day + dt.timedelta(days=1)).count()
        if today >= phase.max_uploads_per_day:
            raise Refused(
                f"team {submission.team.name!r} has used its {phase.max_uploads_per_day} upload(s) per day of "
                f"the {phase.name} phase{failed}; the next day starts on {_when(day + dt.timedelta(days=1))}",
                "daily_upload_quota",
            )
    return late


# --- runs ---------------------------------------------------------------------------


def check_description_pdf(file) -> None:
    """Raise :class:`Refused` unless ``file`` (an open binary file or ``UploadedFile``) is a
    PDF (its first bytes ``%PDF-``) of at most ``DEID_DESCRIPTION_PDF_MAX_BYTES``."""
    limit = settings.DEID_DESCRIPTION_PDF_MAX_BYTES
    size = getattr(file, "size", None)
    if size is None:
        file.seek(0, 2)
        size = file.tell()
    if size > limit:
        raise Refused(
            f"the system description PDF is {size} bytes; at most {limit} bytes are accepted", "pdf_too_large"
        )
    file.seek(0)
    head = file.read(len(PDF_MAGIC))
    file.seek(0)
    if head != PDF_MAGIC:
        raise Refused(
            f"the system description must be a PDF (a file starting with %PDF-), got one starting with {head!r}",
            "not_a_pdf",
        )


def check_new_run(phase: Phase, team: Team, now: dt.datetime | None = None) -> None:
    """Raise :class:`Refused` if ``phase`` takes no new run of ``team`` now (not open yet,
    closed, or ``max_runs`` runs entered)."""
    check_open(phase, now or timezone.now())
    if (
        phase.max_runs is not None
        and Submission.objects.filter(team=team, phase=phase).count() >= phase.max_runs
    ):
        raise Refused(
            f"team {team.name!r} has entered its {phase.max_runs} run(s) of the {phase.name} phase: "
            "no further run is accepted",
            "run_quota",
        )


def create_run(
    phase: Phase,
    team: Team,
    name: str,
    *,
    description: str = "",
    pdf=None,
    now: dt.datetime | None = None,
) -> Submission:
    """Enter a new run of ``team`` in ``phase``: the next run number; primary if it is the
    team's first run of the phase.

    Parameters
    ----------
    phase, team : Phase, Team
        Of the same campaign.
    name : str
        The run's (method's) name, unique per team in the campaign.
    description : str
        The system description (method, short description, link to working notes).
    pdf : file, optional
        A PDF system description (:func:`check_description_pdf`).

    Raises
    ------
    Refused
        Phase not open or closed (``phase_not_open``, ``deadline_passed``), the team's
        ``max_runs`` reached (``run_quota``), a bad PDF.
    ValueError
        Empty or duplicate name, a team of another campaign.
    """
    name = name.strip()
    if not name:
        raise ValueError("a run's name must not be empty")
    if team.campaign_id != phase.campaign_id:
        raise ValueError(f"team {team.name!r} is not a team of campaign {phase.campaign.slug!r}")
    if pdf is not None:
        check_description_pdf(pdf)
    with transaction.atomic():
        Team.objects.select_for_update().filter(pk=team.pk).first()  # one run number at a time per team
        check_new_run(phase, team, now)
        runs = Submission.objects.filter(team=team, phase=phase)
        number = (runs.aggregate(n=Max("run_number"))["n"] or 0) + 1
        run = Submission(
            campaign=phase.campaign,
            team=team,
            phase=phase,
            name=name,
            description=description,
            run_number=number,
            primary=not runs.filter(primary=True).exists(),
        )
        try:
            with transaction.atomic():
                if pdf is not None:
                    run.description_pdf.save(getattr(pdf, "name", "description.pdf"), pdf, save=False)
                run.save()
        except IntegrityError:
            if run.description_pdf:
                run.description_pdf.storage.delete(run.description_pdf.name)
            raise ValueError(
                f"team {team.name!r} already has a run named {name!r} in campaign {phase.campaign.slug!r}"
            ) from None
    return run


def set_primary(run: Submission) -> Submission:
    """Make ``run`` its team's primary run of its phase (the previous one no longer is).

    Raises
    ------
    ValueError
        If the run belongs to no phase.
    """
    if run.phase_id is None:
        raise ValueError(f"{run} belongs to no phase: only runs of a phase have a primary flag")
    with transaction.atomic():
        # One choice at a time per team (as create_run): two at once each cleared the
        # primary flag they saw, then the second's own flag broke the one-primary rule.
        Team.objects.select_for_update().filter(pk=run.team_id).first()
        Submission.objects.filter(team=run.team_id, phase=run.phase_id, primary=True).exclude(
            pk=run.pk
        ).update(primary=False)
        Submission.objects.filter(pk=run.pk).update(primary=True)
    run.primary = True
    return run
