"""Identity-subset selection (seeds/000 section 4.2.3) on hand-made feature sets."""
import numpy as np
import pandas as pd
import pytest

from automated.attack.selection import (
    center_subset, classification_subset, distinctive_subset, genuine_impostor_scores,
    halving_subset_sizes, metadata_subset, normalise_metadata, per_identity_accuracy, random_subsets,
)

# Four identities, two 2-D feature vectors each (Fig. 2 style):
#   A: (0, +-1)   mean (0, 0)   genuine 1
#   B: (10, +-1)  mean (10, 0)  genuine 1
#   C: (5, +-3)   mean (5, 0)   genuine 3 (spread out, sits between A and B)
#   D: (20, +-.5) mean (20, 0)  genuine 0.5 (tight and far away)
FEATURES = np.array([[0, 1], [0, -1], [10, 1], [10, -1], [5, 3], [5, -3], [20, 0.5], [20, -0.5]], float)
LABELS = np.repeat(["A", "B", "C", "D"], 2)


def test_genuine_and_impostor_scores_by_hand():
    scores = genuine_impostor_scores(FEATURES, LABELS)
    assert scores["genuine"].tolist() == pytest.approx([1.0, 1.0, 3.0, 0.5])
    # Impostor: nearest other-identity vector to the mean.
    #   A: C's (5, +-3) at sqrt(34); B: C's at sqrt(34) (D's at sqrt(100.25) is farther);
    #   C: A's/B's at sqrt(26); D: B's (10, +-1) at sqrt(101).
    assert scores["impostor"].tolist() == pytest.approx(np.sqrt([34, 34, 26, 101]))
    assert scores.loc["D", "score"] == pytest.approx((np.sqrt(101) - 0.5) / 2)


def test_distinctive_keeps_tight_far_identities_and_drops_the_spread_one():
    assert distinctive_subset(FEATURES, LABELS, 2) == ["D", "A"]        # A ties B: label order
    assert distinctive_subset(FEATURES, LABELS, 3) == ["D", "A", "B"]   # C is the least distinctive


def test_center_starts_from_the_farthest_pair_then_the_farthest_from_the_subset_mean():
    features = np.vstack([FEATURES, [[10, 8], [10, 8.2]]])
    labels = np.concatenate([LABELS, ["E", "E"]])
    # Means: A (0,0) B (10,0) C (5,0) D (20,0) E (10,8.1). Farthest pair A-D (20);
    # their mean (10, 0): E at 8.1 beats C at 5 and B at 0.
    assert center_subset(features, labels, 3) == ["A", "D", "E"]
    # Then the mean of A, D, E is (10, 2.7): C at sqrt(25+7.29) beats B at 2.7.
    assert center_subset(features, labels, 4) == ["A", "D", "E", "C"]


def test_metadata_normalises_then_spreads_attributes():
    metadata = pd.DataFrame(
        {"age": [20, 60, 40, 22], "gender": ["female", "male", "female", "male"]},
        index=["p1", "p2", "p3", "p4"],
    )
    normalised = normalise_metadata(metadata)
    assert normalised["age"].tolist() == pytest.approx([0.0, 1.0, 0.5, 0.05])
    assert normalised["gender_male"].tolist() == [0.0, 1.0, 0.0, 1.0]
    # p1=(0,1,0) and p2=(1,0,1) are farthest (sqrt 3); from their mean (.5,.5,.5)
    # p4=(.05,0,1) lies at .838, p3=(.5,1,0) at .707.
    assert metadata_subset(metadata, 3) == ["p1", "p2", "p4"]


def test_metadata_with_missing_values_is_rejected():
    metadata = pd.DataFrame({"age": [20, None]}, index=["p1", "p2"])
    with pytest.raises(ValueError, match=r"missing values in columns \['age'\]"):
        metadata_subset(metadata, 2)


def test_classification_keeps_best_recognised_identities():
    per_identity = per_identity_accuracy(
        ["a", "a", "b", "b", "c", "c", "d", "d"], ["a", "b", "b", "b", "a", "d", "d", "d"]
    )
    assert per_identity == {"a": 0.5, "b": 1.0, "c": 0.0, "d": 1.0}
    assert classification_subset(per_identity, 2) == ["b", "d"]
    assert classification_subset(per_identity, 3) == ["b", "d", "a"]


def test_random_subsets_are_seeded_and_valid():
    labels = [f"id{i:02d}" for i in range(20)]
    first = random_subsets(labels, 5, n_repeats=4, seed=11)
    assert first == random_subsets(list(reversed(labels)), 5, n_repeats=4, seed=11)  # order-free
    assert first != random_subsets(labels, 5, n_repeats=4, seed=12)
    assert len(first) == 4
    assert all(len(set(s)) == 5 and set(s) <= set(labels) for s in first)
    assert len({tuple(s) for s in first}) > 1


@pytest.mark.parametrize("n, sizes", [
    (40, [40, 20, 10, 5, 3]), (1000, [1000, 500, 250, 125, 62, 31, 15, 7, 3]),
    (57, [57, 28, 14, 7, 3]), (10, [10, 5, 3]), (6, [6, 3]), (3, [3]), (2, [2]),
])
def test_halving_subset_sizes(n, sizes):
    assert halving_subset_sizes(n) == sizes


@pytest.mark.parametrize("call, message", [
    (lambda: halving_subset_sizes(1), "need at least 2 identities"),
    (lambda: distinctive_subset(FEATURES, LABELS, 5), r"subset size must be in \[2, 4\]"),
    (lambda: center_subset(FEATURES[:, 0], LABELS, 2), "features must have shape"),
    (lambda: random_subsets(["a", "b"], 2, n_repeats=0), "n_repeats must be >= 1"),
])
def test_selection_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()
