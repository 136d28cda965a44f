"""The declared ranking attacker: one headline attacker per campaign, chosen on held-out identities.

Issue 22, after the VoicePrivacy Challenge 2024 evaluation plan (systems are ranked by one
named attacker, the semi-informed one trained on anonymised data, i.e. our parrot; the
others are reported for context; EERs carry confidence intervals). The worst case over
every recognizer x attacker pair (seeds/000 sections 4.2.2 and 5.2) is a maximum over
the pairs tried, so it drifts upwards with their number (a multiple-comparison bias) and
its recognizer changes between submissions. Here:

- the campaign's identities are split once, with a seed, into a *development* part and a
  *tested* part (``split_development``; disjoint by construction);
- the suite runs on the development identities only, and the declared attacker is the
  named knowledge level (default ``parrot``) with the recognizer that is strongest there
  (``declare_attacker``): the choice never sees a tested sample;
- the suite then runs on the tested identities; the headline is the declared pair's
  re-identification accuracy there, pooled over tested samples, with a 95 % bootstrap
  interval over identities (``identity_bootstrap_accuracy``); the worst case over all
  pairs on the same tested identities is kept as the secondary figure beside the number
  of pairs it was the maximum of;
- ``bootstrap_eer``: the EER of a probe x gallery score matrix with its bootstrap interval
  over probe identities.

Django-free.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .data import AttackData
from .names import DECLARED_ATTACKER as DECLARED_ATTACKER  # its home is names (light)
from .protocol import round_half_up
from .verification import equal_error_rate

#: Share of the identities held out to choose the declared attacker's recognizer.
DEVELOPMENT_FRACTION = 0.3


@dataclass(frozen=True)
class DevelopmentSplit:
    """Disjoint identity sets: ``development`` chooses, ``tested`` is reported.

    Attributes
    ----------
    development, tested : tuple of identity labels, sorted
    """

    development: tuple
    tested: tuple

    def __post_init__(self):
        if set(self.development) & set(self.tested):
            raise ValueError(
                f"development and tested identities overlap: {sorted(set(self.development) & set(self.tested))}"
            )


def split_development(
    identities, *, fraction: float = DEVELOPMENT_FRACTION, seed: int = 0
) -> DevelopmentSplit:
    """Split the distinct identities at random into development and tested parts.

    Parameters
    ----------
    identities : array-like, shape (n_samples,) or (n_identities,)
        Identity labels (repeats are fine).
    fraction : float in (0, 1), default=0.3
        Share of the identities in the development part (rounded half up, at least two,
        leaving at least two tested).
    seed : int, default=0

    Returns
    -------
    DevelopmentSplit

    Raises
    ------
    ValueError
        If ``fraction`` is not in (0, 1) or there are fewer than four identities.
    """
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"fraction must be in (0, 1), got {fraction}")
    labels = sorted(set(np.asarray(identities).tolist()))
    if len(labels) < 4:
        raise ValueError(f"a development split needs at least 4 identities (2 + 2), got {len(labels)}")
    n_dev = min(max(round_half_up(fraction * len(labels)), 2), len(labels) - 2)
    order = np.random.default_rng(seed).permutation(len(labels))
    development = sorted(labels[i] for i in order[:n_dev])
    tested = sorted(labels[i] for i in order[n_dev:])
    return DevelopmentSplit(tuple(development), tuple(tested))


def restrict(data: AttackData, identities) -> AttackData:
    """The samples of ``identities`` only (groups, time, features, roles and metadata kept).

    Raises
    ------
    ValueError
        If no sample belongs to ``identities``.
    """
    keep = np.isin(data.identities, list(identities))
    if not keep.any():
        raise ValueError(f"no sample of identities {list(identities)[:5]}")
    metadata = data.identity_metadata
    if metadata is not None:
        metadata = metadata.loc[metadata.index.isin(list(identities))]
    return AttackData(
        clear=data.clear[keep],
        masked=data.masked[keep],
        identities=data.identities[keep],
        groups=data.groups[keep],
        time_index=None if data.time_index is None else data.time_index[keep],
        features=None if data.features is None else data.features[keep],
        identity_metadata=metadata,
        roles=None if data.roles is None else data.roles[keep],
    )


def declare_attacker(summary: pd.DataFrame, *, attacker: str = DECLARED_ATTACKER) -> dict:
    """The recognizer strongest for ``attacker`` in a (development) summary.

    Parameters
    ----------
    summary : pandas.DataFrame
        Columns ``recognizer``, ``attacker``, ``accuracy`` (``CrossVideoResult.summary()``).
    attacker : str, default="parrot"

    Returns
    -------
    dict
        ``recognizer``, ``attacker``, ``development_accuracy``; ties go to the first row.

    Raises
    ------
    ValueError
        If ``attacker`` was not run.
    """
    rows = summary[summary["attacker"] == attacker]
    if rows.empty:
        raise ValueError(
            f"the declared attacker {attacker!r} was not run; attackers: {sorted(set(summary['attacker']))}"
        )
    best = rows.loc[rows["accuracy"].idxmax()]
    return {
        "recognizer": best["recognizer"],
        "attacker": attacker,
        "development_accuracy": float(best["accuracy"]),
    }


def _percentile_interval(values, confidence: float) -> tuple[float, float]:
    tail = 50.0 * (1.0 - confidence)
    low, high = np.percentile(values, [tail, 100.0 - tail])
    return float(low), float(high)


def identity_bootstrap_accuracy(
    identities, correct, *, n_resamples: int = 1000, confidence: float = 0.95, random_state: int = 0
) -> tuple[float, float, float]:
    """Share of samples identified, with a percentile bootstrap interval over identities.

    Identities (not samples) are drawn with replacement, each bringing all its samples, so
    the interval reflects the spread between people, not between near-duplicate frames.

    Parameters
    ----------
    identities : array-like, shape (n_samples,)
    correct : array-like of bool, shape (n_samples,)
    n_resamples : int, default=1000
    confidence : float in (0, 1), default=0.95
    random_state : int, default=0

    Returns
    -------
    (accuracy, low, high) : tuple of float in [0, 1]

    Raises
    ------
    ValueError
        On empty or mismatched input, ``n_resamples`` < 1 or ``confidence`` outside (0, 1).
    """
    identities, correct = np.asarray(identities), np.asarray(correct, dtype=bool)
    if identities.size == 0 or identities.shape != correct.shape:
        raise ValueError(
            f"identities and correct must be non-empty and of one shape, got {identities.shape}, {correct.shape}"
        )
    if n_resamples < 1 or not 0.0 < confidence < 1.0:
        raise ValueError(f"need n_resamples >= 1 and confidence in (0, 1), got {n_resamples}, {confidence}")
    _, code = np.unique(identities, return_inverse=True)
    hits = np.bincount(code, weights=correct.astype(float))
    totals = np.bincount(code).astype(float)
    draws = np.random.default_rng(random_state).integers(0, len(totals), (int(n_resamples), len(totals)))
    values = hits[draws].sum(axis=1) / totals[draws].sum(axis=1)
    return (float(hits.sum() / totals.sum()), *_percentile_interval(values, confidence))


def bootstrap_eer(
    scores,
    probe_labels,
    gallery_labels,
    *,
    exclude=None,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    random_state: int = 0,
) -> tuple[float, float, float]:
    """EER of a probe x gallery score matrix with a bootstrap interval over probe identities.

    Each resample draws the probe identities with replacement (every probe of a drawn
    identity comes with it, once per draw); the gallery stays fixed. Genuine comparisons
    are probe and gallery of one identity (``verification.genuine_impostor_scores``).

    Parameters
    ----------
    scores : array-like of float, shape (n_probes, n_gallery)
        Similarities (higher = more alike).
    probe_labels : array-like, shape (n_probes,)
    gallery_labels : array-like, shape (n_gallery,)
    exclude : array-like of bool, shape (n_probes, n_gallery), optional
        Comparisons left out (e.g. a masked photo against its own clear photo, or pairs
        outside the protocol's directions).
    n_resamples, confidence, random_state
        As ``identity_bootstrap_accuracy``.

    Returns
    -------
    (eer, low, high) : tuple of float in [0, 1]

    Raises
    ------
    ValueError
        On a shape mismatch, or no genuine or impostor comparison.
    """
    scores = np.asarray(scores, dtype=np.float64)
    probes, gallery = np.asarray(probe_labels), np.asarray(gallery_labels)
    if scores.shape != (len(probes), len(gallery)):
        raise ValueError(f"scores must have shape ({len(probes)}, {len(gallery)}), got {scores.shape}")
    used = np.ones(scores.shape, bool) if exclude is None else ~np.asarray(exclude, dtype=bool)
    if used.shape != scores.shape:
        raise ValueError(f"exclude must have the shape of scores {scores.shape}, got {used.shape}")
    same = probes[:, None] == gallery[None, :]
    if not (same & used).any() or not (~same & used).any():
        raise ValueError("need genuine and impostor comparisons")
    eer = equal_error_rate(scores[same & used], scores[~same & used])
    labels = np.unique(probes)
    rows_of = [np.flatnonzero(probes == label) for label in labels]
    rng = np.random.default_rng(random_state)
    values = []
    for _ in range(int(n_resamples)):
        rows = np.concatenate([rows_of[i] for i in rng.integers(0, len(labels), len(labels))])
        kept, genuine_rows = used[rows], same[rows]
        genuine, impostor = scores[rows][genuine_rows & kept], scores[rows][~genuine_rows & kept]
        if genuine.size and impostor.size:
            values.append(equal_error_rate(genuine, impostor))
    return (float(eer), *_percentile_interval(values, confidence))


@dataclass(frozen=True)
class DeclaredAttackResult:
    """The declared attacker's headline and the worst case beside it.

    Attributes
    ----------
    split : DevelopmentSplit
    recognizer, attacker : str
        The declared pair (chosen on ``split.development`` only).
    development_accuracy : float
        Its accuracy on the development identities (where it was chosen).
    accuracy, ci_low, ci_high : float
        Its accuracy on the tested identities (pooled over tested samples) and the
        bootstrap interval over identities.
    chance_level : float
        1 / classes of the tested run.
    worst_case : dict
        ``CrossVideoResult.worst_case()`` on the tested identities (secondary).
    n_pairs : int
        Recognizer x attacker pairs the worst case is the maximum of (clear bound excluded).
    development, tested : CrossVideoResult
    """

    split: DevelopmentSplit
    recognizer: str
    attacker: str
    development_accuracy: float
    accuracy: float
    ci_low: float
    ci_high: float
    chance_level: float
    worst_case: dict
    n_pairs: int
    development: object
    tested: object

    def as_dict(self) -> dict:
        """JSON-ready headline: the declared pair, its figures, the worst case and ``n_pairs``."""
        return {
            "declared_recognizer": self.recognizer,
            "declared_attacker": self.attacker,
            "development_accuracy": self.development_accuracy,
            "accuracy": self.accuracy,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "chance_level": self.chance_level,
            "n_development_identities": len(self.split.development),
            "n_tested_identities": len(self.split.tested),
            "worst_case_accuracy": float(self.worst_case["accuracy"]),
            "worst_case_pair": f"{self.worst_case['recognizer']} x {self.worst_case['attacker']}",
            "n_pairs": self.n_pairs,
        }


def run_declared_attack(
    data: AttackData,
    run: Callable[[AttackData], object],
    *,
    attacker: str = DECLARED_ATTACKER,
    fraction: float = DEVELOPMENT_FRACTION,
    seed: int = 0,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    baseline: str = "clear",
) -> DeclaredAttackResult:
    """Choose the declared attacker on development identities, report it on the others.

    Parameters
    ----------
    data : AttackData
    run : callable ``AttackData -> CrossVideoResult``
        The attack protocol (e.g. ``lambda d: run_cross_video_suite(d, recognizers=...,
        attackers=...)``); it is called twice, on the development and on the tested
        identities, each time with those samples only.
    attacker : str, default="parrot"
    fraction, seed
        ``split_development``.
    n_resamples, confidence
        The bootstrap interval over identities.
    baseline : str, default="clear"
        The clear bound, left out of the worst case and of ``n_pairs``.

    Returns
    -------
    DeclaredAttackResult

    Raises
    ------
    ValueError
        As ``split_development``, ``declare_attacker`` or ``run``.
    """
    split = split_development(data.identities, fraction=fraction, seed=seed)
    development = restrict(data, split.development)
    tested = restrict(data, split.tested)
    if set(development.identities.tolist()) & set(
        tested.identities.tolist()
    ):  # pragma: no cover - by construction
        raise AssertionError("a tested identity reached the development run")
    development_result = run(development)
    choice = declare_attacker(development_result.summary(), attacker=attacker)
    tested_result = run(tested)
    predictions = tested_result.predictions
    chosen = predictions[
        (predictions["recognizer"] == choice["recognizer"]) & (predictions["attacker"] == attacker)
    ]
    accuracy, low, high = identity_bootstrap_accuracy(
        chosen["identity"].to_numpy(),
        chosen["correct"].to_numpy(),
        n_resamples=n_resamples,
        confidence=confidence,
    )
    summary = tested_result.summary()
    row = summary[(summary["recognizer"] == choice["recognizer"]) & (summary["attacker"] == attacker)]
    return DeclaredAttackResult(
        split=split,
        recognizer=choice["recognizer"],
        attacker=attacker,
        development_accuracy=choice["development_accuracy"],
        accuracy=accuracy,
        ci_low=low,
        ci_high=high,
        chance_level=float(row["chance_level"].iloc[0]),
        worst_case=tested_result.worst_case(baseline=baseline),
        n_pairs=int((summary["attacker"] != baseline).sum()),
        development=development_result,
        tested=tested_result,
    )


def declared_from_predictions(
    predictions: pd.DataFrame,
    split: DevelopmentSplit,
    *,
    attacker: str = DECLARED_ATTACKER,
    baseline: str = "clear",
    n_resamples: int = 1000,
    confidence: float = 0.95,
    random_state: int = 0,
) -> dict:
    """The declared attacker from one run's per-sample predictions, chosen on development identities.

    For a run that has already tested every identity (a campaign's cross-video folds,
    where rerunning the suite per split would double its cost): the recognizer is chosen
    by the declared attacker's pooled accuracy on the probes of ``split.development``
    only (``declare_attacker``), and every reported figure uses the probes of
    ``split.tested`` only, so the choice never sees a tested probe's outcome. The worst
    case over all pairs (pooled accuracy on the same tested probes) is the secondary
    figure, with the number of pairs it is the maximum of. VoicePrivacy 2024 evaluation
    plan (one declared, semi-informed attacker ranks the systems); seeds/000 sections
    4.2.2 and 5.2 (the worst case).

    Parameters
    ----------
    predictions : pandas.DataFrame
        Columns ``recognizer``, ``attacker``, ``identity``, ``correct`` (one row per
        tested sample and pair: ``CrossVideoResult.predictions``).
    split : DevelopmentSplit
    attacker : str, default="parrot"
    baseline : str, default="clear"
        The clear bound: never declared, left out of the worst case and ``n_pairs``.
    n_resamples, confidence, random_state
        The bootstrap interval over tested identities (``identity_bootstrap_accuracy``).

    Returns
    -------
    dict
        ``declared_recognizer``, ``declared_attacker``, ``development_accuracy``,
        ``accuracy``, ``ci_low``, ``ci_high`` (tested identities), ``n_development_identities``,
        ``n_tested_identities``, ``worst_case_accuracy``, ``worst_case_pair``, ``n_pairs``,
        and ``per_identity`` (tested identity -> the declared pair's share of its probes
        identified).

    Raises
    ------
    ValueError
        If a column is missing, ``attacker`` was not run, or no probe of a development or
        a tested identity was predicted.
    """
    missing = {"recognizer", "attacker", "identity", "correct"} - set(predictions.columns)
    if missing:
        raise ValueError(f"predictions lack column(s) {sorted(missing)}")
    identity = predictions["identity"].astype(str)
    development = predictions[identity.isin([str(i) for i in split.development])]
    tested = predictions[identity.isin([str(i) for i in split.tested])]
    if development.empty or tested.empty:
        raise ValueError(
            f"need predictions of development and tested identities, got {len(development)} and {len(tested)} rows"
        )
    pooled = development.groupby(["recognizer", "attacker"], sort=False)["correct"].mean()
    choice = declare_attacker(pooled.rename("accuracy").reset_index(), attacker=attacker)
    chosen = tested[(tested["recognizer"] == choice["recognizer"]) & (tested["attacker"] == attacker)]
    if chosen.empty:
        raise ValueError(f"the declared pair {choice['recognizer']} x {attacker} has no tested prediction")
    accuracy, low, high = identity_bootstrap_accuracy(
        chosen["identity"].astype(str).to_numpy(),
        chosen["correct"].to_numpy(),
        n_resamples=n_resamples,
        confidence=confidence,
        random_state=random_state,
    )
    attacks = tested[tested["attacker"] != baseline]
    per_pair = attacks.groupby(["recognizer", "attacker"], sort=False)["correct"].mean()
    worst = per_pair.idxmax()
    per_identity = chosen.groupby(chosen["identity"].astype(str))["correct"].mean()
    return {
        "declared_recognizer": choice["recognizer"],
        "declared_attacker": attacker,
        "development_accuracy": choice["development_accuracy"],
        "accuracy": accuracy,
        "ci_low": low,
        "ci_high": high,
        "n_development_identities": len(split.development),
        "n_tested_identities": len(split.tested),
        "worst_case_accuracy": float(per_pair.max()),
        "worst_case_pair": f"{worst[0]} x {worst[1]}",
        "n_pairs": int(len(per_pair)),
        "per_identity": {k: float(v) for k, v in per_identity.items()},
    }
