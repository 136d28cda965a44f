"""Cross-video protocol (folds over videos, attacker's own videos): hand-made cases."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import FunctionTransformer, make_pipeline

from automated.attack.crossvideo import fold_interval, run_cross_video_suite, video_folds
from automated.attack.data import AttackData
from automated.attack.protocol import split_train_test
from automated.attack.suite import accuracy_table, run_attack_suite

# Videos (groups) 0-8, two frames each:
#   A: 0, 1, 2 (evaluated)    B: 3, 4 (evaluated)    C: 5 (one video: an extra class)
#   D: 6 (attacker's own), 7 (evaluated)              E: 8 (attacker's own only)
VIDEO_IDENTITY = ["A", "A", "A", "B", "B", "C", "D", "D", "E"]
VIDEO_ROLE = ["evaluated"] * 6 + ["attacker_train", "evaluated", "attacker_train"]
GROUPS = np.repeat(np.arange(9), 2)
IDENTITIES = np.array(VIDEO_IDENTITY)[GROUPS]
ROLES = np.array(VIDEO_ROLE)[GROUPS]


def nearest_neighbour():
    """1-NN on the flattened sample: a recognizer whose every answer can be worked out."""
    return make_pipeline(
        FunctionTransformer(lambda X: np.asarray(X, float).reshape(len(X), -1)),
        KNeighborsClassifier(n_neighbors=1),
    )


def test_leave_one_video_out_tests_each_evaluated_video_with_another_to_train_on():
    folds = video_folds(IDENTITIES, GROUPS, roles=ROLES)
    # C's single video and the attacker's videos 6 and 8 are never tested.
    assert [f.test_groups for f in folds] == [(0,), (1,), (2,), (3,), (4,), (7,)]
    for fold in folds:
        assert set(GROUPS[fold.test_idx]) == set(fold.test_groups)
        assert set(GROUPS[fold.train_idx]).isdisjoint(fold.test_groups)
        assert len(fold.train_idx) + len(fold.test_idx) == len(GROUPS)
        assert set(IDENTITIES[fold.train_idx]) == set("ABCDE")  # every identity keeps a class
    assert set(GROUPS[folds[5].train_idx]) == {0, 1, 2, 3, 4, 5, 6, 8}  # D trains on its own video 6


def test_k_folds_by_video_cover_every_testable_video_once():
    identities = np.repeat(["A"] * 5 + ["B"] * 3 + ["C"], 2)
    groups = np.repeat(np.arange(9), 2)
    for seed in range(5):
        folds = video_folds(identities, groups, n_folds=2, seed=seed)
        tested = [g for f in folds for g in f.test_groups]
        assert sorted(tested) == list(range(8))  # A's 5 and B's 3 videos, each once; C never
        for fold in folds:
            per_identity = pd.Series(identities[fold.test_idx]).groupby(identities[fold.test_idx]).size() // 2
            assert per_identity.get("A", 0) <= 3 and per_identity.get("B", 0) <= 2  # ceil(n / 2)
            assert set(identities[fold.train_idx]) == {"A", "B", "C"}
    same = video_folds(identities, groups, n_folds=2, seed=1)
    assert [f.test_groups for f in same] == [
        f.test_groups for f in video_folds(identities, groups, n_folds=2, seed=1)
    ]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(identities=["a", "b"], groups=[0, 1]), "needs an identity with an evaluated video and another"),
        (dict(identities=["a", "a", "a"], groups=[0, 1, 2], n_folds=1), "n_folds must be >= 2"),
        (dict(identities=["a", "b", "a"], groups=[0, 0, 1]), r"videos \[0\] show more than one identity"),
        (
            dict(identities=["a", "a"], groups=[0, 1], roles=["attacker_train"] * 2),
            "needs an identity with an evaluated",
        ),
    ],
)
def test_video_folds_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        video_folds(kwargs.pop("identities"), kwargs.pop("groups"), **kwargs)


def test_attack_data_checks_roles():
    with pytest.raises(ValueError, match=r"unknown video role\(s\) \['rater'\]"):
        AttackData(np.zeros((2, 1)), np.zeros((2, 1)), ["a", "b"], roles=["evaluated", "rater"])
    with pytest.raises(ValueError, match=r"groups \[0\] mix video roles"):
        AttackData(
            np.zeros((2, 1)),
            np.zeros((2, 1)),
            ["a", "a"],
            groups=[0, 0],
            roles=["evaluated", "attacker_train"],
        )


def _person_data(confusing_video=None):
    """One 1-D value per frame: A near 0, B near 10, C near 20, D near 30, E near 40;
    the frames of ``confusing_video`` are moved next to B."""
    person = {"A": 0.0, "B": 10.0, "C": 20.0, "D": 30.0, "E": 40.0}
    values = np.array([person[i] for i in IDENTITIES]) + np.tile([0.0, 0.1], 9)
    if confusing_video is not None:
        values[GROUPS == confusing_video] = 10.05
    return AttackData(values[:, None], values[:, None], IDENTITIES, groups=GROUPS, roles=ROLES)


def test_cross_video_summary_by_hand():
    result = run_cross_video_suite(
        _person_data(confusing_video=1), recognizers={"nn": nearest_neighbour}, attackers=["clear", "naive"]
    )
    folds = result.folds[result.folds["attacker"] == "naive"]
    # Six folds of one video (2 frames): video 1 (A, moved next to B) is wrong, the rest right.
    assert folds["accuracy"].tolist() == [1.0, 0.0, 1.0, 1.0, 1.0, 1.0]
    assert set(folds["n_classes"]) == {5} and set(folds["chance_level"]) == {0.2}
    assert set(folds["n_test"]) == {2} and set(folds["n_train"]) == {16}
    summary = result.summary().set_index("attacker").loc["naive"]
    values = np.array([1, 0, 1, 1, 1, 1.0])
    sd = np.sqrt(((values - 5 / 6) ** 2).sum() / 5)  # sqrt(1/6) = 0.408
    half = stats.t.ppf(0.975, 5) * sd / np.sqrt(6)  # 2.571 * 0.408 / 2.449 = 0.428
    assert summary["accuracy"] == pytest.approx(5 / 6)
    assert summary["sd"] == pytest.approx(sd)
    assert (summary["min"], summary["max"]) == (0.0, 1.0)
    assert summary["ci_low"] == pytest.approx(5 / 6 - half)
    assert summary["ci_high"] == 1.0  # 0.833 + 0.428 clipped
    assert summary["chance_normalised"] == pytest.approx((5 / 6 - 0.2) / 0.8)
    per_identity = (
        result.per_identity().set_index(["attacker", "identity"]).loc["naive"].drop(columns="recognizer")
    )
    assert per_identity.loc["A"].tolist() == [3, 6, pytest.approx(4 / 6)]  # videos, frames, accuracy
    assert per_identity.loc["B", "accuracy"] == 1.0 and per_identity.loc["D", "n_videos"] == 1
    assert set(per_identity.index) == {"A", "B", "D"}
    assert result.counts == {
        "n_identities": 5,
        "n_evaluated_identities": 3,
        "n_videos": 9,
        "n_tested_videos": 6,
        "n_attacker_videos": 2,
        "n_frames": 18,
        "n_tested_frames": 12,
        "n_folds": 6,
    }
    worst = result.worst_case()
    assert (worst["protocol"], worst["attacker"], worst["recognizer"]) == ("cross_video", "naive", "nn")
    assert worst["accuracy"] == pytest.approx(5 / 6) and worst["clear_accuracy"] == pytest.approx(5 / 6)


def test_a_scene_memoriser_is_perfect_within_video_and_wrong_across_videos():
    # The masking removed the person: each frame keeps only its video's scene (one value
    # per video; A's scenes 0, 100, 200, B's 50, 150, 250). Within a video, a 1-NN finds
    # the frame's own scene: 1.0. Across videos, A's video at 100 is nearest to B's 50 and
    # 150, B's 150 to A's 100 and 200, and so on: every fold is wrong, 0.0 (chance 0.5).
    scenes = np.array([0, 100, 200, 50, 150, 250], float)
    groups = np.repeat(np.arange(6), 8)
    identities = np.array(["A", "A", "A", "B", "B", "B"])[groups]
    values = (scenes[groups] + np.tile(np.arange(8) * 0.01, 6))[:, None]
    data = AttackData(values, values, identities, groups=groups, time_index=np.tile(np.arange(8), 6))
    within = run_attack_suite(
        data, recognizers={"nn": nearest_neighbour}, attackers=["naive"], within_video=True
    )
    assert within["accuracy"].tolist() == [1.0]
    across = run_cross_video_suite(data, recognizers={"nn": nearest_neighbour}, attackers=["naive"])
    assert across.folds["accuracy"].tolist() == [0.0] * 6
    assert across.worst_case()["accuracy"] == 0.0 and across.worst_case()["chance_level"] == 0.5


def test_within_video_split_cuts_every_video_in_time_and_roles_only_train():
    groups = np.repeat([0, 1, 2], 8)
    identities = np.array(["a", "a", "b"])[groups]
    time_index = np.tile(np.arange(8), 3)
    roles = np.array(["evaluated", "attacker_train", "evaluated"])[groups]
    split = split_train_test(
        identities,
        groups=groups,
        time_index=time_index,
        gap=1,
        seed=0,
        train_only=roles == "attacker_train",
        within_groups=True,
    )
    # Video 1 is the attacker's: all 8 frames train. Videos 0 and 2: 2 test frames each.
    assert set(split.train_idx) >= set(np.flatnonzero(groups == 1))
    assert sorted(set(groups[split.test_idx])) == [0, 2]
    assert [int(np.sum(groups[split.test_idx] == g)) for g in (0, 2)] == [2, 2]
    # An identity whose only other material is the attacker's: its one sample is tested.
    lone = split_train_test(["a", "a", "b", "b"], train_only=[True, False, True, True])
    assert lone.test_idx.tolist() == [1] and lone.train_idx.tolist() == [0, 2, 3]


def test_fold_interval_by_hand():
    low, high = fold_interval([0.2, 0.4, 0.6])
    half = stats.t.ppf(0.975, 2) * 0.2 / np.sqrt(3)  # 4.303 * 0.2 / 1.732 = 0.497
    assert (low, high) == (pytest.approx(0.0), pytest.approx(0.4 + half))
    assert np.isnan(fold_interval([0.5])[0])


def test_fold_interval_of_a_nan_fold_is_undefined_and_non_accuracies_are_refused():
    """A NaN fold used to give (0.0, 1.0) (max(0, nan) is 0), values above 1 an inverted
    interval (1.52, 1.0)."""
    assert all(np.isnan(fold_interval([0.5, float("nan"), 0.6])))
    with pytest.raises(ValueError, match=r"must be in \[0, 1\], got \[3.0, 4.0, 5.0\]"):
        fold_interval([3, 4, 5])
    with pytest.raises(ValueError, match="shape \\(n_folds,\\)"):
        fold_interval([[0.5, 0.6]])


def test_run_attack_suite_with_roles_never_tests_the_attackers_videos():
    data = _person_data()
    table = run_attack_suite(data, recognizers={"nn": nearest_neighbour}, attackers=["naive"])
    assert accuracy_table(table).loc["nn", "naive"] == 1.0
    split = split_train_test(IDENTITIES, groups=GROUPS, train_only=data.train_only)
    assert not np.isin(GROUPS[split.test_idx], [6, 8]).any()


def test_classification_ranking_ranks_an_identity_without_evaluated_videos_last():
    from automated.attack.suite import classification_ranking

    # A: videos 0 and 1 (4 frames each, near 0); B: video 2 (8 frames, near 10);
    # E: only the attacker's video 3 (4 frames, near 20): nothing to validate E on.
    groups = np.repeat([0, 1, 2, 3], [4, 4, 8, 4])
    identities = np.array(["A", "A", "B", "E"])[groups]
    roles = np.where(groups == 3, "attacker_train", "evaluated")
    values = (np.array([0.0, 0.0, 10.0, 20.0])[groups] + np.arange(20) * 0.01)[:, None]
    data = AttackData(values, values, identities, groups=groups, roles=roles)
    split = split_train_test(identities, groups=groups, train_only=data.train_only)
    assert classification_ranking(data, split, nearest_neighbour) == {"A": 1.0, "B": 1.0, "E": 0.0}
