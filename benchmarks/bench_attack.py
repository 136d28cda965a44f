"""Attack suite on the demo-like campaign: wall/CPU time, extraction vs training, cache hits.

The campaign: every real talking-head clip in ``DATA_DIR/videos`` (GRID talking heads,
GRID identity clips s1 and probable s4, CREMA-D actor 1001: 27 clips, 11 identities, 360x288
to 720x576), masked with the ``block_permute_fixed`` baseline (16-pixel blocks, one key and
nonce; lossless FFV1) into a temporary folder. Identities with several clips are split by
video, single-clip identities by time segment with a 10-frame gap (``protocol``).

Rows (one process, this 2-core machine; ``cpu_s`` is process CPU time, robust to other
load, ``wall_s`` real time):

- ``mask videos``: the baseline masking (not part of an attack; for scale);
- ``extract crops (cold)``: decode, detect the face in the clear frame, crop clear + masked
  (``attack.faces.face_attack_data_from_videos``, stride 5), written to the disk cache;
- ``extract crops (warm)``: the same call again: every video is a cache hit, nothing is
  decoded or detected;
- ``dlib embeddings``: face embeddings (``recognition.DEFAULT_EMBEDDER``, dlib's ResNet in
  PyTorch) of every clear and masked crop, computed once in batches into
  the shared cache (``EMBEDDING_CACHE``) that all dlib recognizers x attackers then reuse;
- ``train+test <recognizer>``: fitting and testing that recognizer for all six attackers
  (clear, naive, parrot_25/50/75, parrot); the dlib rows find every embedding cached;
- ``suite total``.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

VIDEO_FOLDERS = {
    "grid_talking_heads": "*.mpg",
    "grid_identity_clips/s1": "*.mpg",
    "grid_identity_clips/s4_probable": "*.mpg",
    "cremad": "*.flv",
}
STRIDE = 5
RECOGNIZERS = ["dlib_svm", "dlib_knn", "lbph", "eigenfaces", "cnn"]


def _identity_of(data_dir: Path) -> dict[str, str]:
    """Clip path -> identity, from the data's own ``clips.csv`` files."""
    import pandas as pd

    videos = data_dir / "videos"
    identity = {}
    heads = pd.read_csv(videos / "grid_talking_heads" / "clips.csv")
    for row in heads.itertuples():
        identity[str(videos / "grid_talking_heads" / row.file)] = f"grid_{row.person_label}"
    clips = pd.read_csv(videos / "grid_identity_clips" / "clips.csv")
    for row in clips.itertuples():
        path = (videos / "grid_identity_clips" / row.file).resolve()
        label = {"grid_s1": "grid_P01", "grid_s4_probable": "grid_P07", "grid_s2": "grid_P03"}[row.identity]
        identity[str(path)] = label
    for path in (videos / "cremad").glob("*.flv"):
        identity[str(path)] = "cremad_1001"
    return identity


def _timed(rows, stage, fn):
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    rows.append({"stage": stage, "wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu})
    return result


def run() -> list[dict]:
    from django.conf import settings

    from automated.anonymizers import anonymize_video
    from automated.attack.faces import face_attack_data_from_videos, video_face_crops
    from automated.attack.recognizers import EMBEDDING_CACHE, DlibEmbedding, get_recognizers
    from automated.attack.suite import run_attack_suite, worst_case
    from automated.detection import MediaPipeFaceDetector

    data_dir = Path(settings.DATA_DIR)
    identity = _identity_of(data_dir)
    clips = sorted(
        str(p.resolve())
        for folder, pattern in VIDEO_FOLDERS.items()
        for p in (data_dir / "videos" / folder).glob(pattern)
    )
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)

        def mask_all():
            pairs = []
            for i, clip in enumerate(clips):
                masked = tmp / f"masked_{i:02d}.mkv"
                anonymize_video(clip, masked, "block_permute_fixed", key=bytes(range(32)))
                pairs.append((clip, masked))
            return pairs

        pairs = _timed(rows, "mask videos", mask_all)
        labels = [identity[c] for c in clips]
        cache = tmp / "cache"
        with MediaPipeFaceDetector() as detector:
            extract = lambda: face_attack_data_from_videos(  # noqa: E731
                pairs, labels, stride=STRIDE, detector=detector, cache_dir=cache
            )
            data = _timed(rows, "extract crops (cold)", extract)
            _timed(rows, "extract crops (warm)", extract)
            hits = sum(
                video_face_crops(c, m, stride=STRIDE, detector=detector, cache_dir=cache).from_cache
                for c, m in pairs
            )
        rows[-1]["note"] = (
            f"{hits}/{len(pairs)} videos from cache; {len(list(cache.glob('*.npz')))} cache files"
        )
        rows[-2]["note"] = f"{len(pairs)} videos, {len(set(labels))} identities, {data.n_samples} crops"
        embed = DlibEmbedding()
        _timed(rows, "dlib embeddings", lambda: (embed.transform(data.clear), embed.transform(data.masked)))
        rows[-1]["note"] = f"{EMBEDDING_CACHE.misses} computed"
        tables = []
        for name in RECOGNIZERS:
            misses = EMBEDDING_CACHE.misses
            table = _timed(
                rows,
                f"train+test {name}",
                lambda: run_attack_suite(data, recognizers=get_recognizers([name]), gap=10, seed=0),
            )
            rows[-1]["note"] = (
                f"6 attackers, {EMBEDDING_CACHE.misses - misses} new embeddings; parrot "
                f"{table.set_index('attacker').loc['parrot', 'accuracy']:.3f}, naive "
                f"{table.set_index('attacker').loc['naive', 'accuracy']:.3f}"
            )
            tables.append(table)
        import pandas as pd

        full = pd.concat(tables, ignore_index=True)
        worst = worst_case(full)
        rows.append(
            {
                "stage": "suite total",
                "wall_s": sum(r["wall_s"] for r in rows if r["stage"].startswith("train")),
                "cpu_s": sum(r["cpu_s"] for r in rows if r["stage"].startswith("train")),
                "note": (
                    f"worst case {worst['accuracy']:.3f} ({worst['recognizer']} x {worst['attacker']}), "
                    f"chance {worst['chance_level']:.3f}, clear bound {worst['clear_accuracy']:.3f}"
                ),
            }
        )
    return rows
