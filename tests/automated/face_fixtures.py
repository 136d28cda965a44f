"""Shared real-data helpers of the face-evaluation tests (cached once per test process).

Clips (``<data_dir>/videos``, GRID corpus, 360x288, 25 fps, 75 frames): ``bbaf2n`` is
speaker s1, ``id2_vcd_swwp2s`` and ``pwij3p`` are the same person (s2, P03), ``lwbsza``
is the probable s4 woman. Gallery stills of the probed people come from a DIFFERENT clip
of the same person (s1: ``s1/bbal6n``, s2: ``pwij3p``, s4: ``s4_probable/bbilzs``, a
720x576 recording); three other speakers are impostor identities of the closed set.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from automated.face_eval import embed_gallery_image
from automated.recognition import make_face_embedder
from automated.video import iter_frames

GALLERY_CLIPS = {
    "s1": "grid_identity_clips/s1/bbal6n.mpg",
    "s2": "grid_talking_heads/pwij3p.mpg",
    "s4": "grid_identity_clips/s4_probable/bbilzs.mpg",
    "P02": "grid_talking_heads/brbk7n.mpg",
    "P04": "grid_talking_heads/lbax4n.mpg",
    "P08": "grid_talking_heads/sbia1a.mpg",
}
PROBE_CLIPS = {
    "bbaf2n": "s1",
    "id2_vcd_swwp2s": "s2",
    "lwbsza": "s4",
}
GALLERY_FRAME = 37  # the middle of a 75-frame clip


def frame_at(video_path, index: int) -> np.ndarray:
    """Decoded RGB frame ``index`` of a video."""
    for _, frame_rgb in iter_frames(video_path, start=index, end=index + 1):
        return frame_rgb
    raise ValueError(f"{video_path}: frame {index} does not decode")


@functools.cache
def gallery(data_dir: Path) -> tuple[np.ndarray, np.ndarray]:
    """(embeddings (6, dim) float32, identities (6,)) from the middle frame of each gallery clip,
    by the default embedder (``recognition.DEFAULT_EMBEDDER``)."""
    embedder = make_face_embedder()
    embeddings = [
        embed_gallery_image(frame_at(data_dir / "videos" / clip, GALLERY_FRAME), embedder=embedder)
        for clip in GALLERY_CLIPS.values()
    ]
    return np.stack(embeddings), np.array(list(GALLERY_CLIPS))


def probe_path(data_dir: Path, clip: str) -> Path:
    return data_dir / "videos" / "grid_talking_heads" / f"{clip}.mpg"


def add_real_clip(campaign, identity, data_dir: Path, clip: str, *, attacker_train: bool = False):
    """A saved ``SourceVideo`` of ``identity`` from the real clip ``<data_dir>/videos/<clip>``.

    Evaluated, or (``attacker_train``) the attacker's own training material; action
    "talking". Needs the Django test database (imports evalsite lazily).
    """
    from django.core.files import File

    from evalsite.models import SourceVideo

    video = SourceVideo(
        campaign=campaign,
        identity=identity,
        name=Path(clip).stem,
        action="talking",
        attacker_train=attacker_train,
        in_evaluated_subset=not attacker_train,
    )
    with (data_dir / "videos" / clip).open("rb") as handle:
        video.file.save(Path(clip).name, File(handle), save=True)
    return video
