"""Identity-subset selection (seeds/000 section 4.2.3) on hand-made feature sets."""

import numpy as np
import pandas as pd
import pytest

from automated.attack.selection import (
    center_subset,
    classification_subset,
    distinctive_subset,
    genuine_impostor_scores,
    halving_subset_sizes,
    metadata_subset,
    normalise_metadata,
    per_identity_accuracy,
    random_subsets,
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
    assert distinctive_subset(FEATURES, LABELS, 2) == ["D", "A"]  # A ties B: label order
    assert distinctive_subset(FEATURES, LABELS, 3) == ["D", "A", "B"]  # C is the least distinctive


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
    assert list(normalised.columns) == ["age", "gender_male"]  # binary: one 0/1 column
    assert normalised["age"].tolist() == pytest.approx([0.0, 1.0, 0.5, 0.05])
    assert normalised["gender_male"].tolist() == [0.0, 1.0, 0.0, 1.0]
    # p1=(0,0) and p2=(1,1) are farthest (sqrt 2); from their mean (.5,.5)
    # p4=(.05,1) lies at sqrt(.2025+.25)=.673, p3=(.5,0) at .5.
    assert metadata_subset(metadata, 3) == ["p1", "p2", "p4"]


def test_metadata_with_numbers_only():
    # Ages 20, 40, 60 scale to 0, .5, 1: the farthest pair is a-c (this raised
    # "No objects to concatenate" when there was no categorical column).
    metadata = pd.DataFrame({"age": [20, 40, 60]}, index=list("abc"))
    assert normalise_metadata(metadata)["age"].tolist() == [0.0, 0.5, 1.0]
    assert metadata_subset(metadata, 2) == ["a", "c"]
    assert metadata_subset(metadata, 3) == ["a", "c", "b"]


def test_numbers_stored_as_text_are_scaled_not_one_hot():
    # The importer stores attributes as text: "20", "60", "40" are ages, not categories.
    metadata = pd.DataFrame({"age": ["20", "60", " 40"], "band": ["young", "old", "mid"]}, index=list("abc"))
    normalised = normalise_metadata(metadata)
    assert normalised["age"].tolist() == [0.0, 1.0, 0.5]
    assert "age_20" not in normalised.columns
    # Three categories: one-hot / sqrt(2), so two different bands are 1 apart.
    assert set(normalised.columns) == {"age", "band_mid", "band_old", "band_young"}
    assert normalised.loc["a", "band_young"] == pytest.approx(1 / np.sqrt(2))
    assert np.linalg.norm(
        normalised.loc["a", ["band_mid", "band_old", "band_young"]]
        - normalised.loc["b", ["band_mid", "band_old", "band_young"]]
    ) == pytest.approx(1.0)


def test_a_binary_attribute_weighs_one_like_a_numeric_one():
    # p and q differ only in gender, p and r only in age (0 vs 1 after scaling): both
    # pairs must be equally far apart, 1, per "normalize each point of metadata
    # information between 0 and 1" (one-hot would make the gender pair sqrt(2) apart).
    metadata = pd.DataFrame({"age": [30, 30, 50], "gender": ["f", "m", "f"]}, index=list("pqr"))
    vectors = normalise_metadata(metadata)
    assert np.linalg.norm(vectors.loc["p"] - vectors.loc["q"]) == pytest.approx(1.0)
    assert np.linalg.norm(vectors.loc["p"] - vectors.loc["r"]) == pytest.approx(1.0)
    # q=(0,1) and r=(1,0) are the farthest pair (sqrt 2), q before r in label order.
    assert metadata_subset(metadata, 2) == ["q", "r"]


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


@pytest.mark.parametrize(
    "n, sizes",
    [
        (40, [40, 20, 10, 5, 3]),
        (1000, [1000, 500, 250, 125, 62, 31, 15, 7, 3]),
        (57, [57, 28, 14, 7, 3]),
        (10, [10, 5, 3]),
        (6, [6, 3]),
        (3, [3]),
        (2, [2]),
    ],
)
def test_halving_subset_sizes(n, sizes):
    assert halving_subset_sizes(n) == sizes


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: halving_subset_sizes(1), "need at least 2 identities"),
        (lambda: distinctive_subset(FEATURES, LABELS, 5), r"subset size must be in \[2, 4\]"),
        (lambda: center_subset(FEATURES[:, 0], LABELS, 2), "features must have shape"),
        (lambda: random_subsets(["a", "b"], 2, n_repeats=0), "n_repeats must be >= 1"),
    ],
)
def test_selection_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def _nearest_neighbour():
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import FunctionTransformer, make_pipeline

    return make_pipeline(
        FunctionTransformer(lambda X: np.asarray(X, float).reshape(len(X), -1)),
        KNeighborsClassifier(n_neighbors=1),
    )


def test_classification_ranks_identities_off_the_reported_test_split():
    from automated.attack.data import AttackData
    from automated.attack.protocol import selection_split, split_train_test
    from automated.attack.suite import classification_ranking, run_attack_suite

    # Three identities, 8 stills each, one 1-D "image" per still: a near 0, b near 10,
    # c near 20. b's TEST stills and c's selection-VALIDATION stills are moved next to a,
    # so a 1-NN recognizer gets them wrong.
    identities = np.repeat(["a", "b", "c"], 8)
    values = np.repeat([0.0, 10.0, 20.0], 8) + np.tile(np.arange(8) * 0.01, 3)
    split = split_train_test(identities, seed=0)
    inner = selection_split(split, identities, seed=0)
    assert set(inner.train_idx) | set(inner.test_idx) == set(split.train_idx)  # the test set is untouched
    values[split.test_idx[identities[split.test_idx] == "b"]] = 0.035
    values[inner.test_idx[identities[inner.test_idx] == "c"]] = 0.035
    data = AttackData(values[:, None], values[:, None], identities)
    # Ranked on the inner validation stills: a 1, b 1, c 0 (its stills look like a's).
    assert classification_ranking(data, split, _nearest_neighbour, seed=0) == {"a": 1.0, "b": 1.0, "c": 0.0}
    table = run_attack_suite(
        data,
        recognizers={"nn": _nearest_neighbour},
        attackers=["clear"],
        selection=["classification"],
        subset_sizes=[2],
        seed=0,
    )
    chosen = table[table["selection"] == "classification"].iloc[0]
    # Subset {a, b} on the reported test stills: a's 2 right, b's 2 taken for a: 0.5.
    # Ranking on the test stills would have kept {a, c} and reported 1.0.
    assert (chosen["n_identities"], chosen["n_test"], chosen["accuracy"]) == (2, 4, 0.5)
