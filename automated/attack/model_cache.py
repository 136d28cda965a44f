"""Fitted recognizers of clear-only training sets, reused across submissions of a campaign.

The *clear* and *naive* attackers (``attackers.py``; seeds/000 section 4.2.1) train on
clear samples only, so within a fold their models are the same, and every submission of
a campaign trains them again on the same clear crops: nothing of the submission enters
them. ``FittedModelCache`` keeps such a fitted recognizer under a key of everything that
determines it, the recognizer's full settings (every parameter, defaults included, and
the class), the training crops' bytes, shape and dtype, and the labels, so:

- a changed clear video (other crops), fold plan or attacker material (other training
  samples), detector or crop size (other crops) gives another key: nothing stale is
  ever reused, and no explicit invalidation is needed;
- the clear attacker's predictions (clear test crops: submission-independent too) are
  kept under the model's key and the test crops' content.

Two levels: a dict for the lifetime of the object (the clear and the naive attacker of
one fold share one fit, also for a recognizer that cannot be pickled, e.g. one holding an
OpenCV model), and, when ``directory`` is given, pickle files written atomically
(``cache_files.atomic_file``) shared by every worker and later run. A recognizer trained
with masked samples (parrot, %-parrot) is never cached: it sees the submission.

The files are pickles: the folder must be writable by the platform only (it is under
``CACHE_DIR``, beside the other caches), never by users.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import pickle
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..cache_files import atomic_file, save_npy

logger = logging.getLogger(__name__)

#: Bump when a change of code (not of a parameter) changes what a recognizer learns.
CACHE_VERSION = 1


def recognizer_settings(estimator) -> str:
    """Every parameter of an unfitted estimator, defaults included, with its class and library versions.

    ``repr`` under ``sklearn.config_context(print_changed_only=False)``: a nested pipeline
    lists each step's full parameters.
    """
    import sklearn  # imported here: slow to import, and most importers never call this

    with sklearn.config_context(print_changed_only=False):
        text = repr(estimator)
    return f"{type(estimator).__module__}.{type(estimator).__qualname__}|{text}|sklearn {sklearn.__version__}"


def training_key(estimator, X, y) -> str:
    """Hex SHA-256 of the recognizer's settings and the training set's content.

    Parameters
    ----------
    estimator : unfitted estimator
    X : ndarray of shape (n, ...)
        Training samples (crops, uint8).
    y : array-like of shape (n,)
        Their labels.
    """
    X = np.ascontiguousarray(X)
    digest = hashlib.sha256()
    digest.update(f"v{CACHE_VERSION}|{recognizer_settings(estimator)}|{X.dtype}|{X.shape}|".encode())
    digest.update(memoryview(X).cast("B"))
    digest.update("\x1f".join(map(str, np.asarray(y).tolist())).encode())
    return digest.hexdigest()


def content_digest(X) -> str:
    """Hex SHA-256 of an array's dtype, shape and bytes."""
    X = np.ascontiguousarray(X)
    digest = hashlib.sha256(f"{X.dtype}|{X.shape}|".encode())
    digest.update(memoryview(X).cast("B"))
    return digest.hexdigest()


class FittedModelCache:
    """Fitted recognizers by training-set content and settings (see the module docstring).

    Parameters
    ----------
    directory : path-like, optional
        Folder of the pickled models and stored predictions; None: this object's memory only.

    Attributes
    ----------
    fits, hits : int
        Recognizers fitted here, and fits saved (memory or disk).
    """

    def __init__(self, directory=None):
        self.directory = Path(directory) if directory is not None else None
        self._models: dict = {}
        self._predictions: dict = {}
        self.fits = 0
        self.hits = 0

    def _path(self, key: str, suffix: str) -> Path | None:
        return self.directory / key[:2] / f"{key}{suffix}" if self.directory is not None else None

    def fitted(self, factory: Callable, X, y) -> tuple[object, str]:
        """The recognizer ``factory()`` fitted on ``(X, y)``: from the cache, or fitted and stored.

        Returns
        -------
        estimator : fitted estimator
            Equal in every prediction to ``factory().fit(X, y)`` (the same object for
            repeated calls on one cache).
        key : str
            ``training_key``; give it to :meth:`predict` to reuse predictions.
        """
        estimator = factory()
        key = training_key(estimator, X, y)
        model = self._stored_model(key)
        if model is not None:
            return model, key
        model = estimator.fit(X, y)
        self.fits += 1
        self._models[key] = model
        path = self._path(key, ".pkl")
        if path is not None:
            try:
                data = pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL)
            except (TypeError, AttributeError, pickle.PicklingError) as error:  # e.g. an OpenCV model
                logger.debug("attack model cache: %s is not stored on disk (%s)", type(model).__name__, error)
            else:
                with atomic_file(path) as handle:
                    handle.write(data)
        return model, key

    def lookup(self, factory: Callable, X, y) -> tuple[object | None, str]:
        """A recognizer already fitted on exactly ``(X, y)``, without fitting or storing one.

        For attackers trained on masked samples (parrot, %-parrot): their models are not
        stored, since they see the submission, but a masked training set whose crops are
        byte for byte the clear ones (a masking that leaves the faces as they are, e.g.
        the ``identity`` baseline) has the key of the clear attacker's model, and that
        model is what fitting on it gives.

        Returns
        -------
        estimator : fitted estimator or None
            None when no model of this key is in memory or on disk.
        key : str
            ``training_key``; with an estimator, give it to :meth:`stored_prediction`.
        """
        key = training_key(factory(), X, y)
        return self._stored_model(key), key

    def _stored_model(self, key: str):
        """The model of ``key`` from memory or disk (counted as a hit), or None."""
        if key in self._models:
            self.hits += 1
            return self._models[key]
        path = self._path(key, ".pkl")
        if path is None or not path.is_file():
            return None
        try:
            with path.open("rb") as handle:
                model = pickle.load(handle)
        except Exception as error:  # a file of another library version: fit again
            logger.warning("attack model cache: cannot read %s (%s); fitting again", path.name, error)
            return None
        self.hits += 1
        self._models[key] = model
        return model

    def stored_prediction(self, key: str, X) -> np.ndarray | None:
        """The prediction :meth:`predict` kept for model ``key`` on test crops equal to ``X``, or None.

        Read only (nothing is stored): masked test crops equal to the clear ones get the
        clear attacker's stored prediction; any other masked test set misses.
        """
        test_key = hashlib.sha256(f"{key}|{content_digest(X)}".encode()).hexdigest()
        if test_key in self._predictions:
            return self._predictions[test_key]
        path = self._path(test_key, ".npy")
        if path is not None and path.is_file():
            with contextlib.suppress(OSError, ValueError):
                predicted = np.load(path, allow_pickle=False)
                self._predictions[test_key] = predicted
                return predicted
        return None

    def predict(self, model, key: str, X) -> np.ndarray:
        """``model.predict(X)``, kept under ``key`` and ``X``'s content (memory and disk)."""
        predicted = self.stored_prediction(key, X)
        if predicted is not None:
            return predicted
        test_key = hashlib.sha256(f"{key}|{content_digest(X)}".encode()).hexdigest()
        path = self._path(test_key, ".npy")
        predicted = np.asarray(model.predict(X))
        self._predictions[test_key] = predicted
        if path is not None and predicted.dtype != object:
            save_npy(path, predicted)
        return predicted
