"""A rating campaign built from real GRID clips, and many simulated raters working at once.

Used by the concurrency tests (``tests/trials/test_simulation.py`` in-process on SQLite,
``tests/ops/test_rater_simulation_http.py`` over HTTP against gunicorn + PostgreSQL), the
benchmarks (``benchmarks/bench_trials.py``, ``bench_trials_http.py``) and the browser
tests. Simulated raters go through the real pages as a browser does: join page and form,
consent, instructions, then trial pages and JSON answers, some double-clicking (the same
answer sent twice at once) and some abandoning mid-session; over HTTP they also fetch the
media of their first trial pages.

Three modes, each printing one JSON line:

- In-process (default): Django's test ``Client``, one per thread, each with its own
  database connection, on a fresh default database (SQLite: ``BEGIN IMMEDIATE``, 30 s
  busy timeout)::

      DEID_VAR_DIR=/tmp/sim python -m tests.crowd.simulation --raters 60 --threads 12

- ``--setup-only``: build and open the campaign in the configured database
  (``DATABASE_URL``), print ``{"campaign": id, "join_code": ...}``.
- ``--base-url URL --campaign ID``: raters over real HTTP/1.1 (``http.client``, one
  keep-alive connection per rater, threads), then the counts read from the same
  database; the claim timeout is the server's ``TRIALS_CLAIM_TIMEOUT_S`` (same
  environment).

The protocol it exercises is the MediaEval 2021 human evaluation
(``../shared/seeds/002_68b18bfdbdb94491.txt``, section 4): raters_per_video responses
per (video, condition, task) item.
"""

from __future__ import annotations

import csv
import http.client
import json
import os
import random
import re
import threading
import sys
import time
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import urlencode, urlsplit

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
        out.append(
            GridPerson(label, clips[0]["file"], clips[-1]["file"], clips[0]["apparent_gender_unofficial"])
        )
    return out


def identity_code(label: str) -> str:
    """A pseudonymous code long enough that it never occurs by chance inside media bytes."""
    return f"subject-grid-{label.lower()}-code"


#: ``VideoInfo`` of the cached GRID files, keyed by (path, size, mtime): probing counts every
#: frame (about 0.2 s of CPU per clip), and the rating tests build this campaign hundreds of
#: times from the same files.
_PROBES: dict[tuple, object] = {}


def probe(path: Path):
    """``automated.video.VideoInfo.from_video_path(path)``, once per unchanged file and process."""
    from automated.video import VideoInfo

    stat = Path(path).stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key not in _PROBES:
        _PROBES[key] = VideoInfo.from_video_path(path)
    return _PROBES[key]


#: File in the cache folder keeping :data:`_PROBES` between processes: each ``--setup-only``
#: process (the HTTP and lock tests, the benchmarks) probed the 20 GRID files again
#: (3.6 CPU s).
PROBES_FILE = "probes.json"


def load_probes(cache_dir) -> None:
    """Add the probes kept in ``cache_dir`` (:func:`save_probes`) to this process's."""
    from automated.video import VideoInfo

    try:
        rows = json.loads((Path(cache_dir) / PROBES_FILE).read_text())
    except (FileNotFoundError, ValueError):
        return
    for path, size, mtime_ns, frame_count, fps, width, height, duration_s in rows:
        _PROBES.setdefault(
            (path, size, mtime_ns), VideoInfo(Path(path), frame_count, fps, (width, height), duration_s)
        )


def save_probes(cache_dir) -> None:
    """Keep this process's probes in ``cache_dir`` (written whole, then renamed: a reader
    never sees half of it). Entries are keyed by path, size and modification time, so a
    changed file is probed again."""
    rows = [
        [path, size, mtime_ns, info.frame_count, info.fps, *info.resolution_wh, info.duration_s]
        for (path, size, mtime_ns), info in _PROBES.items()
    ]
    target = Path(cache_dir) / PROBES_FILE
    partial = target.with_name(f".{PROBES_FILE}.{os.getpid()}")
    partial.write_text(json.dumps(rows))
    os.replace(partial, target)


def _middle_frame_png(video_path: Path, out_path: Path) -> None:
    import cv2

    from automated.video import iter_frames

    middle = probe(video_path).frame_count // 2
    for _, frame_rgb in iter_frames(video_path, start=middle, end=middle + 1):
        cv2.imwrite(str(out_path), cv2.cvtColor(frame_rgb, cv2.COLOR_RGB2BGR))


REPOSITORY = Path(__file__).resolve().parents[2]
#: The code whose output :func:`prepare_grid_files` makes: its recipe (this file), the
#: masking (the blur and its face detection) and the web copy's ffmpeg command.
GRID_FILES_CODE = (
    "tests/crowd/simulation.py",
    "automated/video.py",
    "automated/anonymizers",
    "automated/detection.py",
    "automated/face_boxes.py",
)


def grid_files_version() -> str:
    """12 hex digits of SHA-256 over the sources in ``GRID_FILES_CODE`` (files in name order):
    a folder of :func:`prepare_grid_files` named with it is made anew when that code changes."""
    import hashlib

    digest = hashlib.sha256()
    for name in GRID_FILES_CODE:
        path = REPOSITORY / name
        for source in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            digest.update(source.relative_to(REPOSITORY).as_posix().encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()[:12]


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
    data_dir,
    cache_dir,
    *,
    name: str = "GRID rating",
    raters_per_video: int = 10,
    copies: int = 1,
    masked_method: str = "blur_face",
    with_web_files: bool = True,
    target_absent_share: float = 0.2,
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
    load_probes(cache_dir)
    campaign = Campaign.objects.create(
        name=name,
        slug=re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-"),
        action_vocabulary=ACTIONS,
        raters_per_video=raters_per_video,
        demographic_attributes=["gender"],
        target_absent_share=target_absent_share,
        attention_check_rate=attention_check_rate,
        consent_text="You will watch short videos of people and answer two kinds of questions.",
    )
    team = Team.objects.get_or_create(campaign=campaign, name="Baseline team")[0]
    submission = Submission.objects.create(campaign=campaign, team=team, name=masked_method)

    def stored(field_file, path: Path) -> str:
        with open(path, "rb") as handle:
            field_file.save(path.name, File(handle), save=False)
        return field_file.name

    def probed(video, path: Path) -> None:
        """The metadata the importer probes (evalsite.storage.store_video): clip length, frame rate, size."""
        info = probe(path)
        video.frame_count, video.fps, video.duration_s = info.frame_count, info.fps, info.duration_s
        video.width, video.height = info.resolution_wh

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
                campaign=campaign,
                identity=identity,
                action="talking",
                name=Path(person.clip).stem + (f"_c{k}" if copies > 1 else ""),
            )
            for field_name, key in (("file", "clip"), ("web_file", "clip_web")):
                if key == "clip_web" and not with_web_files:
                    continue
                if key not in names:
                    names[key] = stored(getattr(video, field_name), paths[key])
                setattr(video, field_name, names[key])
            probed(video, paths["clip"])
            video.save()
            masked = MaskedVideo(submission=submission, source_video=video)
            for field_name, key in (("file", "masked"), ("web_file", "masked_web")):
                if key == "masked_web" and not with_web_files:
                    continue
                if key not in names:
                    names[key] = stored(getattr(masked, field_name), paths[key])
                setattr(masked, field_name, names[key])
            probed(masked, paths["masked"])
            masked.save()
    save_probes(cache_dir)
    return campaign


# --- simulated raters ----------------------------------------------------------------

_RESPOND = re.compile(r'"respond_url": "(/t/[^"]+/respond/)"')
_CHOICE = re.compile(r'data-choice="([^"]+)"')
_MEDIA = re.compile(r'src="(/m/[^"]+)"')


@dataclass
class RaterLog:
    """What one simulated rater did (for checks and timings; times in seconds)."""

    code: str
    stored: dict = field(default_factory=dict)  # respond URL -> choice acknowledged as stored
    page_s: list = field(default_factory=list)
    respond_s: list = field(default_factory=list)
    media_s: list = field(default_factory=list)
    expired: int = 0
    duplicates_sent: int = 0
    double_clicks: int = 0
    stored_twice: int = 0  # both answers of a double click acknowledged as newly stored
    media_not_prepared: int = 0  # 503 + Retry-After
    keepalive_retries: int = 0  # requests resent after the server closed an idle connection
    finished: bool = False
    study_full: bool = False  # turned away at the join page: every item was full
    errors: list = field(default_factory=list)  # unexpected statuses and server-side failures
    connection_errors: list = field(default_factory=list)  # resets, refused, timeouts


@dataclass
class Reply:
    """One HTTP answer: status, body bytes and headers (lower-case names)."""

    status: int
    body: bytes
    headers: dict

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def json(self):
        return json.loads(self.body)


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


_addresses = iter(range(1, 2**24))
_address_lock = threading.Lock()


def next_address() -> str:
    """A network address of its own for each simulated rater (``10.x.y.z``): raters are
    different machines, and the site caps sessions per address (``trials.integrity``)."""
    with _address_lock:
        n = next(_addresses)
    return f"10.{n >> 16}.{(n >> 8) & 255}.{n & 255}"


class InProcessClient:
    """A rater's browser as Django's test ``Client`` in this process (no network, no CSRF).

    ``request`` returns ``(Reply, seconds inside the server)``, each request run in one
    of ``server``'s slots. Each client has its own address (:func:`next_address`).
    """

    keepalive_retries = 0  # no connections here

    def __init__(self, server: ServerSlots, address: str | None = None):
        from django.test import Client

        self.server = server
        self.address = address or next_address()
        self.client = Client(REMOTE_ADDR=self.address)

    def request(self, method: str, path: str, *, form: dict | None = None, json_body: str | None = None):
        def call():
            if method == "GET":
                response = self.client.get(path)
            elif json_body is not None:
                response = self.client.post(path, json_body, content_type="application/json")
            else:
                response = self.client.post(path, form or {})
            body = b"".join(response.streaming_content) if response.streaming else response.content
            return Reply(response.status_code, body, {k.lower(): v for k, v in response.items()})

        return self.server.timed(call)

    def clone(self) -> InProcessClient:
        """A second tab of the same browser (same cookies)."""
        twin = InProcessClient(self.server, self.address)
        for name, morsel in self.client.cookies.items():
            twin.client.cookies[name] = morsel.value
        return twin

    def close(self) -> None:
        from django.db import connection

        connection.close()  # this thread's database connection


class HttpClient:
    """A rater's browser over real HTTP/1.1: one keep-alive connection, cookies, CSRF header.

    ``request`` returns ``(Reply, seconds)`` from sending the request to the last byte of
    the answer. A refused connection, a reset or a timeout raises (``OSError`` or
    ``http.client.HTTPException``) and is counted by the caller. The one retry is what
    browsers do (RFC 9112, section 9.3.1): a request on a reused keep-alive connection that
    the server had closed as idle, failing before any byte of an answer, is sent again
    once on a new connection and counted in ``keepalive_retries`` (a server that crashed
    or timed out instead shows in its own log, which the tests check).

    Each client is a machine of its own behind the server's one trusted proxy (run the
    server with ``TRIALS_TRUSTED_PROXIES=1``): it sends ``X-Forwarded-For`` with its own
    address (:func:`next_address`), as the proxy would.
    """

    def __init__(
        self, base_url: str, *, timeout: float = 60.0, cookies: dict | None = None, address: str | None = None
    ):
        parts = urlsplit(base_url)
        self.base_url, self.timeout = base_url, timeout
        self.address = address or next_address()
        self.cookies = dict(cookies or {})
        self.connection = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=timeout)
        self.keepalive_retries = 0

    def request(self, method: str, path: str, *, form: dict | None = None, json_body: str | None = None):
        headers = {"X-Forwarded-For": self.address}
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        if "csrftoken" in self.cookies:
            headers["X-CSRFToken"] = self.cookies["csrftoken"]  # as the trial page's script sends it
        body = None
        if json_body is not None:
            body, headers["Content-Type"] = json_body.encode(), "application/json"
        elif method == "POST":
            body, headers["Content-Type"] = (
                urlencode(form or {}).encode(),
                "application/x-www-form-urlencoded",
            )
        started = time.perf_counter()
        reused = self.connection.sock is not None
        try:
            self.connection.request(method, path, body=body, headers=headers)
            response = self.connection.getresponse()
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
            if not reused:
                raise
            self.connection.close()
            self.keepalive_retries += 1
            self.connection.request(method, path, body=body, headers=headers)
            response = self.connection.getresponse()
        data = response.read()  # http.client reopens the connection next time if the server closed it
        seconds = time.perf_counter() - started
        for header in response.headers.get_all("Set-Cookie") or []:
            cookie = SimpleCookie()
            cookie.load(header)
            for name, morsel in cookie.items():
                if morsel["max-age"] == "0":
                    self.cookies.pop(name, None)
                else:
                    self.cookies[name] = morsel.value
        return Reply(response.status, data, {k.lower(): v for k, v in response.getheaders()}), seconds

    def clone(self) -> HttpClient:
        """A second tab of the same browser: same cookies, its own connection."""
        return HttpClient(self.base_url, timeout=self.timeout, cookies=self.cookies, address=self.address)

    def close(self) -> None:
        self.connection.close()


class _Unexpected(Exception):
    """A page or answer with a status the rater's browser could not continue from."""


def _expect(reply: Reply, *statuses: int, what: str) -> Reply:
    if reply.status not in statuses:
        raise _Unexpected(f"{what}: {reply.status} {reply.text[:200]!r}")
    return reply


def simulate_rater(
    client,
    join_code: str,
    code: str,
    *,
    rng: random.Random,
    abandon_after: int | None = None,
    resend_share: float = 0.2,
    media_pages: int = 0,
) -> RaterLog:
    """Take one rater through the pages as a browser would; stop after ``abandon_after`` answers.

    Parameters
    ----------
    client : InProcessClient or HttpClient
    join_code, code : str
        The campaign's join code and this rater's participant code.
    rng : random.Random
        Choices, timings and double clicks.
    abandon_after : int or None
        Answers given before leaving (the current trial stays claimed, unanswered).
    resend_share : float
        Share of answers sent twice at once (a double click: two connections).
    media_pages : int
        Trial pages whose media (video or still, gallery faces) are fetched, from the first.
    """
    log = RaterLog(code)
    try:
        _expect(client.request("GET", f"/join/{join_code}/")[0], 200, what="join page")
        joined = client.request("POST", f"/join/{join_code}/", form={"participant_code": code})[0]
        if joined.status == 403 and b"This study is full" in joined.body:
            log.study_full = log.finished = True  # every item had its target: a clear refusal
            return log
        _expect(joined, 302, what="join")
        _expect(client.request("GET", "/session/")[0], 200, what="consent page")
        _expect(client.request("POST", "/session/consent/", form={"agree": "yes"})[0], 302, what="consent")
        _expect(client.request("GET", "/session/")[0], 200, what="instructions page")
        _expect(client.request("POST", "/session/start/")[0], 302, what="start")
        answered = pages = 0
        while True:
            page, seconds = client.request("GET", "/session/")
            log.page_s.append(seconds)
            html = page.text
            match = _RESPOND.search(html)
            if match is None:
                log.finished = page.status == 200 and "completion-code" in html
                if not log.finished:
                    log.errors.append(f"page {page.status} without a trial: {html[:200]!r}")
                break
            if pages < media_pages:
                _fetch_media(client, log, html)
            pages += 1
            if abandon_after is not None and answered >= abandon_after:
                break  # leaves this trial claimed, never answered
            url = match.group(1)
            choice = rng.choice(_CHOICE.findall(html))
            body = json.dumps(
                {
                    "choice": choice,
                    "response_time_ms": rng.randint(800, 9000),
                    "replays": rng.randint(0, 2),
                    "watch_time_ms": rng.randint(3000, 9000),
                }
            )
            double = rng.random() < resend_share
            replies = _send_answer(client, url, body, double=double)
            log.double_clicks += double
            log.respond_s += [seconds for _, seconds in replies]
            statuses = {reply.status for reply, _ in replies}
            if 409 in statuses:  # the claim lapsed and the item went to others: next trial
                if statuses != {409}:  # both sends of a double click must agree
                    raise _Unexpected(f"answer to {url}: statuses {sorted(statuses)} for one answer")
                log.expired += 1
                continue
            new = [_expect(reply, 200, what="answer").json() for reply, _ in replies]
            new = [data for data in new if not data["duplicate"]]
            log.duplicates_sent += len(replies) - len(new)
            log.stored_twice += len(new) > 1
            if not new:
                raise _Unexpected(f"answer to {url}: every send reported a duplicate, none stored")
            log.stored[url] = choice
            answered += 1
    except (OSError, http.client.HTTPException) as error:  # reset, refused, timed out
        log.connection_errors.append(f"{type(error).__name__}: {error}")
    except Exception as error:  # unexpected status; "database is locked" after the busy timeout
        log.errors.append(f"{type(error).__name__}: {error}")
    finally:
        client.close()
        log.keepalive_retries += client.keepalive_retries
    return log


def _send_answer(client, url: str, body: str, *, double: bool) -> list:
    """POST the answer once, or twice at the same moment from two tabs (a double click)."""
    if not double:
        return [client.request("POST", url, json_body=body)]
    twin = client.clone()
    results: list = [None, None]
    start = threading.Barrier(2)

    def send(index, sender):
        try:
            start.wait(timeout=30)
            results[index] = sender.request("POST", url, json_body=body)
        except BaseException as error:  # re-raised in the rater's thread
            results[index] = error
        finally:
            if sender is twin:
                twin.close()

    helper = threading.Thread(target=send, args=(1, twin))
    helper.start()
    send(0, client)
    helper.join()
    client.keepalive_retries += twin.keepalive_retries
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results


def _fetch_media(client, log: RaterLog, html: str) -> None:
    """Fetch a trial page's video or still and its gallery faces, as the browser would."""
    for path in _MEDIA.findall(html):
        reply, seconds = client.request("GET", path)
        if reply.status == 503 and "retry-after" in reply.headers:
            log.media_not_prepared += 1
            continue
        _expect(reply, 200, what=f"media {path}")
        if not (reply.body.startswith(b"\x89PNG") or reply.body[4:8] == b"ftyp"):
            raise _Unexpected(f"media {path}: neither PNG nor MP4 ({reply.body[:16]!r})")
        log.media_s.append(seconds)


def run_raters(
    make_client,
    join_code: str,
    n_raters: int,
    *,
    threads: int,
    abandon_share: float,
    seed: int,
    prefix: str = "sim",
    media_pages: int = 0,
    resend_share: float = 0.2,
) -> list[RaterLog]:
    """Run ``n_raters`` simulated raters, ``threads`` at a time; ``abandon_share`` abandon early.

    ``make_client()`` gives each rater a fresh browser (:class:`InProcessClient` or
    :class:`HttpClient`).
    """
    rng = random.Random(seed)
    plans = [
        (
            f"{prefix}{i:04d}",
            random.Random(rng.random()),
            rng.randint(0, 3) if rng.random() < abandon_share else None,
        )
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
            log = simulate_rater(
                make_client(),
                join_code,
                code,
                rng=rater_rng,
                abandon_after=abandon,
                resend_share=resend_share,
                media_pages=media_pages,
            )
            with lock:
                logs.append(log)

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return logs


def run_until_full(
    make_client,
    campaign,
    *,
    raters: int,
    threads: int,
    abandon_share: float,
    seed: int,
    claim_timeout_s: float,
    waves: int,
    media_pages: int = 0,
) -> tuple[list[RaterLog], float]:
    """A first wave of raters (some abandoning), then waves without abandoning until every
    item is at its target (abandoned claims lapse after ``claim_timeout_s``). Only the first
    wave fetches media (``media_pages``): each fetch encodes a per-trial copy.

    Returns
    -------
    logs : list of RaterLog
    elapsed_s : float
        Wall time of all waves.
    """
    started = time.perf_counter()
    logs = run_raters(
        make_client,
        campaign.join_code,
        raters,
        threads=threads,
        abandon_share=abandon_share,
        seed=seed,
        media_pages=media_pages,
    )
    for wave in range(waves):
        counts = check_counts(campaign)
        print(  # progress on stderr (a test that times out shows it)
            f"after {len(logs)} raters, {time.perf_counter() - started:.0f} s: "
            f"{counts['items_at_target']}/{counts['items']} items at target",
            file=sys.stderr,
            flush=True,
        )
        if counts["items_at_target"] == counts["items"]:
            break
        time.sleep(claim_timeout_s + 0.5)
        logs += run_raters(
            make_client,
            campaign.join_code,
            max(threads, raters // 4),
            threads=threads,
            abandon_share=0.0,
            seed=seed + wave + 1,
            prefix=f"wave{wave}-",
            media_pages=0,  # the first wave fetched media at full concurrency; these only fill items
        )
    return logs, time.perf_counter() - started


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def check_counts(campaign) -> dict:
    """Completed responses per evaluated item vs target, and stored responses.

    ``same_video_twice`` counts evaluated responses of one rater to one source video
    beyond the first (a rater sees each source video once).
    """
    from django.db.models import Count

    from trials.models import Item, Response

    items = list(Item.objects.evaluated(campaign).with_counts().values("n_completed", "target_count"))
    responses = Response.objects.filter(trial__session__campaign=campaign)
    per_video = (
        responses.filter(trial__kind="item")
        .values("trial__session", "trial__source_video")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
    )
    return {
        "items": len(items),
        "items_at_target": sum(i["n_completed"] == i["target_count"] for i in items),
        "items_over_target": sum(i["n_completed"] > i["target_count"] for i in items),
        "responses": responses.count(),
        "evaluated_responses": responses.filter(trial__kind="item").count(),
        "same_video_twice": sum(row["n"] - 1 for row in per_video),
    }


def summarize(campaign, logs: list[RaterLog], elapsed_s: float) -> dict:
    """Counts and timings of a run: what raters were told was stored vs what the database holds."""
    from trials.models import Response

    acknowledged = {url: choice for log in logs for url, choice in log.stored.items()}
    stored = {
        f"/t/{token}/respond/": choice
        for token, choice in Response.objects.filter(trial__session__campaign=campaign).values_list(
            "trial__token", "choice"
        )
    }

    def ms(values, q):
        return 1000 * percentile(values, q) if values else None

    page_s = [s for log in logs for s in log.page_s]
    respond_s = [s for log in logs for s in log.respond_s]
    media_s = [s for log in logs for s in log.media_s]
    return {
        **check_counts(campaign),
        "raters": len(logs),
        "raters_finished": sum(log.finished for log in logs),
        "acknowledged": len(acknowledged),
        "lost": len(set(acknowledged.items()) - set(stored.items())),
        "unacknowledged_stored": len(set(stored) - set(acknowledged)),
        "stored_twice": sum(log.stored_twice for log in logs),
        "double_clicks": sum(log.double_clicks for log in logs),
        "duplicates_sent": sum(log.duplicates_sent for log in logs),
        "expired": sum(log.expired for log in logs),
        "media_not_prepared": sum(log.media_not_prepared for log in logs),
        "keepalive_retries": sum(log.keepalive_retries for log in logs),
        "errors": [e for log in logs for e in log.errors][:10],
        "n_errors": sum(len(log.errors) for log in logs),
        "connection_errors": [e for log in logs for e in log.connection_errors][:10],
        "n_connection_errors": sum(len(log.connection_errors) for log in logs),
        "elapsed_s": elapsed_s,
        "page_ms_mean": 1000 * sum(page_s) / len(page_s) if page_s else None,
        "answer_ms_mean": 1000 * sum(respond_s) / len(respond_s) if respond_s else None,
        "page_ms_median": ms(page_s, 0.5),
        "page_ms_p95": ms(page_s, 0.95),
        "respond_ms_median": ms(respond_s, 0.5),
        "respond_ms_p95": ms(respond_s, 0.95),
        "media_ms_median": ms(media_s, 0.5),
        "media_ms_p95": ms(media_s, 0.95),
        "pages": len(page_s),
        "answers_sent": len(respond_s),
        "media_fetched": len(media_s),
    }


def _setup_campaign(args):
    """Build the GRID campaign in the configured database and open it for rating."""
    from django.conf import settings

    from trials.services import open_rating
    from trials.tasks import prepare_campaign_media

    campaign = build_grid_campaign(
        settings.DATA_DIR,
        Path(args.cache_dir or Path(settings.CACHE_DIR) / "grid"),
        raters_per_video=args.raters_per_video,
        copies=args.copies,
        name=f"simulation {time.time_ns()}",
    )
    open_rating(campaign, prepare_media=False)
    if args.prepare_media:
        prepare_campaign_media(campaign.pk)  # here, synchronously: the server never transcodes
    return campaign


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], epilog="Modes: in-process (default), --setup-only, --base-url."
    )
    parser.add_argument("--raters", type=int, default=60)
    parser.add_argument("--threads", type=int, default=None, help="concurrent raters (default: --raters)")
    parser.add_argument("--server-workers", type=int, default=4, help="in-process: requests handled at once")
    parser.add_argument("--abandon", type=float, default=0.2, help="share of raters abandoning mid-session")
    parser.add_argument("--resend", type=float, default=0.2, help="share of answers double-clicked")
    parser.add_argument("--raters-per-video", type=int, default=5)
    parser.add_argument("--copies", type=int, default=1)
    parser.add_argument(
        "--claim-timeout",
        type=float,
        default=2.0,
        help="in-process: seconds (over HTTP the server's TRIALS_CLAIM_TIMEOUT_S is used)",
    )
    parser.add_argument("--waves", type=int, default=4, help="extra waves until every item is full")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--cache-dir", default=None, help="derived GRID files (default CACHE_DIR/grid)")
    parser.add_argument(
        "--setup-only",
        action="store_true",
        help="build and open the campaign in DATABASE_URL, print its id and join code",
    )
    parser.add_argument(
        "--prepare-media",
        action="store_true",
        help="with --setup-only: crop faces and make web copies now (else crops on first use)",
    )
    parser.add_argument(
        "--base-url", default=None, help="rate over HTTP against this server (needs --campaign)"
    )
    parser.add_argument("--campaign", type=int, default=None, help="with --base-url: the campaign id")
    parser.add_argument(
        "--http-timeout",
        type=float,
        default=60.0,
        help="with --base-url: seconds a rater's connection waits for a reply",
    )
    parser.add_argument(
        "--media-pages",
        type=int,
        default=None,
        help="trial pages per rater whose media are fetched (default: 2 over HTTP, 0 in-process)",
    )
    args = parser.parse_args(argv)
    threads = args.threads or args.raters

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    from evalsite.models import Campaign

    if args.base_url:
        if args.campaign is None:
            parser.error("--base-url needs --campaign")
        campaign = Campaign.objects.get(pk=args.campaign)
        logs, elapsed = run_until_full(
            lambda: HttpClient(args.base_url, timeout=args.http_timeout),
            campaign,
            raters=args.raters,
            threads=threads,
            abandon_share=args.abandon,
            seed=args.seed,
            waves=args.waves,
            claim_timeout_s=float(settings.TRIALS_CLAIM_TIMEOUT_S),
            media_pages=2 if args.media_pages is None else args.media_pages,
        )
        print(json.dumps(summarize(campaign, logs, elapsed)))
        return 0

    call_command("migrate", verbosity=0)
    if args.setup_only:
        campaign = _setup_campaign(args)
        print(
            json.dumps(
                {
                    "campaign": campaign.pk,
                    "join_code": campaign.join_code,
                    "items": check_counts(campaign)["items"],
                }
            )
        )
        return 0
    settings.TRIALS_CLAIM_TIMEOUT_S = args.claim_timeout
    args.prepare_media = False
    campaign = _setup_campaign(args)
    server = ServerSlots(args.server_workers)
    logs, elapsed = run_until_full(
        lambda: InProcessClient(server),
        campaign,
        raters=args.raters,
        threads=threads,
        abandon_share=args.abandon,
        seed=args.seed,
        waves=args.waves,
        claim_timeout_s=args.claim_timeout,
        media_pages=args.media_pages or 0,
    )
    print(json.dumps(summarize(campaign, logs, elapsed)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
