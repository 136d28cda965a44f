"""Behaviour evaluation of one masked video against its clear video.

One pass over the tested frame pairs: ``BehaviourPass.update(frame_index, clear_rgb,
masked_rgb)`` is called for every tested pair by whoever decodes them. The face
evaluation does (``face_eval.evaluate_video(..., observers=[behaviour_pass])``), so a
face run decodes each video pair once for face metrics, SSIM/PSNR and behaviour;
``evaluate_behaviour`` is the same pass on its own (it decodes the pair itself, every
``stride``-th frame as in ``face_eval``). Each pair goes to a clear-side and a
masked-side ``BehaviourExtractor`` and their features are compared. The masked side's
attribute crop (gender attacker) is cut at the clear frame's face box, the strongest
attacker's assumption (it knows where the face is even where the masking defeats the
face model).

Clear-side cache: with ``cache_dir``, the clear features are stored per source video as
``<cache_dir>/behaviour-<key>.npz``, written atomically (temporary file + ``os.replace``,
``BehaviourFeatures.save``), with a key over the clear file's content (SHA-256,
``clear_side.file_sha256``: a replaced file with the same name is never reused), the
stride and the extractor settings, so every submission of a campaign runs the clear
side's models once per source video. On a hit the clear frames are not measured again,
and ``evaluate_behaviour`` does not even decode the clear video (the face evaluation
still decodes it for SSIM/PSNR). A damaged entry is recomputed, never trusted.

A masked frame equal to its clear frame (``face_eval.frames_equal``; given both frames)
is not measured again: the models run in static image mode, so its row is the clear
frame's (computed here or read from the cache), exactly.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..cache_files import settings_token
from ..checks import check_stride
from ..clear_side import file_sha256
from .. import face_eval
from ..face_eval import VideoPairError, check_video_pair, iter_frame_pairs
from ..video import iter_frames
from .compare import compare
from .extractor import BehaviourExtractor
from .features import BehaviourFeatures
from .score import behaviour_score

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class BehaviourEvaluation:
    """Result of ``evaluate_behaviour`` / ``BehaviourPass.result``.

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
        """The behaviour-preservation score in [0, 1] (1 = identical behaviour; NaN if undefined)."""
        return self.metrics["behaviour_score"]


def clear_cache_path(cache_dir, clear_path, stride: int, settings: str) -> Path:
    """Cache file of a clear video's features under these settings (module docstring)."""
    key = settings_token("behaviour-clear", file_sha256(clear_path), stride, settings)
    return Path(cache_dir) / f"behaviour-{key}.npz"


class BehaviourPass:
    """The behaviour measurement of one video pair, fed one tested frame pair at a time.

    Context manager (closes the extractors it made). Use::

        with BehaviourPass(clear_path, stride=5, cache_dir=folder) as behaviour:
            face = evaluate_video(clear_path, masked_path, ..., stride=5, observers=[behaviour])
            result = behaviour.result()

    Parameters
    ----------
    clear_path : path-like
        The clear video (its content keys the clear-side cache).
    stride : int, default=5
        The stride of the pass feeding it (part of the cache key); a whole number >= 1.
    cache_dir : path-like, optional
        Folder of the clear-side feature cache (created if missing; module docstring).
    extractors : (BehaviourExtractor, BehaviourExtractor), optional
        Clear-side and masked-side extractors to reuse over many videos (``reset()`` here
        and left open; loading the models costs about 0.3 CPU seconds per extractor).
        Their settings must be equal.
    timings : dict, optional
        For extractors made here: CPU seconds and frame counts per model (see
        ``BehaviourExtractor``).
    **model_options
        Without ``extractors``: ``BehaviourExtractor`` options (``body``, ``hands``,
        ``expression``, ``attribute`` for the gender attacker, ``models_dir``).

    Raises
    ------
    ValueError
        If ``stride`` is not a whole number >= 1, or ``extractors`` come with model
        options or with different settings.
    TypeError
        On an unknown model option.
    FileNotFoundError
        If the classifier weights or the clear video are missing.
    """

    def __init__(
        self,
        clear_path,
        *,
        stride: int = 5,
        cache_dir=None,
        extractors: tuple[BehaviourExtractor, BehaviourExtractor] | None = None,
        timings: dict | None = None,
        **model_options,
    ):
        check_stride(stride)
        if extractors is not None and model_options:
            raise ValueError(f"pass model options or extractors, not both (got {sorted(model_options)})")
        self._stack = contextlib.ExitStack()
        if extractors is None:
            extractors = tuple(
                self._stack.enter_context(BehaviourExtractor(timings=timings, **model_options))
                for _ in range(2)
            )
        self.clear_side, self.masked_side = extractors
        if self.clear_side.settings != self.masked_side.settings:
            self._stack.close()
            raise ValueError("the clear-side and masked-side extractors run different models")
        self.clear_side.reset()
        self.masked_side.reset()
        self.cache_file = (
            clear_cache_path(cache_dir, clear_path, stride, self.clear_side.settings) if cache_dir else None
        )
        self.cached = self._load_cached()
        self._boxes = iter(self.cached.face_box) if self.cached is not None else None
        self._cached_indices = iter(self.cached.frame_index) if self.cached is not None else None
        self._position = 0  # tested frames given so far (the row of the cached clear side)
        self._result: BehaviourEvaluation | None = None

    @property
    def clear_from_cache(self) -> bool:
        """True when the clear side comes from the cache (its frames need no measuring)."""
        return self.cached is not None

    def _load_cached(self) -> BehaviourFeatures | None:
        if self.cache_file is None or not self.cache_file.is_file():
            return None
        try:
            cached = BehaviourFeatures.load(self.cache_file)
        except (OSError, ValueError) as error:  # a damaged cache entry is recomputed, never trusted
            logger.warning("behaviour clear-side cache entry %s recomputed: %s", self.cache_file.name, error)
            return None
        return cached if cached.settings == self.clear_side.settings else None

    def update(self, frame_index: int, clear_rgb: np.ndarray | None, masked_rgb: np.ndarray) -> None:
        """Measure one tested frame pair (``clear_rgb`` may be None when the clear side is cached).

        Parameters
        ----------
        frame_index : int
        clear_rgb, masked_rgb : ndarray of shape (height, width, 3), dtype uint8, RGB

        Raises
        ------
        automated.face_eval.VideoPairError
            If the masked video has more tested frames than the cached clear side, or
            frame ``frame_index`` is not the cached one.
        ValueError
            If ``clear_rgb`` is None without a cached clear side.
        """
        if self.cached is not None:
            box, cached_index = next(self._boxes, None), next(self._cached_indices, None)
            if box is None or int(cached_index) != int(frame_index):
                raise VideoPairError(
                    f"tested frame {frame_index} of the masked video is not in its cached clear video's features"
                )
            position, self._position = self._position, self._position + 1
            clear_row = None
        else:
            if clear_rgb is None:
                raise ValueError("the clear frame is needed: this pass has no cached clear side")
            clear_row = self.clear_side.update(clear_rgb, frame_index)
            box = clear_row["face_box"]
        if clear_rgb is not None and face_eval.frames_equal(clear_rgb, masked_rgb):
            # Static-image models: an identical frame with the clear face box as its attribute
            # box (the clear side's own) has the clear frame's row; it is not measured again.
            if clear_row is None:
                clear_row = {
                    name: values[position]
                    for name, values in vars(self.cached).items()
                    if isinstance(values, np.ndarray) and name != "frame_wh"
                }
            self.masked_side.add_row(clear_row, (masked_rgb.shape[1], masked_rgb.shape[0]))
            return
        self.masked_side.update(masked_rgb, frame_index, attribute_box=box)

    def result(self) -> BehaviourEvaluation:
        """Compare the two sides (once every tested pair was given) and cache a new clear side.

        Raises
        ------
        automated.face_eval.VideoPairError
            If fewer masked frames were given than the cached clear side has.
        ValueError
            If no frame pair was given.
        """
        if self._result is not None:
            return self._result
        masked = self.masked_side.features()
        if self.cached is not None:
            clear = self.cached
            if clear.n_frames != masked.n_frames:
                raise VideoPairError(
                    f"the masked video has {masked.n_frames} tested frames, its cached clear video {clear.n_frames}"
                )
        else:
            clear = self.clear_side.features()
            if self.cache_file is not None:
                try:
                    clear.save(self.cache_file)
                except OSError as error:  # a full or read-only cache folder costs time, not the result
                    logger.warning("behaviour clear side not cached in %s: %s", self.cache_file.parent, error)
        metrics = compare(clear, masked)
        metrics.update(behaviour_score(metrics))
        self._result = BehaviourEvaluation(metrics, clear, masked, self.cached is not None)
        return self._result

    def close(self) -> None:
        """Close the extractors made here (given ones stay open)."""
        self._stack.close()

    def __enter__(self) -> BehaviourPass:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def evaluate_behaviour(
    clear_path,
    masked_path,
    *,
    stride: int = 5,
    timings: dict | None = None,
    **pass_options,
) -> BehaviourEvaluation:
    """Score the behaviour a masked video keeps from its clear video, decoding the pair here.

    For the face run's single pass, feed a ``BehaviourPass`` to
    ``face_eval.evaluate_video`` instead (module docstring).

    Parameters
    ----------
    clear_path, masked_path : path-like
        Same frame count and frame size.
    stride : int, default=5
        As ``BehaviourPass``.
    timings : dict, optional
        CPU seconds of "decode" (one step of the decoding loop) and, for extractors made
        here, per model, with frame counts (see ``BehaviourExtractor``; given extractors
        report into their own ``timings``).
    **pass_options
        ``BehaviourPass`` options: ``cache_dir``, ``extractors`` or the model options.

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
    check_stride(stride)
    check_video_pair(clear_path, masked_path)
    with BehaviourPass(clear_path, stride=stride, timings=timings, **pass_options) as behaviour:
        if behaviour.clear_from_cache:  # the clear video is not decoded at all
            pairs = ((index, None, masked) for index, masked in iter_frames(masked_path, stride=stride))
        else:
            pairs = iter_frame_pairs(clear_path, masked_path, stride=stride)
        started = time.process_time()
        for frame_index, clear_rgb, masked_rgb in pairs:
            _add(timings, "decode", started)
            behaviour.update(frame_index, clear_rgb, masked_rgb)
            started = time.process_time()
        return behaviour.result()


def _add(timings: dict | None, stage: str, since: float) -> None:
    if timings is not None:
        timings[stage] = timings.get(stage, 0.0) + time.process_time() - since
        timings[f"{stage}_frames"] = timings.get(f"{stage}_frames", 0) + 1
