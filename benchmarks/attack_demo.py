"""Shared set-up of the attack benchmarks: the demo's clips, masked by a baseline, as AttackData.

The demo campaign (``evalsite.demo_data.DEMO_PEOPLE``): 24 real clips of 11 identities
(GRID talking heads and identity clips, CREMA-D actor 1001), four of them the attacker's own
material (``ATTACKER_TRAIN_CLIPS``). Masked videos are written once per baseline into
``DEID_BENCH_ATTACK_DIR`` (default a folder in the system temp dir) and reused by later
runs, like the platform reuses a team's upload; crops go to the disk cache there too.
"""

from __future__ import annotations

import time
from pathlib import Path

from evalsite import conf

STRIDE = 5
KEY = bytes(range(32))


def work_dir() -> Path:
    path = conf.value("DEID_BENCH_ATTACK_DIR")
    path.mkdir(parents=True, exist_ok=True)
    return path


def demo_clips() -> list[tuple[str, str, str]]:
    """``(clip path, identity, role)`` of every demo video, in the demo's order."""
    from django.conf import settings

    from automated.attack.data import ROLE_ATTACKER_TRAIN, ROLE_EVALUATED
    from evalsite.demo_data import ATTACKER_TRAIN_CLIPS, DEMO_PEOPLE

    videos = Path(settings.DATA_DIR) / "videos"
    return [
        (
            str(videos / clip),
            person.code,
            ROLE_ATTACKER_TRAIN if clip in ATTACKER_TRAIN_CLIPS else ROLE_EVALUATED,
        )
        for person in DEMO_PEOPLE
        for clip in person.videos
    ]


def masked_pairs(method: str) -> tuple[list[tuple[str, Path]], float]:
    """Clear/masked path pairs of the demo under ``method`` and the wall seconds spent masking now."""
    from automated.anonymizers import anonymize_video

    folder = work_dir() / "masked" / method
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    pairs = []
    for i, (clip, _, _) in enumerate(demo_clips()):
        masked = folder / f"{i:02d}_{Path(clip).stem}.mkv"
        if not masked.is_file():
            partial = masked.with_suffix(".part.mkv")
            anonymize_video(clip, partial, method, key=KEY)
            partial.replace(masked)
        pairs.append((clip, masked))
    return pairs, time.perf_counter() - started


def attack_data(pairs, detector):
    """``AttackData`` of the demo pairs (crops cached under ``work_dir()/crops``)."""
    from automated.attack.faces import face_attack_data_from_videos

    clips = demo_clips()
    return face_attack_data_from_videos(
        pairs,
        [identity for _, identity, _ in clips],
        stride=STRIDE,
        detector=detector,
        cache_dir=work_dir() / "crops",
        roles=[role for _, _, role in clips],
    )
