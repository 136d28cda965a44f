"""Evaluate everything for a submission: the face evaluation (with behaviour), then the attack suite.

One call brings every automated part of a submission's report up to date, and starts only
what is missing: a part is left alone when a run of its kind is already pending or running,
or when the run its report shows (the latest completed one) is *current*: its plan is the
one a new run would make now (the same masked videos and, for the attack, the same folds:
a video role changed in the admin makes it out of date; ``plan_changes``), none of them
(nor a clear video) was replaced since it was queued (``evalsite.staleness``), and it has
the options asked for.
So a double click, a resent API call or a second organizer starts nothing twice; a failed
run is started again.

The parts, in order (``PARTS``):

- ``face``: ``services.create_face_run`` (detection, verification, identification, image
  metrics and, unless ``behaviour`` is false, behaviour preservation: ``automated.behaviour``);
- ``attack``: ``attack_service.create_attack_run``, once its inputs are ready: the attack
  needs every source video masked (unless ``allow_incomplete``) and at least two
  identities; until then the part is ``waiting``, with the reason.

Runs start through ``dispatch`` (``create_run`` then ``queue``), the path of the commands,
the admin actions and the API: queued on the broker once committed, face videos before
attack videos; without a broker they run in this process, one after the other (for web
requests in a thread, ``background=True``: ``embedded.execute``), so the request answers
at once and the progress page shows the progress. Callers: the admin actions
(``evaluate_everything`` and, with one part, "Run face evaluation" / "Run attack suite"),
the organizer page (``progress_views``), ``POST /api/submissions/<id>/evaluate/``
(``api.submission_evaluate``) and ``POST /api/submissions/<id>/runs/``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.db import transaction
from evalsite.models import MaskedVideo, Submission
from evalsite.staleness import videos_changed_since
from kombu.exceptions import OperationalError as BrokerError

from . import dispatch, lifecycle
from .run_models import RunBase
from evalsite.report_cache import cached, reads_progress

logger = logging.getLogger(__name__)

#: The parts of "evaluate everything", in the order they are started.
PARTS = ("face", "attack")

#: Options of each part when the caller gives none (each run's own defaults; deployments
#: and tests may set e.g. ``{"attack": {"recognizers": ["eigenfaces"]}}``).
DEFAULT_OPTIONS: dict[str, dict] = {"face": {}, "attack": {}}

#: What ``evaluate_everything`` did with a part.
STARTED, RUNNING, UP_TO_DATE, WAITING, NOT_QUEUED = (
    "started",
    "running",
    "up to date",
    "waiting",
    "not queued",
)


@dataclass(frozen=True)
class PartOutcome:
    """What ``evaluate_everything`` did with one part.

    Attributes
    ----------
    kind : {"face", "attack"}
    state : str
        ``"started"`` (a new run), ``"running"`` (one was already pending or running),
        ``"up to date"`` (the reported run is current), ``"waiting"`` (the part cannot
        start yet: ``detail`` says why) or ``"not queued"`` (the broker could not be
        reached; the new run was marked failed).
    run : RunBase or None
        The run that covers the part (new, active or current); None when waiting.
    detail : str
        One line for people, e.g. ``"run 7 completed (3/3 videos)"`` or the reason.
    """

    kind: str
    state: str
    run: RunBase | None
    detail: str

    def as_dict(self) -> dict:
        """JSON-ready: ``{"kind", "state", "run_id", "detail"}``."""
        return {
            "kind": self.kind,
            "state": self.state,
            "run_id": None if self.run is None else self.run.pk,
            "detail": self.detail,
        }


def run_permissions() -> list[str]:
    """The permissions needed to evaluate everything: adding a run of every part's kind."""
    perms = []
    for kind in PARTS:
        opts = dispatch.RUN_KINDS[kind].kind.model._meta
        perms.append(f"{opts.app_label}.add_{opts.model_name}")
    return perms


def may_evaluate(user) -> bool:
    """True if ``user`` may start every part (staff scoping of the submission is the caller's)."""
    return user.has_perms(run_permissions())


def plan_changes(run: RunBase, submission: Submission) -> list[str]:
    """Source videos a fresh plan of ``run``'s kind treats differently from ``run``'s stored plan.

    The fresh plan is what a new run with ``run``'s options would plan now:
    ``RunKind.plan`` (which masked videos it covers: a face run leaves attacker training
    material out) and ``RunKind.fresh_folds`` (the attack's cross-video folds,
    ``attack_service.plan_folds`` with the run's ``n_folds`` and ``seed``: which videos
    each fold tests). A role change in the admin (``SourceVideo.attacker_train``, e.g. an
    evaluated clip made the attacker's material, or the reverse) changes them, and so does
    a masked video uploaded or replaced since.

    Returns
    -------
    list of str
        Sorted names of the source videos covered by one plan only or tested in a fold the
        other plan does not have; ``[]`` when the plans are equal (folds compared as sets
        of tested videos, their numbering aside). A masked video deleted since is named
        ``"masked video <id> (deleted)"``.
    """
    kind = dispatch.RUN_KINDS[dispatch.kind_name(run)].kind
    fresh = list(kind.plan(submission).select_related("source_video__identity"))
    stored_folds = {frozenset(fold) for fold in getattr(run, "planned_folds", None) or []}
    fresh_folds = {frozenset(fold) for fold in kind.fresh_folds(run, fresh)}
    changed = set(run.planned_videos) ^ {m.pk for m in fresh}
    changed |= {pk for fold in stored_folds ^ fresh_folds for pk in fold}
    if not changed:
        return []
    names = dict(MaskedVideo.all_versions.filter(pk__in=changed).values_list("pk", "source_video__name"))
    return sorted({names.get(pk, f"masked video {pk} (deleted)") for pk in changed})


def settings_changes(run: RunBase, options: dict) -> list[str]:
    """The options in which ``run``'s configuration differs from ``options``, as ``"name: run value
    (now value)"`` lines (a face run of a configuration without ``behaviour`` measured it)."""
    config = {"behaviour": True, **run.config} if dispatch.kind_name(run) == "face" else run.config
    return [
        f"{name}: {config.get(name)!r} (now {value!r})"
        for name, value in sorted(options.items())
        if config.get(name) != value
    ]


def campaign_settings_changes(run: RunBase, submission: Submission) -> list[str]:
    """:func:`settings_changes` against the campaign's current settings of the run's part
    (``Campaign.evaluation_options``; registered with ``evalsite.staleness``)."""
    return settings_changes(
        run, dict(submission.campaign.evaluation_options.get(dispatch.kind_name(run)) or {})
    )


def is_current(run: RunBase, submission: Submission, options: dict | None = None) -> bool:
    """True if completed ``run`` still describes ``submission``'s current videos with ``options``.

    Current means: its stored plan equals a fresh plan of its kind (``plan_changes``: the
    same masked videos and, for the attack, the same cross-video folds, so a video whose
    role changed makes it out of date), no masked or clear file among them was replaced
    after the run was created (``evalsite.staleness.videos_changed_since``), and every
    option in ``options`` (those the caller asked for explicitly, e.g. ``{"stride": 10}``)
    has that value in the run's configuration. A face run of a configuration without
    ``behaviour`` measured it.
    """
    if settings_changes(run, options or {}):
        return False
    if plan_changes(run, submission):
        return False
    return not videos_changed_since(submission, run.created_at, run.planned_videos)


def covering_run(kind: str, submission: Submission, options: dict | None = None) -> RunBase | None:
    """The run that already covers part ``kind``: a pending or running one, else the current completed one.

    A pending or running run covers the part whatever its options (it is finishing; a
    second run of the same work would double the load). Returns None when the part has
    to be started.
    """
    model = dispatch.RUN_KINDS[kind].kind.model
    active = model.objects.filter(submission=submission, status__in=lifecycle.ACTIVE).order_by("pk").first()
    if active is not None:
        return active
    latest = model.objects.latest_completed_for(submission)
    if latest is not None and is_current(latest, submission, options):
        return latest
    return None


def _asked(kind: str, options: dict) -> dict:
    """The options of part ``kind``: ``options[kind]`` if given, else ``DEFAULT_OPTIONS``."""
    return dict(options[kind] if kind in options else DEFAULT_OPTIONS.get(kind) or {})


class _DryRun(Exception):
    """Rolls back the run ``waiting_reason`` created to see that it could."""


def waiting_reason(kind: str, submission: Submission, options: dict | None = None) -> str | None:
    """Why part ``kind`` of ``submission`` cannot start now (``evaluate_everything``'s "waiting"), or None.

    The reason is the ``ValueError`` of ``dispatch.create_run``, the very check
    ``evaluate_everything`` makes (options, an incomplete submission, fewer than two
    identities for the attack...), run in a savepoint that is always rolled back, so
    nothing is created. ``options`` as for ``evaluate_everything``.

    Returns
    -------
    str or None
        E.g. ``"submission 'T / m' is incomplete: 1 of 3 source videos have no masked
        video (lwbsza); upload them, ..."``; None when a run could start.
    """
    try:
        with transaction.atomic():
            dispatch.create_run(kind, submission, **_asked(kind, dict(options or {})))
            raise _DryRun
    except _DryRun:
        return None
    except ValueError as error:
        return str(error)


def not_run_text(kind: str, submission: Submission) -> str:
    """The line of a part never run: ``"<kind>: waiting: <reason>"`` (``waiting_reason``) or ``"<kind>: not run"``.

    With the default options, so it says what "evaluate everything" would (the organizer
    page, the progress page).
    """
    reason = waiting_reason(kind, submission)
    return f"{kind}: not run" if reason is None else f"{kind}: {WAITING}: {reason}"


def _describe(run: RunBase) -> str:
    return f"{dispatch.kind_name(run)} run {run.pk}: {dispatch.describe(run)}"


def evaluate_everything(
    submission: Submission,
    options: dict | None = None,
    *,
    background: bool = False,
    parts: tuple[str, ...] | list[str] = PARTS,
) -> list[PartOutcome]:
    """Start every part of ``submission``'s automated evaluation that is not covered yet.

    Parameters
    ----------
    submission : Submission
    options : dict, optional
        ``{"face": {...}, "attack": {...}}``: options of each part's run, as for
        ``dispatch.start_run`` (``services.create_face_run``,
        ``attack_service.attack_config``); a part not given takes ``DEFAULT_OPTIONS``,
        keys not given the run's defaults. The options also decide whether a completed
        run is current (``is_current``).
    background : bool, default=False
        Without a broker, execute the new runs in a thread of this process
        (``embedded.execute``) and return at once, so a web request answers within its
        timeout and the progress page shows the progress. With a broker it changes
        nothing (the workers run them).
    parts : sequence of str, default=PARTS
        The parts to consider (the admin's "Run face evaluation" and the runs API: one).

    Returns
    -------
    list of PartOutcome
        One per part of ``parts``, in the order of ``PARTS``; runs described after queueing
        (executed here without a broker and without ``background``: finished, completed or
        failed with the error stored on them; else pending or running).

    Raises
    ------
    ValueError
        Naming the unknown part if ``options`` or ``parts`` has one not in ``PARTS``.

    Notes
    -----
    First resumes the submission's runs whose in-process owner is gone
    (``dispatch.adopt_orphans``; a server restarted during a run), so their parts are
    "running" again, not stuck. Deciding and creating happen in one transaction that locks
    the submission row, so two calls at once create one set of runs (the second sees the
    first's pending runs). A part that cannot start is ``waiting`` with the reason (e.g. an
    incomplete submission, fewer than two identities for the attack); the other parts
    still start.
    """
    options = dict(options or {})
    unknown = sorted((set(options) | set(parts)) - set(PARTS))
    if unknown:
        raise ValueError(f"unknown part(s) {', '.join(unknown)}; parts are {', '.join(PARTS)}")
    parts = [kind for kind in PARTS if kind in parts]
    resumed = dispatch.adopt_orphans(submission)
    outcomes: dict[str, PartOutcome] = {}
    created: list[RunBase] = []
    try:
        with transaction.atomic():
            Submission.objects.select_for_update().filter(pk=submission.pk).first()
            for kind in parts:
                asked = _asked(kind, options)
                run = covering_run(kind, submission, asked)
                if run is not None:
                    state = RUNNING if run.status in lifecycle.ACTIVE else UP_TO_DATE
                    outcomes[kind] = PartOutcome(kind, state, run, _describe(run))
                    continue
                try:
                    run = dispatch.create_run(kind, submission, **asked)
                except ValueError as error:  # inputs not ready (or bad options): nothing created
                    outcomes[kind] = PartOutcome(kind, WAITING, None, str(error))
                    continue
                created.append(run)
    except BaseException:  # nothing created: the adopted orphans are resumed all the same
        dispatch.queue_runs(resumed, background=background, keep_going=True)
        raise
    # Committed: executed in this process without a broker (resumed runs first), else queued.
    if dispatch.runs_in_process():
        dispatch.queue_runs([*resumed, *created], background=background, keep_going=True)
    else:
        dispatch.queue_runs(resumed)
        for run in created:
            try:
                dispatch.queue(run)
            except BrokerError as error:
                lifecycle.fail(type(run), run.pk, f"could not queue the run: {error}")
                run.refresh_from_db()
                outcomes[dispatch.kind_name(run)] = PartOutcome(
                    dispatch.kind_name(run), NOT_QUEUED, run, _describe(run)
                )
    for run in created:
        kind = dispatch.kind_name(run)
        if kind not in outcomes:
            outcomes[kind] = PartOutcome(kind, STARTED, run, _describe(run))
    for kind, outcome in outcomes.items():  # what they are now (a resumed one may have finished)
        if outcome.state == RUNNING:
            outcomes[kind] = PartOutcome(kind, RUNNING, outcome.run, _describe(outcome.run))
    return [outcomes[kind] for kind in parts]


def part_states(submission: Submission) -> list[dict]:
    """:func:`_part_states`, cached by the campaign's inputs inside a request (``evalsite.report_cache``)."""
    return cached(submission.campaign_id, ("part_states", submission.pk), lambda: _part_states(submission))


def warm_part_states(campaign) -> None:
    """:func:`part_states` of every submission of ``campaign`` (the organizer page's lines),
    computed into the cache (``evalsite.report_cache.warm``)."""
    for submission in campaign.submissions.select_related("team", "campaign").order_by("pk"):
        part_states(submission)


def _part_states(submission: Submission) -> list[dict]:
    """Each part's newest run as one line for the organizer page, e.g. ``"face run 7: running: 2/3 videos"``.

    Returns
    -------
    list of dict
        ``{"kind", "run" (or None), "text"}`` per part of ``PARTS``; ``text`` adds
        ``"(out of date)"`` to a completed run that is no longer current (``is_current``).
        A part never run is ``not_run_text``: ``"<kind>: waiting: <reason>"`` when it
        cannot start yet, else ``"<kind>: not run"``.
    """
    reads_progress(submission.campaign_id, submission)  # the newest run may be pending or running
    states = []
    for kind in PARTS:
        model = dispatch.RUN_KINDS[kind].kind.model
        run = model.objects.filter(submission=submission).order_by("-created_at", "-pk").first()
        if run is None:
            states.append({"kind": kind, "run": None, "text": not_run_text(kind, submission)})
            continue
        text = _describe(run)
        if run.status == run.Status.COMPLETED and not is_current(run, submission):
            text += " (out of date)"
        states.append({"kind": kind, "run": run, "text": text})
    return states
