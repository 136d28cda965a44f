"""The attack on face photos: two photos per person, enrol one, probe with the other.

Material: the Face Research Lab London Set (DeBruine & Jones 2017, figshare
doi:10.6084/m9.figshare.5047666.v5, CC BY 4.0; ``$DEID_DATA_DIR/faces/london_face_set``,
its SOURCE.md): 102 adults, a neutral and a smiling front photo each (1350 x 1350),
self-reported age, gender and ethnicity. A closed set of 102 identities, chance 1/102.

Protocol (the attack suite's, seeds/000_0b74979cb8a3f1c3.txt sections 4.2 and 5.4, on
photos): every photo is its own recording (``AttackData.groups``); two folds, one per
direction (train/enrol on the neutral photos and test the smiling ones, then the
reverse), run by ``crossvideo.run_fold`` so every recognizer x attacker and the worst
case, the per-identity accuracy and the interval machinery of ``CrossVideoResult`` apply
unchanged. A baseline anonymizer (``automated.anonymizers.BASELINE_METHODS``) masks each
full photo scaled to ``WORK_SIZE_PX`` (the face then spans about 200 pixels, close to
the 224-pixel face crops of seeds/000 section 5.6.1, whose pixel parameters the baselines
keep), with the face box and eyes of MediaPipe's detector; every photo gets its own
nonce, so keyed and random methods draw fresh randomness per photo (per frame), while
``block_permute_fixed`` keeps one permutation for all. The face crop of the clear photo's
box is then cut from the clear and the masked photo (``face_crop.crop_internal_face``),
as for video (``faces.py``). Django-free.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import pandas as pd

from ..face_crop import crop_internal_face
from .crossvideo import FOLD_COLUMNS, CrossVideoResult, VideoFold, cross_video_counts, run_fold
from .data import AttackData

#: Side in pixels the 1350 x 1350 photos are scaled to before masking.
WORK_SIZE_PX = 540
#: Side of the square face crops the recognizers see (as ``faces.video_face_crops``).
CROP_SIZE_PX = 160
EXPRESSIONS = ("neutral", "smiling")
DEMOGRAPHIC_COLUMNS = ("age", "gender", "ethnicity")


@dataclass(frozen=True)
class PhotoSet:
    """Photos of a closed set of identities, two expressions each, in a fixed order.

    Attributes
    ----------
    images : ndarray of uint8 of shape (n_photos, size, size, 3), RGB
        Photo ``2k`` is identity k's neutral photo, ``2k + 1`` its smiling one.
    identities : ndarray of str of shape (n_photos,)
    expressions : ndarray of str of shape (n_photos,)
        ``"neutral"`` or ``"smiling"``.
    metadata : pandas.DataFrame
        One row per identity (index: identity), columns ``age`` (float, NaN when
        missing), ``gender``, ``ethnicity`` (self-reported, as in the source table).
    """

    images: np.ndarray
    identities: np.ndarray
    expressions: np.ndarray
    metadata: pd.DataFrame

    def __len__(self) -> int:
        return len(self.identities)


def london_table(root, identities=None) -> pd.DataFrame:
    """The London set's ``identities.csv`` (all columns as text), optionally narrowed.

    Parameters
    ----------
    root : path-like
        The ``london_face_set`` folder.
    identities : sequence of str, optional
        ``face_id`` values to keep, in that order; default all, in table order.

    Raises
    ------
    FileNotFoundError
        If ``identities.csv`` is missing.
    ValueError
        If a requested identity is not in the table.
    """
    table_path = Path(root) / "identities.csv"
    if not table_path.is_file():
        raise FileNotFoundError(f"{table_path} not found (the London face set: see its SOURCE.md)")
    table = pd.read_csv(table_path, dtype=str, keep_default_na=False)
    if identities is None:
        return table
    wanted = [str(i) for i in identities]
    unknown = sorted(set(wanted) - set(table["face_id"]))
    if unknown:
        raise ValueError(f"identities {unknown[:5]} are not in {table_path}")
    return table.set_index("face_id").loc[wanted].reset_index()


def london_metadata(table: pd.DataFrame) -> pd.DataFrame:
    """One row per identity (index ``identity``): ``age`` (float, NaN if missing), ``gender``, ``ethnicity``."""
    metadata = table.set_index("face_id")[list(DEMOGRAPHIC_COLUMNS)].copy()
    metadata["age"] = pd.to_numeric(metadata["age"], errors="coerce")
    metadata.index.name = "identity"
    return metadata


def load_london_faces(root, *, identities=None, size_px: int = WORK_SIZE_PX) -> PhotoSet:
    """Read the London set's ``identities.csv`` and photos, scaled to ``size_px``.

    Parameters
    ----------
    root : path-like
        The ``london_face_set`` folder.
    identities : sequence of str, optional
        ``face_id`` values to load (e.g. ``["001", "002"]``); default all, in table order.
    size_px : int, default=540
        Side of the square photos after scaling (``cv2.INTER_AREA``).

    Returns
    -------
    PhotoSet

    Raises
    ------
    FileNotFoundError
        If ``identities.csv`` or a photo is missing.
    ValueError
        If a requested identity is not in the table or a photo cannot be decoded.
    """
    root = Path(root)
    table = london_table(root, identities)
    images, labels, expressions = [], [], []
    for _, row in table.iterrows():
        for expression in EXPRESSIONS:
            path = root / row[f"{expression}_image"]
            if not path.is_file():
                raise FileNotFoundError(f"photo {path} is missing")
            image = cv2.imread(str(path), cv2.IMREAD_COLOR)
            if image is None:
                raise ValueError(f"cannot decode photo {path}")
            rgb = cv2.cvtColor(image, cv2.COLOR_BGR2RGB)
            images.append(cv2.resize(rgb, (size_px, size_px), interpolation=cv2.INTER_AREA))
            labels.append(row["face_id"])
            expressions.append(expression)
    return PhotoSet(np.stack(images), np.array(labels), np.array(expressions), london_metadata(table))


def detect_faces(images, detector) -> tuple[np.ndarray, np.ndarray]:
    """Largest face box and eye centres of each photo.

    Parameters
    ----------
    images : ndarray of uint8 of shape (n, H, W, 3), RGB
    detector : face detector with ``detect(frame_rgb, index)`` (e.g.
        ``detection.MediaPipeFaceDetector``; its ``last_keypoints_xy`` give the eyes)

    Returns
    -------
    boxes_xyxy : ndarray of float32 of shape (n, 4), pixels
    eyes_xy : ndarray of float32 of shape (n, 2, 2), pixels; NaN without keypoints

    Raises
    ------
    ValueError
        If a photo has no detectable face (naming its position).
    """
    from ..detection import largest_face

    boxes, eyes = [], []
    for index, image in enumerate(images):
        detections = detector.detect(image, index)
        box = largest_face(detections)
        if box is None:
            raise ValueError(f"no face detected in photo {index}")
        boxes.append(box)
        keypoints = getattr(detector, "last_keypoints_xy", None)
        if keypoints is not None and len(keypoints) == len(detections):
            areas = np.prod(detections.boxes_xyxy[:, 2:] - detections.boxes_xyxy[:, :2], axis=1)
            eyes.append(keypoints[int(np.argmax(areas)), :2])
        else:
            eyes.append(np.full((2, 2), np.nan, np.float32))
    return np.asarray(boxes, np.float32).reshape(-1, 4), np.asarray(eyes, np.float32).reshape(-1, 2, 2)


def photo_nonce(index: int) -> bytes:
    """The 8-byte video nonce of photo ``index`` (each photo a recording of one frame)."""
    return int(index).to_bytes(8, "big")


def mask_photos(images, boxes_xyxy, eyes_xy, method, *, key: bytes = bytes(range(32))) -> np.ndarray:
    """Apply one baseline anonymizer to every photo.

    Parameters
    ----------
    images : ndarray of uint8 of shape (n, H, W, 3), RGB
    boxes_xyxy : ndarray of shape (n, 4)
    eyes_xy : ndarray of shape (n, 2, 2)
        NaN rows: the method falls back to the box.
    method : str or callable
        A key of ``automated.anonymizers.BASELINE_METHODS``, or any ``(image_rgb,
        FrameContext) -> image_rgb``.
    key : bytes, default bytes(range(32))
        AES key of the keyed methods (one for the whole set, as one submission).

    Returns
    -------
    ndarray of uint8 of shape (n, H, W, 3)

    Raises
    ------
    ValueError
        On an unknown method name, or a method that changes the photo's shape or dtype.
    """
    from ..anonymizers import BASELINE_METHODS, FrameContext

    if isinstance(method, str):
        if method not in BASELINE_METHODS:
            raise ValueError(
                f"unknown baseline method {method!r}; choose one of {', '.join(BASELINE_METHODS)}"
            )
        apply = BASELINE_METHODS[method].apply
    else:
        apply = method
    out = np.empty_like(np.asarray(images))
    for index, image in enumerate(images):
        eyes = None if np.isnan(eyes_xy[index]).any() else eyes_xy[index]
        context = FrameContext(0, boxes_xyxy[index], eyes, key, photo_nonce(index))
        masked = np.asarray(apply(image, context))
        if masked.shape != image.shape or masked.dtype != np.uint8:
            raise ValueError(
                f"the masking changed photo {index} from uint8 {image.shape} to {masked.dtype} {masked.shape}"
            )
        out[index] = masked
    return out


def face_crops(images, boxes_xyxy, *, size_px: int = CROP_SIZE_PX) -> np.ndarray:
    """The internal-face crop of each photo at its (clear) box: uint8 (n, size_px, size_px, 3)."""
    return np.stack([crop_internal_face(im, box, size_px=size_px) for im, box in zip(images, boxes_xyxy)])


def photo_attack_data(photos: PhotoSet, clear_crops, masked_crops) -> AttackData:
    """``AttackData`` of aligned clear / masked crops: one group (recording) per photo."""
    return AttackData(
        clear=clear_crops,
        masked=masked_crops,
        identities=photos.identities,
        groups=np.arange(len(photos)),
        identity_metadata=photos.metadata,
    )


def expression_folds(expressions) -> list[VideoFold]:
    """The two directions: fold 0 enrols the neutral photos and tests the smiling ones,
    fold 1 the reverse. By construction no photo is on both sides and every tested
    identity has its other photo in training.

    Parameters
    ----------
    expressions : array-like of str, shape (n_samples,)
        ``"neutral"`` or ``"smiling"`` per sample (``PhotoSet.expressions``, or
        ``photos.expressions[data.groups]`` for a subset of an ``AttackData``).

    Returns
    -------
    list of two VideoFold (indices into the samples)
    """
    expressions = np.asarray(expressions)
    folds = []
    for number, tested in enumerate(reversed(EXPRESSIONS)):
        is_test = expressions == tested
        folds.append(
            VideoFold(
                number, np.flatnonzero(~is_test), np.flatnonzero(is_test), tuple(np.flatnonzero(is_test))
            )
        )
    return folds


def run_photo_attack(
    data: AttackData,
    folds,
    *,
    recognizers,
    attackers=("clear", "naive", "parrot"),
    seed: int = 0,
    progress: Callable[[dict], None] | None = None,
) -> CrossVideoResult:
    """Every recognizer x attacker on both directions (``crossvideo.run_fold`` per fold).

    Returns
    -------
    CrossVideoResult
        ``summary()`` has the mean over the two directions, ``worst_case()`` the
        strongest pair, ``per_identity()`` each identity's share of its probes identified.
    """
    rows, predictions = [], []
    for fold in folds:
        fold_rows, fold_predictions = run_fold(
            data, fold, recognizers=recognizers, attackers=attackers, seed=seed, progress=progress
        )
        rows += fold_rows
        predictions.append(fold_predictions)
    return CrossVideoResult(
        pd.DataFrame(rows, columns=FOLD_COLUMNS),
        pd.concat(predictions, ignore_index=True),
        cross_video_counts(data, folds),
    )


def identification_success(masked_embeddings, clear_embeddings, identities, expressions) -> pd.Series:
    """Per identity: share of its masked photos a pretrained embedder names at rank 1.

    The naive attacker without training (seeds/000 section 4.2: trained on clear data; here
    the pretrained embedder itself): each masked photo is compared with the clear photos of
    the *other* expression of every identity (enrol one photo, probe with the other, both
    directions, as ``expression_folds``) and named after the nearest by Euclidean distance
    (dlib's matcher). Ties go to the first gallery photo in order.

    Parameters
    ----------
    masked_embeddings, clear_embeddings : array-like of float, shape (n_photos, d)
    identities, expressions : array-like of str, shape (n_photos,)
        ``PhotoSet.identities`` and ``PhotoSet.expressions``.

    Returns
    -------
    pandas.Series of float in [0, 1]
        Index: identity (sorted); with two photos per identity the values are 0, 0.5 or 1.

    Raises
    ------
    ValueError
        If the shapes disagree or an expression has no gallery photo.
    """
    masked = np.asarray(masked_embeddings, dtype=np.float64)
    clear = np.asarray(clear_embeddings, dtype=np.float64)
    identities, expressions = np.asarray(identities).astype(str), np.asarray(expressions).astype(str)
    if (
        masked.shape != clear.shape
        or masked.ndim != 2
        or not (len(masked) == len(identities) == len(expressions))
    ):
        raise ValueError(
            f"need masked and clear embeddings of one shape (n, d) and n labels, got {masked.shape}, "
            f"{clear.shape}, {identities.shape}, {expressions.shape}"
        )
    correct = np.zeros(len(masked), bool)
    for expression in np.unique(expressions):
        probes = np.flatnonzero(expressions == expression)
        gallery = np.flatnonzero(expressions != expression)
        if not len(gallery):
            raise ValueError(f"no gallery photo for probes of expression {expression!r}")
        distances = np.linalg.norm(masked[probes][:, None, :] - clear[gallery][None, :, :], axis=2)
        correct[probes] = identities[gallery[np.argmin(distances, axis=1)]] == identities[probes]
    return pd.Series(correct.astype(float), index=identities).groupby(level=0).mean()
