"""Server time of every organizer and team page on a campaign shaped like the demo's.

The campaign: the real demo dataset (``evalsite.demo_data``: 11 identities, 24 clear
videos, 4 of them attacker training material), imported without web copies, and one
submission per baseline method (13, team "Baselines") plus the team submission
"Team Owl / owl-blur" (14 submissions x 24 masked videos = 336). Every submission has a
completed face run (one score row per evaluated video, values drawn with a fixed seed)
and a completed attack run (3 recognizers x 3 attackers, per-video rows on the 13
tested videos); ``--raters N`` (default 10) raters answer the identity and action trials
of the clear videos and of 3 submissions' masked videos (20 videos each: N x 20 x 4 x 2
responses). No video file is read: the pages only read the database.

Each page is requested with Django's test ``Client`` (the whole server side: middleware,
views, queries, templates; no network) on a fresh in-memory SQLite database: ``first`` is
the first request after the results were written, ``warm`` the median of the next
``--repeat`` (default 3), ``other_worker`` the first request of another server process
(a fresh object of the configured report cache: a per-process memory cache starts empty,
the shared folder or Redis does not; ``evalsite.report_cache``). ``queries`` is the SQL
count of the warm request. With ``--warm`` the campaign's reports are first computed into
the cache as the task queued when its last run finishes does (``report_cache.warm``; its
time is printed). The team submission page is measured again while a face run is under
way (``... (run active)``). The report cache's fingerprint of the campaign (read once per
request) is timed on its own too (median of 9 reads, printed with its query count).
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import tempfile
import time

import numpy as np

ATTACK_RECOGNIZERS = ("lbph", "eigenfaces", "cnn")
ATTACK_ATTACKERS = ("clear", "naive", "parrot")


def _face_run(submission, rng) -> None:
    """A completed face run with one score row per planned video (as ``run_face_evaluation`` leaves it)."""
    from django.utils import timezone

    from automated.django_app.face_models import AutomatedRun, VideoScore
    from automated.django_app.services import create_face_run
    from evalsite.models import MaskedVideo

    run = create_face_run(submission, stride=5, detector="mediapipe", behaviour=False)
    rows = []
    for masked in MaskedVideo.objects.filter(pk__in=run.planned_videos):
        clear_faces = int(rng.integers(10, 16))
        rows.append(
            VideoScore(
                run=run,
                masked_video=masked,
                frames_tested=15,
                clear_faces=clear_faces,
                masked_faces=int(rng.integers(0, clear_faces + 1)),
                mean_iou=float(rng.uniform(0.3, 0.9)),
                detection_failure_rate=float(rng.uniform(0, 1)),
                match_rate=float(rng.uniform(0, 1)),
                rank1_rate=float(rng.uniform(0, 1)),
                mean_rank=float(rng.uniform(1, 5)),
                mean_genuine_distance=float(rng.uniform(0.2, 1.2)),
                clear_match_rate=1.0,
                clear_rank1_rate=1.0,
                chance_level=1 / 11,
                n_identities=11,
                ssim=float(rng.uniform(0.2, 0.95)),
                psnr_db=float(rng.uniform(15, 35)),
                psnr_identical_frames=0,
                n_face_tracks=1,
                faces_leaked=int(rng.integers(0, 2)),
                faces_detected=int(rng.integers(0, 2)),
                faces_recognisable=int(rng.integers(0, 2)),
                all_faces=clear_faces,
                all_faces_mean_iou=float(rng.uniform(0.3, 0.9)),
                all_faces_detection_failure_rate=float(rng.uniform(0, 1)),
            )
        )
    VideoScore.objects.bulk_create(rows)
    AutomatedRun.objects.filter(pk=run.pk).update(
        status="completed", started_at=timezone.now(), finished_at=timezone.now(), videos_done=len(rows)
    )


def _attack_run(submission, rng) -> None:
    """A completed attack run: the 3 x 3 accuracy table and the worst case's per-video rows."""
    from django.utils import timezone

    from automated.django_app.attack_models import AttackResult, AttackRun, AttackVideoResult
    from automated.django_app.attack_service import create_attack_run
    from evalsite.models import MaskedVideo

    run = create_attack_run(submission, attackers=ATTACK_ATTACKERS, recognizers=ATTACK_RECOGNIZERS, n_folds=4)
    results = []
    for recognizer in ATTACK_RECOGNIZERS:
        for attacker in ATTACK_ATTACKERS:
            accuracy = 1.0 if attacker == "clear" else float(rng.uniform(0.05, 0.9))
            results.append(
                AttackResult(
                    run=run,
                    recognizer=recognizer,
                    attacker=attacker,
                    subset_size=11,
                    n_identities=11,
                    n_train=300,
                    n_test=150,
                    accuracy=accuracy,
                    chance_level=1 / 11,
                    chance_normalised=(accuracy - 1 / 11) / (10 / 11),
                    n_folds=4,
                    sd=0.05,
                    min_accuracy=max(0.0, accuracy - 0.1),
                    max_accuracy=min(1.0, accuracy + 0.1),
                    ci_low=max(0.0, accuracy - 0.15),
                    ci_high=min(1.0, accuracy + 0.15),
                )
            )
    AttackResult.objects.bulk_create(results)
    tested = {pk for fold in run.planned_folds for pk in fold}
    AttackVideoResult.objects.bulk_create(
        AttackVideoResult(run=run, source_video=m.source_video, n_test=10, accuracy=float(rng.uniform(0, 1)))
        for m in MaskedVideo.objects.filter(pk__in=tested).select_related("source_video")
    )
    AttackRun.objects.filter(pk=run.pk).update(
        status="completed",
        started_at=timezone.now(),
        finished_at=timezone.now(),
        videos_done=run.videos_total,
        folds_done=run.folds_total,
    )


def _ratings(campaign, submissions, n_raters: int, rng) -> None:
    """``n_raters`` raters answer identity and action trials of the clear and the masked videos."""
    from trials.models import Item, Rater, RatingSession, Response, Trial, TrialKind

    videos = [v for v in campaign.source_videos.order_by("name") if v.role == "evaluated"]
    conditions = [None] + [
        {m.source_video_id: m for m in s.masked_videos.filter(current=True)} for s in submissions
    ]
    items = {}
    for video in videos:
        for condition in conditions:
            masked = None if condition is None else condition.get(video.pk)
            for task in ("identity", "action"):
                items[video.pk, None if masked is None else masked.pk, task] = Item.objects.create(
                    campaign=campaign,
                    source_video=video,
                    masked_video=masked,
                    task=task,
                    target_count=n_raters,
                )
    for r in range(n_raters):
        rater = Rater.objects.create(campaign=campaign, participant_code=f"bench-rater-{r}")
        session = RatingSession.objects.create(rater=rater, campaign=campaign)
        trials = [
            Trial(
                session=session,
                position=position,
                kind=TrialKind.ITEM,
                task=item.task,
                item=item,
                source_video_id=item.source_video_id,
                correct_choice="1",
            )
            for position, item in enumerate(items.values())
        ]
        Trial.objects.bulk_create(trials)
        Response.objects.bulk_create(
            Response(
                trial=trial,
                choice="1" if (correct := bool(rng.uniform() < 0.6)) else "2",
                correct=correct,
                response_time_ms=int(rng.integers(800, 5000)),
            )
            for trial in Trial.objects.filter(session=session)
        )


def build_campaign(n_raters: int = 10) -> dict:
    """Build the benchmark's campaign (module docstring) in the current database.

    Returns ``{"campaign", "organizer", "team_user", "submissions" (list), "team_submission"}``.
    """
    from django.conf import settings
    from django.contrib.auth.models import User

    from automated.anonymizers import BASELINE_METHODS
    from evalsite.demo_data import build_demo_dataset
    from evalsite.importer import import_dataset
    from evalsite.models import Campaign, LeaderboardVisibility, MaskedVideo, Submission
    from evalsite.portal.demo import ensure_organizer
    from evalsite.services import create_submission

    rng = np.random.default_rng(21)
    with tempfile.TemporaryDirectory() as folder:
        campaign = import_dataset(
            build_demo_dataset(settings.DATA_DIR, f"{folder}/demo"), web_copies=False
        ).campaign
    Campaign.objects.filter(pk=campaign.pk).update(leaderboard_visibility=LeaderboardVisibility.ANONYMISED)
    campaign.refresh_from_db()
    ensure_organizer(campaign)
    organizer = User.objects.get(username="organizer")
    submissions = []
    for method in BASELINE_METHODS:
        submission = create_submission(campaign, "Baselines", method)
        Submission.objects.filter(pk=submission.pk).update(baseline_method=method)
        submissions.append(submission)
    team_submission = create_submission(campaign, "Team Owl", "owl-blur", description="Gaussian blur")
    submissions.append(team_submission)
    videos = list(campaign.source_videos.order_by("name"))
    MaskedVideo.objects.bulk_create(
        MaskedVideo(submission=s, source_video=v, file=f"masked/bench-{s.pk}-{v.name}.mp4")
        for s in submissions
        for v in videos
    )
    for submission in submissions:
        _face_run(submission, rng)
        _attack_run(submission, rng)
    if n_raters:
        _ratings(campaign, [submissions[0], submissions[1], team_submission], n_raters, rng)
    team_user = User.objects.create_user("owl-member", password="bench-owl-member")
    team_submission.team.members.add(team_user)
    return {
        "campaign": campaign,
        "organizer": organizer,
        "team_user": team_user,
        "submissions": submissions,
        "team_submission": team_submission,
    }


def page_urls(built: dict) -> list[tuple[str, str, str]]:
    """``(who, page, url)`` for every organizer and team page of the built campaign."""
    from django.urls import reverse

    from automated.django_app.attack_models import AttackRun

    campaign, mine = built["campaign"], built["team_submission"]
    baseline = built["submissions"][0]
    attack_run = AttackRun.objects.filter(submission=baseline).latest("pk")
    organizer = [
        ("campaign list", reverse("trials:organizer")),
        ("campaign page", reverse("trials:organizer_campaign", args=[campaign.pk])),
        ("summary CSV (Reports)", reverse("campaign-summary", args=[campaign.pk]) + "?format=csv"),
        ("leaderboard", reverse("leaderboard:page", args=[campaign.pk])),
        ("leaderboard CSV", reverse("leaderboard:csv", args=[campaign.pk])),
        ("leaderboard bars.png", reverse("leaderboard:video_bars", args=[campaign.pk, baseline.pk])),
        ("frontier.png", reverse("automated:frontier_png", args=[campaign.pk])),
        ("fairness index", reverse("fairness:index")),
        ("fairness submission", reverse("fairness:submission", args=[baseline.pk])),
        ("fairness plot.png", reverse("fairness:submission_plot", args=[baseline.pk])),
        ("quality", reverse("fairness:quality", args=[campaign.pk])),
        ("attack run", reverse("automated:attack_run_report", args=[attack_run.pk])),
        ("run progress", reverse("automated:submission_progress", args=[baseline.pk])),
        ("admin submissions", reverse("admin:evalsite_submission_changelist")),
        ("admin report JSON", reverse("admin:evalsite_submission_report", args=[baseline.pk, "json"])),
        ("admin report CSV", reverse("admin:evalsite_submission_report", args=[baseline.pk, "csv"])),
    ]
    team = [
        ("team home", reverse("team:home")),
        ("team submission", reverse("team:submission", args=[mine.pk])),
        ("team report JSON", reverse("team:submission_report", args=[mine.pk, "json"])),
        ("team report CSV", reverse("team:submission_report", args=[mine.pk, "csv"])),
        ("team frontier.png", reverse("team:submission_frontier", args=[mine.pk, "png"])),
        ("team leaderboard", reverse("team:leaderboard", args=[campaign.pk])),
    ]
    return [("organizer", *page) for page in organizer] + [("team", *page) for page in team]


def _time(client, url: str) -> tuple[float, int, int]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    connection.queries_log.clear()  # the log keeps 9000 queries: count from empty
    with CaptureQueriesContext(connection) as queries:
        started = time.perf_counter()
        response = client.get(url)
        if hasattr(response, "streaming_content"):
            b"".join(response.streaming_content)
        elapsed = time.perf_counter() - started
    return elapsed, response.status_code, len(queries)


def _other_worker(client, url: str) -> float:
    """Time of the first request of another process: a fresh object of the configured cache."""
    from django.core.cache import caches
    from django.core.cache.backends.locmem import LocMemCache

    from evalsite import report_cache

    fresh = caches.create_connection("default")
    if isinstance(fresh, LocMemCache):  # in-process objects share memory; another process's does not
        fresh = LocMemCache(f"other-worker-{time.perf_counter_ns()}", {})
    shared, report_cache.cache = report_cache.cache, fresh
    try:
        return _time(client, url)[0]
    finally:
        report_cache.cache = shared


def measure(built: dict, repeat: int = 3) -> list[dict]:
    """One row per page: first, warm (median) and another worker's first time in ms, status,
    warm query count."""
    from django.test import Client

    from automated.django_app.services import create_face_run

    clients = {"organizer": Client(), "team": Client()}
    clients["organizer"].force_login(built["organizer"])
    clients["team"].force_login(built["team_user"])
    pages = page_urls(built)
    rows = []
    for who, page, url in pages:
        client = clients[who]
        first, status, _ = _time(client, url)
        warm = [_time(client, url) for _ in range(repeat)]
        rows.append(
            {
                "who": who,
                "page": page,
                "status": status,
                "first_ms": round(first * 1000),
                "warm_ms": round(statistics.median(w[0] for w in warm) * 1000),
                "other_worker_ms": round(_other_worker(client, url) * 1000),
                "queries": warm[-1][2],
            }
        )
    create_face_run(built["team_submission"], stride=5, detector="mediapipe", behaviour=False)  # pending
    for who, page, url in pages:
        if page in ("team submission", "campaign page", "run progress", "leaderboard"):
            client = clients[who]
            first, status, _ = _time(client, url)
            warm = [_time(client, url) for _ in range(repeat)]
            rows.append(
                {
                    "who": who,
                    "page": f"{page} (run active)",
                    "status": status,
                    "first_ms": round(first * 1000),
                    "warm_ms": round(statistics.median(w[0] for w in warm) * 1000),
                    "other_worker_ms": round(_other_worker(client, url) * 1000),
                    "queries": warm[-1][2],
                }
            )
    return rows


def _time_fingerprint(campaign) -> None:
    """Print the median time of 9 reads of the campaign's report-cache fingerprint and its queries."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from evalsite import report_cache

    report_cache.fingerprint(campaign)  # the code digest: once per process
    times = []
    for _ in range(9):
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            report_cache.fingerprint(campaign)
            times.append(time.perf_counter() - started)
    print(f"report-cache fingerprint: {statistics.median(times) * 1000:.0f} ms ({len(queries)} queries)")


def run(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(prog="python -m benchmarks pages")
    parser.add_argument("--raters", type=int, default=10, help="raters answering every trial (default 10)")
    parser.add_argument("--repeat", type=int, default=3, help="warm requests per page (default 3)")
    parser.add_argument(
        "--warm",
        action="store_true",
        help="compute the reports into the cache first, as the task queued when the last run finishes does",
    )
    args = parser.parse_args(argv or [])
    os.environ.setdefault("DEID_SECRET_KEY", secrets.token_urlsafe(50))  # a throw-away database only
    import django
    from django.conf import settings
    from django.db import connection
    from django.test.utils import override_settings, setup_test_environment

    django.setup()
    setup_test_environment()
    with (
        tempfile.TemporaryDirectory() as media,
        override_settings(MEDIA_ROOT=media, ALLOWED_HOSTS=["testserver", *settings.ALLOWED_HOSTS]),
    ):
        name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
        try:
            started = time.perf_counter()
            built = build_campaign(args.raters)
            print(f"campaign built in {time.perf_counter() - started:.1f} s")
            from django.core.cache import cache

            cache.clear()  # nothing of an earlier run (test databases reuse ids)
            _time_fingerprint(built["campaign"])
            if args.warm:
                from evalsite import report_cache

                started = time.perf_counter()
                report_cache.warm(built["campaign"])
                print(f"reports warmed in {time.perf_counter() - started:.1f} s (the run-finish task)")
            return measure(built, args.repeat)
        finally:
            connection.creation.destroy_test_db(name, verbosity=0)
