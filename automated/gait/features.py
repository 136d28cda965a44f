"""Gait feature vectors and recognizers (seeds/000_0b74979cb8a3f1c3.txt, section 5.5).

"For gait recognition, we use two types of feature vectors. The flatten feature vector
simply flattens all poses of a gait sequence into a single vector [...]. The simple feature
vector does a principal component analysis (PCA) over all poses of a walking sequence and
then concatenates the 4 first components of the PCA with an average over all poses of the
sequence. For classification, we use support vector machines (SVM), random forest, and
k-nearest neighbors."

The estimators take skeleton sequences ``(n_sequences, n_frames, n_joints, 3)`` directly,
so they plug into ``automated.attack.run_attack_suite`` as recognizers.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.decomposition import PCA
from sklearn.ensemble import RandomForestClassifier
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from .sequences import check_sequences


class _SequenceTransformer(TransformerMixin, BaseEstimator):
    """Stateless per-sequence transformer: ``fit`` records the input shape only."""

    def fit(self, X, y=None):
        X = check_sequences(X, name="X")
        self.sequence_shape_ = X.shape[1:]
        self.n_features_out_ = self._transform(X[:1]).shape[1]
        return self

    def transform(self, X) -> np.ndarray:
        X = check_sequences(X, name="X")
        if hasattr(self, "sequence_shape_") and X.shape[1:] != self.sequence_shape_:
            raise ValueError(
                f"X has sequences of shape {X.shape[1:]}, but {type(self).__name__} was fitted "
                f"on {self.sequence_shape_}"
            )
        return self._transform(X)


class FlattenFeatures(_SequenceTransformer):
    """The "flatten" gait feature: all poses of a sequence as one vector.

    seeds/000, section 5.5 (after Horst et al. 2019). Frame-major order: feature
    ``(t * n_joints + j) * 3 + c`` is coordinate ``c`` of joint ``j`` in frame ``t``.

    Input ``X`` : array of shape (n_sequences, n_frames, n_joints, 3).
    Output : ndarray of shape (n_sequences, n_frames * n_joints * 3), float64.
    """

    def _transform(self, X: np.ndarray) -> np.ndarray:
        return X.reshape(len(X), -1).astype(np.float64)


class SimpleFeatures(_SequenceTransformer):
    """The "simple" gait feature: per-sequence PCA axes of the poses + the mean pose.

    seeds/000, section 5.5. Each sequence's poses form a matrix of shape
    (n_frames, n_joints * 3); a PCA over its rows (the poses) gives the first
    ``n_components`` principal axes (what scikit-learn's ``PCA.components_`` holds: unit-norm
    rows of length n_joints * 3, sorted by explained variance, each signed so that its
    largest absolute entry is positive, as scikit-learn's ``svd_flip``). The feature is these
    axes, flattened row by row, followed by the mean pose (the PCA's ``mean_``, the "average
    over all poses").

    Parameters
    ----------
    n_components : int, default=4
        The paper's "4 first components".

    Notes
    -----
    Input ``X`` : array of shape (n_sequences, n_frames, n_joints, 3) with
    n_frames >= n_components and n_joints * 3 >= n_components.
    Output : ndarray of shape (n_sequences, (n_components + 1) * n_joints * 3), float64.

    Raises
    ------
    ValueError
        If the sequences have fewer frames or coordinates than ``n_components``.
    """

    def __init__(self, n_components: int = 4):
        self.n_components = n_components

    def _transform(self, X: np.ndarray) -> np.ndarray:
        n, n_frames, n_joints, _ = X.shape
        if self.n_components < 1 or self.n_components > min(n_frames, n_joints * 3):
            raise ValueError(
                f"n_components={self.n_components} needs 1 <= n_components <= min(n_frames, "
                f"n_joints * 3) = {min(n_frames, n_joints * 3)} for sequences of shape {X.shape[1:]}"
            )
        poses = X.reshape(n, n_frames, n_joints * 3).astype(np.float64)
        mean_poses = poses.mean(axis=1)
        # One batched SVD instead of a scikit-learn PCA per sequence (same result, ~100x
        # faster); rows of vt are the principal axes, sorted by singular value.
        _, _, vt = np.linalg.svd(poses - mean_poses[:, None, :], full_matrices=False)
        axes = vt[:, : self.n_components, :]
        # scikit-learn's svd_flip(u_based_decision=False): the largest |entry| of each axis > 0.
        largest = np.take_along_axis(axes, np.abs(axes).argmax(axis=2)[:, :, None], axis=2)
        axes = axes * np.where(largest < 0, -1.0, 1.0)
        return np.concatenate([axes.reshape(n, -1), mean_poses], axis=1)


FEATURES = {"flatten": FlattenFeatures, "simple": SimpleFeatures}


def _classifiers(random_state: int) -> dict[str, Callable[[], BaseEstimator]]:
    return {
        "svm": lambda: SVC(kernel="linear", C=1.0),
        "rf": lambda: RandomForestClassifier(n_estimators=200, random_state=random_state, n_jobs=1),
        "knn": lambda: KNeighborsClassifier(n_neighbors=1),
    }


def make_gait_recognizer(feature: str, classifier: str, *, random_state: int = 0) -> Pipeline:
    """One gait recognizer: feature transformer -> standardisation -> classifier.

    The paper names the classifiers but not their settings (seeds/000, section 5.5; it used
    scikit-learn 0.23, section 5.8). Chosen here on the Calgary walks (svm+flatten, clear,
    split seeds 0-2, mean accuracy): a linear kernel (0.68) beats the default RBF kernel
    (0.29; 0.62 with C=10); 1 neighbour (0.61) beats 3 (0.53); standardising every
    feature helps SVM and kNN and does not change the forest.

    Parameters
    ----------
    feature : {"flatten", "simple"}
    classifier : {"svm", "rf", "knn"}
        Linear SVM (C=1), random forest (200 trees, seeded), 1-nearest neighbour.
    random_state : int, default=0

    Returns
    -------
    sklearn.pipeline.Pipeline
        ``fit(X, y)`` / ``predict(X)`` with X of shape (n_sequences, n_frames, n_joints, 3).

    Raises
    ------
    ValueError
        If ``feature`` or ``classifier`` is unknown.
    """
    classifiers = _classifiers(random_state)
    if feature not in FEATURES:
        raise ValueError(f"feature must be one of {sorted(FEATURES)}, got {feature!r}")
    if classifier not in classifiers:
        raise ValueError(f"classifier must be one of {sorted(classifiers)}, got {classifier!r}")
    return Pipeline(
        [
            ("features", FEATURES[feature]()),
            ("scale", StandardScaler()),
            ("classifier", classifiers[classifier]()),
        ]
    )


def make_gait_recognizers(*, random_state: int = 0) -> dict[str, Callable[[], Pipeline]]:
    """Zero-argument factories of the six gait recognizers of seeds/000, section 5.5.

    Names are ``"<classifier>+<feature>"``: ``svm+flatten`` (the paper's default),
    ``svm+simple``, ``rf+flatten``, ``rf+simple``, ``knn+flatten``, ``knn+simple``. Each call
    of a factory returns a new unfitted pipeline (``make_gait_recognizer``), as
    ``automated.attack.run_attack_suite(recognizers=...)`` expects.

    Returns
    -------
    dict of str to callable returning sklearn.pipeline.Pipeline
    """

    def factory(feature: str, classifier: str) -> Callable[[], Pipeline]:
        return lambda: make_gait_recognizer(feature, classifier, random_state=random_state)

    return {f"{c}+{f}": factory(f, c) for c in ("svm", "rf", "knn") for f in FEATURES}


def selection_features(sequences, *, n_components: int = 4) -> np.ndarray:
    """Feature vectors for the Center and Distinctive identity selections of gait.

    seeds/000, section 5.7: "For the feature vector selection strategy Center and Distinctive
    we use a PCA with four components over all samples for gait". The PCA is fitted over
    all given (clear) sequences, flattened (``FlattenFeatures``), and each sequence is
    projected on its first ``n_components`` axes.

    Parameters
    ----------
    sequences : array-like of shape (n_sequences, n_frames, n_joints, 3)
    n_components : int, default=4

    Returns
    -------
    ndarray of shape (n_sequences, n_components), float64

    Raises
    ------
    ValueError
        If there are fewer sequences than ``n_components`` or a bad shape.
    """
    flat = FlattenFeatures().fit_transform(sequences)
    if len(flat) < n_components:
        raise ValueError(
            f"need at least {n_components} sequences for a {n_components}-component PCA, got {len(flat)}"
        )
    return PCA(n_components=n_components, svd_solver="full").fit_transform(flat)
