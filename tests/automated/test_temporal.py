"""Identity over time (automated/temporal.py): consistency, flicker, the linking attacker."""

from __future__ import annotations

import numpy as np
import pytest

from automated.temporal import (
    MaskedVsClear,
    flicker,
    identity_over_time,
    linking_attack,
    temporal_identity_consistency,
)


def test_consistency_hand_case():
    # cos(e0, e1) = 0, cos(e1, e2) = 1 (same direction, other length): mean 0.5
    assert temporal_identity_consistency([[1.0, 0.0], [0.0, 1.0], [0.0, 2.0]]) == pytest.approx(0.5)
    assert temporal_identity_consistency([[1.0, 1.0], [2.0, 2.0]]) == pytest.approx(1.0)
    assert temporal_identity_consistency([[1.0, 0.0], [-3.0, 0.0]]) == pytest.approx(-1.0)


@pytest.mark.parametrize(
    "embeddings, message",
    [
        ([[1.0, 0.0]], "shape \\(n >= 2"),
        ([[1.0, 0.0], [0.0, 0.0]], "zero vectors"),
        ([[1.0], [np.nan]], "finite"),
    ],
)
def test_consistency_refuses_bad_input(embeddings, message):
    with pytest.raises(ValueError, match=message):
        temporal_identity_consistency(embeddings)


def test_flicker_hand_case():
    crops = np.zeros((3, 4, 4, 3), np.uint8)
    crops[1:] = 10  # steps: 10 everywhere, then 0
    assert flicker(crops) == pytest.approx(5.0)
    crops[2, :2] = 0  # second step: half the pixels change by 10
    assert flicker(crops) == pytest.approx((10 + 5) / 2)
    with pytest.raises(ValueError, match="uint8"):
        flicker(crops.astype(np.float32))
    with pytest.raises(ValueError, match="n >= 2"):
        flicker(crops[:1])


def test_masked_vs_clear_relative():
    assert MaskedVsClear(0.2, 0.8).relative == pytest.approx(0.25)
    assert np.isnan(MaskedVsClear(0.2, 0.0).relative)
    assert MaskedVsClear(3.0, 1.5).as_dict() == {"masked": 3.0, "clear": 1.5, "relative": 2.0}


def test_identity_over_time_of_a_fresh_noise_masking():
    rng = np.random.default_rng(0)
    clear = np.repeat(rng.integers(0, 256, (1, 8, 8, 3), dtype=np.uint8), 5, axis=0)  # a still face
    clear[1::2] = np.clip(clear[1::2].astype(int) + 2, 0, 255)  # 2 grey levels of flicker on alternate frames
    masked = rng.integers(0, 256, clear.shape, dtype=np.uint8)  # fresh noise per frame

    def embed(crops):  # mean colour as a 3-D "embedding"
        return crops.reshape(len(crops), -1, 3).mean(axis=1) + 1.0

    out = identity_over_time(clear, masked, embed)
    assert out["n_frames"] == 5
    assert out["flicker"].clear == pytest.approx(2.0, abs=0.05)  # a few pixels clip at 255
    # independent uniform bytes: E|X - Y| = 255 * 257 / 768 ~ 85.3 grey levels
    assert out["flicker"].masked == pytest.approx(85.3, abs=2.0)
    assert out["flicker"].relative > 30
    assert out["consistency"].clear == pytest.approx(1.0, abs=1e-4)
    with pytest.raises(ValueError, match="differ in shape"):
        identity_over_time(clear, masked[:4], embed)


def _recordings(n_persons, n_recordings, n_frames):
    persons = np.repeat(np.arange(n_persons), n_recordings * n_frames)
    recordings = np.repeat(np.arange(n_persons * n_recordings), n_frames)
    return persons, recordings


def test_pseudo_identity_masking_is_linked_and_fresh_noise_is_not():
    rng = np.random.default_rng(3)
    persons, recordings = _recordings(10, 3, 4)
    pseudo_faces = rng.normal(size=(10, 16))  # one stable pseudo-identity per person
    stable = pseudo_faces[persons] + rng.normal(scale=0.05, size=(len(persons), 16))
    linked = linking_attack(stable, recordings, persons, n_permutations=100)
    assert linked.eer == pytest.approx(0.0, abs=1e-9)
    assert linked.d_sys > 0.9
    assert linked.above_chance()
    assert linked.p_d_sys == pytest.approx(1 / 101) and linked.p_eer == pytest.approx(1 / 101)
    # pairs across recordings only: 120 samples, 12 per person in 3 recordings of 4
    assert linked.n_mated == 10 * (3 * 16)  # 3 recording pairs x 4 x 4 frames per person
    assert linked.n_mated + linked.n_non_mated == 120 * 119 // 2 - 30 * (4 * 3 // 2)

    fresh = rng.normal(size=(len(persons), 16))  # per-frame random masking
    chance = linking_attack(fresh, recordings, persons, n_permutations=100)
    assert not chance.above_chance()
    assert 0.4 < chance.eer < 0.6
    summary = chance.as_dict()
    assert summary["chance_d_sys_low"] <= chance.d_sys <= summary["chance_d_sys_high"]


def test_linking_hand_case():
    # persons A (recordings 0, 1) and B (2, 3), one sample each, 1-D embeddings 0, 0.1, 5, 5.1:
    # mated pair scores -0.1, -0.1; non-mated -5, -5.1, -4.9, -5: separated, EER 0; both mated
    # scores lie in the last of the 100 bins: D<->sys = 1 - 2 / (2 * 2) = 0.5 (the reference's
    # trapezoid over the bin centres).
    result = linking_attack(
        [[0.0], [0.1], [5.0], [5.1]], [0, 1, 2, 3], ["A", "A", "B", "B"], n_permutations=600
    )
    assert result.eer == 0.0
    assert result.d_sys == pytest.approx(0.5)
    assert (result.n_mated, result.n_non_mated) == (2, 4)
    # permutations of A, A, B, B over 4 recordings: 2 of the 6 give the observed pairing
    assert result.p_eer == pytest.approx(1 / 3, abs=0.06)


@pytest.mark.parametrize(
    "recordings, identities, message",
    [
        ([0, 0, 1], ["A", "B", "A"], "shows 2 identities"),
        ([0, 1, 2], ["A", "A", "A"], "need mated and non-mated pairs"),
        ([0, 1, 2], ["A", "B", "C"], "need mated and non-mated pairs"),
        ([0, 0, 0], ["A", "A", "A"], "at least two recordings"),
        ([0, 1], ["A", "A", "B"], "inconsistent numbers of samples"),
    ],
)
def test_linking_refuses_bad_input(recordings, identities, message):
    with pytest.raises(ValueError, match=message):
        linking_attack(np.eye(3), recordings, identities, n_permutations=0)


def test_identity_over_time_by_recording_per_video_and_linking():
    """Ten one-colour 'recordings' of five people (two each), 4 frames each: a pseudo-identity
    masking paints each person one grey level (linkable across recordings); the embedder reads
    the mean grey level and a fixed direction (hand-checkable consistency and flicker)."""
    from automated.temporal import identity_over_time_by_recording

    people = np.repeat([f"p{k}" for k in range(5)], 8)
    recordings = np.repeat(np.arange(10), 4)
    clear = np.stack([np.full((8, 8, 3), 10 * (i % 4) + 30, np.uint8) for i in range(40)])
    # grey 40 k + 20 for person k, rising by 4 per frame (30 levels between people)
    masked = np.stack(
        [np.full((8, 8, 3), 40 * int(p[1:]) + 20 + 4 * (i % 4), np.uint8) for i, p in enumerate(people)]
    )

    def embed(crops):
        grey = np.asarray(crops, float).mean(axis=(1, 2, 3))
        return np.stack([grey / 255.0, np.ones_like(grey)], axis=1)

    out = identity_over_time_by_recording(clear, masked, recordings, people, embed, n_permutations=100)
    assert sorted(out["recordings"]) == list(range(10))
    video = out["recordings"][0]
    assert video["n_frames"] == 4 and video["flicker_masked"] == 4.0
    assert video["flicker_clear"] == pytest.approx(10.0)  # 30, 40, 50, 60: steps of 10
    assert video["flicker_relative"] == pytest.approx(0.4)
    # (g / 255, 1) for g = 20, 24, 28, 32: mean cosine of neighbours
    unit = np.array([[g / 255, 1.0] for g in (20, 24, 28, 32)])
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    assert video["consistency_masked"] == pytest.approx(np.mean(np.sum(unit[1:] * unit[:-1], axis=1)))
    linking = out["linking"]
    # Same person: distances <= 12 grey levels; different people: >= 28. Fully separated.
    assert linking["eer"] == 0.0 and linking["d_sys"] > 0.8
    assert linking["above_chance"] and linking["p_d_sys"] < 0.05
    assert (linking["n_mated"], linking["n_non_mated"]) == (5 * 16, 40 * 16)
    one_person = identity_over_time_by_recording(clear[:8], masked[:8], recordings[:8], people[:8], embed)
    assert "non-mated" in one_person["linking"]["unavailable"]
