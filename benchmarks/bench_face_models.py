"""dlib's face networks: dlib's own code vs our PyTorch ports, CPU ms per face and per frame.

Each row is measured in a fresh subprocess pinned to one CPU (``os.sched_setaffinity``)
with PyTorch, OpenCV and BLAS/OpenMP limited to one thread (as ``bench_face_eval``), in
CPU seconds of that process (``time.process_time``), after one warm-up call.

- ``resnet``: the 150x150 face chips of 32 real faces (GRID frames, dlib HOG boxes, dlib's
  5-point alignment) embedded by dlib's ``face_recognition_model_v1`` (one call over the
  list of chips) and by ``dlib_torch.FaceResNet`` in batches of 1, 8 and 32. ``align``
  is the alignment (5-point landmarks + ``get_face_chip``) both share, per face.
- ``mmod``: the MMOD CNN face detector on 360x288 GRID frames: dlib's
  ``cnn_face_detection_model_v1`` frame by frame, ours frame by frame and in batches of 4.

``speedup`` is dlib's time over ours for the same work; ``max_abs_diff`` the largest
difference of our embeddings (scores for MMOD) from dlib's over the measured items.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

CLIPS = (
    "videos/grid_talking_heads/bbaf2n.mpg",
    "videos/grid_talking_heads/lbax4n.mpg",
    "videos/grid_talking_heads/sbia1a.mpg",
    "videos/grid_talking_heads/pwij3p.mpg",
)
N_FACES = 32
N_FRAMES = 4
SINGLE_THREAD_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _frames(data_dir: Path, count: int):
    from automated.video import iter_frames

    frames = []
    for clip in CLIPS:
        for _, frame in iter_frames(data_dir / clip, stride=10):
            frames.append(frame)
    return frames[:count]


def _cpu_seconds(function, repeats: int = 1) -> float:
    import time

    function()  # warm-up: model loading, first-call allocations
    started = time.process_time()
    for _ in range(repeats):
        function()
    return (time.process_time() - started) / repeats


def _child(task: str, data_dir: str) -> list[dict]:
    """Measure ``task`` ("resnet" or "mmod") in this single-core process."""
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    import cv2
    import numpy as np
    import torch

    cv2.setNumThreads(1)
    torch.set_num_threads(1)
    data_dir = Path(data_dir)
    if task == "resnet":
        import dlib

        from automated.dlib_torch import load_face_resnet
        from automated.recognition import native_encoder, make_face_embedder

        hog = dlib.get_frontal_face_detector()
        faces = []
        for frame in _frames(data_dir, 4 * N_FACES):
            faces += [(frame, [r.left(), r.top(), r.right() + 1, r.bottom() + 1]) for r in hog(frame, 0)]
        faces = faces[:N_FACES]
        embedder = make_face_embedder()
        chips = embedder.chips(faces)
        align = _cpu_seconds(lambda: embedder.chips(faces)) / len(faces)
        encoder, net = native_encoder(), load_face_resnet()
        reference = np.asarray(
            [np.asarray(d) for d in encoder.compute_face_descriptor(list(chips))], np.float32
        )
        dlib_s = _cpu_seconds(lambda: encoder.compute_face_descriptor(list(chips))) / len(chips)
        rows = [
            {
                "model": "resnet",
                "implementation": "dlib (C++)",
                "batch": len(chips),
                "ms_per_item": 1000 * dlib_s,
                "speedup": 1.0,
                "align_ms": 1000 * align,
                "max_abs_diff": 0.0,
            }
        ]
        for batch in (1, 8, 32):
            ours = net.embed_chips(chips, batch_size=batch)
            seconds = _cpu_seconds(lambda b=batch: net.embed_chips(chips, batch_size=b)) / len(chips)
            rows.append(
                {
                    "model": "resnet",
                    "implementation": "ours (PyTorch)",
                    "batch": batch,
                    "ms_per_item": 1000 * seconds,
                    "speedup": dlib_s / seconds,
                    "align_ms": 1000 * align,
                    "max_abs_diff": float(np.abs(ours - reference).max()),
                }
            )
        return rows
    from automated.detection import make_face_detector

    frames = _frames(data_dir, N_FRAMES)
    native, ours = make_face_detector("mmod_native"), make_face_detector("mmod")
    reference = [native.detect(frame) for frame in frames]
    dlib_s = _cpu_seconds(lambda: [native.detect(frame) for frame in frames]) / len(frames)
    rows = [
        {
            "model": "mmod",
            "implementation": "dlib (C++)",
            "batch": 1,
            "ms_per_item": 1000 * dlib_s,
            "speedup": 1.0,
            "max_abs_diff": 0.0,
        }
    ]
    for batch in (1, N_FRAMES):

        def detect(b=batch):
            return [d for i in range(0, len(frames), b) for d in ours.detect_batch(frames[i : i + b])]

        found = detect()
        if [len(d) for d in found] != [len(d) for d in reference]:
            raise RuntimeError("our MMOD found other faces than dlib's")
        diff = max(
            (float(np.abs(a.scores - b.scores).max()) for a, b in zip(found, reference) if len(a)),
            default=0.0,
        )
        seconds = _cpu_seconds(detect) / len(frames)
        rows.append(
            {
                "model": "mmod",
                "implementation": "ours (PyTorch)",
                "batch": batch,
                "ms_per_item": 1000 * seconds,
                "speedup": dlib_s / seconds,
                "max_abs_diff": diff,
            }
        )
    return rows


def run() -> list[dict]:
    """Rows: the ResNet per face (dlib, ours at batch 1/8/32) and MMOD per 360x288 frame."""
    from django.conf import settings

    rows = []
    for task in ("resnet", "mmod"):
        command = [
            sys.executable,
            "-m",
            "benchmarks.bench_face_models",
            "--child",
            task,
            str(settings.DATA_DIR),
        ]
        env = {**os.environ, **SINGLE_THREAD_ENV, "PYTHONWARNINGS": "ignore"}
        completed = subprocess.run(
            command,
            capture_output=True,
            text=True,
            env=env,
            timeout=1800,
            cwd=Path(__file__).resolve().parent.parent,
        )
        if completed.returncode != 0:
            raise RuntimeError(f"benchmark child failed: {completed.stderr[-2000:]}")
        rows += json.loads(completed.stdout.strip().splitlines()[-1])
    return rows


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        print(json.dumps(_child(sys.argv[2], sys.argv[3])))
    else:
        import django

        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
        django.setup()
        from benchmarks.__main__ import print_table

        print_table(run())
