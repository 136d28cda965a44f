"""Cached clear-trained recognizers (``model_cache.FittedModelCache``) on real GRID crops.

Six clips, every 15th frame: speaker s1 (``bbaf2n``, ``brif5s``, and ``lgwazp`` as the
attacker's own material), s2 (``id2_vcd_swwp2s``, ``pwij3p``), P02 (``brbk7n``, an
extra class). The "masked" crops are a real Gaussian blur of the clear ones (sigma 4
px); a second submission blurs with sigma 8.
"""

import cv2
import numpy as np
import pytest

from automated.attack.crossvideo import run_fold, video_folds
from automated.attack.data import AttackData
from automated.attack.faces import face_attack_data_from_videos
from automated.attack.model_cache import FittedModelCache, training_key
from automated.attack.recognizers import SmallCNNClassifier, eigenfaces, lbph
from automated.detection import MediaPipeFaceDetector

pytestmark = pytest.mark.slow

CLIPS = [
    ("grid_talking_heads/bbaf2n.mpg", "s1", "evaluated"),
    ("grid_identity_clips/s1/brif5s.mpg", "s1", "evaluated"),
    ("grid_identity_clips/s1/lgwazp.mpg", "s1", "attacker_train"),
    ("grid_talking_heads/id2_vcd_swwp2s.mpg", "s2", "evaluated"),
    ("grid_talking_heads/pwij3p.mpg", "s2", "evaluated"),
    ("grid_talking_heads/brbk7n.mpg", "P02", "evaluated"),
]
ATTACKERS = ["clear", "naive", "parrot"]


def small_cnn():
    """The demo's CNN with 3 epochs (a cheap fit; the cache does not depend on the epochs)."""
    return SmallCNNClassifier(epochs=3)


RECOGNIZERS = {"lbph": lbph, "eigenfaces": eigenfaces, "cnn": small_cnn}


def blurred(crops: np.ndarray, sigma: float) -> np.ndarray:
    return np.stack([cv2.GaussianBlur(c, (0, 0), sigma) for c in crops])


@pytest.fixture(scope="module")
def clear_data(data_dir, tmp_path_factory):
    paths = [data_dir / "videos" / clip for clip, _, _ in CLIPS]
    with MediaPipeFaceDetector() as detector:
        return face_attack_data_from_videos(
            [(p, p) for p in paths],
            [identity for _, identity, _ in CLIPS],
            stride=15,
            detector=detector,
            size_px=64,
            cache_dir=tmp_path_factory.mktemp("crops"),
            roles=[role for _, _, role in CLIPS],
        )


def with_masked(data: AttackData, masked: np.ndarray, clear: np.ndarray | None = None) -> AttackData:
    return AttackData(
        clear=data.clear if clear is None else clear,
        masked=masked,
        identities=data.identities,
        groups=data.groups,
        time_index=data.time_index,
        roles=data.roles,
    )


def run_all(data: AttackData, models, n_folds=None):
    """Rows (timings dropped) and predictions of every fold."""
    results = []
    for fold in video_folds(data.identities, data.groups, roles=data.roles, n_folds=n_folds):
        rows, predictions = run_fold(data, fold, recognizers=RECOGNIZERS, attackers=ATTACKERS, models=models)
        results.append(
            ([{k: v for k, v in row.items() if k not in ("fit_s", "predict_s")} for row in rows], predictions)
        )
    return results


def assert_same(first, second):
    assert len(first) == len(second)
    for (rows_a, predictions_a), (rows_b, predictions_b) in zip(first, second):
        assert rows_a == rows_b
        assert predictions_a.equals(predictions_b)


def test_cached_models_give_the_results_of_fresh_fits_and_a_second_submission_fits_only_the_parrot(
    clear_data, tmp_path
):
    data = with_masked(clear_data, blurred(clear_data.clear, 4))
    n_folds = len(video_folds(data.identities, data.groups, roles=data.roles))
    assert n_folds == 4  # s1's two evaluated clips, s2's two

    uncached = run_all(data, None)
    cold = FittedModelCache(tmp_path)
    assert_same(run_all(data, cold), uncached)
    # Per fold and recognizer the clear and naive attackers share one fit; parrot fits its own.
    assert (cold.fits, cold.hits) == (n_folds * 3, n_folds * 3)
    # A later run (a new process) reads every model from disk (LBPH keeps its histograms
    # as numpy arrays, so it pickles too): nothing is fitted again.
    warm = FittedModelCache(tmp_path)
    assert_same(run_all(data, warm), uncached)
    assert warm.fits == 0
    assert warm.hits == n_folds * 2 * 3

    # A second submission (other masked crops) on the same clear videos: only what sees its
    # masked data is trained (parrot), and its results are those of fresh fits.
    second = with_masked(clear_data, blurred(clear_data.clear, 8))
    later = FittedModelCache(tmp_path)
    assert_same(run_all(second, later), run_all(second, None))
    assert later.fits == 0  # every clear and naive model from disk (the parrot's are never cached)
    assert later.hits == n_folds * 2 * 3


def test_a_changed_clear_video_or_fold_plan_misses_the_cache(clear_data, tmp_path):
    data = with_masked(clear_data, blurred(clear_data.clear, 4))
    run_all(data, FittedModelCache(tmp_path))
    # Replace the clear video of P02 (group 5, trained on in every fold) by its mirror image.
    clear = data.clear.copy()
    clear[data.groups == 5] = clear[data.groups == 5][:, :, ::-1]
    replaced = with_masked(data, data.masked, clear)
    after = FittedModelCache(tmp_path)
    assert_same(run_all(replaced, after), run_all(replaced, None))
    assert after.fits == 4 * 3  # as many as with an empty cache: nothing read from disk
    # Another fold plan (2 folds, each testing one clip of s1 and one of s2, instead of
    # leave-one-video-out) trains on other samples.
    other_plan = FittedModelCache(tmp_path)
    assert_same(run_all(data, other_plan, n_folds=2), run_all(data, None, n_folds=2))
    assert other_plan.fits == 2 * 3


def test_the_key_covers_every_setting_and_the_labels(clear_data):
    X, y = clear_data.clear[::7], clear_data.identities[::7]
    assert len(set(y.tolist())) == 3
    key = training_key(small_cnn(), X, y)
    assert key == training_key(small_cnn(), X.copy(), list(y))
    assert key != training_key(SmallCNNClassifier(epochs=4), X, y)
    assert key != training_key(small_cnn(), X, y[::-1])
    assert key != training_key(small_cnn(), X[:, ::-1], y)
    # A default parameter is part of the key: the default CNN differs from epochs=3.
    assert training_key(SmallCNNClassifier(), X, y) != key


def test_masked_crops_equal_to_the_clear_ones_reuse_the_clear_model_and_predictions(clear_data, tmp_path):
    """A masking that leaves the faces unchanged (the ``identity`` baseline): its parrot is
    trained, and its naive and parrot attackers tested, on crops byte for byte the clear
    ones, so the clear attacker's model and predictions are theirs (read only); results are
    those of fresh fits. One changed training crop is another training set: it misses."""
    unchanged = with_masked(clear_data, clear_data.clear.copy())
    n_folds = len(video_folds(unchanged.identities, unchanged.groups, roles=unchanged.roles))
    cache = FittedModelCache(tmp_path)
    assert_same(run_all(unchanged, cache), run_all(unchanged, None))
    assert cache.fits == n_folds * 3  # the clear fit only
    assert cache.hits == n_folds * 3 * 2  # naive and parrot

    masked = clear_data.clear.copy()
    first_p02 = np.flatnonzero(clear_data.groups == 5)[0]  # P02: trained on in every fold
    masked[first_p02] = blurred(masked[first_p02 : first_p02 + 1], 4)[0]
    one_changed = with_masked(clear_data, masked)
    later = FittedModelCache(tmp_path)
    assert_same(run_all(one_changed, later), run_all(one_changed, None))
    assert later.fits == 0  # clear and naive from disk
    assert later.hits == n_folds * 3 * 2  # the parrots missed and were fitted afresh
