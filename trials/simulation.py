"""A rating campaign built from real GRID clips, and many simulated raters working at once.

Used by the concurrency test (``tests/trials/test_simulation.py``), the benchmark
(``benchmarks/bench_trials.py``) and the browser tests. Simulated raters go through the
real pages with Django's test ``Client`` (one per thread, each with its own database
connection): join, consent, instructions, then trial pages and JSON answers, some
resending answers (double clicks) and some abandoning mid-session.

Run on a fresh database (the default SQLite settings: ``BEGIN IMMEDIATE``, 30 s busy
timeout)::

    DEID_VAR_DIR=/tmp/sim python -m trials.simulation --raters 60 --threads 12

prints a JSON summary. The protocol it exercises is the MediaEval 2021 human evaluation
(``../shared/seeds/002_68b18bfdbdb94491.txt``, section 4): raters_per_video responses
per (video, condition, task) item.
"""
from __future__ import annotations

import csv
import json
import os
import random
import re
import statistics
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

GRID_FOLDER = "videos/grid_talking_heads"
ACTIONS = ["talking", "eating", "waving", "coughing"]


@dataclass(frozen=True)
class GridPerson:
    label: str
    clip: str  # the clip rated (clear and masked)
    still_clip: str  # the clip whose middle frame is the gallery still
    gender: str


def grid_people(data_dir) -> list[GridPerson]:
    """The 10 GRID speakers of ``grid_talking_heads/clips.csv`` (P03 has two clips).

    ``gender`` is the copier's by-eye guess (``apparent_gender_unofficial``), the only
    demographic the clips have; it is used as the matching attribute.
    """
    rows = list(csv.DictReader(open(Path(data_dir) / GRID_FOLDER / "clips.csv", newline="")))
    people: dict[str, list[dict]] = {}
    for row in rows:
        people.setdefault(row["person_label"], []).append(row)
    out = []
    for label, clips in sorted(people.items()):
        out.append(GridPerson(label, clips[0]["file"], clips[-1]["file"], clips[0]["apparent_gender_unofficial"]))
    return out


def identity_code(label: str) -> str:
    """A pseudonymous code long enough that it never occurs by chance inside media bytes."""
    return f"subject-grid-{label.lower()}-code"


def _middle_frame_png(video_path: Path, out_path: Path) -> None:
    import cv2

    from automated.video import VideoInfo, iter_frames

    middle = VideoInfo.from_video_path(video_path).frame_count // 2
    for _, frame_rgb in iter_frames(video_path, start=middle, end=middle + 1):
        cv2.imwrite(str(out_path), cv2.cvtColor(frame_rgb, cv2.COLOR_RGB2BGR))


def prepare_grid_files(data_dir, cache_dir, *, masked_method: str = "blur_face") -> dict[str, dict]:
    """Gallery stills, masked and web-playable copies of the GRID clips, cached in ``cache_dir``.

    Returns
    -------
    dict
        ``{label: {"clip", "still", "clip_web", "masked", "masked_web"}}`` paths.
    """
    from automated.anonymizers import anonymize_video
    from automated.video import transcode_for_web

    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    folder = Path(data_dir) / GRID_FOLDER
    files = {}
    for person in grid_people(data_dir):
        stem = Path(person.clip).stem
        paths = {
            "clip": folder / person.clip,
            "still": cache_dir / f"{stem}_still.png",
            "clip_web": cache_dir / f"{stem}_web.mp4",
            "masked": cache_dir / f"{stem}_{masked_method}.mkv",
            "masked_web": cache_dir / f"{stem}_{masked_method}_web.mp4",
        }
        if not paths["still"].exists():
            _middle_frame_png(folder / person.still_clip, paths["still"])
        if not paths["clip_web"].exists():
            transcode_for_web(paths["clip"], paths["clip_web"])
        if not paths["masked"].exists():
            anonymize_video(paths["clip"], paths["masked"], masked_method)
        if not paths["masked_web"].exists():
            transcode_for_web(paths["masked"], paths["masked_web"])
        files[person.label] = paths
    return files


def build_grid_campaign(
    data_dir, cache_dir, *, name: str = "GRID rating", raters_per_video: int = 10, copies: int = 1,
    masked_method: str = "blur_face", with_web_files: bool = True, target_absent_share: float = 0.2,
    attention_check_rate: float = 0.1,
):
    """Create a campaign of the 10 GRID speakers, their clips, and one blurred submission.

    Parameters
    ----------
    data_dir, cache_dir : path-like
        ``settings.DATA_DIR`` and a folder for derived files (see :func:`prepare_grid_files`).
    raters_per_video : int
    copies : int, default=1
        Source-video rows per clip (``<clip>_c<k>``, the same stored file) to scale the
        number of items for load tests.
    with_web_files : bool
        Store the cached H.264 copies as ``web_file`` (else the media view transcodes).

    Returns
    -------
    evalsite.models.Campaign
        Open for rating? No: call :func:`trials.services.open_rating`.
    """
    from django.core.files import File

    from evalsite.models import Campaign, GalleryImage, Identity, MaskedVideo, SourceVideo, Submission, Team

    files = prepare_grid_files(data_dir, cache_dir, masked_method=masked_method)
    campaign = Campaign.objects.create(
        name=name, slug=re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-"),
        action_vocabulary=ACTIONS, raters_per_video=raters_per_video, demographic_attributes=["gender"],
        target_absent_share=target_absent_share, attention_check_rate=attention_check_rate,
        consent_text="You will watch short videos of people and answer two kinds of questions.",
    )
    team = Team.objects.get_or_create(name="Baseline team")[0]
    submission = Submission.objects.create(campaign=campaign, team=team, name=masked_method)

    def stored(field_file, path: Path) -> str:
        with open(path, "rb") as handle:
            field_file.save(path.name, File(handle), save=False)
        return field_file.name

    for person in grid_people(data_dir):
        paths = files[person.label]
        identity = Identity.objects.create(
            campaign=campaign, code=identity_code(person.label), attributes={"gender": person.gender}
        )
        image = GalleryImage(identity=identity, original_name=paths["still"].name)
        stored(image.image, paths["still"])
        image.save()
        names: dict[str, str] = {}
        for k in range(copies):
            video = SourceVideo(
                campaign=campaign, identity=identity, action="talking",
                name=Path(person.clip).stem + (f"_c{k}" if copies > 1 else ""),
            )
            for field_name, key in (("file", "clip"), ("web_file", "clip_web")):
                if key == "clip_web" and not with_web_files:
                    continue
                if key not in names:
                    names[key] = stored(getattr(video, field_name), paths[key])
                setattr(video, field_name, names[key])
            video.save()
            masked = MaskedVideo(submission=submission, source_video=video)
            for field_name, key in (("file", "masked"), ("web_file", "masked_web")):
                if key == "masked_web" and not with_web_files:
                    continue
                if key not in names:
                    names[key] = stored(getattr(masked, field_name), paths[key])
                setattr(masked, field_name, names[key])
            masked.save()
    return campaign


# --- simulated raters ----------------------------------------------------------------

_RESPOND = re.compile(r'"respond_url": "(/t/[^"]+/respond/)"')
_CHOICE = re.compile(r'data-choice="([^"]+)"')


@dataclass
class RaterLog:
    """What one simulated rater did (for checks and timings)."""

    code: str
    stored: dict = field(default_factory=dict)  # respond URL -> choice acknowledged as stored
    page_s: list = field(default_factory=list)
    respond_s: list = field(default_factory=list)
    expired: int = 0
    duplicates_sent: int = 0
    finished: bool = False
    errors: list = field(default_factory=list)


class ServerSlots:
    """At most ``workers`` requests inside Django at once, like a WSGI server's worker pool.

    Raters are client threads; without this, 100 threads in one Python process would all
    run server code at once and a transaction holding the SQLite write lock would wait for
    the GIL behind 99 others, which no multi-process deployment does. ``timed`` returns
    the time inside the server (queueing for a worker excluded).
    """

    def __init__(self, workers: int):
        self._slots = threading.BoundedSemaphore(workers)

    def timed(self, call, *args, **kwargs):
        with self._slots:
            started = time.perf_counter()
            result = call(*args, **kwargs)
            return result, time.perf_counter() - started


def simulate_rater(join_code: str, code: str, *, rng: random.Random, abandon_after: int | None = None,
                   resend_share: float = 0.2, server: ServerSlots | None = None) -> RaterLog:
    """Take one rater through the pages; stop after ``abandon_after`` answers if given."""
    from django.db import connection
    from django.test import Client

    log = RaterLog(code)
    server = server or ServerSlots(1)
    client = Client()
    try:
        server.timed(client.post, f"/join/{join_code}/", {"participant_code": code})
        server.timed(client.post, "/session/consent/", {"agree": "yes"})
        server.timed(client.post, "/session/start/")
        answered = 0
        while True:
            page, seconds = server.timed(client.get, "/session/")
            log.page_s.append(seconds)
            html = page.content.decode()
            match = _RESPOND.search(html)
            if match is None:
                log.finished = "completion-code" in html
                if not log.finished:
                    log.errors.append(f"page {page.status_code} without a trial")
                break
            if abandon_after is not None and answered >= abandon_after:
                break  # leaves this trial claimed, never answered
            url = match.group(1)
            choice = rng.choice(_CHOICE.findall(html))
            body = json.dumps({"choice": choice, "response_time_ms": rng.randint(800, 9000),
                               "replays": rng.randint(0, 2), "watch_time_ms": rng.randint(3000, 9000)})
            sends = 2 if rng.random() < resend_share else 1
            for _ in range(sends):
                answer, seconds = server.timed(client.post, url, body, content_type="application/json")
                log.respond_s.append(seconds)
                if answer.status_code == 409:
                    log.expired += 1
                    break
                if answer.status_code != 200:
                    log.errors.append(f"answer {answer.status_code}: {answer.content[:200]!r}")
                    return log
                data = answer.json()
                if data["duplicate"]:
                    log.duplicates_sent += 1
                else:
                    log.stored[url] = choice
            answered += 1
    except Exception as error:  # e.g. "database is locked" after the busy timeout: count it
        log.errors.append(f"{type(error).__name__}: {error}")
    finally:
        connection.close()
    return log


def run_raters(join_code: str, n_raters: int, *, threads: int, abandon_share: float, seed: int,
               prefix: str = "sim", server_workers: int = 4) -> list[RaterLog]:
    """Run ``n_raters`` simulated raters, ``threads`` at a time; ``abandon_share`` abandon early."""
    server = ServerSlots(server_workers)
    rng = random.Random(seed)
    plans = [
        (f"{prefix}{i:04d}", random.Random(rng.random()), rng.randint(0, 3) if rng.random() < abandon_share else None)
        for i in range(n_raters)
    ]
    logs: list[RaterLog] = []
    lock = threading.Lock()
    queue = list(plans)

    def worker():
        while True:
            with lock:
                if not queue:
                    return
                code, rater_rng, abandon = queue.pop(0)
            log = simulate_rater(join_code, code, rng=rater_rng, abandon_after=abandon, server=server)
            with lock:
                logs.append(log)

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return logs


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def check_counts(campaign) -> dict:
    """Completed responses per evaluated item vs target, and stored responses per trial."""
    from .models import Item, Response

    items = list(Item.objects.evaluated(campaign).with_counts().values("n_completed", "target_count"))
    return {
        "items": len(items),
        "items_at_target": sum(i["n_completed"] == i["target_count"] for i in items),
        "items_over_target": sum(i["n_completed"] > i["target_count"] for i in items),
        "responses": Response.objects.filter(trial__session__campaign=campaign).count(),
        "evaluated_responses": Response.objects.filter(
            trial__session__campaign=campaign, trial__kind="item").count(),
    }


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--raters", type=int, default=60)
    parser.add_argument("--threads", type=int, default=12, help="concurrent raters (client threads)")
    parser.add_argument("--server-workers", type=int, default=4, help="requests handled at once")
    parser.add_argument("--abandon", type=float, default=0.2, help="share of raters abandoning mid-session")
    parser.add_argument("--raters-per-video", type=int, default=5)
    parser.add_argument("--copies", type=int, default=1)
    parser.add_argument("--claim-timeout", type=float, default=2.0, help="seconds")
    parser.add_argument("--waves", type=int, default=4, help="extra waves until every item is full")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--cache-dir", default=None, help="derived GRID files (default CACHE_DIR/grid)")
    args = parser.parse_args(argv)

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    from .models import Response
    from .services import open_rating

    settings.TRIALS_CLAIM_TIMEOUT_S = args.claim_timeout
    call_command("migrate", verbosity=0)
    campaign = build_grid_campaign(
        settings.DATA_DIR, Path(args.cache_dir or Path(settings.CACHE_DIR) / "grid"), raters_per_video=args.raters_per_video,
        copies=args.copies, name=f"simulation {time.time_ns()}",
    )
    open_rating(campaign, prepare_media=False)
    started = time.perf_counter()
    logs = run_raters(campaign.join_code, args.raters, threads=args.threads, abandon_share=args.abandon,
                      seed=args.seed, server_workers=args.server_workers)
    # Later waves (no abandoning) pick up items whose abandoned claims timed out.
    for wave in range(args.waves):
        counts = check_counts(campaign)
        if counts["items_at_target"] == counts["items"]:
            break
        time.sleep(args.claim_timeout + 0.2)
        logs += run_raters(campaign.join_code, max(args.threads, args.raters // 4), threads=args.threads,
                           abandon_share=0.0, seed=args.seed + wave + 1, prefix=f"wave{wave}-",
                           server_workers=args.server_workers)
    elapsed = time.perf_counter() - started
    acknowledged = {url: choice for log in logs for url, choice in log.stored.items()}
    stored = {
        f"/t/{token}/respond/": choice
        for token, choice in Response.objects.filter(trial__session__campaign=campaign).values_list(
            "trial__token", "choice")
    }
    page_s = [s for log in logs for s in log.page_s]
    respond_s = [s for log in logs for s in log.respond_s]
    summary = {
        **check_counts(campaign),
        "raters": len(logs),
        "raters_finished": sum(log.finished for log in logs),
        "acknowledged": len(acknowledged),
        "lost": len(set(acknowledged.items()) - set(stored.items())),
        "unacknowledged_stored": len(set(stored) - set(acknowledged)),
        "duplicates_sent": sum(log.duplicates_sent for log in logs),
        "expired": sum(log.expired for log in logs),
        "errors": [e for log in logs for e in log.errors][:10],
        "n_errors": sum(len(log.errors) for log in logs),
        "elapsed_s": elapsed,
        "page_ms_median": 1000 * statistics.median(page_s) if page_s else None,
        "page_ms_p95": 1000 * percentile(page_s, 0.95),
        "respond_ms_median": 1000 * statistics.median(respond_s) if respond_s else None,
        "respond_ms_p95": 1000 * percentile(respond_s, 0.95),
        "pages": len(page_s),
        "answers_sent": len(respond_s),
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
