"""Issue 22's figures for a campaign run, on hand-made scores and predictions (no model):
probe labels and bootstrap intervals over identities (verification.py), verification by
demographic group, the declared attacker from one run's predictions (declared.py), the
linkability curve back from a stored record (linkability.py)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from automated.attack.declared import DevelopmentSplit, declared_from_predictions
from automated.attack.linkability import linkability, plot_linkability, result_from_record
from automated.attack.verification import (
    curve_record,
    equal_error_rate,
    evaluate_verification,
    identity_bootstrap,
    verification_by_group,
    verification_intervals,
)


def test_evaluate_verification_labels_each_comparison_with_its_probe():
    scores = np.array([[0.9, 0.1, 0.2], [0.3, 0.8, 0.4]])
    result = evaluate_verification(scores, ["a", "b"], ["a", "b", "c"])
    # Row-major: probe a (genuine a-a 0.9; impostors 0.1, 0.2), then probe b (0.8; 0.3, 0.4).
    assert result.genuine.tolist() == [0.9, 0.8] and result.genuine_probes.tolist() == ["a", "b"]
    assert result.impostor.tolist() == [0.1, 0.2, 0.3, 0.4]
    assert result.impostor_probes.tolist() == ["a", "a", "b", "b"]


def test_identity_bootstrap_of_one_separable_and_one_overlapping_identity():
    # Identity x: genuine 1.0 above its impostors 0.0 -> EER 0 alone. Identity y: genuine 0.0
    # below its impostor 1.0 -> EER 1 alone. A resample of only x gives 0, only y gives 1.
    genuine, g_probes = np.array([1.0, 0.0]), np.array(["x", "y"])
    impostor, i_probes = np.array([0.0, 1.0]), np.array(["x", "y"])
    assert equal_error_rate([1.0], [0.0]) == 0.0 and equal_error_rate([0.0], [1.0]) == 1.0
    value, low, high = identity_bootstrap(
        genuine, g_probes, impostor, i_probes, equal_error_rate, n_resamples=400
    )
    assert value == equal_error_rate(genuine, impostor)
    # P(only x) = P(only y) = 1/4 > 2.5 %: the interval reaches both extremes.
    assert (low, high) == (0.0, 1.0)
    with pytest.raises(ValueError, match="probe identity"):
        identity_bootstrap(genuine, g_probes[:1], impostor, i_probes, equal_error_rate)


def test_identity_bootstrap_of_identical_identities_has_a_point_interval():
    genuine, impostor = np.array([0.9, 0.9, 0.9]), np.array([0.1, 0.2, 0.1, 0.2, 0.1, 0.2])
    g_probes, i_probes = np.array(["a", "b", "c"]), np.repeat(["a", "b", "c"], 2)
    d_sys = linkability(genuine, impostor).d_sys
    figures = identity_bootstrap(
        genuine, g_probes, impostor, i_probes, lambda g, i: linkability(g, i).d_sys, n_resamples=50
    )
    assert figures == pytest.approx((d_sys, d_sys, d_sys))


def _two_group_result():
    """Four probe identities: a, b (group "f") separated from their impostors; c, d ("m") not."""
    rng = np.random.default_rng(0)
    labels = np.repeat(["a", "b", "c", "d"], 5)
    gallery = np.array(["a", "b", "c", "d"])
    scores = rng.uniform(0.0, 0.5, (20, 4))
    same = labels[:, None] == gallery[None, :]
    separable = np.isin(labels, ["a", "b"])[:, None] & same
    scores[separable] = rng.uniform(0.8, 1.0, separable.sum())
    return evaluate_verification(scores, labels, gallery)


def test_verification_by_group_splits_by_probe_group_and_names_no_identity():
    result = _two_group_result()
    groups = verification_by_group(
        result, {"a": "f", "b": "f", "c": "m", "d": "m", "e": "unknown"}, n_resamples=50
    )
    assert list(groups) == ["f", "m"]
    f, m = groups["f"], groups["m"]
    assert (f["n_identities"], f["n_genuine"], f["n_impostor"]) == (2, 10, 30)
    assert f["eer"] == 0.0 and f["linkability"] > 0.9 and f["eer_ci_high"] == 0.0
    assert m["eer"] > 0.2 and m["linkability"] < f["linkability"]
    assert 0 <= m["linkability_chance"] <= 1
    assert not {"a", "b", "c", "d"} & set(json.dumps(groups).replace('"', " ").split())


def test_curve_record_stores_intervals_over_probe_identities():
    result = _two_group_result()
    record = curve_record(result, n_resamples=50)
    intervals = verification_intervals(result, n_resamples=50)
    assert record["n_probe_identities"] == 4
    assert record["eer_ci_low"] <= record["eer"] <= record["eer_ci_high"]
    assert record["linkability_ci_low"] <= record["linkability"] <= record["linkability_ci_high"]
    assert record["eer_ci_low"] == intervals["eer_ci_low"]
    json.dumps(record)


def test_linkability_curve_comes_back_from_the_stored_record():
    result = _two_group_result()
    record = json.loads(json.dumps(curve_record(result, n_resamples=10)))
    back = result_from_record(record)
    direct = linkability(result.genuine, result.impostor)
    assert back.d_sys == direct.d_sys
    np.testing.assert_allclose(back.bin_edges, direct.bin_edges, atol=1e-12)
    np.testing.assert_array_equal(back.d_local, direct.d_local)
    assert plot_linkability(back).startswith(b"\x89PNG")
    with pytest.raises(ValueError, match="no linkability curve"):
        result_from_record({"eer": 0.1})


def _predictions():
    """Recognizer A is right on the development identities only, B on the tested ones only."""
    rows = []
    for identity in ["d1", "d2", "t1", "t2", "t3"]:
        development = identity.startswith("d")
        for frame in range(4):
            rows += [
                ("A", "parrot", identity, development),
                ("B", "parrot", identity, not development),
                ("B", "naive", identity, frame == 0),
                ("A", "clear", identity, True),
            ]
    return pd.DataFrame(rows, columns=["recognizer", "attacker", "identity", "correct"])


def test_declared_from_predictions_chooses_on_development_identities_only():
    split = DevelopmentSplit(("d1", "d2"), ("t1", "t2", "t3"))
    out = declared_from_predictions(_predictions(), split, n_resamples=100)
    # A wins on development (1.0 vs 0.0), so it is declared though it misses every tested probe.
    assert (out["declared_recognizer"], out["declared_attacker"]) == ("A", "parrot")
    assert out["development_accuracy"] == 1.0
    assert (out["accuracy"], out["ci_low"], out["ci_high"]) == (0.0, 0.0, 0.0)
    # The worst case on the tested probes: B x parrot (1.0), of 3 pairs (clear excluded).
    assert out["worst_case_accuracy"] == 1.0 and out["worst_case_pair"] == "B x parrot"
    assert out["n_pairs"] == 3
    assert out["per_identity"] == {"t1": 0.0, "t2": 0.0, "t3": 0.0}
    assert (out["n_development_identities"], out["n_tested_identities"]) == (2, 3)


def test_declared_from_predictions_refuses_what_it_cannot_use():
    split = DevelopmentSplit(("d1", "d2"), ("t1", "t2", "t3"))
    with pytest.raises(ValueError, match="'reversal' was not run"):
        declared_from_predictions(_predictions(), split, attacker="reversal")
    with pytest.raises(ValueError, match="development and tested identities"):
        declared_from_predictions(_predictions(), DevelopmentSplit(("x", "y"), ("t1",)))
    with pytest.raises(ValueError, match="lack column"):
        declared_from_predictions(_predictions().drop(columns="correct"), split)


def test_identity_bootstrap_thins_many_scores_but_keeps_the_value():
    rng = np.random.default_rng(3)
    ids = np.array(list("abcdefgh"))
    genuine, impostor = rng.normal(1.0, 1.0, 4000), rng.normal(0.0, 1.0, 200_000)
    g_probes, i_probes = rng.choice(ids, genuine.size), rng.choice(ids, impostor.size)
    value, low, high = identity_bootstrap(
        genuine, g_probes, impostor, i_probes, equal_error_rate, n_resamples=100, max_scores=2000
    )
    assert value == equal_error_rate(genuine, impostor)  # always from every score
    # Identities drawn from one distribution: the interval is narrow around the value
    # (the normal EER at d' = 1 is Phi(-1/2) = 0.3085).
    assert low <= value <= high and high - low < 0.1 and abs(value - 0.3085) < 0.01
