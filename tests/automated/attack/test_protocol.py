"""Split, accuracy, chance level and attacker training sets: hand-computed cases."""

import numpy as np
import pytest

from automated.attack.attackers import (
    ATTACKERS,
    Attacker,
    build_test_set,
    build_training_set,
    get_attackers,
    masked_training_mask,
)
from automated.attack.data import AttackData
from automated.attack.protocol import (
    accuracy,
    chance_level,
    chance_normalised_accuracy,
    round_half_up,
    split_train_test,
)


@pytest.mark.parametrize("n_groups, n_test_groups", [(2, 1), (4, 1), (5, 1), (7, 2), (10, 3), (12, 3)])
def test_group_split_puts_a_quarter_of_each_identitys_videos_in_test(n_groups, n_test_groups):
    # 3 frames per video; whole videos go to one side.
    groups = np.repeat(np.arange(n_groups), 3)
    split = split_train_test(["p"] * len(groups), groups=groups, seed=7)
    test_groups = set(groups[split.test_idx].tolist())
    train_groups = set(groups[split.train_idx].tolist())
    assert len(test_groups) == n_test_groups
    assert test_groups.isdisjoint(train_groups)
    assert len(split.train_idx) + len(split.test_idx) == len(groups)


def test_orl_like_stills_split_seven_three():
    # 10 independent images per identity: round_half_up(2.5) = 3 test images.
    identities = np.repeat(["s1", "s2", "s3"], 10)
    split = split_train_test(identities, seed=0)
    assert [int(np.sum(identities[split.test_idx] == s)) for s in ("s1", "s2", "s3")] == [3, 3, 3]
    assert len(split.train_idx) == 21


def test_single_video_identity_is_split_in_time_with_a_gap():
    # One 20-frame video: a contiguous 5-frame test segment, +-2 frames dropped.
    time_index = np.arange(0, 40, 2)  # stride 2: frame numbers 0, 2, ..., 38
    for seed in range(6):
        split = split_train_test(["a"] * 20, groups=[0] * 20, time_index=time_index, gap=4, seed=seed)
        test_times = time_index[split.test_idx]
        assert len(test_times) == 5
        assert np.all(np.diff(test_times) == 2)  # contiguous
        train_times = time_index[split.train_idx]
        # No training frame within 4 frames of the test segment.
        assert np.all((train_times < test_times[0] - 4) | (train_times > test_times[-1] + 4))
        dropped = time_index[split.dropped_idx]
        assert np.all(np.abs(dropped[:, None] - test_times[None, [0, -1]]).min(axis=1) <= 4)
        assert len(split.train_idx) + len(split.test_idx) + len(split.dropped_idx) == 20


def test_docstring_example_counts():
    split = split_train_test(
        ["a"] * 3 + ["b"] * 8,
        groups=[0, 1, 2] + [3] * 8,
        time_index=[0, 0, 0] + list(range(8)),
        gap=1,
        seed=0,
    )
    assert len(split.test_idx) == 3
    b_test = np.array(split.test_idx)[np.array(split.test_idx) >= 3] - 3
    b_train = np.array(split.train_idx)[np.array(split.train_idx) >= 3] - 3
    # Test block at the start or end drops one neighbour, in the middle two.
    expected_train = 5 if b_test[0] in (0, 6) else 4
    assert len(b_train) == expected_train


def test_split_is_deterministic_and_per_identity():
    identities = np.repeat(["a", "b", "c"], 8)
    first = split_train_test(identities, seed=3)
    again = split_train_test(identities, seed=3)
    assert np.array_equal(first.test_idx, again.test_idx)
    # Identity "a" alone gets the same test images: selection cannot change the split.
    alone = split_train_test(identities[:8], seed=3)
    assert np.array_equal(alone.test_idx, first.test_idx[first.test_idx < 8])
    assert not all(
        np.array_equal(split_train_test(identities, seed=s).test_idx, first.test_idx) for s in range(4, 9)
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(identities=["a", "a", "b"]), "identity 'b' has 1 sample"),
        (dict(identities=["a"] * 4, test_fraction=1.0), "test_fraction must be in"),
        (dict(identities=["a"] * 4, gap=-1), "gap must be >= 0"),
        (dict(identities=["a"] * 4, groups=[0] * 4, gap=10), "leaves identity 'a' no training sample"),
        (dict(identities=["a"] * 4, groups=[0] * 3), "inconsistent numbers of samples"),
    ],
)
def test_split_bad_input(kwargs, message):
    identities = kwargs.pop("identities")
    with pytest.raises(ValueError, match=message):
        split_train_test(identities, **kwargs)


def test_round_half_up():
    assert [round_half_up(v) for v in (0.5, 1.5, 2.5, 1.75, 2.49)] == [1, 2, 3, 2, 2]


def test_accuracy_chance_and_normalised_values():
    assert accuracy(["a", "b", "c", "d"], ["a", "b", "x", "d"]) == 0.75
    assert chance_level(40) == 0.025
    assert chance_level(3) == pytest.approx(1 / 3)
    assert chance_normalised_accuracy(0.625, 4) == pytest.approx(0.5)  # (0.625-0.25)/0.75
    assert chance_normalised_accuracy(0.5, 2) == 0.0
    assert chance_normalised_accuracy(1.0, 40) == 1.0
    assert chance_normalised_accuracy(0.0, 5) == pytest.approx(-0.25)  # below chance


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: accuracy([], []), "no test samples"),
        (lambda: accuracy(["a"], ["a", "b"]), "inconsistent numbers of samples"),
        (lambda: chance_level(0), "n_identities must be >= 1"),
        (lambda: chance_normalised_accuracy(0.5, 1), "n_identities must be >= 2"),
        (lambda: chance_normalised_accuracy(1.5, 3), r"accuracy must be in \[0, 1\]"),
    ],
)
def test_metric_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize(
    "fraction, n_per_identity, n_masked",
    [
        (0.0, 6, 0),
        (0.25, 7, 2),
        (0.5, 10, 5),
        (0.75, 2, 2),
        (0.75, 7, 5),
        (1.0, 3, 3),
    ],
)
def test_masked_training_mask_counts_per_identity(fraction, n_per_identity, n_masked):
    identities = np.repeat(["a", "b"], n_per_identity)
    mask = masked_training_mask(identities, fraction, seed=1)
    assert int(mask[identities == "a"].sum()) == n_masked
    assert int(mask[identities == "b"].sum()) == n_masked
    assert np.array_equal(mask, masked_training_mask(identities, fraction, seed=1))


def test_attackers_see_clear_or_masked_samples_as_defined():
    clear = np.zeros((8, 2, 2), np.uint8)
    masked = np.ones((8, 2, 2), np.uint8)
    data = AttackData(clear, masked, identities=np.repeat(["a", "b"], 4))
    train_idx, test_idx = np.array([0, 1, 2, 4, 5, 6]), np.array([3, 7])
    seen = {}
    for attacker in get_attackers(["clear", "naive", "parrot_50", "parrot"]):
        X, y = build_training_set(data, train_idx, attacker, seed=0)
        X_test, _ = build_test_set(data, test_idx, attacker)
        seen[attacker.name] = (X.reshape(6, -1)[:, 0].sum(), X_test.reshape(2, -1)[:, 0].sum())
        assert list(y) == ["a", "a", "a", "b", "b", "b"]
    # (masked training samples, masked test samples)
    assert seen == {"clear": (0, 0), "naive": (0, 2), "parrot_50": (4, 2), "parrot": (6, 2)}
    assert ATTACKERS["clear"].is_baseline and not ATTACKERS["naive"].is_baseline


def test_unknown_attacker_and_bad_fraction():
    with pytest.raises(ValueError, match="unknown attacker 'oracle'"):
        get_attackers(["oracle"])
    with pytest.raises(ValueError, match=r"masked_train_fraction must be in \[0, 1\]"):
        Attacker("bad", 1.5)


def test_attack_data_rejects_misaligned_samples():
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        AttackData(np.zeros((3, 2)), np.zeros((3, 2)), identities=["a", "b"])
    with pytest.raises(ValueError, match="masked samples must have the shape"):
        AttackData(np.zeros((2, 2)), np.zeros((2, 3)), identities=["a", "b"])
