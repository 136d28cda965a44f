"""Behaviour evaluation of one masked video against its clear video, from the files.

Decodes both videos in lockstep with ``automated.video.iter_frames`` (every
``stride``-th frame is tested, as in ``face_eval``), feeds each tested frame to a
clear-side and a masked-side ``BehaviourExtractor`` and compares their features. The
masked side's attribute crop (gender attacker) is cut at the clear frame's face box, the
strongest attacker's assumption (it knows where the face is even where the masking
defeats the face model).

Clear-side cache: with ``cache_dir``, the clear features are stored per source video as
``<cache_dir>/<key>.npz`` (atomic write) with a key over the clear file (resolved path,
size, modification time), the stride and the extractor settings, so every submission
of a campaign measures each clear video once; on a cache hit the clear video is not
decoded at all.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from dataclasses import dataclass
from itertools import zip_longest
from numbers import Integral
from pathlib import Path

from ..face_eval import VideoPairError, check_video_pair
from ..video import iter_frames
from .compare import compare
from .extractor import BehaviourExtractor
from .features import BehaviourFeatures
from .score import behaviour_score


@dataclass(frozen=True)
class BehaviourEvaluation:
    """Result of ``evaluate_behaviour``.

    Attributes
    ----------
    metrics : dict
        ``compare.compare`` metrics merged with ``score.behaviour_score``.
    clear, masked : BehaviourFeatures
        Per-frame features of both sides (for leakage and expression accuracy).
    clear_from_cache : bool
        True when the clear side was read from the cache.
    """

    metrics: dict
    clear: BehaviourFeatures
    masked: BehaviourFeatures
    clear_from_cache: bool

    @property
    def score(self) -> float:
        return self.metrics["behaviour_score"]


def clear_cache_path(cache_dir, clear_path, stride: int, settings: str) -> Path:
    """Cache file of a clear video's features under these settings (module docstring)."""
    path = Path(clear_path).resolve()
    stat = path.stat()
    key = "\n".join([str(path), str(stat.st_size), str(stat.st_mtime_ns), str(stride), settings])
    return Path(cache_dir) / f"behaviour-{hashlib.sha256(key.encode()).hexdigest()[:32]}.npz"


def evaluate_behaviour(
    clear_path,
    masked_path,
    *,
    stride: int = 5,
    cache_dir=None,
    extractors: tuple[BehaviourExtractor, BehaviourExtractor] | None = None,
    timings: dict | None = None,
    **model_options,
) -> BehaviourEvaluation:
    """Score the behaviour a masked video keeps from its clear video (module docstring).

    Parameters
    ----------
    clear_path, masked_path : path-like
        Same frame count and frame size.
    stride : int, default=5
        Test frames 0, stride, 2*stride, ...; a whole number >= 1.
    cache_dir : path-like, optional
        Folder of the clear-side feature cache (created if missing).
    extractors : (BehaviourExtractor, BehaviourExtractor), optional
        Clear-side and masked-side extractors to reuse over many videos (they are
        ``reset()`` here and left open; loading the models costs about 0.3 CPU seconds
        per extractor). Their settings must be equal.
    **model_options
        Without ``extractors``: ``BehaviourExtractor`` options (``body``, ``hands``,
        ``expression``, ``attribute`` for the gender attacker, ``models_dir``).
    timings : dict, optional
        CPU seconds of "decode" (one step of the lockstep decoding loop: one or two
        frames) and, for extractors made here, per model, with frame counts (see
        ``BehaviourExtractor``; given extractors report into their own ``timings``).

    Returns
    -------
    BehaviourEvaluation

    Raises
    ------
    ValueError
        If ``stride`` is not a whole number >= 1, or ``extractors`` come with model
        options or with different settings.
    TypeError
        On an unknown model option.
    automated.face_eval.VideoPairError
        If the videos differ in frame count or size (checked before any model runs, and
        again while decoding).
    automated.video.VideoError
        If either file is missing or not a readable video.
    FileNotFoundError
        If the classifier weights are missing.
    """
    if isinstance(stride, bool) or not isinstance(stride, Integral) or stride < 1:
        raise ValueError(f"stride must be a whole number >= 1, got {stride!r}")
    if extractors is not None and model_options:
        raise ValueError(f"pass model options or extractors, not both (got {sorted(model_options)})")
    check_video_pair(clear_path, masked_path)
    with contextlib.ExitStack() as stack:
        if extractors is None:
            extractors = tuple(
                stack.enter_context(BehaviourExtractor(timings=timings, **model_options)) for _ in range(2)
            )
        clear_side, masked_side = extractors
        if clear_side.settings != masked_side.settings:
            raise ValueError("the clear-side and masked-side extractors run different models")
        clear_side.reset()
        masked_side.reset()
        clear, cached = _measure(clear_path, masked_path, stride, cache_dir, clear_side, masked_side, timings)
        masked = masked_side.features()
    metrics = compare(clear, masked)
    metrics.update(behaviour_score(metrics))
    return BehaviourEvaluation(metrics, clear, masked, cached)


def _measure(clear_path, masked_path, stride, cache_dir, clear_side, masked_side, timings):
    """The decoding loop: (clear features, whether they came from the cache); fills masked_side."""
    cache_file = clear_cache_path(cache_dir, clear_path, stride, clear_side.settings) if cache_dir else None
    if cache_file is not None and cache_file.is_file():
        try:
            cached = BehaviourFeatures.load(cache_file)
        except (OSError, ValueError):  # a damaged cache entry is recomputed, never trusted
            cached = None
        if cached is not None and cached.settings == clear_side.settings:
            boxes = iter(cached.face_box)
            started = time.process_time()
            for frame_index, masked_rgb in iter_frames(masked_path, stride=stride):
                _add(timings, "decode", started)
                box = next(boxes, None)
                if box is None:
                    raise VideoPairError(
                        f"{Path(masked_path).name} has more tested frames than its cached clear video"
                    )
                masked_side.update(masked_rgb, frame_index, attribute_box=box)
                started = time.process_time()
            return cached, True
    pairs = zip_longest(iter_frames(clear_path, stride=stride), iter_frames(masked_path, stride=stride))
    started = time.process_time()
    for clear_pair, masked_pair in pairs:
        _add(timings, "decode", started)
        if clear_pair is None or masked_pair is None:
            raise VideoPairError(f"{masked_path} and {clear_path} decode to different frame counts")
        (frame_index, clear_rgb), (_, masked_rgb) = clear_pair, masked_pair
        if clear_rgb.shape != masked_rgb.shape:
            raise VideoPairError(f"frame {frame_index}: clear {clear_rgb.shape}, masked {masked_rgb.shape}")
        row = clear_side.update(clear_rgb, frame_index)
        masked_side.update(masked_rgb, frame_index, attribute_box=row["face_box"])
        started = time.process_time()
    clear = clear_side.features()
    if cache_file is not None:
        clear.save(cache_file)
    return clear, False


def _add(timings: dict | None, stage: str, since: float) -> None:
    if timings is not None:
        timings[stage] = timings.get(stage, 0.0) + time.process_time() - since
        timings[f"{stage}_frames"] = timings.get(f"{stage}_frames", 0) + 1
