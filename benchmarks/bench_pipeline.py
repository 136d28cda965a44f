"""One submission through the whole pipeline, stage by stage, beside the floor of each stage.

``python -m benchmarks pipeline [--quick] [--method M] [--second M] [--profile N]``

A fresh process with a fresh ``DEID_VAR_DIR`` (its own SQLite database, media and
caches: nothing is reused from an earlier run) first starts the embedded executor's pool
and imports the science in its workers and in itself (``start-up``: a cost per process,
which a server or the demo pays once, not per submission), imports the demo campaign
(``evalsite.demo_data``: 24 real clips; ``--quick``: 6 of them, ID01's first three with
its attacker clip, ID03's two and ID02's one, enough for cross-video folds), then runs
one submission of a baseline (``--method``, default ``blur_face``) the way a team's
would go:

- ``mask``: ``anonymize_video`` of every clear video into lossless FFV1 files, the face
  tracks cached under ``CACHE_DIR/face_tracks`` as the demo does (a team does this at
  home; measured because the demo does it);
- ``upload``: those files zipped (stored, no compression) and sent through
  ``evalsite.uploads.receive_upload`` (embedded mode: validated in this process), with
  its parts ``upload: validation`` (``check_masked_video``) and ``upload: browser copy``
  (``transcode_for_web``);
- ``face_eval``: ``run_face_evaluation`` (stride 5, MediaPipe, behaviour on);
- ``attack``: ``run_attack`` with the demo's suite (``portal.demo.DEMO_ATTACK``), with its
  parts ``attack: crops`` (the per-video units), ``attack: folds`` and ``attack: final``
  (shown when ``DEID_WORKERS=1`` runs the units in this process, where they can be metered);
- ``reports``: ``report_cache.warm`` of the campaign, what the last run's completion
  queues (``report_tasks``; the demo warms once after its baselines): its own row here
  rather than inside whichever run happened to complete last;
- ``--second M`` (default ``pixelate_face``; ``--second none`` skips it): a second
  submission on the same campaign (upload not shown), ``2nd mask`` (the clear videos'
  face tracks come from the cache the first masking filled), ``2nd face_eval``,
  ``2nd attack`` and ``2nd reports``: what a later team pays once the campaign's clear
  side is cached.

Then, in the same process on the same clips, the *floor*: ``decode`` (every frame of
every clear and masked file), ``detect`` (MediaPipe on the tested frames, stride 5, of the
clear and the masked files), ``detect all clear`` (every clear frame, what a face-region
masking needs), ``embed`` (the default embedder batched over each clip's tested faces,
clear and masked), ``behaviour`` (``BehaviourExtractor(attribute=True)``, every behaviour
model and the gender attacker, on the tested frames of the clear and the masked files),
``encode ffv1`` and ``encode h264`` (writing the masked frames once
losslessly, the browser copies of the masked files), ``attack fits`` (every recognizer x
attacker fit + predict of every cross-video fold on the crops already in memory, with a
fresh model cache: the clear and naive attackers train on the same clear crops and share
one fit, as in the run), ``attack fits within-video`` (the run's scene-memorisation
table, the same way), ``attack fits masked`` and ``attack fits within-video masked`` (both
again with the clear-trained models cached: what a later submission cannot avoid),
``attack embed`` (the default embedder over every clear and masked crop, a fresh cache:
the run's verification and identity-over-time figures). A stage's floor is the sum of
the floors it cannot avoid (column ``floor_of``; the attack's crops are made in the face
evaluation's decoding pass, ``attack.faces.CropPass``, so neither decoding nor detection is
in its floor; for the second submission the masked side's halves, measured on the first
submission's files); ``x_floor`` = stage CPU / floor CPU (target: at most 2, and the whole
pipeline's CPU per video second at most 3x the sum of the floors, each file decoded once).
The floors run with the thread bounds of a pool worker (``_threads_of_a_worker``).

Times: ``cpu_s`` is process CPU time (all threads) plus the CPU time of child
processes (ffmpeg, finished; the embedded executor's pool workers, ``DEID_WORKERS``, live), so other load on the machine does not inflate it; ``wall_s`` beside
it; ``cores`` = cpu / wall. ``per_clip`` and ``per_video_s`` divide the CPU seconds by
the number of clear videos and by their total duration. ``load_1min`` is the load
average when the stage started (this machine is shared: read wall times with it).
``--profile N`` prints the N functions with the most own time (cProfile) per stage.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import secrets
import pstats
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

STRIDE = 5
DETECTOR = "mediapipe"
#: ``--quick``: the demo clips kept (ID01 with its attacker clip, ID03, ID02).
QUICK_VIDEOS = ("bbaf2n.mpg", "brif5s.mpg", "lgwazp.mpg", "id2_vcd_swwp2s.mpg", "pwij3p.mpg", "brbk7n.mpg")


def _live_descendants_cpu_s() -> float:
    """CPU seconds of this process's live descendants (the embedded executor's pool workers,
    their ffmpeg children), with their own finished children: ``/proc/<pid>/stat``."""
    parents, times = {}, {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(stat.parent.name)
        parents[pid] = int(fields[1])  # field 4, ppid
        times[pid] = sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
    wanted, found = {os.getpid()}, 0
    grew = True
    while grew:
        grew = False
        for pid, parent in parents.items():
            if parent in wanted and pid not in wanted:
                wanted.add(pid)
                found += times[pid]
                grew = True
    return found / os.sysconf("SC_CLK_TCK")


def _child_cpu_s() -> float:
    """Finished children (ffmpeg) and live ones (pool workers): a pool's work counts in its stage."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime + _live_descendants_cpu_s()


class Meter:
    """CPU (this process + finished children) and wall seconds of a ``with`` block, accumulated."""

    def __init__(self):
        self.cpu_s = 0.0
        self.wall_s = 0.0
        self.load = None

    def __enter__(self):
        if self.load is None:
            self.load = os.getloadavg()[0]
        self._start = (time.process_time() + _child_cpu_s(), time.perf_counter())
        return self

    def __exit__(self, *exc):
        self.cpu_s += time.process_time() + _child_cpu_s() - self._start[0]
        self.wall_s += time.perf_counter() - self._start[1]


@contextlib.contextmanager
def metered(owner, attribute: str, meter: Meter):
    """Count the time spent in ``owner.attribute`` (a function or method) into ``meter``."""
    original = getattr(owner, attribute)

    def wrapper(*args, **kwargs):
        with meter:
            return original(*args, **kwargs)

    setattr(owner, attribute, wrapper)
    try:
        yield meter
    finally:
        setattr(owner, attribute, original)


class Stages:
    """Named meters in order, optionally profiled."""

    def __init__(self, profile_top: int):
        self.meters: dict[str, Meter] = {}
        self.profile_top = profile_top

    def meter(self, name: str) -> Meter:
        return self.meters.setdefault(name, Meter())

    @contextlib.contextmanager
    def stage(self, name: str):
        profiler = cProfile.Profile() if self.profile_top else None
        with self.meter(name):
            if profiler is not None:
                profiler.enable()
            try:
                yield
            finally:
                if profiler is not None:
                    profiler.disable()
        if profiler is not None:
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(self.profile_top)
            body = text.getvalue()
            body = body[body.find("   ncalls") :] if "   ncalls" in body else body
            print(f"\n-- profile of {name} (own time, top {self.profile_top})\n{body}", flush=True)


def _preload(_item: int) -> int:
    """Import what the stages' units import on first use (science packages, PyTorch's
    optimiser machinery) in this process; return its pid."""
    import torch

    import automated.attack.crossvideo  # noqa: F401  (scikit-learn, the recognizers)
    import automated.attack.verification  # noqa: F401
    import automated.behaviour  # noqa: F401
    import automated.face_eval  # noqa: F401

    torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))])  # imports torch._dynamo, once per process
    time.sleep(0.2)  # so one ready worker does not take every item while another still starts
    return os.getpid()


def _start_up() -> None:
    """Start the embedded executor's pool and import the science in every worker and here:
    a cost per process (a server or a demo pays it once), shown as its own row, so the
    stages below measure what a submission costs."""
    from automated.django_app import embedded

    _preload(0)
    workers = embedded.worker_count()
    if not embedded.pool_possible():
        return
    seen: set[int] = set()
    deadline = time.monotonic() + 300
    while len(seen) < workers and time.monotonic() < deadline:  # ask until every worker answered
        seen.update(embedded.map_in_pool(_preload, [(i,) for i in range(workers)]))


def _demo_campaign(var_dir: Path, quick: bool):
    from django.conf import settings

    from evalsite.demo_data import build_demo_dataset
    from evalsite.importer import import_dataset

    demo_dir = var_dir / "demo_data"
    build_demo_dataset(settings.DATA_DIR, demo_dir)
    if quick:
        lines = (demo_dir / "videos.csv").read_text().splitlines(keepends=True)
        kept = [lines[0]] + [line for line in lines[1:] if line.split(",", 1)[0] in QUICK_VIDEOS]
        (demo_dir / "videos.csv").write_text("".join(kept))
        for video in (demo_dir / "videos").iterdir():
            if video.name not in QUICK_VIDEOS:
                video.unlink()
    return import_dataset(demo_dir).campaign


def _mask(campaign, method: str, out_dir: Path) -> list[Path]:
    """The demo's masking (``services.create_baseline_submission``): face tracks cached."""
    from automated.anonymizers import anonymize_video
    from django.conf import settings
    from evalsite.storage import local_path

    out_dir.mkdir(parents=True, exist_ok=True)
    key = bytes(32)
    tracks = Path(settings.CACHE_DIR) / "face_tracks"
    paths = []
    for source in campaign.source_videos.order_by("name"):
        out = out_dir / f"{Path(source.name).stem}.mkv"
        with local_path(source.file) as clear_path:
            anonymize_video(clear_path, out, method, key=key, face_track_cache_dir=tracks)
        paths.append(out)
    return paths


def _upload(campaign, method: str, masked: list[Path], tmp: Path):
    from evalsite.models import Submission, Team
    from evalsite.uploads import receive_upload

    team, _ = Team.objects.get_or_create(campaign=campaign, name="Bench")
    submission = Submission.objects.create(campaign=campaign, team=team, name=method)
    archive = tmp / f"{method}.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as zipped:
        for path in masked:
            zipped.write(path, path.name)
    upload = receive_upload(submission, archive)
    if upload.status != "done" or upload.accepted_count != len(masked):
        raise RuntimeError(f"upload {upload.status}: {upload.error or upload.report}")
    return submission


def _submission_stages(stages: Stages, prefix: str, campaign, method: str, tmp: Path, *, detail: bool):
    import evalsite.storage
    import evalsite.validation
    from automated.django_app.attack_service import AttackRunKind, run_attack
    from evalsite import report_cache
    from automated.django_app.services import run_face_evaluation
    from evalsite.portal.demo import DEMO_ATTACK

    name = (lambda stage: f"{prefix}{stage}") if prefix else (lambda stage: stage)
    with stages.stage(name("mask")):
        masked = _mask(campaign, method, tmp / method)
    with (
        metered(evalsite.validation, "check_masked_video", stages.meter(name("upload: validation"))),
        metered(evalsite.storage, "transcode_for_web", stages.meter(name("upload: browser copy"))),
        stages.stage(name("upload")),
    ):
        submission = _upload(campaign, method, masked, tmp)
    with stages.stage(name("face_eval")):
        run = run_face_evaluation(submission, stride=STRIDE, detector=DETECTOR)
    assert run.status == "completed", run.error
    with (
        metered(AttackRunKind, "compute_video", stages.meter(name("attack: crops"))),
        metered(AttackRunKind, "compute_fold", stages.meter(name("attack: folds"))),
        metered(AttackRunKind, "compute_final", stages.meter(name("attack: final"))),
        stages.stage(name("attack")),
    ):
        attack = run_attack(submission, **DEMO_ATTACK, stride=STRIDE, detector=DETECTOR)
    assert attack.status == "completed", attack.error
    with stages.stage(name("reports")):  # what the last run's completion queues (report_tasks)
        failed = report_cache.warm(campaign)
    assert not failed, failed
    if not detail:
        for stage in ("upload", "upload: validation", "upload: browser copy"):
            stages.meters.pop(name(stage), None)
    return submission, attack, masked


def _threads_of_a_worker() -> None:
    """Bound this process's PyTorch, OpenCV and BLAS threads as a pool worker's are
    (``pool_worker.init_worker``: cores / workers), so a floor is measured as the stage's
    units run: with PyTorch's two threads here the batched embedder took 4-6x the CPU
    seconds of one thread for the same faces (spinning threads on a busy machine)."""
    import cv2
    import torch
    from threadpoolctl import threadpool_limits

    from automated.django_app import embedded

    threads = max(1, (os.cpu_count() or 1) // embedded.worker_count())
    torch.set_num_threads(threads)
    cv2.setNumThreads(threads)
    threadpool_limits(threads)


def _floors(stages: Stages, campaign, masked: list[Path], attack) -> None:
    from automated.attack.crossvideo import fold_of_groups, run_fold
    from automated.attack.faces import face_attack_data_from_videos
    from automated.attack.model_cache import FittedModelCache
    from automated.attack.recognizers import FACE_RECOGNIZERS, DlibEmbedding, EmbeddingCache, get_recognizers
    from automated.attack.suite import run_attack_suite
    from automated.behaviour import BehaviourExtractor
    from automated.detection import make_face_detector
    from automated.django_app.attack_service import video_role
    from automated.face_eval import BATCH_FRAMES
    from automated.recognition import DEFAULT_EMBEDDER, make_face_embedder
    from automated.video import VideoInfo, VideoWriter, iter_frames, transcode_for_web
    from django.conf import settings
    from evalsite.storage import local_path

    _threads_of_a_worker()
    sources = list(campaign.source_videos.order_by("name").select_related("identity"))
    with contextlib.ExitStack() as stack:
        clear = [stack.enter_context(local_path(s.file)) for s in sources]
        with stages.stage("floor: decode"):
            for path in clear + masked:
                for _ in iter_frames(path):
                    pass
        tested = {  # the tested frames, decoded outside the floors that use them
            path: list(iter_frames(path, stride=STRIDE)) for path in clear + masked
        }
        detector = stack.enter_context(make_face_detector(DETECTOR))
        detector.detect(tested[clear[0]][0][1])  # warm the model before timing
        boxes = {}
        with stages.stage("floor: detect"):
            for path in clear + masked:
                boxes[path] = [detector.detect(frame, index).boxes_xyxy for index, frame in tested[path]]
        all_clear = [list(iter_frames(path)) for path in clear]
        with stages.stage("floor: detect all clear"):
            for frames in all_clear:
                for index, frame in frames:
                    detector.detect(frame, index)
        embedder = make_face_embedder()
        first = next((i for i, b in enumerate(boxes[clear[0]]) if len(b)), None)
        if first is not None:  # load the model before timing
            embedder.embed_faces([(tested[clear[0]][first][1], boxes[clear[0]][first][0])])
        with stages.stage("floor: embed"):
            for clear_path, masked_path in zip(clear, masked):
                faces = [
                    (frame, box)
                    for path in (clear_path, masked_path)
                    for (_, frame), frame_boxes in zip(tested[path], boxes[clear_path])
                    for box in frame_boxes
                ]
                for start in range(0, len(faces), 2 * BATCH_FRAMES):
                    embedder.embed_faces(faces[start : start + 2 * BATCH_FRAMES])
        del all_clear
        with contextlib.closing(BehaviourExtractor(attribute=True)) as behaviour:
            behaviour.update(tested[clear[0]][0][1], 0)  # load the models before timing
            with stages.stage("floor: behaviour"):
                for clear_path, masked_path in zip(clear, masked):
                    for path in (clear_path, masked_path):
                        behaviour.reset()
                        for index, frame in tested[path]:
                            behaviour.update(frame, index)
        with tempfile.TemporaryDirectory() as out:
            frames_of = {path: [frame for _, frame in iter_frames(path)] for path in masked}
            with stages.stage("floor: encode ffv1"):
                for path in masked:
                    info = VideoInfo.from_video_path(path)
                    with VideoWriter(Path(out) / "f.mkv", info.fps, info.resolution_wh, codec="ffv1") as w:
                        for frame in frames_of[path]:
                            w.write(frame)
            del frames_of
            with stages.stage("floor: encode h264"):
                for path in masked:
                    transcode_for_web(path, Path(out) / "w.mp4")
        # The attack's crops from its cache (filled by the run), then only the fits.
        masked_videos = list(
            attack.submission.masked_videos.filter(pk__in=attack.planned_videos)
            .select_related("source_video__identity")
            .order_by("source_video__name")
        )
        pairs = [
            (stack.enter_context(local_path(m.source_video.file)), stack.enter_context(local_path(m.file)))
            for m in masked_videos
        ]
        data = face_attack_data_from_videos(
            pairs,
            [m.source_video.identity.code for m in masked_videos],
            stride=attack.config["stride"],
            detector=detector,
            cache_dir=Path(settings.CACHE_DIR) / "attack_faces",
            roles=[video_role(m.source_video) for m in masked_videos],
        )
        position = {m.pk: i for i, m in enumerate(masked_videos)}
        config = attack.config
        recognizers = get_recognizers(config["recognizers"], FACE_RECOGNIZERS)
        folds = [
            fold_of_groups(data.groups, [position[pk] for pk in tested_pks], number)
            for number, tested_pks in enumerate(attack.planned_folds)
        ]
        with tempfile.TemporaryDirectory() as models_dir:
            # A fresh model cache: the clear and naive attackers share one fit (same training
            # crops), as in the run. The second pass finds them cached and fits only what
            # sees masked crops: a later submission's floor.
            models = FittedModelCache(Path(models_dir))
            for side in ("", " masked"):
                with stages.stage(f"floor: attack fits{side}"):
                    for fold in folds:
                        run_fold(
                            data, fold, recognizers=recognizers, attackers=config["attackers"], models=models
                        )
                with stages.stage(
                    f"floor: attack fits within-video{side}"
                ):  # the run's scene-memorisation table
                    run_attack_suite(
                        data,
                        recognizers=recognizers,
                        attackers=config["attackers"],
                        selection=config["selection"],
                        gap=config["gap"],
                        seed=config["seed"],
                        within_video=True,
                        models=models,
                    )
        # The run's verification and identity-over-time figures embed every clear and masked crop.
        fresh = DlibEmbedding(DEFAULT_EMBEDDER, cache=EmbeddingCache())
        DlibEmbedding(DEFAULT_EMBEDDER, cache=EmbeddingCache()).transform(data.clear[:1])  # load the model
        for side, crops in (("clear", data.clear), ("masked", data.masked)):
            with stages.stage(f"floor: attack embed {side}"):
                fresh.transform(crops)


#: Which floors each stage cannot avoid.
FLOOR_OF = {
    "mask": ("decode clear", "detect all clear", "encode ffv1"),
    "upload": ("decode masked", "encode h264"),
    "upload: validation": ("decode masked",),
    "upload: browser copy": ("encode h264",),
    "face_eval": ("decode", "detect", "embed", "behaviour"),
    # The attack fits its folds and its within-video table and embeds every crop
    # (verification, identity over time); its crops come from the face evaluation's
    # decoding pass (attack.faces.CropPass), so it decodes and detects nothing itself.
    "attack": ("attack fits", "attack fits within-video", "attack embed"),
    "attack: folds": ("attack fits",),
    "attack: final": ("attack fits within-video", "attack embed"),
}
#: A later submission: the clear side of the face evaluation, the clear crops, their
#: embeddings and the clear and naive attackers' models come from the caches.
SECOND_FLOOR_OF = {
    "2nd face_eval": ("decode", "detect masked", "embed masked", "behaviour masked"),
    "2nd attack": (
        "attack fits masked",
        "attack fits within-video masked",
        "attack embed masked",
    ),
}
#: The floor of the whole pipeline (upload + face_eval + attack + reports): each file decoded once.
PIPELINE_FLOOR_OF = (
    "decode",
    "detect",
    "embed",
    "behaviour",
    "encode h264",
    "attack fits",
    "attack fits within-video",
    "attack embed",
)
PIPELINE_STAGES = ("upload", "face_eval", "attack", "reports")


def child(argv: list[str]) -> None:
    """Run the pipeline in this (fresh) process; write the rows as JSON to ``argv``'s --out."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--method", default="blur_face")
    parser.add_argument("--second", default="pixelate_face")
    parser.add_argument("--profile", type=int, default=0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    # Reports are warmed once per submission in their own stage ("reports"), not by whichever
    # run completes last (the pool's workers copy this setting when they start).
    settings.DEID_WARM_REPORTS = False
    stages = Stages(args.profile)
    with stages.stage("start-up"):
        _start_up()
    tmp = Path(settings.VAR_DIR) / "bench"
    tmp.mkdir()
    with stages.stage("import campaign"):
        campaign = _demo_campaign(Path(settings.VAR_DIR), args.quick)
    sources = list(campaign.source_videos.all())
    _, attack, masked = _submission_stages(stages, "", campaign, args.method, tmp, detail=True)
    if args.second != "none":
        _submission_stages(stages, "2nd ", campaign, args.second, tmp, detail=False)
    _floors(stages, campaign, masked, attack)
    n_clips = len(sources)
    video_s = sum(s.duration_s for s in sources)
    m = stages.meters
    # Split the decode floor by side (same share of frames as of files: clear and masked
    # files have the same frame counts).
    decode = m["floor: decode"]
    floor = {
        "decode": decode.cpu_s,
        "decode clear": decode.cpu_s / 2,
        "decode masked": decode.cpu_s / 2,
        "detect": m["floor: detect"].cpu_s,
        "detect clear": m["floor: detect"].cpu_s / 2,
        "detect all clear": m["floor: detect all clear"].cpu_s,
        "embed": m["floor: embed"].cpu_s,
        "behaviour": m["floor: behaviour"].cpu_s,
        # The masked side alone (half the faces and frames), what a later submission needs.
        "detect masked": m["floor: detect"].cpu_s / 2,
        "embed masked": m["floor: embed"].cpu_s / 2,
        "behaviour masked": m["floor: behaviour"].cpu_s / 2,
        "encode ffv1": m["floor: encode ffv1"].cpu_s,
        "encode h264": m["floor: encode h264"].cpu_s,
        **{
            name: m[f"floor: {name}"].cpu_s
            for name in (
                "attack fits",
                "attack fits masked",
                "attack fits within-video",
                "attack fits within-video masked",
            )
        },
        "attack embed": m["floor: attack embed clear"].cpu_s + m["floor: attack embed masked"].cpu_s,
        "attack embed masked": m["floor: attack embed masked"].cpu_s,
    }
    rows = []
    for name, meter in m.items():
        if not meter.wall_s:
            continue
        parts = SECOND_FLOOR_OF.get(name) or FLOOR_OF.get(name.removeprefix("2nd "), ())
        floor_s = sum(floor[p] for p in parts)
        rows.append(
            {
                "stage": name,
                "cpu_s": round(meter.cpu_s, 2),
                "wall_s": round(meter.wall_s, 2),
                "cores": round(meter.cpu_s / meter.wall_s, 2),
                "per_clip": round(meter.cpu_s / n_clips, 3),
                "per_video_s": round(meter.cpu_s / video_s, 3),
                "floor_s": round(floor_s, 2) if parts else "",
                "x_floor": round(meter.cpu_s / floor_s, 1) if parts and floor_s else "",
                "floor_of": " + ".join(parts),
                "load_1min": round(meter.load, 2),
            }
        )
    pipeline = sum(m[s].cpu_s for s in PIPELINE_STAGES)
    floors = sum(floor[p] for p in PIPELINE_FLOOR_OF)
    rows.append(
        {
            "stage": f"pipeline ({' + '.join(PIPELINE_STAGES)})",
            "cpu_s": round(pipeline, 2),
            "wall_s": round(sum(m[s].wall_s for s in PIPELINE_STAGES), 2),
            "per_clip": round(pipeline / n_clips, 3),
            "per_video_s": round(pipeline / video_s, 3),
            "floor_s": round(floors, 2),
            "x_floor": round(pipeline / floors, 1),
            "floor_of": " + ".join(PIPELINE_FLOOR_OF),
        }
    )
    if "2nd face_eval" in m:
        second = sum(m[f"2nd {s}"].cpu_s for s in ("face_eval", "attack", "reports"))
        first = sum(m[s].cpu_s for s in ("face_eval", "attack", "reports"))
        rows.append(
            {
                "stage": "2nd / 1st (face_eval + attack + reports)",
                "cpu_s": round(second, 2),
                "x_floor": f"{second / first:.0%} of the first",
            }
        )
    Path(args.out).write_text(
        json.dumps({"rows": rows, "clips": n_clips, "video_s": video_s, "cpus": os.cpu_count()})
    )


def run(argv: list[str] | None = None) -> list[dict]:
    """Run :func:`child` in a fresh process with a fresh var folder; return its rows."""
    argv = list(argv or [])
    os.environ.setdefault("DEID_SECRET_KEY", secrets.token_urlsafe(50))  # a throw-away var folder only
    import django

    django.setup()
    from django.conf import settings

    with tempfile.TemporaryDirectory(prefix="bench-pipeline-") as var_dir:
        out = Path(var_dir) / "rows.json"
        env = {
            **os.environ,
            "DEID_VAR_DIR": var_dir,
            "DEID_DATA_DIR": str(settings.DATA_DIR),
            "DEID_SECRET_KEY": settings.SECRET_KEY,
        }
        env.pop("DATABASE_URL", None)
        for name in ("DEID_MEDIA_ROOT", "DEID_CACHE_DIR"):
            env.pop(name, None)
        print(f"load before: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores", flush=True)
        subprocess.run(
            [sys.executable, "-m", "benchmarks.bench_pipeline", *argv, "--out", str(out)],
            env=env,
            cwd=settings.BASE_DIR,
            check=True,
        )
        result = json.loads(out.read_text())
        shutil.rmtree(var_dir, ignore_errors=True)
    print(f"{result['clips']} clips, {result['video_s']:.1f} video seconds")
    return result["rows"]


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
    child(sys.argv[1:])
