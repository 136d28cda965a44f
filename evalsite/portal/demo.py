"""The demo: real campaign, baseline submissions, automated face evaluation, reports, login.

``run_demo`` is what ``manage.py demo`` (and so ``make demo``) runs. Every step is
idempotent, so re-running neither duplicates nor crashes:

1. build the dataset folder ``<VAR_DIR>/demo_data`` from the real clips
   (``evalsite.demo_data``) and import it, unless the demo campaign already exists; give
   it a development and a test phase (:func:`ensure_phases`) and the built-in practice
   people (12 of the London face set, :func:`trials.practice.add_practice_faces`, as
   ``manage.py add_practice_faces`` does; nothing when it has practice identities or the
   set is absent), so practice trials show them with feedback and never an evaluated person;
2. for every baseline method (``automated.anonymizers.BASELINE_METHODS``) create the
   baseline submission (only missing masked videos are made). No browser copy is made
   here, of the clear or the masked videos: nothing but raters watch them, and opening
   rating makes the missing ones (``trials.tasks.prepare_campaign_media``), which on the
   demo's 13 baselines saved about 0.6 CPU s per video;
3. run the automated face evaluation on each, unless its latest completed run already
   has this configuration and covers every masked video, then a light attack suite
   (``DEMO_ATTACK``: clear, naive and parrot attackers; LBPH, Eigenfaces and the small
   CNN, without the slow dlib embeddings) so every demo report states a worst case;
4. write ``<VAR_DIR>/reports/<submission>.csv`` and ``.json`` per submission, the
   cross-submission ``summary.csv`` and the privacy-utility frontier ``frontier.png`` /
   ``.svg``; and the privacy-fairness example on real demographic groups,
   ``london_privacy_fairness.csv`` / ``.json`` (the London face photos, apart from the
   video campaign: ``demo_london``);
5. create (or reset) the staff login ``organizer`` with a new random password, organizer
   of the demo campaign with the catalogue/evaluation permissions, and the team login
   ``team-baselines`` (member of the baselines' team, for the team pages at /team/), and
   print them. Arguments are checked first (:func:`check_arguments`): a bad one changes
   nothing, not even a password.
"""

from __future__ import annotations

import contextlib
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import timedelta
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import connections
from django.utils import timezone

from automated.checks import check_stride
from automated.anonymizers import BASELINE_METHODS
from automated.django_app.attack_models import AttackRun
from automated.django_app import embedded
from automated.django_app.attack_service import attack_config, run_attack
from automated.django_app.evaluate_all import is_current
from automated.django_app.face_models import AutomatedRun
from automated.django_app.frontier_view import write_frontier_files
from automated.django_app.services import FACE_RUN, create_baseline_submission, run_face_evaluation
from automated.recognition import DEFAULT_EMBEDDER

from evalsite import dictionary, report_cache
from evalsite.demo_data import DEMO_CAMPAIGN_NAME, build_demo_dataset
from evalsite.importer import import_dataset
from evalsite.models import Campaign, Phase, ResultVisibility, Submission, Team
from evalsite.reports import report_basename
from evalsite.organizer_accounts import add_organizer
from evalsite.services import write_report, write_summary
from evalsite.team_accounts import add_team_member

from trials.practice import add_practice_faces

from .demo_london import london_privacy_fairness

ORGANIZER_USERNAME = "organizer"
TEAM_USERNAME = "team-baselines"
#: The demo's attack suite: one classic, one pixel-subspace and one learned recognizer, on
#: 4 cross-video folds over the 13 testable clips (ID01 5, ID03 1, ID07 3, ID11 4), each
#: identity's dealt round-robin: a fold tests at most 2 clips of ID01 and 1 of any other.
DEMO_ATTACK = {
    "attackers": ("clear", "naive", "parrot"),
    "recognizers": ("lbph", "eigenfaces", "cnn"),
    "n_folds": 4,
}
#: Baselines in flight at once after the first (:func:`_in_lanes`).
DEMO_LANES = 2


@dataclass
class DemoResult:
    """Where everything is after :func:`run_demo`."""

    campaign: Campaign
    username: str
    password: str
    report_paths: list[Path] = field(default_factory=list)
    summary_path: Path | None = None
    failures: list[str] = field(default_factory=list)
    team_username: str = ""
    team_password: str = ""


def check_arguments(*, stride: int, methods: list[str] | None) -> list[str]:
    """The baseline methods to run, after checking the demo's arguments (nothing is touched).

    Raises
    ------
    ValueError
        If ``stride`` is below 1 or a method is not one of ``BASELINE_METHODS`` (the
        message names the known ones).
    """
    check_stride(stride)
    unknown = [m for m in methods or () if m not in BASELINE_METHODS]
    if unknown:
        raise ValueError(
            f"unknown baseline method(s) {', '.join(map(repr, unknown))}; choose from {', '.join(BASELINE_METHODS)}"
        )
    return list(dict.fromkeys(methods)) if methods else list(BASELINE_METHODS)


def site_url(bind: str) -> str:
    """The browser address of a gunicorn ``bind`` (``DEID_WEB_BIND``), e.g. ``http://127.0.0.1:8001/``.

    A wildcard host (``0.0.0.0``, ``[::]``) is shown as ``127.0.0.1`` (this machine).

    Raises
    ------
    ValueError
        If ``bind`` is not ``host:port`` with a port in 1..65535 (e.g. a ``unix:`` socket).
    """
    host, _, port = bind.strip().rpartition(":")
    if not host or not port.isdigit() or not 1 <= int(port) <= 65535 or host.startswith("unix"):
        raise ValueError(f"cannot make a browser address of the bind {bind!r}: expected host:port")
    if host in ("0.0.0.0", "[::]", "::", "*"):
        host = "127.0.0.1"
    return f"http://{host}:{int(port)}/"


def ensure_demo_campaign(data_dir: Path, demo_dir: Path, log: Callable[[str], None]) -> Campaign:
    """The demo campaign, built and imported on the first call only."""
    existing = Campaign.objects.filter(name=DEMO_CAMPAIGN_NAME).first()
    if existing is not None:
        log(f"campaign '{existing.name}' already imported ({existing.source_videos.count()} videos)")
        return existing
    build_demo_dataset(data_dir, demo_dir)
    report = import_dataset(demo_dir, web_copies=False)  # made when rating opens
    log(f"built {demo_dir} and imported {report}")
    return report.campaign


def ensure_phases(campaign: Campaign, *, now=None) -> list[Phase]:
    """The demo's two phases (created once), so a newcomer sees the life cycle of a campaign:

    - ``development``: every other evaluated video (by name), open now, each team sees its
      own results at once, 10 runs and 5 uploads per day per team;
    - ``test``: the other evaluated videos, closing in 14 days, at most 5 runs per team
      (one primary), 2 uploads per day, failed uploads not counted; results blind until
      their release a day after the deadline, then public.

    The baselines stay outside the phases (reference rows in every view).
    """
    now = now or timezone.now()
    evaluated = list(campaign.source_videos.filter(in_evaluated_subset=True).order_by("name"))
    dev, created = Phase.objects.get_or_create(
        campaign=campaign,
        name="development",
        defaults={
            "order": 1,
            "max_runs": 10,
            "max_uploads_per_day": 5,
            "results_visibility": ResultVisibility.TEAM,
        },
    )
    if created:
        dev.source_videos.set(evaluated[0::2])
    closes = now + timedelta(days=14)
    test, created = Phase.objects.get_or_create(
        campaign=campaign,
        name="test",
        defaults={
            "order": 2,
            "closes_at": closes,
            "max_runs": 5,
            "max_uploads_per_day": 2,
            "results_visibility": ResultVisibility.PUBLIC,
            "results_release_at": closes + timedelta(days=1),
        },
    )
    if created:
        test.source_videos.set(evaluated[1::2])
    return [dev, test]


def ensure_organizer(campaign: Campaign) -> tuple[str, str]:
    """Create or reset the staff user ``organizer`` (:func:`evalsite.organizer_accounts.add_organizer`,
    a new password every run); return (username, new password)."""
    user, password = add_organizer(campaign, ORGANIZER_USERNAME, new_password=True)
    return user.username, password


def _evaluation_is_current(submission: Submission, stride: int, detector: str) -> bool:
    """True if the latest completed face run has these settings and scored exactly the
    videos a new run would plan (``FACE_RUN.plan``: attacker training material left out)."""
    run = AutomatedRun.objects.latest_completed_for(submission)
    return (
        run is not None
        and run.config.get("stride") == stride
        and run.config.get("detector") == detector
        and run.config.get("embedder") == DEFAULT_EMBEDDER  # a run of an older default is redone
        and set(run.video_scores.values_list("masked_video_id", flat=True))
        == set(FACE_RUN.plan(submission).values_list("pk", flat=True))
    )


def _attack_is_current(submission: Submission, config: dict) -> bool:
    """True if the latest completed attack run has ``config`` and is current (``evaluate_all.is_current``:
    its folds are those a new run would plan with today's video roles, no file replaced since)."""
    run = AttackRun.objects.latest_completed_for(submission)
    return run is not None and run.config == config and is_current(run, submission)


@dataclass
class _BaselineOutcome:
    report_paths: list[Path] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


def _baseline(
    campaign: Campaign, method: str, *, stride: int, detector: str, attack: bool, reports_dir: Path, log
) -> _BaselineOutcome:
    """One baseline: masked, evaluated, attacked (each unless current) and its two reports written.

    An error is kept in ``failures`` (one broken baseline must not hide the others)."""
    started = time.monotonic()
    outcome = _BaselineOutcome()
    try:
        submission = create_baseline_submission(campaign, method, web_copies=False)
        evaluated = _evaluation_is_current(submission, stride, detector)
        if not evaluated:
            run_face_evaluation(submission, stride=stride, detector=detector)
        attack_options = attack_config(**DEMO_ATTACK, stride=stride, detector=detector)
        attacked = not attack or _attack_is_current(submission, attack_options)
        if not attacked:
            run_attack(submission, **DEMO_ATTACK, stride=stride, detector=detector)
    except Exception as error:
        outcome.failures.append(f"{method}: {type(error).__name__}: {error}")
        log(f"  {method:22} FAILED: {error}")
        return outcome
    base = reports_dir / report_basename(submission)
    with report_cache.scope():  # the two files share one computation of the summary
        outcome.report_paths += [
            write_report(submission, "csv", f"{base}.csv"),
            write_report(submission, "json", f"{base}.json"),
        ]
    state = (
        "already evaluated"
        if evaluated and attacked
        else f"masked + evaluated{' + attacked' if attack else ''} in {time.monotonic() - started:.0f} s"
    )
    log(f"  {method:22} {state}")
    return outcome


def _in_lanes(work: Callable[[str], _BaselineOutcome], methods: list[str]) -> list[_BaselineOutcome]:
    """``work(method)`` for every method: the first alone, the others ``DEMO_LANES`` at a time.

    The first baseline fills what every later one reads (the clear side of the face and
    behaviour evaluation, the clear crops, the clear and naive attackers' models, the team).
    Then two baselines are in flight at once, each in a thread whose units go to the one
    process pool (``embedded.map_in_pool``, ``execute_run``): while one waits for its
    slowest unit or does its serial work (storing masked files, writing its reports), the
    other's units keep the second core busy (one at a time: 1.45 cores on average).
    One baseline at a time, in this thread, where the pool cannot serve (``pool_possible``:
    one worker, an in-memory database, a caller's open transaction). Outcomes in ``methods`` order.
    """
    if not methods:
        return []
    first = work(methods[0])
    rest = methods[1:]
    if len(rest) < 2 or DEMO_LANES < 2 or not embedded.pool_possible():
        return [first, *map(work, rest)]

    def in_thread(method: str) -> _BaselineOutcome:
        try:
            return work(method)
        finally:
            connections.close_all()  # this thread's own connections

    with ThreadPoolExecutor(DEMO_LANES, thread_name_prefix="demo-lane") as lanes:
        return [first, *lanes.map(in_thread, rest)]


def _beside_the_baselines(
    work: Callable[[Callable[[str], None]], list[Path]], log: Callable[[str], None]
) -> Callable[[], list[Path]]:
    """Start ``work(log)`` in a thread now; the returned call waits for its files.

    The London example (``demo_london``: about 50 CPU s of masking photos and dlib
    embeddings in this process, nothing in the pool) ran after the last baseline with the
    pool idle; beside the baselines it takes the time their lanes leave a core free. Its
    log lines are held and printed when its files are asked for, where they were printed
    before. Where the baselines run one at a time in this process (``pool_possible``
    false), ``work`` runs then, in this thread, as before.
    """
    if not embedded.pool_possible():
        return lambda: work(log)
    lines: list[str] = []
    future: Future = Future()

    def run() -> None:
        future.set_running_or_notify_cancel()
        try:
            future.set_result(work(lines.append))
        except BaseException as error:  # handed to whoever asks for the files
            future.set_exception(error)

    # A daemon thread: a demo stopped before its files are asked for (Ctrl-C or SIGTERM
    # during the baselines, a failed summary) exits at once. A ThreadPoolExecutor's
    # thread is joined when the interpreter exits: the process went on with this work,
    # whose files nobody would read, for its remaining minute, and a second Ctrl-C left
    # it running native code while the interpreter shut down.
    threading.Thread(target=run, name="demo-beside", daemon=True).start()

    def files() -> list[Path]:
        try:
            return future.result()
        finally:
            for line in lines:
                log(line)

    return files


@contextlib.contextmanager
def _reports_warmed_once(campaign: Campaign):
    """No report warming after each run while the baselines go (``DEID_WARM_REPORTS``: each
    completed run warmed the whole campaign's reports again, 10 s for the 2nd baseline and
    47 s for the 13th, with one core idle), then the campaign's reports warmed once
    (``report_cache.warm``), so the site's first pages read them from the cache.

    The pool's workers take the settings when they start, so it is restarted around the loop.
    """
    previous = settings.DEID_WARM_REPORTS
    embedded.shutdown_pool()
    settings.DEID_WARM_REPORTS = False
    try:
        yield
    finally:
        settings.DEID_WARM_REPORTS = previous
        embedded.shutdown_pool()
    if previous:
        report_cache.warm(campaign)


def run_demo(
    *,
    data_dir=None,
    var_dir=None,
    stride: int = 5,
    detector: str = "mediapipe",
    methods: list[str] | None = None,
    attack: bool = True,
    london: bool = True,
    log: Callable[[str], None] = print,
    on_ready: Callable[[DemoResult], None] | None = None,
) -> DemoResult:
    """Run the whole demo (see the module docstring); return where everything is.

    Parameters
    ----------
    data_dir : path-like, optional
        Real data folder; default ``settings.DATA_DIR``.
    var_dir : path-like, optional
        Where ``demo_data/`` and ``reports/`` go; default ``settings.VAR_DIR``.
    stride : int, default=5
        Evaluate every ``stride``-th frame.
    detector : str, default="mediapipe"
    methods : list of str, optional
        Baseline methods; default all of ``BASELINE_METHODS``.
    attack : bool, default=True
        Also run the ``DEMO_ATTACK`` suite on each baseline.
    london : bool, default=True
        Write the privacy-fairness example on the London face photos for the methods among
        ``demo_london.LONDON_METHODS`` (:func:`demo_london.london_privacy_fairness`).
    on_ready : callable, optional
        Called with the (partial) result once the campaign, its phases and the organizer
        login exist, before the first baseline (``manage.py demo --serve`` starts the web
        server there, so the site is up while the baselines are evaluated).

    Raises
    ------
    ValueError
        For a bad argument (:func:`check_arguments`, before anything is changed) or
        missing real data.

    Returns
    -------
    DemoResult
        ``failures`` lists methods whose masking or evaluation raised (the others still
        run and are reported).
    """
    methods = check_arguments(stride=stride, methods=methods)  # before anything is touched
    data_dir = Path(data_dir or settings.DATA_DIR)
    var_dir = Path(var_dir or settings.VAR_DIR)
    if not (data_dir / "videos").is_dir():
        raise ValueError(f"real data not found at {data_dir}: put it at ../shared/data or set DEID_DATA_DIR")
    campaign = ensure_demo_campaign(data_dir, var_dir / "demo_data", log)
    added = add_practice_faces(campaign)
    if added:
        log(f"{added} practice people (London face set) added for the practice trials")
    username, password = ensure_organizer(campaign)
    for phase in ensure_phases(campaign):
        closes = f", closes {phase.closes_at:%Y-%m-%d %H:%M %Z}" if phase.closes_at else ""
        log(
            f"phase {phase.name}: {phase.videos().count()} videos{closes}, results {phase.get_results_visibility_display()}"
        )
    result = DemoResult(campaign, username, password)
    if on_ready is not None:
        on_ready(result)
    reports_dir = var_dir / "reports"
    options = dict(stride=stride, detector=detector, attack=attack, reports_dir=reports_dir, log=log)
    london_files = _beside_the_baselines(
        lambda london_log: (
            london_privacy_fairness(
                data_dir,
                reports_dir,
                methods,
                cache_dir=Path(settings.CACHE_DIR) / "attack_embeddings",
                log=london_log,
            )
            if london
            else []
        ),
        log,
    )
    with _reports_warmed_once(campaign):
        for outcome in _in_lanes(lambda method: _baseline(campaign, method, **options), methods):
            result.report_paths += outcome.report_paths
            result.failures += outcome.failures
    with report_cache.scope():  # the summary's figures computed once for the table and the frontier
        result.summary_path = write_summary(campaign, reports_dir / "summary.csv")
        result.report_paths += write_frontier_files(campaign, reports_dir)
    dictionary.write(reports_dir / "dictionary.csv")  # what every report column means
    result.report_paths += london_files()  # the privacy-fairness example on real demographic groups
    baselines = Team.objects.filter(
        submissions__campaign=campaign, submissions__baseline_method__gt=""
    ).first()
    if baselines is not None:  # a team login to look at the team pages with
        user, result.team_password = add_team_member(baselines, TEAM_USERNAME, new_password=True)
        result.team_username = user.username
    return result
