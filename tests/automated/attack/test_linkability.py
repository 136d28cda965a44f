"""Linkability D<->sys / D<->(s) (Gomez-Barrero et al. 2018) against the reference's algorithm.

``reference_linkability`` below is an independent, loop-by-loop re-implementation of the
computation in ``dasec/unlinkability-metric`` ``evaluateUnlinkability.py`` (v2.0, commit
c8a619c): ``n_bins`` + 1 ``linspace`` edges over the joint score range, histogram
densities (count / (n * bin width), last bin closed), LR = 1 where the non-mated density
is 0, D = 2 omega LR / (1 + omega LR) - 1 where omega LR > 1 else 0, D = 1 where the
non-mated density is 0, D<->sys = trapezoidal rule of D * p_mated over the bin centres.
``REFERENCE_PRINTED`` holds the values that script printed for the same score arrays
(run outside the repository with numpy 1.26).
"""

from __future__ import annotations

import bisect

import numpy as np
import pytest

from automated.attack.linkability import linkability, plot_linkability


def reference_linkability(mated, non_mated, omega=1.0, n_bins=100):
    """(D<->sys, D<->(s) per bin) by the reference's algorithm, in plain Python loops."""
    mated, non_mated = [float(v) for v in mated], [float(v) for v in non_mated]
    low, high = min(mated + non_mated), max(mated + non_mated)
    edges = [float(e) for e in np.linspace(low, high, n_bins + 1)]

    def density(scores):
        counts = [0] * n_bins
        for s in scores:
            k = n_bins - 1 if s == edges[-1] else bisect.bisect_right(edges, s) - 1
            counts[k] += 1
        return [c / (len(scores) * (edges[k + 1] - edges[k])) for k, c in enumerate(counts)]

    p_m, p_nm = density(mated), density(non_mated)
    d_local = []
    for y1, y2 in zip(p_m, p_nm):
        if y2 == 0:
            d_local.append(1.0)
            continue
        lr = omega * y1 / y2
        d_local.append(2 * lr / (1 + lr) - 1 if lr > 1 else 0.0)
    centres = [(a + b) / 2 for a, b in zip(edges[:-1], edges[1:])]
    f = [d * y for d, y in zip(d_local, p_m)]
    d_sys = sum((centres[i + 1] - centres[i]) * (f[i] + f[i + 1]) / 2 for i in range(n_bins - 1))
    return d_sys, d_local


def score_sets():
    """name -> (mated, non_mated, omega, n_bins): hand-made, degenerate and random sets."""
    rng = np.random.default_rng(22)
    return {
        "identical": (np.array([0.1, 0.2, 0.2, 0.5, 0.9]), np.array([0.1, 0.2, 0.2, 0.5, 0.9]), 1.0, 100),
        "disjoint_above": (np.array([0.85, 0.9, 1.0]), np.array([0.0, 0.15, 0.3]), 1.0, 10),
        "disjoint_inside": (np.array([0.45, 0.5, 0.55]), np.array([0.0, 0.1, 0.9, 1.0]), 1.0, 100),
        "normal": (rng.normal(1.0, 0.5, 500), rng.normal(0.0, 0.5, 2000), 1.0, 100),
        "overlap_omega": (rng.normal(0.3, 1.0, 300), rng.normal(0.0, 1.0, 900), 0.5, 37),
        "integers": (rng.integers(0, 10, 400).astype(float), rng.integers(0, 6, 800).astype(float), 2.0, 100),
        "dlib_like": (-rng.gamma(4, 0.06, 200), -rng.normal(0.84, 0.1, 5000), 1.0, 100),
    }


#: What ``evaluateUnlinkability.py`` printed for ``score_sets()`` (its own run, numpy 1.26).
REFERENCE_PRINTED = {
    "identical": 0.0,
    "disjoint_above": 0.6666666666666663,
    "disjoint_inside": 1.0,
    "normal": 0.6335624343999028,
    "overlap_omega": 0.02280701754385964,
    "integers": 0.42919529766191433,
    "dlib_like": 0.9757324253013917,
}


@pytest.mark.parametrize("name", list(score_sets()))
def test_agrees_with_the_reference_algorithm(name):
    mated, non_mated, omega, n_bins = score_sets()[name]
    result = linkability(mated, non_mated, omega=omega, n_bins=n_bins)
    expected_sys, expected_local = reference_linkability(mated, non_mated, omega, n_bins)
    assert result.d_sys == pytest.approx(expected_sys, abs=1e-6)
    assert result.d_sys == pytest.approx(REFERENCE_PRINTED[name], abs=1e-6)
    np.testing.assert_allclose(result.d_local, expected_local, atol=1e-6)
    assert result.bin_centres.shape == result.d_local.shape == (n_bins,)


@pytest.mark.parametrize("seed", range(5))
def test_agrees_on_random_sets_of_every_size(seed):
    rng = np.random.default_rng(seed)
    mated = rng.normal(rng.uniform(-1, 1), rng.uniform(0.1, 2), rng.integers(1, 400))
    non_mated = rng.normal(rng.uniform(-1, 1), rng.uniform(0.1, 2), rng.integers(1, 400))
    omega, n_bins = float(rng.uniform(0.2, 5)), int(rng.integers(2, 150))
    expected_sys, expected_local = reference_linkability(mated, non_mated, omega, n_bins)
    result = linkability(mated, non_mated, omega=omega, n_bins=n_bins)
    assert result.d_sys == pytest.approx(expected_sys, abs=1e-6)
    np.testing.assert_allclose(result.d_local, expected_local, atol=1e-6)


def test_identical_distributions_are_unlinkable():
    scores = np.random.default_rng(1).normal(size=1000)
    result = linkability(scores, scores.copy())
    assert result.d_sys == 0.0
    # every bin holding scores has LR = 1, so D<->(s) = 0 there
    assert (result.d_local[result.mated_density > 0] == 0.0).all()


def test_separated_distributions_are_fully_linkable():
    # non-mated scores on both sides: no mated score in an end bin, so D<->sys = 1 exactly
    assert linkability([0.45, 0.5, 0.55], [0.0, 0.1, 0.9, 1.0]).d_sys == pytest.approx(1.0, abs=1e-12)
    # mated above: bins of width 0.1 over [0, 1]; mated 0.55, 0.85 in inner bins 5 and 8,
    # 1.0 in the last bin, where the trapezoid over the centres gives half weight:
    # D<->sys = (1/3 + 1/3 + 1/6) = 1 - 1 / (2 * 3)
    result = linkability([0.55, 0.85, 1.0], [0.0, 0.15, 0.35], n_bins=10)
    assert result.d_sys == pytest.approx(5 / 6, abs=1e-12)
    assert (result.d_local[result.mated_density > 0] == 1.0).all()


def test_two_bin_hand_case():
    # [0, 1] in 2 bins of width 0.5. mated: 1 score in bin 0, 3 in bin 1 -> densities 0.5, 1.5;
    # non-mated: 3, 1 -> 1.5, 0.5. LR = 1/3, 3. omega 1: D = 0, 2*3/4 - 1 = 0.5;
    # D * p_m = 0, 0.75; trapezoid over centres 0.25, 0.75: 0.5 * (0 + 0.75) / 2 = 0.1875.
    mated, non_mated = [0.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 1.0]
    result = linkability(mated, non_mated, n_bins=2)
    np.testing.assert_allclose(result.mated_density, [0.5, 1.5])
    np.testing.assert_allclose(result.non_mated_density, [1.5, 0.5])
    np.testing.assert_allclose(result.d_local, [0.0, 0.5])
    assert result.d_sys == pytest.approx(0.1875)
    # omega 3: omega LR = 1 (not > 1, so D = 0) and 9 (D = 18/10 - 1 = 0.8): 0.5 * 1.2 / 2
    assert linkability(mated, non_mated, omega=3.0, n_bins=2).d_sys == pytest.approx(0.3)


def test_all_scores_equal_gives_zero():
    result = linkability([0.7, 0.7], [0.7, 0.7, 0.7])
    assert result.d_sys == pytest.approx(0.0, abs=1e-12)  # LR = 1 up to rounding
    assert result.bin_edges[0] == pytest.approx(0.2) and result.bin_edges[-1] == pytest.approx(1.2)


def test_as_dict_is_json_ready():
    import json

    record = linkability([0.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 1.0], n_bins=2).as_dict()
    assert json.loads(json.dumps(record))["d_sys"] == pytest.approx(0.1875)
    assert record["n_bins"] == 2 and record["n_mated"] == 4 and record["d_local"] == [0.0, 0.5]


@pytest.mark.parametrize(
    "mated, non_mated, options, message",
    [
        ([], [0.1], {}, "mated_scores must be a non-empty 1-D"),
        ([0.1], [[0.1, 0.2]], {}, "non_mated_scores must be a non-empty 1-D"),
        ([0.1, np.nan], [0.1], {}, "mated_scores must be finite"),
        ([0.1], [0.2], {"omega": 0.0}, "omega"),
        ([0.1], [0.2], {"omega": np.inf}, "omega"),
        ([0.1], [0.2], {"n_bins": 0}, "n_bins must be an integer >= 1"),
        ([0.1], [0.2], {"n_bins": 2.5}, "n_bins must be an integer >= 1"),
        (["a"], [0.2], {}, "mated_scores must be numbers"),
    ],
)
def test_bad_input_is_refused(mated, non_mated, options, message):
    with pytest.raises(ValueError, match=message):
        linkability(mated, non_mated, **options)


def test_plot_is_a_png():
    png = plot_linkability(linkability([0.0, 1.0, 1.0], [0.0, 0.0, 1.0], n_bins=4), title="demo")
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_chance_reference_is_biased_upwards_for_few_mated_scores():
    from automated.attack.linkability import linkability_chance

    rng = np.random.default_rng(5)
    # 20 mated vs 2000 non-mated scores of ONE distribution: true linkability 0, but the
    # histogram estimate is well above 0; the chance reference shows the same level
    mated, non_mated = rng.normal(size=20), rng.normal(size=2000)
    observed = linkability(mated, non_mated).d_sys
    null = linkability_chance(mated, non_mated, n_permutations=100)
    assert null.shape == (100,)
    assert np.median(null) > 0.2
    assert np.percentile(null, 2.5) <= observed <= np.percentile(null, 97.5)
    # separated scores beat every relabelling
    separated = linkability(mated + 10, non_mated).d_sys
    assert (linkability_chance(mated + 10, non_mated, n_permutations=50) < separated).all()
    with pytest.raises(ValueError, match="n_permutations"):
        linkability_chance(mated, non_mated, n_permutations=0)
