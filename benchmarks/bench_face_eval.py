"""Face evaluation throughput on one core, time shares and peak memory vs video length.

Each measurement runs ``automated.face_eval.evaluate_video`` in a fresh subprocess pinned
to one CPU (``os.sched_setaffinity``) with OpenCV, PyTorch and BLAS/OpenMP limited to one
thread. The clear video is a real GRID clip (``grid_talking_heads/bbaf2n.mpg``, 360x288,
75 frames, the demo clips' size); the masked one is its ``blur_face`` baseline (lossless
FFV1). The long pair is the same clip concatenated 10 times (750 frames), written with
``VideoWriter`` into a temporary folder.

Times are CPU seconds of the pinned process (``time.process_time``), so other load on
the machine does not inflate them; ``wall_s`` is shown beside for reference.

Columns: ``frames_per_s`` counts analysed (tested) frames per CPU second, each a clear +
masked pair (2 detections, 2 embeddings, SSIM, PSNR); ``inference`` is face detection +
embedding,
``decoding`` is frame decoding in the lockstep loop, ``metrics`` our scoring code (SSIM,
PSNR, IoU, ranks), ``other`` the rest (mostly the frame-count probe of both files before the loop, which
decodes them once; model loading and the mediapipe import happen before timing).
``ms_per_video_frame`` is CPU ms over the frames of both videos (clear + masked, tested
or not: the per-frame cost of evaluating a whole video at that stride), ``vs_naive`` that
over the naive loop's. Rows: the *first submission* computes the clear side (every clear
face's box and embedding) and stores it in a cache folder; a *later submission* is a new
process reading it from disk (``clear_side.ClearSideStore``), so only masked frames are
detected and embedded. The *naive loop* is the face_recognition-style code: per frame of
both videos, dlib HOG detection, 5-point landmarks and dlib's own ResNet
(``compute_face_descriptor``) per face, then the gallery distances. Target:
``vs_naive <= 1/3``.
``peak_rss_mb`` is the subprocess's maximum resident set (models included) and
``traced_peak_mb`` the peak of Python/numpy allocations (tracemalloc): neither should grow
with video length, because frames are streamed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CLIP = "videos/grid_talking_heads/bbaf2n.mpg"
REPEATS = 10
SINGLE_THREAD_ENV = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "TF_NUM_INTEROP_THREADS": "1",
    "TF_NUM_INTRAOP_THREADS": "1",
}


def _naive_loop(clear_path: str, masked_path: str, gallery) -> int:
    """face_recognition-style evaluation of every frame pair: HOG, 5 points, dlib's ResNet; frames seen."""
    import dlib
    import numpy as np

    from automated.recognition import native_encoder, shape_predictor
    from automated.video import iter_frames

    hog, predictor, encoder = dlib.get_frontal_face_detector(), shape_predictor(), native_encoder()
    frames = 0
    for (_, clear), (_, masked) in zip(iter_frames(clear_path), iter_frames(masked_path)):
        for frame in (clear, masked):
            frames += 1
            for rect in hog(frame, 0):
                descriptor = np.asarray(encoder.compute_face_descriptor(frame, predictor(frame, rect)))
                np.linalg.norm(gallery - descriptor, axis=1)
    return frames


def _child(clear_path: str, masked_path: str, stride: int, gallery_path: str, cache_dir: str = "-") -> dict:
    """Measure one evaluation (or the naive loop, ``stride == 0``) in this single-core process."""
    import resource
    import time
    import tracemalloc

    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    import cv2
    import numpy as np

    cv2.setNumThreads(1)
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        pass
    from automated.detection import MediaPipeFaceDetector
    from automated.dlib_torch import load_face_resnet
    from automated.face_eval import evaluate_video
    from automated.recognition import native_encoder, shape_predictor, make_face_embedder
    from automated.video import VideoInfo

    # One-off per process, not per frame: model files, mediapipe import + graph.
    shape_predictor()
    native_encoder()
    load_face_resnet()
    MediaPipeFaceDetector().close()
    gallery = np.load(gallery_path)
    embedder = make_face_embedder()  # the default: dlib's ResNet in PyTorch
    timings: dict = {}
    frames = VideoInfo.from_video_path(clear_path).frame_count
    tracemalloc.start()
    started, wall_started = time.process_time(), time.perf_counter()
    if stride == 0:
        _naive_loop(clear_path, masked_path, gallery)
        total, wall = time.process_time() - started, time.perf_counter() - wall_started
        return {
            "frames_analysed": frames,
            "cpu_s": total,
            "wall_s": wall,
            "frames_per_s": frames / total,
            "ms_per_video_frame": 1000 * total / (2 * frames),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "traced_peak_mb": tracemalloc.get_traced_memory()[1] / 2**20,
        }
    result = evaluate_video(
        clear_path,
        masked_path,
        gallery,
        ["P01", "other"],
        "P01",
        stride=stride,
        embedder=embedder,
        timings=timings,
        clear_cache_dir=None if cache_dir == "-" else cache_dir,
    )
    total, wall = time.process_time() - started, time.perf_counter() - wall_started
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    inference = timings.get("detect", 0.0) + timings.get("embed", 0.0)
    accounted = inference + timings.get("decode", 0.0) + timings.get("metrics", 0.0)
    return {
        "frames_analysed": result.frames_tested,
        "cpu_s": total,
        "wall_s": wall,
        "frames_per_s": result.frames_tested / total,
        "ms_per_video_frame": 1000 * total / (2 * frames),
        "inference": inference / total,
        "decoding": timings.get("decode", 0.0) / total,
        "metrics": timings.get("metrics", 0.0) / total,
        "other": (total - accounted) / total,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "traced_peak_mb": traced_peak / 2**20,
    }


def _measure(clear: Path, masked: Path, stride: int, gallery: Path, cache_dir: Path | None = None) -> dict:
    command = [
        sys.executable,
        "-m",
        "benchmarks.bench_face_eval",
        "--child",
        str(clear),
        str(masked),
        str(stride),
        str(gallery),
        str(cache_dir or "-"),
    ]
    env = {**os.environ, **SINGLE_THREAD_ENV, "PYTHONWARNINGS": "ignore", "GLOG_minloglevel": "3"}
    completed = subprocess.run(
        command, capture_output=True, text=True, env=env, cwd=Path(__file__).resolve().parent.parent
    )
    if completed.returncode != 0:
        raise RuntimeError(f"benchmark child failed: {completed.stderr[-2000:]}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def _prepare(data_dir: Path, folder: Path) -> dict[str, Path]:
    """Write masked/long videos and a 2-identity gallery (P01 from another s1 clip) into ``folder``."""
    import numpy as np

    from automated.anonymizers import anonymize_video
    from automated.face_eval import embed_gallery_image
    from automated.video import VideoInfo, VideoWriter, iter_frames

    clear = data_dir / CLIP
    masked = folder / "short_masked.mkv"
    anonymize_video(clear, masked, "blur_face", key=bytes(32))
    info = VideoInfo.from_video_path(clear)
    paths = {"short_clear": clear, "short_masked": masked}
    for name, source in (("long_clear", clear), ("long_masked", masked)):
        paths[name] = folder / f"{name}.mkv"
        with VideoWriter(paths[name], info.fps, info.resolution_wh, codec="ffv1") as writer:
            for _ in range(REPEATS):
                for _, frame in iter_frames(source):
                    writer.write(frame)
    stills = [
        next(iter_frames(data_dir / clip, start=37))[1]
        for clip in ("videos/grid_identity_clips/s1/bbal6n.mpg", "videos/grid_talking_heads/sbia1a.mpg")
    ]
    paths["gallery"] = folder / "gallery.npy"
    np.save(paths["gallery"], np.stack([embed_gallery_image(still) for still in stills]))
    return paths


def run() -> list[dict]:
    """Rows: the short clip at stride 1 (first and later submission, the naive loop) and 5,
    the 10x longer clip at stride 5.

    First prints the per-model table (``bench_face_models``: dlib's embedding and MMOD
    detector vs our PyTorch ports).
    """
    from django.conf import settings

    from benchmarks import bench_face_models
    from benchmarks.__main__ import print_table

    print("-- dlib's networks, dlib's own code vs the PyTorch ports (bench_face_models):")
    print_table(bench_face_models.run())
    print("-- face evaluation (default detector and embedder):")
    data_dir = Path(settings.DATA_DIR)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        paths = _prepare(data_dir, Path(tmp))
        cache_dir = Path(tmp) / "clear_side"
        naive = _measure(paths["short_clear"], paths["short_masked"], 0, paths["gallery"])
        for label, length, stride, cache in (
            ("short, first submission", 75, 1, cache_dir),
            ("short, later submission", 75, 1, cache_dir),
            ("short", 75, 5, None),
            ("long (10x)", 75 * REPEATS, 5, None),
        ):
            key = "long" if label.startswith("long") else "short"
            row = _measure(paths[f"{key}_clear"], paths[f"{key}_masked"], stride, paths["gallery"], cache)
            row["vs_naive"] = row["ms_per_video_frame"] / naive["ms_per_video_frame"]
            rows.append({"video": label, "frames": length, "stride": stride, **row})
        rows.append(
            {
                "video": "short, naive loop (HOG + 5-point + dlib ResNet)",
                "frames": 75,
                "stride": 1,
                **naive,
                "vs_naive": 1.0,
            }
        )
    return rows


if __name__ == "__main__":
    if len(sys.argv) == 7 and sys.argv[1] == "--child":
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
        print(json.dumps(_child(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6])))
    else:
        import django

        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
        django.setup()
        from benchmarks.__main__ import print_table

        print_table(run())
