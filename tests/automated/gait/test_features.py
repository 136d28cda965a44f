"""Gait features flatten / simple and the recognizer factories (seeds/000, section 5.5)."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.decomposition import PCA

from automated.gait.features import (
    FlattenFeatures,
    SimpleFeatures,
    make_gait_recognizer,
    make_gait_recognizers,
)


def test_flatten_is_frame_major():
    X = np.arange(2 * 3 * 4 * 3, dtype=float).reshape(2, 3, 4, 3)
    out = FlattenFeatures().fit_transform(X)
    assert out.shape == (2, 36)
    # feature (t * n_joints + j) * 3 + c is coordinate c of joint j in frame t
    assert out[1, (2 * 4 + 1) * 3 + 2] == X[1, 2, 1, 2]


def test_simple_of_a_straight_line_motion():
    # One joint moves along x only, the other is still at (0, 0, 5): the first PCA axis is
    # +x of joint 0, and the mean pose is the middle of the motion.
    frames = np.linspace(-1.0, 1.0, 5)
    sequence = np.zeros((5, 2, 3))
    sequence[:, 0, 0] = frames
    sequence[:, 1, 2] = 5.0
    out = SimpleFeatures(n_components=1).fit_transform(sequence[None])
    np.testing.assert_allclose(out[0, :6], [1, 0, 0, 0, 0, 0], atol=1e-12)
    np.testing.assert_allclose(out[0, 6:], [0, 0, 0, 0, 0, 5], atol=1e-12)


def test_simple_equals_scikit_learn_pca_components_and_mean():
    X = np.random.default_rng(1).normal(size=(3, 100, 18, 3)) * np.linspace(1, 3, 54).reshape(1, 1, 18, 3)
    out = SimpleFeatures().fit_transform(X)
    assert out.shape == (3, 5 * 54)
    for row, sequence in zip(out, X):
        pca = PCA(n_components=4, svd_solver="full").fit(sequence.reshape(100, 54))
        np.testing.assert_allclose(row, np.concatenate([pca.components_.ravel(), pca.mean_]), atol=1e-10)


def test_simple_needs_enough_frames_and_coordinates():
    with pytest.raises(ValueError, match=r"n_components=4 needs .* = 3"):
        SimpleFeatures().fit(np.zeros((2, 3, 5, 3)))


def test_transform_rejects_another_sequence_shape():
    features = FlattenFeatures().fit(np.zeros((2, 100, 18, 3)))
    with pytest.raises(ValueError, match=r"fitted on \(100, 18, 3\)"):
        features.transform(np.zeros((2, 100, 17, 3)))


def test_recognizer_factories_make_fresh_seeded_pipelines():
    factories = make_gait_recognizers(random_state=3)
    assert sorted(factories) == [
        "knn+flatten",
        "knn+simple",
        "rf+flatten",
        "rf+simple",
        "svm+flatten",
        "svm+simple",
    ]
    first, second = factories["rf+simple"](), factories["rf+simple"]()
    assert first is not second
    assert first.named_steps["classifier"].random_state == 3
    clone(first)  # a valid scikit-learn estimator


def test_recognizer_separates_two_walkers():
    # Two "walkers" whose joint heights differ by 10 cm, plus per-sequence noise of 1 cm:
    # every recognizer identifies held-out sequences perfectly.
    rng = np.random.default_rng(0)
    base = rng.normal(size=(100, 18, 3))
    X = np.stack([base + 0.1 * (i % 2) + 0.01 * rng.normal(size=base.shape) for i in range(12)])
    y = np.arange(12) % 2
    for name, factory in make_gait_recognizers().items():
        predicted = factory().fit(X[:8], y[:8]).predict(X[8:])
        assert list(predicted) == list(y[8:]), name


def test_unknown_feature_or_classifier():
    with pytest.raises(ValueError, match="feature must be one of"):
        make_gait_recognizer("angles", "svm")
    with pytest.raises(ValueError, match="classifier must be one of"):
        make_gait_recognizer("flatten", "lda")
