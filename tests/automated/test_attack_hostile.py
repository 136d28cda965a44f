"""Hostile tests of the attack protocol (issue 11): bad options, failures, access, consistency.

Cheap: synthetic crops or stub kinds, no video decoding.
"""

import numpy as np
import pytest
from scipy import stats

from automated.attack.crossvideo import run_cross_video_suite
from automated.attack.data import AttackData
from automated.attack.recognizers import get_recognizers
from automated.django_app.attack_service import (
    attack_config,
)


def _synthetic(layout=("a", "a", "a", "b", "b", "c"), frames=4, seed=0):
    rng = np.random.default_rng(seed)
    ids, groups, crops = [], [], []
    for video, identity in enumerate(layout):
        base = rng.integers(0, 255, (24, 24))
        for _ in range(frames):
            ids.append(identity)
            groups.append(video)
            crops.append(np.clip(base + rng.integers(0, 60, (24, 24)), 0, 255).astype(np.uint8))
    crops = np.stack(crops)
    return AttackData(crops, 255 - crops, np.array(ids), np.array(groups))


def test_summary_agrees_with_the_fold_rows_by_hand():
    result = run_cross_video_suite(
        _synthetic(), recognizers=get_recognizers(["eigenfaces"]), attackers=["naive", "parrot"]
    )
    for (recognizer, attacker), part in result.folds.groupby(["recognizer", "attacker"]):
        row = result.summary().set_index(["recognizer", "attacker"]).loc[(recognizer, attacker)]
        values = part["accuracy"].to_numpy()
        n = len(values)
        mean = sum(values) / n
        sd = (sum((v - mean) ** 2 for v in values) / (n - 1)) ** 0.5
        half = stats.t.ppf(0.975, n - 1) * sd / n**0.5
        assert n == 5 and row["n_folds"] == n
        assert row["accuracy"] == pytest.approx(mean) and row["sd"] == pytest.approx(sd)
        assert row["ci_low"] == pytest.approx(max(0.0, mean - half))
        assert row["ci_high"] == pytest.approx(min(1.0, mean + half))


def test_a_repeated_attacker_is_refused_not_counted_as_more_folds():
    # ["naive", "naive"] used to give naive 10 "folds" out of 5 and a narrower interval.
    with pytest.raises(ValueError, match="naive.*more than once"):
        run_cross_video_suite(
            _synthetic(), recognizers=get_recognizers(["eigenfaces"]), attackers=["naive", "naive", "parrot"]
        )
    with pytest.raises(ValueError, match="naive.*more than once"):
        attack_config(attackers=["naive", "parrot", "naive"], recognizers=["lbph"])
