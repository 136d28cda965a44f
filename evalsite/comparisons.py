"""95 % intervals of submission figures and paired comparisons of submissions (no Django).

Every submission of a campaign is scored on the same source videos, so two submissions
are compared *paired*: per video, then averaged over the videos both have. Two kinds of
per-video score exist:

- **Automated scores** (SSIM, detection failure, behaviour preservation, a video's
  worst-case re-identification): one number per video and submission. A submission's
  figure is the mean over its videos, with Student's t interval (:func:`t_interval`;
  the videos are the sample).
- **Human scores** (masking success, action loss): each video's accuracy comes from a
  handful of raters, and the raters are a sample too. Videos and raters are *crossed*
  (a rater rates many videos, a video is rated by many raters), so neither the videos
  alone nor the responses alone are independent units. :func:`video_rater_bootstrap`
  resamples videos and raters independently, with replacement: the two-way
  ("pigeonhole") bootstrap of Owen (2007), "The pigeonhole bootstrap", Ann. Appl. Stat.
  1(2): 386-411. It is conservative: the response-level noise is counted by both the
  rater and the video resampling. In simulated crossed studies with binary answers (24
  videos, 30 raters, 6 answers per video and condition) it covered the true difference
  in 100 of 100 studies at nominal 95 %, with intervals about 1.7 times as wide as the
  bootstrap over videos alone (which ignores the raters and covered 92): a "clear
  difference" here is not overstated.

Paired comparisons use the bootstrap for both kinds (:class:`VideoBootstrap`: the same
resampled videos, and for human scores the same resampled raters, for A and B): the
difference A - B of the means over the videos both have, its percentile interval, and
the bootstrap p-value ``2 x min(share of replicates <= 0, share >= 0)``, the smallest
two-sided level at which the percentile interval excludes 0 (Efron & Tibshirani 1993,
*An Introduction to the Bootstrap*, ch. 13 and 16). Resamples are drawn from
``numpy.random.default_rng(seed)``: :data:`N_RESAMPLES` = 2000 resamples with seed 0
unless the caller says otherwise, so a figure does not move between page loads.

Rates are fractions in [0, 1]; differences of rates in [-1, 1].
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from automated.intervals import student_t_interval

# pandas is imported where it is used: slow to import, and Django start-up imports this module.
if TYPE_CHECKING:
    import pandas as pd

#: Bootstrap resamples unless the caller chooses; with 2000 the 2.5 % and 97.5 %
#: percentiles move by about 0.1 standard error between seeds.
N_RESAMPLES = 2000
#: Seed of ``numpy.random.default_rng`` unless the caller chooses.
SEED = 0
CONFIDENCE = 0.95
HUMAN_RESPONSE_COLUMNS = ["submission", "rater", "video", "condition", "correct"]


@dataclass(frozen=True)
class Estimate:
    """A submission figure with its interval.

    Attributes
    ----------
    value : float
        The point estimate (NaN without data).
    ci_low, ci_high : float
        Bounds of the interval (NaN when it is undefined, e.g. one video).
    n : int
        Videos the figure is computed over (for a pooled figure, the clusters).
    method : str
        How the interval was computed, e.g. ``"t"`` or ``"bootstrap: videos x raters"``.
    """

    value: float
    ci_low: float
    ci_high: float
    n: int
    method: str = ""

    @classmethod
    def missing(cls, method: str = "") -> Estimate:
        """No data: every number NaN, ``n = 0``."""
        return cls(math.nan, math.nan, math.nan, 0, method)


@dataclass(frozen=True)
class Comparison:
    """A paired comparison of submissions ``a`` and ``b`` over the videos both have.

    Attributes
    ----------
    a, b : str
        Submission labels.
    difference : float
        Mean over the common videos of (score of a - score of b).
    ci_low, ci_high : float
        Percentile bootstrap interval of the difference.
    p_value : float
        Two-sided bootstrap p-value of "no difference", in [0, 1].
    share_a_greater : float
        Share of bootstrap replicates in which a's mean exceeds b's (ties count half):
        the bootstrap probability that a scores higher.
    n_videos : int
        Videos both submissions have a score for.
    method : str
    """

    a: str
    b: str
    difference: float
    ci_low: float
    ci_high: float
    p_value: float
    share_a_greater: float
    n_videos: int
    method: str


_KIND = {False: "numeric", True: "boolean or 0/1"}


def _examples(values) -> list:
    """Up to 3 distinct values, in order of appearance, for an error message."""
    seen: dict = {}
    for value in values.tolist() if isinstance(values, np.ndarray) else values:
        seen.setdefault(repr(value), value)
    return list(seen.values())[:3]


def _is_number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, str)


def _numbers(name: str, values, *, binary: bool = False) -> np.ndarray:
    """``values`` as float64 (shape kept), or a ValueError naming ``name`` and what it got.

    Numbers and booleans are accepted (missing values, None/NaN, become NaN); strings and
    other objects are refused: ``np.asarray(["0.5"], dtype=float)`` would read the text
    silently. With ``binary``, every value must be a boolean or the number 0 or 1 (no
    missing values): ``"False"`` or NaN would otherwise count as correct.
    """
    import pandas as pd

    array = np.asarray(values)
    if array.dtype.kind == "O":
        flat = array.ravel()
        bad = [v for v in flat if not (_is_number(v) or (not binary and v is None) or v is pd.NA)]
        if bad:
            kinds = sorted({type(v).__name__ for v in bad})
            raise ValueError(
                f"{name} must be {_KIND[binary]}, got {'/'.join(kinds)} values such as {_examples(bad)}"
            )
        array = np.array([np.nan if v is None or v is pd.NA else float(v) for v in flat]).reshape(array.shape)
    elif array.dtype.kind not in "biuf":
        raise ValueError(
            f"{name} must be {_KIND[binary]}, got dtype {array.dtype} values such as {_examples(array.ravel())}"
        )
    array = array.astype(np.float64)
    if binary:
        bad = array[(array != 0) & (array != 1)]
        if len(bad):
            raise ValueError(f"{name} must be {_KIND[binary]}, got values such as {_examples(bad)}")
    return array


def _finite(name: str, values) -> np.ndarray:
    array = _numbers(name, values).ravel()
    return array[np.isfinite(array)]


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def t_interval(values, *, confidence: float = CONFIDENCE) -> Estimate:
    """Mean of ``values`` with Student's t interval (NaN values left out).

    ``mean +- t_{(1 + confidence) / 2, n - 1} * sd / sqrt(n)``, sd with ddof 1: the
    interval of ``scipy.stats.t.interval(confidence, n - 1, mean, sem)``, computed by
    ``automated.intervals.student_t_interval`` (shared with the attack's fold interval).

    Parameters
    ----------
    values : array-like of float, shape (n_videos,)
        One score per video.
    confidence : float, default=0.95

    Returns
    -------
    Estimate
        ``n`` = finite values; the bounds are NaN for fewer than 2 values, and equal to
        the mean when every value is the same.

    Raises
    ------
    ValueError
        If ``confidence`` is not in (0, 1), or ``values`` are not numbers (e.g. strings).
    """
    _check_confidence(confidence)
    kept = _finite("values", values)
    if len(kept) == 0:
        return Estimate.missing("t")
    mean, low, high = student_t_interval(kept, confidence)
    return Estimate(mean, low, high, len(kept), "t")


def resample_counts(n: int, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """How often each of ``n`` units is drawn in each resample with replacement.

    Returns
    -------
    ndarray of float64, shape (n_resamples, n)
        Non-negative whole numbers; every row sums to ``n``.
    """
    return rng.multinomial(n, np.full(n, 1.0 / n), size=n_resamples).astype(np.float64)


def _weighted_means(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Mean over videos (axis -2) with per-replicate video weights; NaN values left out.

    ``values``: (B, n_videos, k) or (n_videos, k); ``weights``: (B, n_videos). Returns (B, k).
    """
    defined = np.isfinite(values)
    filled = np.where(defined, values, 0.0)
    w = weights[:, :, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        return (w * filled).sum(axis=1) / (w * defined).sum(axis=1)


def _p_value(differences: np.ndarray) -> float:
    kept = differences[np.isfinite(differences)]
    if len(kept) == 0:
        return math.nan
    return float(min(1.0, 2.0 * min(np.mean(kept <= 0), np.mean(kept >= 0))))


@dataclass(frozen=True)
class VideoBootstrap:
    """Bootstrap replicates of per-video scores of several submissions on the same videos.

    Attributes
    ----------
    videos : list of str, length n_videos
    submissions : list of str, length n_submissions
    point : ndarray of float64, shape (n_videos, n_submissions)
        The per-video scores of the data as observed (NaN = no score for that video).
    replicates : ndarray of float64, shape (n_resamples, n_videos, n_submissions) or None
        Per-video scores recomputed in each resample (human scores, from resampled
        raters); None when the per-video scores do not change (automated scores).
    video_weights : ndarray of float64, shape (n_resamples, n_videos)
        How often each video is drawn in each resample.
    confidence : float
    method : str
    """

    videos: list
    submissions: list
    point: np.ndarray
    replicates: np.ndarray | None
    video_weights: np.ndarray
    confidence: float
    method: str

    def _column(self, submission: str) -> int:
        try:
            return self.submissions.index(submission)
        except ValueError:
            raise KeyError(
                f"no submission {submission!r} in the bootstrap; known: {self.submissions}"
            ) from None

    def _values(self, columns: list[int]) -> np.ndarray:
        if self.replicates is None:
            return self.point[:, columns]
        return self.replicates[:, :, columns]

    def _bounds(self, replicates: np.ndarray) -> tuple[float, float]:
        kept = replicates[np.isfinite(replicates)]
        if len(kept) == 0:
            return math.nan, math.nan
        tail = (1 - self.confidence) / 2
        low, high = np.quantile(kept, [tail, 1 - tail])
        return float(low), float(high)

    def _one_video_only(self, n: int) -> bool:
        """Resampling one video (and nothing else) gives it back every time: a zero-width
        interval and p = 0 that would read as certainty. Undefined instead, as t_interval."""
        return n < 2 and self.replicates is None

    def estimate(self, submission: str) -> Estimate:
        """Mean over the submission's videos and its percentile interval.

        Raises
        ------
        KeyError
            For a submission not in the bootstrap.
        """
        column = self._column(submission)
        observed = self.point[:, column]
        n = int(np.isfinite(observed).sum())
        if n == 0:
            return Estimate.missing(self.method)
        value = float(np.nanmean(observed))
        if self._one_video_only(n):
            return Estimate(value, math.nan, math.nan, n, self.method)
        means = _weighted_means(self._values([column]), self.video_weights)[:, 0]
        low, high = self._bounds(means)
        return Estimate(value, low, high, n, self.method)

    def compare(self, a: str, b: str) -> Comparison:
        """Paired comparison of ``a`` and ``b`` over the videos both have (see module docstring).

        Raises
        ------
        KeyError
            For a submission not in the bootstrap.
        """
        columns = [self._column(a), self._column(b)]
        observed = self.point[:, columns]
        common = np.isfinite(observed).all(axis=1)
        n = int(common.sum())
        if n == 0:
            return Comparison(a, b, math.nan, math.nan, math.nan, math.nan, math.nan, 0, self.method)
        values = self._values(columns)
        differences = values[..., 0] - values[..., 1]  # NaN unless both are defined
        if differences.ndim == 1:
            differences = np.broadcast_to(differences, self.video_weights.shape)
        replicate = _weighted_means(differences[:, :, None], self.video_weights)[:, 0]
        low, high = self._bounds(replicate)
        kept = replicate[np.isfinite(replicate)]
        share = float(np.mean(kept > 0) + 0.5 * np.mean(kept == 0)) if len(kept) else math.nan
        difference = float(np.mean(observed[common, 0] - observed[common, 1]))
        if self._one_video_only(n):
            return Comparison(a, b, difference, math.nan, math.nan, math.nan, math.nan, n, self.method)
        return Comparison(a, b, difference, low, high, _p_value(replicate), share, n, self.method)

    def all_pairs(self) -> list[Comparison]:
        """:meth:`compare` for every pair (a before b in ``submissions`` order)."""
        return [self.compare(a, b) for i, a in enumerate(self.submissions) for b in self.submissions[i + 1 :]]


def video_bootstrap(
    per_video: pd.DataFrame,
    *,
    n_resamples: int = N_RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> VideoBootstrap:
    """Bootstrap over videos of automated per-video scores.

    Parameters
    ----------
    per_video : pandas.DataFrame, shape (n_videos, n_submissions)
        Index: video names; one column per submission (label); NaN = no score.
    n_resamples : int, default=2000
    seed : int, default=0
    confidence : float, default=0.95

    Returns
    -------
    VideoBootstrap
        ``replicates`` None (the per-video scores are fixed), ``method``
        ``"bootstrap: videos"``.

    Raises
    ------
    ValueError
        No videos, non-numeric scores (e.g. strings), ``n_resamples`` < 1, or
        ``confidence`` not in (0, 1).
    """
    _check_confidence(confidence)
    if len(per_video) == 0:
        raise ValueError("per_video has no videos to resample")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    rng = np.random.default_rng(seed)
    return VideoBootstrap(
        videos=[str(v) for v in per_video.index],
        submissions=[str(c) for c in per_video.columns],
        point=_numbers("per_video", per_video.to_numpy()),
        replicates=None,
        video_weights=resample_counts(len(per_video), n_resamples, rng),
        confidence=confidence,
        method="bootstrap: videos",
    )


def _accuracy_table(responses: pd.DataFrame, raters: list, videos: list, groups: list):
    """Correct and total responses per rater x (video, group) cell, as two (n_raters, n_cells) arrays."""
    rater_index = {r: i for i, r in enumerate(raters)}
    cell_index = {(v, g): i * len(groups) + j for i, v in enumerate(videos) for j, g in enumerate(groups)}
    rows = responses["rater"].map(rater_index).to_numpy()
    cells = np.array([cell_index[(v, g)] for v, g in zip(responses["video"], responses["group"])], dtype=int)
    shape = (len(raters), len(videos) * len(groups))
    correct = np.zeros(shape)
    total = np.zeros(shape)
    np.add.at(total, (rows, cells), 1.0)
    np.add.at(correct, (rows, cells), responses["correct"].to_numpy(dtype=np.float64))
    return correct, total


def video_rater_bootstrap(
    responses: pd.DataFrame,
    *,
    submissions: Sequence[str] | None = None,
    n_resamples: int = N_RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> VideoBootstrap:
    """Two-way bootstrap (videos x raters) of a human clear - masked difference per video.

    The per-video score of submission s is ``accuracy(clear) - accuracy(masked by s)``:
    masking success for identity trials, action loss for action trials (seeds/002,
    sections 4.3 and 5; ``trials.scoring``), defined where the video has responses in
    both conditions. The clear responses are shared by every submission (the campaign's
    clear items). In each resample, raters are drawn with replacement (a rater drawn
    twice counts twice in every accuracy they contributed to) and videos are drawn with
    replacement (Owen 2007, see the module docstring); A and B use the same draws.

    Parameters
    ----------
    responses : pandas.DataFrame
        One row per response of one task, columns ``submission`` (label of the masking
        for a masked response; None/NaN for a clear one), ``rater``, ``video``,
        ``condition`` ("clear" or "masked"), ``correct`` (bool).
    submissions : sequence of str, optional
        Submission labels to score (default: those in ``responses``, sorted); a label
        without masked responses gets NaN scores.
    n_resamples : int, default=2000
    seed : int, default=0
    confidence : float, default=0.95

    Returns
    -------
    VideoBootstrap
        ``point`` (n_videos, n_submissions) as ``trials.scoring.per_video_scores`` computes
        it, ``replicates`` recomputed from resampled raters, ``method``
        ``"bootstrap: videos x raters"``.

    Raises
    ------
    ValueError
        Missing columns, an unknown condition, a masked response without a submission,
        no responses, a ``correct`` value that is not a boolean or 0/1 (e.g. the string
        ``"False"``, NaN), ``n_resamples`` < 1 or ``confidence`` not in (0, 1).
    """
    _check_confidence(confidence)
    missing = [c for c in HUMAN_RESPONSE_COLUMNS if c not in responses.columns]
    if missing:
        raise ValueError(f"responses lack columns {missing}")
    responses = responses.assign(correct=_numbers("responses['correct']", responses["correct"], binary=True))
    if responses.empty:
        raise ValueError("no responses to resample")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    bad = set(responses["condition"]) - {"clear", "masked"}
    if bad:
        raise ValueError(f"condition must be 'clear' or 'masked', got {sorted(bad)}")
    masked = responses["condition"] == "masked"
    if responses.loc[masked, "submission"].isna().any():
        raise ValueError("a masked response has no submission")
    if submissions is None:
        submissions = sorted({str(s) for s in responses.loc[masked, "submission"]})
    submissions = [str(s) for s in submissions]
    frame = responses.assign(group=np.where(masked, responses["submission"].astype(str), "\0clear"))
    frame = frame[~masked | frame["group"].isin(submissions)]
    raters = sorted(frame["rater"].unique(), key=str)
    videos = sorted(frame["video"].astype(str).unique())
    frame = frame.assign(video=frame["video"].astype(str))
    groups = ["\0clear", *submissions]
    correct, total = _accuracy_table(frame, raters, videos, groups)

    def per_video(rater_weights: np.ndarray) -> np.ndarray:  # (B, n_raters) -> (B, n_videos, n_subs)
        with np.errstate(invalid="ignore", divide="ignore"):
            accuracy = (rater_weights @ correct) / (rater_weights @ total)
        accuracy = accuracy.reshape(len(rater_weights), len(videos), len(groups))
        return accuracy[:, :, :1] - accuracy[:, :, 1:]

    rng = np.random.default_rng(seed)
    rater_weights = resample_counts(len(raters), n_resamples, rng)
    video_weights = resample_counts(len(videos), n_resamples, rng)
    return VideoBootstrap(
        videos=videos,
        submissions=submissions,
        point=per_video(np.ones((1, len(raters))))[0],
        replicates=per_video(rater_weights),
        video_weights=video_weights,
        confidence=confidence,
        method="bootstrap: videos x raters",
    )


def pooled_rate_interval(
    successes,
    trials,
    *,
    n_resamples: int = N_RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> Estimate:
    """A rate pooled over videos (sum of successes / sum of trials), bootstrapped over videos.

    For frame-level rates such as the share of a video's test frames an attack
    re-identified: the frames of one video are not independent, the videos are the
    resampled units (a cluster bootstrap).

    Parameters
    ----------
    successes, trials : array-like of float, shape (n_videos,)
        Per-video successes and trials (videos with 0 trials are left out).
    n_resamples, seed, confidence
        As :func:`video_bootstrap`.

    Returns
    -------
    Estimate
        ``value`` the pooled rate, percentile bounds, ``n`` = videos with trials,
        ``method`` ``"bootstrap: videos (pooled frames)"``.

    Raises
    ------
    ValueError
        If a count is not a number (e.g. a string), the arrays differ in length, a count
        is negative, or successes exceed trials.
    """
    _check_confidence(confidence)
    successes = _numbers("successes", successes).ravel()
    trials = _numbers("trials", trials).ravel()
    if successes.shape != trials.shape:
        raise ValueError(f"successes and trials differ in length: {len(successes)} vs {len(trials)}")
    if (successes < 0).any() or (trials < 0).any() or (successes > trials).any():
        raise ValueError("successes and trials must satisfy 0 <= successes <= trials")
    method = "bootstrap: videos (pooled frames)"
    kept = trials > 0
    successes, trials = successes[kept], trials[kept]
    if len(trials) == 0:
        return Estimate.missing(method)
    if len(trials) == 1:  # one cluster: resampling it says nothing about the spread
        return Estimate(float(successes[0] / trials[0]), math.nan, math.nan, 1, method)
    weights = resample_counts(len(trials), n_resamples, np.random.default_rng(seed))
    rates = (weights @ successes) / (weights @ trials)
    tail = (1 - confidence) / 2
    low, high = np.quantile(rates, [tail, 1 - tail])
    return Estimate(float(successes.sum() / trials.sum()), float(low), float(high), int(len(trials)), method)


#: The fields of :class:`Comparison`, in order (the columns of :func:`comparisons_frame`).
COMPARISON_COLUMNS = [
    "a",
    "b",
    "difference",
    "ci_low",
    "ci_high",
    "p_value",
    "share_a_greater",
    "n_videos",
    "method",
]


def comparisons_frame(comparisons: Sequence[Comparison]) -> pd.DataFrame:
    """Comparisons as a table: columns :data:`COMPARISON_COLUMNS`, one row each."""
    import pandas as pd

    return pd.DataFrame(
        [[getattr(c, name) for name in COMPARISON_COLUMNS] for c in comparisons], columns=COMPARISON_COLUMNS
    )
