"""``run_attack_suite`` and ``worst_case``: a hand-made table and a small real ORL run."""

import cv2
import numpy as np
import pandas as pd
import pytest

from automated import anonymizers
from automated.attack.data import AttackData
from automated.attack.faces import face_attack_data_from_images, load_image_folder
from automated.attack.recognizers import EmbeddingCache, get_recognizers
from automated.attack.suite import TABLE_COLUMNS, accuracy_table, run_attack_suite, worst_case


def _row(recognizer, attacker, accuracy, *, selection="all", size=4, repeat=0):
    chance = 1 / size
    return {
        "recognizer": recognizer,
        "attacker": attacker,
        "selection": selection,
        "subset_size": size,
        "repeat": repeat,
        "n_identities": size,
        "n_train": 0,
        "n_test": 0,
        "accuracy": accuracy,
        "chance_level": chance,
        "chance_normalised": (accuracy - chance) / (1 - chance),
    }


def test_worst_case_is_the_best_non_baseline_pair_and_reports_the_clear_bound():
    table = pd.DataFrame(
        [
            _row("svm", "clear", 0.95),
            _row("cnn", "clear", 0.90),
            _row("svm", "naive", 0.30),
            _row("svm", "parrot", 0.55),
            _row("cnn", "naive", 0.25),
            _row("cnn", "parrot", 0.70),
            # A smaller random subset (ignored by default), two repeats averaging 0.9.
            _row("cnn", "parrot", 1.0, selection="random", size=2, repeat=0),
            _row("cnn", "parrot", 0.8, selection="random", size=2, repeat=1),
        ]
    )
    worst = worst_case(table)
    assert (worst["recognizer"], worst["attacker"], worst["accuracy"]) == ("cnn", "parrot", 0.70)
    assert worst["chance_normalised"] == pytest.approx((0.70 - 0.25) / 0.75)
    assert (worst["clear_accuracy"], worst["clear_recognizer"]) == (0.95, "svm")
    random = worst_case(table, selection="random", subset_size=2)
    assert random["accuracy"] == pytest.approx(0.9) and random["chance_level"] == 0.5
    assert random["clear_accuracy"] is None
    with pytest.raises(ValueError, match="no attacker other than the clear baseline"):
        worst_case(table[table["attacker"] == "clear"])


@pytest.fixture(scope="module")
def small_orl(data_dir):
    """12 ORL identities, scaled to 96 x 112, with a fixed-key 16-pixel block permutation."""
    images, identities = load_image_folder(data_dir / "faces" / "orl_att_faces")
    keep = np.isin(identities, [f"s{i}" for i in range(1, 13)])
    images = [cv2.resize(im, (96, 112), interpolation=cv2.INTER_AREA) for im, k in zip(images, keep) if k]

    def permute(image_rgb, index):
        return anonymizers.block_permute(
            image_rgb, (0, 0, 96, 112), key=bytes(32), nonce=anonymizers.frame_nonce(0)
        )

    data = face_attack_data_from_images(images, identities[keep], permute)
    # Clear feature vectors for Distinctive/Center: pixels are enough here (and fast).
    features = data.clear[..., 0].reshape(len(data.clear), -1)[:, ::16].astype(float)
    return AttackData(data.clear, data.masked, data.identities, features=features)


def test_suite_runs_every_attacker_and_selection_deterministically(small_orl):
    kwargs = dict(
        recognizers=get_recognizers(["eigenfaces"]),
        attackers=["clear", "naive", "parrot_50", "parrot"],
        selection=["random", "classification", "distinctive", "center"],
        n_random_repeats=3,
        seed=5,
    )
    table = run_attack_suite(small_orl, **kwargs)
    assert list(table.columns) == TABLE_COLUMNS
    # Sizes 12 (once, "all"), 6 and 3: random 3 repeats, three deterministic strategies.
    per_attacker = table.groupby(["selection", "subset_size"]).size() // 4
    assert per_attacker.to_dict() == {
        ("all", 12): 1,
        ("random", 6): 3,
        ("random", 3): 3,
        ("classification", 6): 1,
        ("classification", 3): 1,
        ("distinctive", 6): 1,
        ("distinctive", 3): 1,
        ("center", 6): 1,
        ("center", 3): 1,
    }
    assert np.allclose(table["chance_level"], 1 / table["n_identities"])
    # 7 train / 3 test images per identity whatever the subset.
    assert (table["n_train"] == 7 * table["n_identities"]).all()
    assert (table["n_test"] == 3 * table["n_identities"]).all()
    full = accuracy_table(table)
    assert full.loc["eigenfaces", "parrot"] == full.loc["eigenfaces", "clear"]
    assert (
        full.loc["eigenfaces", "naive"]
        < full.loc["eigenfaces", "parrot_50"]
        <= full.loc["eigenfaces", "parrot"]
    )
    again = run_attack_suite(small_orl, **kwargs)
    pd.testing.assert_frame_equal(
        table.drop(columns=["fit_s", "predict_s"]), again.drop(columns=["fit_s", "predict_s"])
    )


def test_suite_rejects_strategies_without_their_data(small_orl):
    data = AttackData(small_orl.clear, small_orl.masked, small_orl.identities)
    with pytest.raises(ValueError, match="needs AttackData.features"):
        run_attack_suite(data, recognizers=get_recognizers(["eigenfaces"]), selection=["center"])
    with pytest.raises(ValueError, match="needs AttackData.identity_metadata"):
        run_attack_suite(data, recognizers=get_recognizers(["eigenfaces"]), selection=["metadata"])
    with pytest.raises(ValueError, match="unknown selection 'best'"):
        run_attack_suite(data, recognizers=get_recognizers(["eigenfaces"]), selection=["best"])


def test_embedding_cache_computes_each_image_once(tmp_path, small_orl):
    cache = EmbeddingCache(tmp_path)
    calls = []
    compute = lambda image: calls.append(1) or np.full(8, image.mean(), np.float32)  # noqa: E731
    for image in list(small_orl.clear[:5]) * 3:
        cache.get_or_compute(image, compute)
    assert (len(calls), cache.hits, cache.misses) == (5, 10, 5)
    fresh = EmbeddingCache(tmp_path)  # a new process finds them on disk
    fresh.get_or_compute(small_orl.clear[0], compute)
    assert (len(calls), fresh.hits) == (5, 1)


def test_embedding_cache_batches_misses_and_keeps_embedders_apart(tmp_path, small_orl):
    cache, batches = EmbeddingCache(tmp_path), []

    def compute_many(images):
        batches.append(len(images))
        return np.stack([np.full(8, image.mean(), np.float32) for image in images])

    images = list(small_orl.clear[:4])
    first = cache.get_or_compute_many(images + images[:2], compute_many, model="a")
    assert (
        batches == [4] and first.shape == (6, 8) and (cache.hits, cache.misses) == (2, 4)
    )  # one batch of misses
    np.testing.assert_array_equal(first[4], first[0])
    cache.get_or_compute_many(images, compute_many, model="a")
    assert batches == [4]  # all cached
    cache.get_or_compute_many(images, compute_many, model="b")
    assert batches == [4, 4]  # another embedder never reuses an entry
    fresh = EmbeddingCache(tmp_path)
    fresh.get_or_compute_many(images, compute_many, model="b")
    assert batches == [4, 4] and fresh.hits == 4  # a new process finds them on disk


def test_crops_of_several_sizes_or_a_wrong_dtype_are_refused_by_name():
    from automated.attack.recognizers import check_images

    ragged = [np.zeros((80, 80, 3), np.uint8), np.zeros((200, 160, 3), np.uint8)]
    with pytest.raises(
        ValueError,
        match=r"face crops must all have one size; got 2 shapes, e\.g\. \[\(80, 80, 3\), \(200, 160, 3\)\]",
    ):
        check_images(ragged)
    with pytest.raises(
        ValueError, match=r"must be uint8 of shape \(n, H, W\) or \(n, H, W, 3\), got float64 \(2, 4, 4\)"
    ):
        check_images(np.zeros((2, 4, 4)))
    assert check_images(ragged[:1]).shape == (1, 80, 80, 3)


def test_the_option_names_match_the_registries():
    """``names`` (what the API and command check a run's options against, without importing
    scikit-learn or pandas) lists the registries' keys in their order."""
    from automated.attack import names, selection, suite
    from automated.attack.recognizers import FACE_RECOGNIZERS

    assert names.RECOGNIZER_NAMES == tuple(FACE_RECOGNIZERS)
    assert selection.SELECTION_STRATEGIES == ("random", "classification", "metadata", "distinctive", "center")
    assert suite.ALL == names.ALL == "all"
