"""The embedding base of the attack recognizers: crop checks, the embedding cache, ``DlibEmbedding``.

Face crops are ``X`` of shape (n, H, W, 3) or (n, H, W), dtype uint8, all of one size.
``DlibEmbedding`` turns crops into the embeddings of a pretrained face network
(``recognition.make_face_embedder``: dlib's ResNet, ArcFace, ...), cached per embedder and
crop content in ``EMBEDDING_CACHE``. Shared by the recognizer registry
(``recognizers``) and the recognizers built on it (``arcface``, ``finetune``, ``faces``,
``reversal``); a leaf of the attack package: it imports none of them.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import cv2
import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin

from ..cache_files import save_npy, settings_token
from ..recognition import DEFAULT_EMBEDDER, make_face_embedder


def check_images(images) -> np.ndarray:
    """Validate a batch of crops: uint8 (n, H, W) or (n, H, W, 3).

    Raises
    ------
    ValueError
        If the crops differ in size (the recognizers need one size: resize them first),
        the dtype is not uint8 or the shape is neither.
    """
    try:
        images = np.asarray(images)
    except ValueError:  # numpy refuses a ragged list
        sizes = sorted({np.shape(im) for im in images})
        raise ValueError(
            f"face crops must all have one size; got {len(sizes)} shapes, e.g. {sizes[:3]}"
        ) from None
    if images.dtype != np.uint8 or images.ndim not in (3, 4) or (images.ndim == 4 and images.shape[3] != 3):
        raise ValueError(
            f"face crops must be uint8 of shape (n, H, W) or (n, H, W, 3), got {images.dtype} {images.shape}"
        )
    return images


def to_grey(images) -> np.ndarray:
    """Crops as grey ``uint8`` of shape (n, H, W) (RGB converted with OpenCV's weights)."""
    images = check_images(images)
    if images.ndim == 3:
        return images
    return np.stack([cv2.cvtColor(np.ascontiguousarray(im), cv2.COLOR_RGB2GRAY) for im in images])


def to_rgb(images) -> np.ndarray:
    """Crops as RGB ``uint8`` of shape (n, H, W, 3) (grey replicated on 3 channels)."""
    images = check_images(images)
    if images.ndim == 4:
        return images
    return np.repeat(images[..., None], 3, axis=3)


def content_key(image: np.ndarray) -> str:
    """SHA-1 of an image's shape, dtype and bytes: the embedding cache key."""
    image = np.ascontiguousarray(image)
    digest = hashlib.sha1(f"{image.shape}{image.dtype}".encode())
    digest.update(image.tobytes())
    return digest.hexdigest()


class EmbeddingCache:
    """Face embeddings by embedder and image content hash, in memory and optionally on disk.

    Parameters
    ----------
    directory : path, optional
        Folder where each embedding is also stored as ``<sha1>.npy`` so later processes
        reuse it.

    Attributes
    ----------
    hits, misses : int
        Look-ups answered from the cache / computed.
    """

    def __init__(self, directory=None):
        self.directory = Path(directory) if directory is not None else None
        self._memory: dict[str, np.ndarray] = {}
        self.hits = 0
        self.misses = 0

    def get_or_compute(self, image: np.ndarray, compute, *, model: str = "") -> np.ndarray:
        """The embedding of ``image`` by ``compute`` (called on a miss), cached.

        ``model`` names the embedder and its version (e.g. ``DlibFaceEmbedder.cache_key()``):
        it is part of the key, so another embedder never reuses these entries. Disk entries
        are written atomically (``cache_files.save_npy``).
        """
        key = content_key(image) if not model else f"{settings_token(model)}_{content_key(image)}"
        if key in self._memory:
            self.hits += 1
            return self._memory[key]
        path = self.directory / f"{key}.npy" if self.directory is not None else None
        if path is not None and path.is_file():
            value = np.load(path)
            self.hits += 1
        else:
            value = np.asarray(compute(image), dtype=np.float32)
            self.misses += 1
            if path is not None:
                save_npy(path, value)
        self._memory[key] = value
        return value

    def get_or_compute_many(self, images, compute_many, *, model: str) -> np.ndarray:
        """Embeddings of ``images``, computing all misses in one ``compute_many`` call.

        Parameters
        ----------
        images : sequence of ndarray
        compute_many : callable ``(list of images) -> ndarray (m, d)``
            Called once with the images not in the cache (a batched embedder).
        model : str
            The embedder's ``cache_key()`` (part of every key, as ``get_or_compute``).

        Returns
        -------
        ndarray of shape (n, d), dtype float32
        """
        images = list(images)
        if not images:
            return np.zeros((0, 0), np.float32)
        missing = {}
        for image in images:
            key = f"{settings_token(model)}_{content_key(image)}"
            if key in self._memory or key in missing:
                continue
            path = self.directory / f"{key}.npy" if self.directory is not None else None
            if path is not None and path.is_file():
                self._memory[key] = np.load(path)
            else:
                missing[key] = image
        if missing:
            values = np.asarray(compute_many(list(missing.values())), dtype=np.float32)
            for (key, _), value in zip(missing.items(), values):
                self._memory[key] = value
                if self.directory is not None:
                    save_npy(self.directory / f"{key}.npy", value)
        self.misses += len(missing)
        self.hits += len(images) - len(missing)
        return np.stack([self._memory[f"{settings_token(model)}_{content_key(image)}"] for image in images])

    def __len__(self) -> int:
        return len(self._memory)


#: The process-wide embedding cache shared by all embedding recognizers.
EMBEDDING_CACHE = EmbeddingCache()


class DlibEmbedding(BaseEstimator, TransformerMixin):
    """Transform face crops into face embeddings (``recognition.make_face_embedder``).

    The crop is the face box (5-point alignment inside it); the crops missing from the
    cache are embedded in one batch. Stateless: ``fit`` learns nothing, the network is
    pretrained on clear faces.

    Parameters
    ----------
    embedder : str, default=recognition.DEFAULT_EMBEDDER
        Registry name (``recognition.EMBEDDERS``).
    cache : EmbeddingCache, optional
        Default ``EMBEDDING_CACHE`` (process-wide).
    """

    def __init__(self, embedder: str = DEFAULT_EMBEDDER, cache: EmbeddingCache | None = None):
        self.embedder = embedder
        self.cache = cache

    def fit(self, X, y=None):
        check_images(X)
        return self

    def transform(self, X) -> np.ndarray:
        """Return ndarray of shape (n, dim), dtype float32 (``dim`` of the embedder).

        Raises
        ------
        ValueError
            If the crops are not uint8 (n, H, W[, 3]) or the embedder name is unknown.
        """
        embedder = make_face_embedder(self.embedder)
        cache = self.cache if self.cache is not None else EMBEDDING_CACHE
        rgb = to_rgb(X)
        if len(rgb) == 0:
            return np.zeros((0, embedder.dim), np.float32)
        return cache.get_or_compute_many(rgb, embedder.embed_crops, model=embedder.cache_key())
