"""The declared ranking attacker (automated/attack/declared.py): chosen on development
identities only, reported on the others, worst case beside it."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin

from automated.attack.crossvideo import run_cross_video_suite
from automated.attack.data import AttackData
from automated.attack.declared import (
    bootstrap_eer,
    declare_attacker,
    identity_bootstrap_accuracy,
    restrict,
    run_declared_attack,
    split_development,
)

LABELS = [f"p{i}" for i in range(10)]


class KnowsOnly(ClassifierMixin, BaseEstimator):
    """Reads the identity number written in the sample; right only for ``known`` identities,
    wrong (the next label) for the others."""

    def __init__(self, known=()):
        self.known = known

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        truth = [f"p{int(x.flat[0])}" for x in X]
        return np.array([t if t in self.known else f"p{(int(t[1:]) + 1) % 10}" for t in truth])


def photo_like_data():
    """10 identities x 2 recordings x 2 samples; each sample holds its identity number."""
    identities = np.repeat(LABELS, 4)
    groups = np.repeat(np.arange(20), 2)
    clear = np.repeat(np.repeat(np.arange(10), 4)[:, None, None], 2, axis=1).astype(np.uint8)[..., None]
    clear = np.repeat(clear, 2, axis=2)
    return AttackData(clear=clear, masked=clear.copy(), identities=identities, groups=groups)


def test_split_is_disjoint_seeded_and_sized():
    split = split_development(np.repeat(LABELS, 3), fraction=0.3, seed=4)
    assert len(split.development) == 3 and len(split.tested) == 7
    assert set(split.development) | set(split.tested) == set(LABELS)
    assert not set(split.development) & set(split.tested)
    assert split == split_development(LABELS, fraction=0.3, seed=4)
    assert split != split_development(LABELS, fraction=0.3, seed=5)
    assert len(split_development(LABELS[:4], fraction=0.1).development) == 2  # at least two
    with pytest.raises(ValueError, match="at least 4 identities"):
        split_development(LABELS[:3])
    with pytest.raises(ValueError, match="fraction"):
        split_development(LABELS, fraction=1.0)


def test_declared_attacker_is_chosen_on_development_identities_only():
    data = photo_like_data()
    split = split_development(data.identities, seed=0)
    recognizers = {
        "knows_development": lambda: KnowsOnly(split.development),
        "knows_tested": lambda: KnowsOnly(split.tested),
    }
    seen = []

    def run(subset):
        seen.append(set(subset.identities.tolist()))
        return run_cross_video_suite(subset, recognizers=recognizers, attackers=["clear", "naive", "parrot"])

    result = run_declared_attack(data, run, seed=0, n_resamples=200)
    # by construction: the first run (the choice) saw the development identities and nothing else
    assert seen == [set(split.development), set(split.tested)]
    assert (result.recognizer, result.attacker) == ("knows_development", "parrot")
    assert result.development_accuracy == 1.0
    # it knows no tested identity: 0 there, though the tested folds' best pair is perfect
    assert (result.accuracy, result.ci_low, result.ci_high) == (0.0, 0.0, 0.0)
    assert result.worst_case["recognizer"] == "knows_tested" and result.worst_case["accuracy"] == 1.0
    assert result.n_pairs == 4  # 2 recognizers x (naive, parrot)
    assert result.chance_level == pytest.approx(1 / 7)
    summary = result.as_dict()
    assert summary["worst_case_pair"] == "knows_tested x naive" and summary["n_tested_identities"] == 7


def test_declare_attacker_needs_the_attacker():
    import pandas as pd

    summary = pd.DataFrame({"recognizer": ["a", "b"], "attacker": ["naive", "naive"], "accuracy": [0.2, 0.4]})
    assert declare_attacker(summary, attacker="naive") == {
        "recognizer": "b",
        "attacker": "naive",
        "development_accuracy": 0.4,
    }
    with pytest.raises(ValueError, match="'parrot' was not run"):
        declare_attacker(summary)


def test_restrict_keeps_only_those_identities():
    data = photo_like_data()
    part = restrict(data, ["p1", "p3"])
    assert sorted(set(part.identities)) == ["p1", "p3"] and part.n_samples == 8
    assert sorted(set(part.groups)) == [2, 3, 6, 7]
    with pytest.raises(ValueError, match="no sample"):
        restrict(data, ["nobody"])


def test_identity_bootstrap_hand_cases():
    # a: both right, b: both wrong. Resamples draw {a, a} (1), {b, b} (0) or one each (0.5)
    accuracy, low, high = identity_bootstrap_accuracy(["a", "a", "b", "b"], [1, 1, 0, 0], n_resamples=1000)
    assert (accuracy, low, high) == (0.5, 0.0, 1.0)
    assert identity_bootstrap_accuracy(["a", "b", "c"], [1, 1, 1]) == (1.0, 1.0, 1.0)
    # pooled over samples: a has 3 of 3, b 0 of 1 -> 0.75
    assert identity_bootstrap_accuracy(["a", "a", "a", "b"], [1, 1, 1, 0])[0] == 0.75
    with pytest.raises(ValueError, match="one shape"):
        identity_bootstrap_accuracy(["a"], [1, 0])


def test_bootstrap_eer_hand_cases():
    probes, gallery = ["a", "b", "c"], ["a", "b", "c"]
    separated = np.where(np.eye(3, dtype=bool), 1.0, 0.0)
    assert bootstrap_eer(separated, probes, gallery, n_resamples=100) == (0.0, 0.0, 0.0)
    # b's genuine score (0.1) is below every impostor score (0.5): one of three genuine
    # comparisons lost before the first impostor: EER by linear interpolation
    scores = np.full((3, 3), 0.5)
    np.fill_diagonal(scores, [1.0, 0.1, 1.0])
    eer, low, high = bootstrap_eer(scores, probes, gallery, n_resamples=300)
    from automated.attack.verification import equal_error_rate

    assert eer == pytest.approx(equal_error_rate([1.0, 0.1, 1.0], [0.5] * 6))
    assert low == 0.0 and high > eer  # resamples without b are separated, with b twice worse
    # leaving b's genuine comparison out separates the scores again
    assert bootstrap_eer(scores, probes, gallery, exclude=scores == 0.1, n_resamples=50) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="shape"):
        bootstrap_eer(scores[:2], probes, gallery)
    with pytest.raises(ValueError, match="need genuine and impostor"):
        bootstrap_eer(scores, probes, gallery, exclude=np.eye(3, dtype=bool))
