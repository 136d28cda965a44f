"""Closed-set identification protocol: per-identity 75/25 split, accuracy, chance level.

seeds/000_0b74979cb8a3f1c3.txt ("A False Sense of Privacy"): closed-set recognition is the
general scenario (section 4.2); "the splitter splits the samples per identity into two
sets, with 75% of samples going into the train set and 25% going into the test set"
(section 5.4); chance level is the ideal bound and clear-data accuracy the worst case
(section 5.2).

Frames of one video are nearly identical, so a random frame split would put near
duplicates on both sides and measure memorisation, not recognition. The split is therefore

- **by group** (video / sequence) when an identity has two or more groups: 25 % of its
  groups (rounded half up, at least one, at least one left for training) go to the test
  set, chosen with the seed;
- **by contiguous time segment** when an identity has a single group: a contiguous block
  of 25 % of its samples (rounded half up) is the test segment, placed at a seeded offset;
  training samples closer than ``gap`` (in ``time_index`` units, i.e. frames) to either end
  of the test segment are dropped, so neighbouring frames never fall on both sides.

On video this single split still lets a single-video identity be recognised by its scene
(train and test frames of one recording): it is the *scene-memorisation* figure
(``within_groups=True`` cuts every video in time). The headline protocol for video is
``crossvideo`` (folds over videos). The attacker's own videos (``train_only``) are always
trained on and never tested.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Split:
    """Indices of a train/test split (into the samples of ``AttackData``).

    Attributes
    ----------
    train_idx, test_idx, dropped_idx : ndarray of int of shape (n,)
        Sorted sample indices of the train set, the test set, and the training samples
        dropped because they lie within ``gap`` frames of a test segment.
    """

    train_idx: np.ndarray
    test_idx: np.ndarray
    dropped_idx: np.ndarray


def round_half_up(value: float) -> int:
    """Round to the nearest integer, halves upwards (2.5 -> 3, unlike Python's ``round``)."""
    return int(np.floor(value + 0.5))


def identity_rng(seed: int, identity) -> np.random.Generator:
    """Random generator of one identity: depends on the seed and the label only.

    So an identity gets the same split and the same %-parrot samples whichever subset of
    identities is evaluated (the selection strategies must not change the protocol).
    """
    return np.random.default_rng([seed, zlib.crc32(str(identity).encode())])


def _test_count(n: int, test_fraction: float) -> int:
    return min(max(round_half_up(test_fraction * n), 1), n - 1)


def _time_segment(order, time, n_test, rng, gap, identity):
    """Test segment of ``n_test`` contiguous samples of one recording, training samples
    outside ``gap`` frames of it, and the dropped ones: ``(test, train, dropped)``."""
    start = int(rng.integers(0, len(order) - n_test + 1))
    segment = order[start : start + n_test]
    first, last = time[segment[0]], time[segment[-1]]
    rest = np.setdiff1d(order, segment)
    near = (time[rest] >= first - gap) & (time[rest] <= last + gap)
    if near.all():
        raise ValueError(
            f"gap={gap} frames leaves identity {identity!r} no training sample "
            f"(single video of {len(order)} samples)"
        )
    return segment, rest[~near], rest[near]


def split_train_test(
    identities,
    *,
    groups=None,
    time_index=None,
    test_fraction: float = 0.25,
    gap: int = 0,
    seed: int = 0,
    train_only=None,
    within_groups: bool = False,
) -> Split:
    """Split samples per identity into train and test sets (75/25 by default).

    Parameters
    ----------
    identities : array-like of shape (n_samples,)
        Identity label of each sample.
    groups : array-like of shape (n_samples,), default=None
        Video/sequence of each sample; None: each sample is its own group.
    time_index : array-like of int of shape (n_samples,), default=None
        Frame index of each sample inside its group; None: the sample order.
    test_fraction : float, default=0.25
        Share of each identity's groups (or, for a single-group identity, samples) that
        goes to the test set, in (0, 1). seeds/000, section 5.4.
    gap : int, default=0
        Frames (``time_index`` units) on each side of a single-video identity's test
        segment whose samples are left out of training.
    seed : int, default=0
    train_only : array-like of bool of shape (n_samples,), default=None
        Samples that always go to training and are never tested (the attacker's own
        material, ``AttackData.train_only``); the others are split as above. An identity
        with training material and a single other sample has that sample tested.
    within_groups : bool, default=False
        Split every group in time (a contiguous test segment of ``test_fraction`` of each
        video, ``gap`` frames dropped on both sides) instead of whole videos: train and
        test frames come from the same recordings, the *scene-memorisation* figure
        (the attacker may learn the scene, clothes and lighting, not the person). Groups
        of a single sample go to training.

    Returns
    -------
    Split

    Raises
    ------
    ValueError
        If ``test_fraction`` is outside (0, 1), ``gap`` is negative, the lengths differ,
        an identity has fewer than two samples (and no training material), ``gap``
        leaves an identity no training sample, or ``within_groups`` finds an identity
        without a group of two or more samples.

    Examples
    --------
    Two identities, one with three videos and one with a single 8-frame video:

    >>> s = split_train_test(["a"] * 3 + ["b"] * 8, groups=[0, 1, 2] + [3] * 8,
    ...                      time_index=[0, 0, 0] + list(range(8)), gap=1, seed=0)
    >>> len(s.test_idx)  # 1 of a's 3 videos (0.75 rounds to 1) + 2 of b's 8 frames
    3
    """
    identities = np.asarray(identities)
    n = len(identities)
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    if gap < 0:
        raise ValueError(f"gap must be >= 0 frames, got {gap}")
    groups = np.arange(n) if groups is None else np.asarray(groups)
    time = np.arange(n) if time_index is None else np.asarray(time_index)
    fixed = np.zeros(n, bool) if train_only is None else np.asarray(train_only, bool)
    if groups.shape != (n,) or time.shape != (n,) or fixed.shape != (n,):
        raise ValueError(
            f"inconsistent numbers of samples: identities {n}, groups {groups.shape}, "
            f"time_index {time.shape}, train_only {fixed.shape}"
        )
    train, test, dropped = [], [], []
    for identity in sorted(set(identities.tolist())):
        every = np.flatnonzero(identities == identity)
        train.append(every[fixed[every]])
        idx = every[~fixed[every]]
        if len(idx) == 0:
            continue  # only the attacker's material: a training class
        if len(idx) < 2:
            if len(idx) < len(every):
                test.append(idx)
                continue
            raise ValueError(f"identity {identity!r} has {len(idx)} sample; need at least 2 to split")
        rng = identity_rng(seed, identity)
        own_groups = sorted(set(groups[idx].tolist()))
        if len(own_groups) >= 2 and not within_groups:
            is_test = _whole_groups_test(groups[idx], own_groups, test_fraction, rng)
            test.append(idx[is_test])
            train.append(idx[~is_test])
            continue
        parts = [idx] if not within_groups else [idx[groups[idx] == g] for g in own_groups]
        segments = [_split_in_time(part, time, test_fraction, rng, gap, identity) for part in parts]
        if not any(len(segment) for segment, _, _ in segments):
            raise ValueError(f"identity {identity!r} has no video of two or more samples to split in time")
        for segment, kept, near in segments:
            test.append(segment)
            train.append(kept)
            dropped.append(near)
    return Split(_sorted_indices(train), _sorted_indices(test), _sorted_indices(dropped))


def _whole_groups_test(sample_groups, own_groups, test_fraction, rng) -> np.ndarray:
    """Test mask of one identity's samples: ``test_fraction`` of its groups, drawn by ``rng``."""
    chosen = rng.permutation(len(own_groups))[: _test_count(len(own_groups), test_fraction)]
    return np.isin(sample_groups, [own_groups[i] for i in chosen])


def _split_in_time(part, time, test_fraction, rng, gap, identity):
    """(test segment, kept for training, dropped near the segment) of one group's samples.

    A part of fewer than two samples goes to training whole.
    """
    empty = np.zeros(0, np.int64)
    if len(part) < 2:
        return empty, part, empty
    order = part[np.argsort(time[part], kind="stable")]
    return _time_segment(order, time, _test_count(len(order), test_fraction), rng, gap, identity)


def _sorted_indices(parts) -> np.ndarray:
    return np.sort(np.concatenate(parts)).astype(np.int64) if parts else np.zeros(0, np.int64)


def selection_split(
    split: Split,
    identities,
    *,
    groups=None,
    time_index=None,
    test_fraction: float = 0.25,
    gap: int = 0,
    seed: int = 0,
    train_only=None,
) -> Split:
    """Split the TRAINING samples of ``split`` again, for choosing identities.

    A selection strategy that ranks identities by how well they are recognised
    (Classification, seeds/000 section 4.2.3) must not look at the test samples it then
    reports, or the reported accuracy is optimistic (the subset is picked for doing well
    on exactly those samples). This inner split applies ``split_train_test`` with the
    same rules to ``split.train_idx`` only, with seed ``seed + 1``; the outer test set is
    never touched.

    Parameters
    ----------
    split : Split
        The outer split (its ``train_idx`` are split again).
    identities, groups, time_index, train_only : array-like of shape (n_samples,)
        Of all samples, as given to ``split_train_test``.
    test_fraction, gap, seed
        As in ``split_train_test``.

    Returns
    -------
    Split
        Indices into all samples; ``train_idx`` and ``test_idx`` are subsets of
        ``split.train_idx``.

    Raises
    ------
    ValueError
        If an identity has fewer than two training samples to split.
    """
    identities = np.asarray(identities)
    train = np.asarray(split.train_idx)
    inner_groups = None if groups is None else np.asarray(groups)[train]
    inner_time = None if time_index is None else np.asarray(time_index)[train]
    inner_fixed = None if train_only is None else np.asarray(train_only, bool)[train]
    try:
        inner = split_train_test(
            identities[train],
            groups=inner_groups,
            time_index=inner_time,
            test_fraction=test_fraction,
            gap=gap,
            seed=seed + 1,
            train_only=inner_fixed,
        )
    except ValueError as error:
        raise ValueError(f"cannot split the training samples for identity selection: {error}") from error
    return Split(train[inner.train_idx], train[inner.test_idx], train[inner.dropped_idx])


def accuracy(y_true, y_pred) -> float:
    """Rank-1 closed-set identification accuracy: share of test samples labelled correctly.

    Returns
    -------
    float in [0, 1]

    Raises
    ------
    ValueError
        If the arrays differ in length or are empty.
    """
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if y_true.shape != y_pred.shape:
        raise ValueError(f"inconsistent numbers of samples: {[len(y_true), len(y_pred)]}")
    if y_true.size == 0:
        raise ValueError("no test samples; accuracy is undefined")
    return float(np.mean(y_true == y_pred))


def chance_level(n_identities: int) -> float:
    """Accuracy of guessing uniformly among ``n_identities``: ``1 / n_identities``.

    The optimal bound of an anonymization (seeds/000, section 5.2).

    Raises
    ------
    ValueError
        If ``n_identities`` < 1.
    """
    if n_identities < 1:
        raise ValueError(f"n_identities must be >= 1, got {n_identities}")
    return 1.0 / n_identities


def chance_normalised_accuracy(accuracy_value: float, n_identities: int) -> float:
    """``(accuracy - chance) / (1 - chance)``: 0 at chance level, 1 at perfect recognition.

    Makes accuracies over different numbers of identities comparable (chance level rises as
    the subset shrinks, seeds/000 section 6.3). Negative when below chance.

    Raises
    ------
    ValueError
        If ``accuracy_value`` is outside [0, 1] or ``n_identities`` < 2 (a single identity
        has chance level 1 and the ratio is undefined).
    """
    if not 0.0 <= accuracy_value <= 1.0:
        raise ValueError(f"accuracy must be in [0, 1], got {accuracy_value}")
    if n_identities < 2:
        raise ValueError(f"n_identities must be >= 2 for a normalised accuracy, got {n_identities}")
    chance = chance_level(n_identities)
    return (accuracy_value - chance) / (1.0 - chance)
