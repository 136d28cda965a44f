"""Conceptually different face recognizers, as sklearn-compatible estimators on crops.

seeds/000_0b74979cb8a3f1c3.txt, section 4.2.2: "at least a few conceptually different
recognition systems should be tested" because the system best on clear data need not be
best on anonymized data (hypothesis H3, section 6.2). Each recognizer here is a
classifier ``fit(X, y) / predict(X)`` over face crops ``X`` of shape (n, H, W, 3) or
(n, H, W), dtype uint8, all of one size:

- **pretrained embedding + trained classifier** (``dlib_svm``, ``dlib_knn``): dlib's
  ResNet face embedding (``recognition.DEFAULT_EMBEDDER``, pretrained on clear faces,
  like DeepFace/frknn in section 5.5) with an SVM or a 1-nearest-neighbour classifier
  trained on the attacker's data. Embeddings are cached per embedder and image content
  hash: every attacker reuses the same crops.
- **classic trainable** (``lbph``, ``eigenfaces``): OpenCV's Local Binary Pattern
  Histograms recognizer, and PCA on pixels (Eigenfaces) + linear SVM. Learns everything
  from the attacker's training data, so a fixed pixel permutation is no obstacle.
- **small CNN trained from scratch** (``cnn``): PyTorch on CPU, 32x32 grey input; learns the
  structure of anonymized data (the "retrained" systems of section 5.5).
- **fine-tuned deep network** (``dlib_finetuned``): dlib's pretrained face ResNet retrained
  (above its first stages) on the attacker's crops (``finetune.py``), the paper's "Retrained ArcFace";
  it identifies with a ridge read-out of its spatial map before the global pooling.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

import cv2
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.decomposition import KernelPCA
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import FunctionTransformer, make_pipeline
from sklearn.preprocessing import LabelEncoder, StandardScaler
from sklearn.svm import SVC
from sklearn.utils.validation import check_is_fitted

from .arcface import arcface_knn, arcface_svm
from .embedding import (
    EMBEDDING_CACHE,
    DlibEmbedding,
    EmbeddingCache,
    check_images,
    content_key,
    to_grey,
    to_rgb,
)
from .finetune import FineTunedFaceResNet

#: ``embedding``'s names are re-exported for callers of this module (the registry).
__all__ = [
    "EMBEDDING_CACHE",
    "FACE_RECOGNIZERS",
    "DlibEmbedding",
    "EmbeddingCache",
    "LBPHClassifier",
    "SmallCNNClassifier",
    "arcface_knn",
    "arcface_svm",
    "check_images",
    "cnn",
    "content_key",
    "dlib_finetuned",
    "dlib_knn",
    "dlib_svm",
    "eigenfaces",
    "get_recognizers",
    "lbph",
    "to_grey",
    "to_rgb",
]


def _flatten_pixels(images) -> np.ndarray:
    # float64: in float32 the Gram matrix of near-identical crops (DP-Snow leaves 1 % of
    # the pixels) had eigenvalues of -0.6 % of the largest and KernelPCA refused it.
    return to_grey(images).reshape(len(images), -1).astype(np.float64) / 255.0


def _crop_key(grey, params) -> bytes:
    """Memo key of a grey crop's LBP histogram: its shape, bytes and the LBP parameters."""
    digest = hashlib.blake2b(repr((grey.shape, grey.dtype.str, params)).encode(), digest_size=20)
    digest.update(np.ascontiguousarray(grey))
    return digest.digest()


class _HistogramMemo:
    """Least-recently-used LBP histograms by crop key, at most ``max_entries`` (thread-safe).

    A 160 px crop's histogram (8 x 8 cells x 256 bins, float32) is 64 KiB, so the default
    1024 entries hold about 64 MiB: one demo submission's clear and masked crops (about 720).
    """

    def __init__(self, max_entries: int = 1024):
        self.max_entries = max_entries
        self._rows: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get_many(self, keys) -> list:
        with self._lock:
            found = []
            for key in keys:
                row = self._rows.get(key)
                if row is not None:
                    self._rows.move_to_end(key)
                found.append(row)
            return found

    def put(self, key, row: np.ndarray) -> None:
        row.setflags(write=False)  # shared by later calls: never changed in place
        with self._lock:
            self._rows[key] = row
            self._rows.move_to_end(key)
            while len(self._rows) > self.max_entries:
                self._rows.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._rows.clear()


#: LBP histograms of this process's crops (``LBPHClassifier.lbp_histograms``).
_HISTOGRAMS = _HistogramMemo()


class LBPHClassifier(ClassifierMixin, BaseEstimator):
    """OpenCV Local Binary Pattern Histograms face recognizer (Ahonen et al. 2006).

    The histograms are OpenCV's (``cv2.face.LBPHFaceRecognizer``: circular LBP, one
    normalised 2^neighbors-bin histogram per grid cell, concatenated); prediction is the
    nearest training histogram by OpenCV's ``HISTCMP_CHISQR_ALT`` distance
    ``2 * sum((a - b)^2 / (a + b))``, computed here in numpy for all training histograms
    at once instead of one ``compareHist`` per pair. It equals OpenCV's ``predict``: the
    same labels and distances within 1e-6 relative on GRID and London crops
    (tests/automated/attack/test_lbph.py), at about 1.6x its speed.

    Parameters
    ----------
    radius, neighbors, grid_x, grid_y : int
        ``cv2.face.LBPHFaceRecognizer_create`` parameters (LBP radius in pixels, sampling
        points, histogram cells across / down).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    histograms_ : ndarray of float32, shape (n_train, grid_x * grid_y * 2**neighbors)
        The training crops' LBP histograms.
    labels_ : ndarray of int64, shape (n_train,)
        Their labels, encoded (indices into ``classes_``).
    """

    def __init__(self, radius: int = 1, neighbors: int = 8, grid_x: int = 8, grid_y: int = 8):
        self.radius = radius
        self.neighbors = neighbors
        self.grid_x = grid_x
        self.grid_y = grid_y

    def lbp_histograms(self, X) -> np.ndarray:
        """OpenCV's LBP histograms of crops ``X`` ((n, H, W, 3) or (n, H, W), uint8).

        A crop's histogram depends on that crop alone (OpenCV computes each one apart), so
        the histograms are memoised per process by the grey crop's bytes and the LBP
        parameters (:data:`_HISTOGRAMS`, least recently used first out): a campaign's attack
        computes each crop's once, not once per fold, recognizer fit and test (the naive and
        parrot attackers test the same masked crops; every fold trains on most of them).

        Returns
        -------
        ndarray of float32, shape (n, grid_x * grid_y * 2**neighbors)
        """
        grey = list(to_grey(X))
        params = (self.radius, self.neighbors, self.grid_x, self.grid_y)
        keys = [_crop_key(image, params) for image in grey]
        rows = _HISTOGRAMS.get_many(keys)
        missing = [i for i, row in enumerate(rows) if row is None]
        if missing or not grey:  # no crop at all: OpenCV's own error, as before the memo
            model = cv2.face.LBPHFaceRecognizer_create(
                radius=self.radius, neighbors=self.neighbors, grid_x=self.grid_x, grid_y=self.grid_y
            )
            # train() only computes the histograms
            model.train([grey[i] for i in missing], np.zeros(len(missing), np.int32))
            for i, histogram in zip(missing, model.getHistograms(), strict=True):
                rows[i] = np.asarray(histogram, np.float32).reshape(-1)
                _HISTOGRAMS.put(keys[i], rows[i])
        return np.stack(rows)

    def fit(self, X, y):
        self._encoder = LabelEncoder().fit(y)
        self.classes_ = self._encoder.classes_
        self.histograms_ = self.lbp_histograms(X)
        self.labels_ = self._encoder.transform(y).astype(np.int64)
        return self

    def distances(self, X) -> np.ndarray:
        """Chi-square distances (``HISTCMP_CHISQR_ALT``) of crops ``X`` to every training crop.

        ``2 * sum_j (a_j - b_j)^2 / (a_j + b_j)`` over bins with ``a_j + b_j > 0`` equals
        ``2 * (sum a + sum b - 4 * sum_j a_j b_j / (a_j + b_j))``, where only bins non-zero
        in both histograms count in the last sum: for each query only its own non-zero
        bins are gathered (about a quarter of them on 160 px crops). float64 arithmetic.

        Returns
        -------
        ndarray of float64, shape (len(X), n_train)
        """
        check_is_fitted(self, "histograms_")
        queries = self.lbp_histograms(X)
        train_sums = self.histograms_.sum(axis=1, dtype=np.float64)
        shared = np.empty((len(queries), len(self.histograms_)))
        for i, query in enumerate(queries):
            bins = np.flatnonzero(query)
            values = query[bins].astype(np.float64)
            train = self.histograms_[:, bins].astype(np.float64)
            total = train + values
            train *= values
            train /= total
            shared[i] = train.sum(axis=1)
        return 2.0 * (train_sums[None, :] + queries.sum(axis=1, dtype=np.float64)[:, None] - 4.0 * shared)

    def predict(self, X) -> np.ndarray:
        """The label of the nearest training crop (the first one on a tie, as OpenCV)."""
        nearest = self.distances(X).argmin(axis=1)
        return self._encoder.inverse_transform(self.labels_[nearest])


class SmallCNNClassifier(ClassifierMixin, BaseEstimator):
    """A small CNN trained from scratch on grey crops (PyTorch, CPU).

    Three conv blocks (8/16/32 channels, 3x3, batch norm, ReLU, 2x2 max-pool) on a
    ``size_px`` x ``size_px`` grey input scaled to [0, 1] and standardised per image, then
    dropout and one linear layer over the flattened 8x8 maps. No global pooling and no
    augmentation: spatial layout is learned as it is, so a fixed block permutation is just
    another layout to learn.

    Parameters
    ----------
    size_px : int, default=32
        Side in pixels crops are resized to (a multiple of 8). 32 keeps a fit on 300
        ORL crops at a few seconds; 64 was 20x slower on this CPU for no accuracy gain.
    epochs : int, default=20
    batch_size : int, default=32
    learning_rate : float, default=1e-3
        Adam step size.
    weight_decay : float, default=1e-4
    num_threads : int, default=1
        ``torch.set_num_threads``; one thread avoids oversubscription when several
        processes share the 2 cores (measured: 2 threads were slower under load).
    random_state : int, default=0
        ``torch.manual_seed`` for weights and batch order: the same data gives the same
        model.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    """

    def __init__(
        self,
        size_px: int = 32,
        epochs: int = 20,
        batch_size: int = 32,
        learning_rate: float = 1e-3,
        weight_decay: float = 1e-4,
        num_threads: int = 1,
        random_state: int = 0,
    ):
        self.size_px = size_px
        self.epochs = epochs
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.num_threads = num_threads
        self.random_state = random_state

    def _tensor(self, X):
        import torch

        grey = to_grey(X)
        resized = (
            np.stack(
                [cv2.resize(im, (self.size_px, self.size_px), interpolation=cv2.INTER_AREA) for im in grey]
            ).astype(np.float32)
            / 255.0
        )
        mean = resized.mean(axis=(1, 2), keepdims=True)
        std = resized.std(axis=(1, 2), keepdims=True) + 1e-6
        return torch.from_numpy((resized - mean) / std).unsqueeze(1)

    def _network(self, n_classes: int):
        from torch import nn

        def block(c_in, c_out):
            return [nn.Conv2d(c_in, c_out, 3, padding=1), nn.BatchNorm2d(c_out), nn.ReLU(), nn.MaxPool2d(2)]

        side = self.size_px // 8
        return nn.Sequential(
            *block(1, 8),
            *block(8, 16),
            *block(16, 32),
            nn.Flatten(),
            nn.Dropout(0.3),
            nn.Linear(32 * side * side, n_classes),
        )

    def fit(self, X, y):
        import torch

        if self.size_px % 8:
            raise ValueError(f"size_px must be a multiple of 8, got {self.size_px}")
        torch.set_num_threads(self.num_threads)
        torch.manual_seed(self.random_state)
        self._encoder = LabelEncoder().fit(y)
        self.classes_ = self._encoder.classes_
        inputs = self._tensor(X)
        targets = torch.from_numpy(self._encoder.transform(y).astype(np.int64))
        self.model_ = self._network(len(self.classes_))
        optimiser = torch.optim.Adam(
            self.model_.parameters(), lr=self.learning_rate, weight_decay=self.weight_decay
        )
        loss_fn = torch.nn.CrossEntropyLoss()
        generator = torch.Generator().manual_seed(self.random_state)
        self.model_.train()
        for _ in range(self.epochs):
            order = torch.randperm(len(inputs), generator=generator)
            for start in range(0, len(inputs), self.batch_size):
                batch = order[start : start + self.batch_size]
                if len(batch) < 2:  # batch norm needs two samples
                    continue
                optimiser.zero_grad()
                loss_fn(self.model_(inputs[batch]), targets[batch]).backward()
                optimiser.step()
        self.model_.eval()
        return self

    def predict(self, X) -> np.ndarray:
        import torch

        check_is_fitted(self, "model_")
        torch.set_num_threads(self.num_threads)
        with torch.no_grad():
            logits = self.model_(self._tensor(X))
        return self._encoder.inverse_transform(logits.argmax(dim=1).numpy())


def dlib_svm():
    """dlib's ResNet face embedding, standardised, RBF SVM (C=10)."""
    return make_pipeline(DlibEmbedding(), StandardScaler(), SVC(kernel="rbf", C=10.0, gamma="scale"))


def dlib_knn():
    """dlib's ResNet face embedding, 1-nearest neighbour in L2 (the gallery/probe matcher)."""
    return make_pipeline(DlibEmbedding(), KNeighborsClassifier(n_neighbors=1))


def lbph():
    """OpenCV LBPH (radius 1, 8 neighbours, 8x8 cells), nearest histogram (chi-square)."""
    return LBPHClassifier()


def eigenfaces():
    """Eigenfaces: grey pixels in [0, 1] projected on the principal components of the
    training faces, then a linear SVM.

    The components come from the n x n Gram matrix of the training images (the "snapshot"
    method of Turk and Pentland 1991, via ``KernelPCA(kernel="linear")``): exact, and about
    10x faster here than an SVD of the n x 10,000-pixel matrix. All non-zero components are
    kept, unwhitened (whitening the smallest ones drowned the signal: 2 % on ORL). PCA and
    the linear kernel only see inner products of pixel vectors, which a fixed pixel
    permutation preserves, so its parrot accuracy equals its clear accuracy there.
    """
    return make_pipeline(
        FunctionTransformer(_flatten_pixels),
        KernelPCA(kernel="linear", eigen_solver="dense"),
        SVC(kernel="linear", C=1.0),
    )


def cnn():
    """``SmallCNNClassifier`` with its defaults (32x32 grey, 20 epochs, seed 0)."""
    return SmallCNNClassifier()


def dlib_finetuned():
    """``finetune.FineTunedFaceResNet`` with its defaults (layers from op 30, 4 epochs, seed 0)."""
    return FineTunedFaceResNet()


#: Face recognizers by name: zero-argument factories of fresh (unfitted) estimators.
FACE_RECOGNIZERS = {
    "dlib_svm": dlib_svm,
    "dlib_knn": dlib_knn,
    "lbph": lbph,
    "eigenfaces": eigenfaces,
    "cnn": cnn,
    "dlib_finetuned": dlib_finetuned,
    "arcface_svm": arcface_svm,
    "arcface_knn": arcface_knn,
}


def get_recognizers(names, registry=None) -> dict:
    """``{name: factory}`` for the given names (default registry ``FACE_RECOGNIZERS``).

    Raises
    ------
    ValueError
        If a name is unknown.
    """
    registry = FACE_RECOGNIZERS if registry is None else registry
    unknown = [n for n in names if n not in registry]
    if unknown:
        raise ValueError(f"unknown recognizer(s) {unknown}; known: {', '.join(registry)}")
    return {name: registry[name] for name in names}
