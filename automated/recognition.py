"""Face recognition against a gallery: dlib 128-D embeddings, verification, closed-set rank.

Terms (DESIGN.md glossary): the *gallery* holds enrolled faces with known identities; a
*probe* is a face to recognise (here: a face from a masked frame). A *genuine*
comparison pairs a probe with its own identity's gallery face, an *impostor* comparison
with another identity's. Comparison scores are L2 distances between embeddings (lower
means more similar).

MediaEval 2021 (seeds/002_68b18bfdbdb94491.txt, "computational face recognition
evaluation"): masked faces from selected frames are compared with the gallery face of the
driver and the number of matches is logged -> ``match_rate``. Closed-set identification
among all gallery identities (rank-1, chance level = 1 / number of identities) follows
seeds/000_0b74979cb8a3f1c3.txt (closed-set identification, chance level as the ideal
bound) -> ``closed_set_rank``.
"""
from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

import numpy as np

#: dlib's documented decision threshold on the L2 distance of two 128-D face embeddings
#: ("distance < 0.6 ... same person", 99.38% on LFW; dlib dnn_face_recognition_ex.cpp).
#: Here a distance <= threshold is a match.
MATCH_THRESHOLD = 0.6
EMBEDDING_DIM = 128


def face_recognition_models_dir() -> Path:
    """Folder holding dlib's model files from the ``face-recognition-models`` wheel.

    Located with ``importlib.util.find_spec`` without importing the package (its
    ``__init__`` imports ``pkg_resources``, missing from setuptools >= 81).

    Raises
    ------
    RuntimeError
        If the package is not installed.
    """
    spec = importlib.util.find_spec("face_recognition_models")
    if spec is None or spec.origin is None:
        raise RuntimeError("face-recognition-models is not installed (pip install face-recognition-models)")
    return Path(spec.origin).parent / "models"


@functools.lru_cache(maxsize=1)
def _dlib_models():
    """Load the 5-point shape predictor and the ResNet embedding once per process."""
    import dlib

    models = face_recognition_models_dir()
    # 5-point predictor: its training data allows commercial use, the 68-point one not.
    predictor = dlib.shape_predictor(str(models / "shape_predictor_5_face_landmarks.dat"))
    encoder = dlib.face_recognition_model_v1(str(models / "dlib_face_recognition_resnet_model_v1.dat"))
    return predictor, encoder


class DlibFaceEmbedder:
    """dlib ResNet face embedding (128-D, unit-scale L2 space) with 5-point alignment.

    The models load lazily on the first call and are shared by all instances of the
    process. About 75 ms per face on one core.
    """

    dim = EMBEDDING_DIM

    def cache_key(self) -> str:
        """Model, version and alignment that determine the embeddings (for cache keys)."""
        import dlib

        return f"dlib-{dlib.__version__}-resnet_v1-128d-5point"

    def embed(self, image_rgb: np.ndarray, boxes_xyxy: np.ndarray) -> np.ndarray:
        """Embed the faces at ``boxes_xyxy`` in one image.

        Parameters
        ----------
        image_rgb : ndarray of shape (height, width, 3), dtype uint8, RGB
        boxes_xyxy : array-like of shape (n, 4)
            Face boxes in pixels (from a face detector).

        Returns
        -------
        ndarray of shape (n, 128), dtype float32
            One embedding per box; shape (0, 128) when there is no box.

        Raises
        ------
        ValueError
            If the image is not uint8 (height, width, 3) or the boxes are not (n, 4).
        """
        import dlib

        if not isinstance(image_rgb, np.ndarray) or image_rgb.ndim != 3 or image_rgb.shape[2] != 3 \
                or image_rgb.dtype != np.uint8:
            raise ValueError(
                f"image_rgb must be uint8 (height, width, 3), got {getattr(image_rgb, 'dtype', None)} "
                f"{getattr(image_rgb, 'shape', None)}"
            )
        boxes = np.asarray(boxes_xyxy, dtype=np.float64)
        if boxes.ndim != 2 or boxes.shape[1] != 4:
            raise ValueError(f"boxes_xyxy must have shape (n, 4), got {boxes.shape}")
        if len(boxes) == 0:
            return np.zeros((0, EMBEDDING_DIM), np.float32)
        predictor, encoder = _dlib_models()
        image = np.ascontiguousarray(image_rgb)
        shapes = dlib.full_object_detections()
        for x1, y1, x2, y2 in boxes:
            # dlib rectangles are inclusive: right/bottom are the last pixel inside.
            rect = dlib.rectangle(int(round(x1)), int(round(y1)), int(round(x2)) - 1, int(round(y2)) - 1)
            shapes.append(predictor(image, rect))
        descriptors = encoder.compute_face_descriptor(image, shapes)
        return np.asarray([np.asarray(d) for d in descriptors], dtype=np.float32).reshape(-1, EMBEDDING_DIM)

    def embed_crop(self, face_rgb: np.ndarray) -> np.ndarray:
        """Embed an already-cropped face (``face_crop.crop_internal_face``): box = whole image.

        Parameters
        ----------
        face_rgb : ndarray of shape (height, width, 3), dtype uint8, RGB

        Returns
        -------
        ndarray of shape (128,), dtype float32

        Raises
        ------
        ValueError
            As ``embed``.
        """
        height, width = face_rgb.shape[:2]
        return self.embed(face_rgb, np.array([[0, 0, width, height]], np.float32))[0]


def l2_distances(probe_embeddings: np.ndarray, gallery_embeddings: np.ndarray) -> np.ndarray:
    """Pairwise L2 distances.

    Parameters
    ----------
    probe_embeddings : array-like of shape (n, d)
    gallery_embeddings : array-like of shape (k, d)

    Returns
    -------
    ndarray of shape (n, k), dtype float64

    Raises
    ------
    ValueError
        If the embedding sizes ``d`` differ, naming both shapes.
    """
    probes = np.atleast_2d(np.asarray(probe_embeddings, dtype=np.float64))
    gallery = np.atleast_2d(np.asarray(gallery_embeddings, dtype=np.float64))
    if probes.shape[1] != gallery.shape[1]:
        raise ValueError(f"embedding sizes differ: probes {probes.shape}, gallery {gallery.shape}")
    return np.linalg.norm(probes[:, None, :] - gallery[None, :, :], axis=2)


def match_rate(distances, *, threshold: float = MATCH_THRESHOLD, n_probes: int | None = None) -> float:
    """Share of comparisons accepted as a match (distance <= threshold), in [0, 1].

    With genuine distances this is the true match rate (1 - FNMR); with impostor
    distances it is the false match rate (FMR) (ISO/IEC 19795-1 terms).

    Parameters
    ----------
    distances : array-like of shape (n,)
        L2 distances, one per probe that could be compared (lower = more similar).
    threshold : float, default=MATCH_THRESHOLD (0.6)
        Tie rule: a distance equal to the threshold is a match.
    n_probes : int, optional
        Number of probes in the denominator when some probes could not be compared
        (e.g. masked frames where no face is detected count as non-matches). Default
        ``len(distances)``.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If there are no probes, ``n_probes < len(distances)``, or a distance is NaN or
        negative.

    Examples
    --------
    >>> match_rate([0.3, 0.6, 0.9])       # 0.3 and 0.6 (tie) match
    0.6666666666666666
    >>> match_rate([0.3], n_probes=4)      # three probes had no face
    0.25
    """
    values = np.asarray(distances, dtype=np.float64).reshape(-1)
    total = len(values) if n_probes is None else int(n_probes)
    if total == 0:
        raise ValueError("no probes: the match rate is undefined")
    if total < len(values):
        raise ValueError(f"n_probes ({total}) is smaller than the number of distances ({len(values)})")
    if np.any(np.isnan(values)) or np.any(values < 0):
        raise ValueError(f"distances must be non-negative numbers, got {values.tolist()}")
    return float(np.count_nonzero(values <= threshold) / total)


def identity_distances(probe_embedding, gallery_embeddings, gallery_identities):
    """Distance of a probe to each gallery identity (nearest of its gallery images).

    Parameters
    ----------
    probe_embedding : array-like of shape (d,)
    gallery_embeddings : array-like of shape (k, d)
    gallery_identities : array-like of shape (k,)
        Identity label of each gallery embedding (several images per identity allowed).

    Returns
    -------
    identities : ndarray of shape (m,)
        The distinct identities, sorted.
    distances : ndarray of shape (m,), dtype float64
        Minimum L2 distance of the probe to each identity's gallery images.

    Raises
    ------
    ValueError
        If the gallery is empty or its labels and embeddings differ in number.
    """
    labels = np.asarray(gallery_identities)
    gallery = np.atleast_2d(np.asarray(gallery_embeddings, dtype=np.float64))
    if len(labels) == 0 or gallery.size == 0:
        raise ValueError("the gallery is empty")
    if len(labels) != len(gallery):
        raise ValueError(f"{len(gallery)} gallery embeddings but {len(labels)} gallery identities")
    per_image = l2_distances(np.asarray(probe_embedding).reshape(1, -1), gallery)[0]
    identities, inverse = np.unique(labels, return_inverse=True)
    distances = np.full(len(identities), np.inf)
    np.minimum.at(distances, inverse, per_image)
    return identities, distances


def closed_set_rank(probe_embedding, gallery_embeddings, gallery_identities, true_identity) -> int:
    """Rank of the true identity in closed-set identification (1 = rank-1 hit).

    Identities are ordered by their distance to the probe (``identity_distances``).
    Tie rule (pessimistic for the recogniser): the rank is the number of identities at a
    distance <= the true identity's distance, so an identity tied with the true one
    ranks before it; a degenerate recogniser giving equal distances to everyone scores
    the worst rank, not rank 1.

    Parameters
    ----------
    probe_embedding : array-like of shape (d,)
    gallery_embeddings : array-like of shape (k, d)
    gallery_identities : array-like of shape (k,)
    true_identity : label
        The probe's identity; must appear in ``gallery_identities`` (closed set).

    Returns
    -------
    int
        In ``1 .. number of distinct gallery identities``.

    Raises
    ------
    ValueError
        If ``true_identity`` is not in the gallery.

    Examples
    --------
    >>> import numpy as np
    >>> gallery = np.array([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0]])
    >>> closed_set_rank([0.9, 0.0], gallery, ["a", "b", "c"], "a")  # b is nearer
    2
    """
    identities, distances = identity_distances(probe_embedding, gallery_embeddings, gallery_identities)
    matches = np.flatnonzero(identities == true_identity)
    if len(matches) == 0:
        raise ValueError(f"true identity {true_identity!r} is not in the gallery (closed-set identification)")
    return int(np.count_nonzero(distances <= distances[matches[0]]))


def chance_level(gallery_identities) -> float:
    """Rank-1 rate of random guessing: 1 / number of distinct gallery identities.

    Raises
    ------
    ValueError
        If the gallery is empty.
    """
    n_identities = len(np.unique(np.asarray(gallery_identities)))
    if n_identities == 0:
        raise ValueError("the gallery is empty: chance level is undefined")
    return 1.0 / n_identities
