"""Privacy fairness (fairness/privacy.py): attack success across demographic groups."""

from __future__ import annotations

import numpy as np
import pytest

from fairness.privacy import privacy_fairness


def test_a_group_fully_reidentified_and_one_fully_protected_differ():
    success = [1.0] * 10 + [0.0] * 10
    report = privacy_fairness(success, ["a"] * 10 + ["b"] * 10, n_resamples=200, n_permutations=200)
    assert report["groups"]["a"] == {"n": 10, "success": 1.0, "ci_low": 1.0, "ci_high": 1.0}
    assert report["groups"]["b"]["success"] == 0.0
    spread = report["spread"]
    assert (spread["estimate"], spread["high_group"], spread["low_group"]) == (1.0, "a", "b")
    # a relabelling reaches spread 1 only by putting the ten 1s in one group (probability
    # 2 / C(20, 10) = 1.1e-5 per draw; seed 0 happens to draw it once in 200): p = 2 / 201
    assert spread["p_value"] == pytest.approx(2 / 201)
    assert spread["differs"] is True
    # privacy 0 and 1: Gini of the group means (0, 1) with n/(n-1) is 1, so Mean-GC-SQFR 0
    assert report["measures"]["Mean-GC-SQFR"]["estimate"] == pytest.approx(0.0)
    assert report["warnings"] == [] and report["n_identities"] == 20


def test_equal_groups_do_not_differ():
    success = [0.0, 1.0] * 5 + [1.0, 0.0] * 5
    report = privacy_fairness(success, ["a"] * 10 + ["b"] * 10, n_resamples=200, n_permutations=200)
    assert report["spread"]["estimate"] == 0.0
    assert report["spread"]["p_value"] == 1.0 and report["spread"]["differs"] is False
    assert report["measures"]["Mean-GC-SQFR"]["estimate"] == pytest.approx(1.0)
    low, high = report["groups"]["a"]["ci_low"], report["groups"]["a"]["ci_high"]
    assert low < 0.5 < high


def test_small_single_and_unlabelled_groups_are_flagged():
    success = [0.5] * 12 + [1.0] * 3 + [0.0] + [1.0, 1.0]
    groups = ["white"] * 12 + ["black"] * 3 + ["east_asian/white"] + ["unknown", ""]
    report = privacy_fairness(success, groups, n_resamples=100, n_permutations=100)
    assert set(report["groups"]) == {"white", "black"}
    assert report["excluded"] == {"east_asian/white": 1}
    assert report["n_identities"] == 15
    assert any("2 identities without a group label" in w for w in report["warnings"])
    assert any("'east_asian/white' has 1 identity: left out" in w for w in report["warnings"])
    assert any("'black' has 3 identities (< 10)" in w for w in report["warnings"])
    assert not any("'white'" in w for w in report["warnings"])


@pytest.mark.parametrize(
    "success, groups, message",
    [
        ([0.5, 0.5], ["a", "a"], "need two groups"),
        ([0.5, 0.5, 0.5, 0.5], ["a", "a", "b", "c"], "need two groups"),
        ([1.5, 0.5], ["a", "b"], "in \\[0, 1\\]"),
        ([np.nan, 0.5], ["a", "b"], "in \\[0, 1\\]"),
        ([0.5, 0.5], ["a"], "one length"),
    ],
)
def test_bad_input_is_refused(success, groups, message):
    with pytest.raises(ValueError, match=message):
        privacy_fairness(success, groups, n_resamples=10, n_permutations=10)


def test_by_attribute_from_identity_metadata():
    import pandas as pd

    from fairness.privacy import privacy_fairness_by_attribute

    metadata = pd.DataFrame(
        {"age": [20.0, 30.0, 40.0, 50.0], "gender": ["f", "f", "m", "m"], "ethnicity": ["x", "x", "x", "y"]},
        index=pd.Index(["001", "002", "003", "004"], name="identity"),
    )
    success = pd.Series([1.0, 1.0, 0.0, 0.5], index=["001", "002", "003", "004"])
    reports = privacy_fairness_by_attribute(success, metadata, n_resamples=50, n_permutations=50)
    assert set(reports) == {"gender", "ethnicity"}  # numeric age is not a group attribute
    assert reports["gender"]["groups"]["f"]["success"] == 1.0
    assert reports["gender"]["groups"]["m"]["success"] == 0.25
    assert reports["gender"]["spread"]["estimate"] == 0.75
    # ethnicity: y has one identity (left out), so one group remains: an error, not a crash
    assert "need two groups" in reports["ethnicity"]["error"]
    with pytest.raises(ValueError, match="without metadata"):
        privacy_fairness_by_attribute(pd.Series([1.0], index=["999"]), metadata)
    with pytest.raises(ValueError, match="unknown attribute"):
        privacy_fairness_by_attribute(success, metadata, ["religion"])
