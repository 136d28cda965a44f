"""Build ``AttackData`` from face images or from clear/masked video pairs.

Every crop is scaled to one size first, so image size gives no cue (the real clips differ in
resolution by person: GRID s4 is 720x576, the others 360x288); seeds/000 section 5.3 likewise
crops faces and resizes all images to one size.

Videos: the face is detected in the CLEAR frame and the same box is cropped from the clear
and the masked frame. The masked frame may have no detectable face at all (that is the
point of masking), and an attacker who knows where the person sits in the scene (the camera
is fixed) loses nothing by this; detecting in the masked frame would silently drop exactly
the best-masked frames and overstate re-identification on the rest. Crops are cached on
disk per video, so decoding and detection happen once per video whatever the attackers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from ..cache_files import save_npz, settings_token
from ..checks import check_stride
from ..clear_side import file_sha256  # memoised per file: every fold task hashes every video
from ..face_crop import crop_internal_face
from ..video import iter_frames
from .data import AttackData
from .embedding import DlibEmbedding

IMAGE_SUFFIXES = (".pgm", ".png", ".jpg", ".jpeg", ".bmp")
#: Bump when the crop procedure changes, so stale cache files are not reused.
CACHE_VERSION = 2


def load_image_folder(root) -> tuple[list[np.ndarray], np.ndarray]:
    """Read ``root/<identity>/<image>`` files (e.g. ORL ``s1/1.pgm``) in a stable order.

    Returns
    -------
    images : list of ndarray, uint8, (H, W) grey or (H, W, 3) RGB
    identities : ndarray of str of shape (n_images,)
        The folder name of each image.

    Raises
    ------
    ValueError
        If ``root`` has no image or an image cannot be read.
    """
    root = Path(root)
    files = sorted(
        (p for p in root.glob("*/*") if p.suffix.lower() in IMAGE_SUFFIXES),
        key=lambda p: (p.parent.name, len(p.stem), p.stem),  # s1/2 before s1/10
    )
    if not files:
        raise ValueError(f"no images ({', '.join(IMAGE_SUFFIXES)}) in sub-folders of {root}")
    images = []
    for path in files:
        image = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
        if image is None:
            raise ValueError(f"cannot read image {path}")
        images.append(image if image.ndim == 2 else cv2.cvtColor(image[..., :3], cv2.COLOR_BGR2RGB))
    return images, np.array([p.parent.name for p in files])


def _as_rgb(image: np.ndarray) -> np.ndarray:
    image = np.asarray(image)
    if image.dtype != np.uint8 or image.ndim not in (2, 3) or (image.ndim == 3 and image.shape[2] != 3):
        raise ValueError(f"images must be uint8 (H, W) or (H, W, 3), got {image.dtype} {image.shape}")
    return np.repeat(image[..., None], 3, axis=2) if image.ndim == 2 else image


def _resize(image: np.ndarray, size_wh: tuple[int, int]) -> np.ndarray:
    if (image.shape[1], image.shape[0]) == tuple(size_wh):
        return image
    return cv2.resize(image, tuple(size_wh), interpolation=cv2.INTER_AREA)


def clear_embeddings(clear_images) -> np.ndarray:
    """Face embeddings of clear crops, (n, dim) float32 (``recognition.DEFAULT_EMBEDDER``),
    via the shared cache.

    The feature vectors of the Distinctive and Center selection strategies (seeds/000
    section 5.7 uses the pretrained ArcFace embedding for faces); the dlib recognizers
    then find these embeddings already cached.
    """
    return DlibEmbedding().transform(clear_images)


def face_attack_data_from_images(
    images: Sequence[np.ndarray],
    identities,
    anonymize: Callable[[np.ndarray, int], np.ndarray],
    *,
    size_wh: tuple[int, int] | None = None,
    groups=None,
    features: bool = False,
    identity_metadata=None,
) -> AttackData:
    """Anonymize face stills and pair them with the clear ones.

    Parameters
    ----------
    images : sequence of ndarray, uint8, (H, W) grey or (H, W, 3) RGB
        Face images (e.g. ORL ``load_image_folder``); grey images become 3-channel RGB.
    identities : array-like of shape (n_images,)
    anonymize : callable ``(image_rgb, index) -> image_rgb``
        The per-frame anonymizer, called on the full-size RGB image with its position
        (frame index for keyed methods); must return a uint8 image of the same shape.
    size_wh : (int, int), optional
        (width, height) in pixels all clear and masked images are scaled to; default the
        first image's size.
    groups : array-like, optional
        Recording of each image; default each image is its own group.
    features : bool, default=False
        Also compute dlib embeddings of the clear images (``AttackData.features``) for the
        Distinctive and Center selection strategies.
    identity_metadata : pandas.DataFrame, optional

    Returns
    -------
    AttackData
        ``clear`` and ``masked`` of shape (n, height, width, 3), uint8.

    Raises
    ------
    ValueError
        If there are no images, an image is not uint8 grey/RGB, or the anonymizer changes
        the shape or dtype.
    """
    if len(images) == 0:
        raise ValueError("no images")
    rgb = [_as_rgb(im) for im in images]
    size_wh = tuple(size_wh) if size_wh is not None else (rgb[0].shape[1], rgb[0].shape[0])
    clear, masked = [], []
    for index, image in enumerate(rgb):
        anonymized = np.asarray(anonymize(image, index))
        if anonymized.shape != image.shape or anonymized.dtype != np.uint8:
            raise ValueError(
                f"anonymize changed image {index} from uint8 {image.shape} to {anonymized.dtype} {anonymized.shape}"
            )
        clear.append(_resize(image, size_wh))
        masked.append(_resize(anonymized, size_wh))
    clear = np.stack(clear)
    return AttackData(
        clear=clear,
        masked=np.stack(masked),
        identities=np.asarray(identities),
        groups=groups,
        features=clear_embeddings(clear) if features else None,
        identity_metadata=identity_metadata,
    )


@dataclass(frozen=True)
class VideoCrops:
    """Face crops of one clear/masked video pair.

    Attributes
    ----------
    frame_indices : ndarray of int of shape (n,)
        Frames (every ``stride``-th) where the clear frame has a face.
    boxes_xyxy : ndarray of float32 of shape (n, 4)
        Largest face box in each clear frame, pixels of the clear frame.
    clear, masked : ndarray of uint8 of shape (n, size_px, size_px, 3)
    from_cache : bool
        True when both were read from the disk cache (no decoding, no detection).
    """

    frame_indices: np.ndarray
    boxes_xyxy: np.ndarray
    clear: np.ndarray
    masked: np.ndarray
    from_cache: bool


def _clear_crops(clear_path, *, stride, detector, size_px):
    from ..detection import largest_face

    indices, boxes, crops = [], [], []
    for frame_index, frame_rgb in iter_frames(clear_path, stride=stride):
        box = largest_face(detector.detect(frame_rgb, frame_index))
        if box is None:
            continue  # no face in the clear frame: nothing to attack in this frame
        indices.append(frame_index)
        boxes.append(box)
        crops.append(crop_internal_face(frame_rgb, box, size_px=size_px))
    return (
        np.asarray(indices, np.int64),
        np.asarray(boxes, np.float32).reshape(-1, 4),
        np.asarray(crops, np.uint8).reshape(-1, size_px, size_px, 3),
    )


def _masked_crops(masked_path, frame_indices, boxes_xyxy, clear_wh, *, stride, size_px):
    wanted = {int(f): i for i, f in enumerate(frame_indices)}
    crops = np.zeros((len(frame_indices), size_px, size_px, 3), np.uint8)
    found = np.zeros(len(frame_indices), bool)
    for frame_index, frame_rgb in iter_frames(masked_path, stride=stride):
        i = wanted.get(frame_index)
        if i is None:
            continue
        # A masked video may be stored at another resolution: scale the clear box.
        scale = np.array([frame_rgb.shape[1] / clear_wh[0], frame_rgb.shape[0] / clear_wh[1]] * 2, np.float32)
        crops[i] = crop_internal_face(frame_rgb, boxes_xyxy[i] * scale, size_px=size_px)
        found[i] = True
    return crops, found


def video_face_crops(
    clear_path, masked_path, *, stride: int = 5, detector=None, cache_dir=None, size_px: int = 160
) -> VideoCrops:
    """Crop the clear frame's largest face box from the clear and the masked frame.

    Parameters
    ----------
    clear_path, masked_path : path-like
        The source video and its masked version (same frame numbering).
    stride : int, default=5
        Every ``stride``-th frame is used (consecutive frames are near duplicates).
    detector : face detector with ``detect(frame_rgb, frame_index) -> FaceDetections``
        Default ``MediaPipeFaceDetector()``.
    cache_dir : path-like, optional
        Folder for ``.npz`` crop caches keyed by file content (SHA-256), stride, detector
        (library version and parameters, ``detection.detector_key``) and crop size; the
        clear video's detections and crops are shared by all masked versions of it. Files
        are written atomically (``cache_files.save_npz``), so workers sharing the folder
        never read half a file, and uncompressed: every fold task of a run reads every
        video's crops, and zlib cost more than the disk (about 1 MB per video at stride 5).
        None: no caching.
    size_px : int, default=160
        Side of the square crops (``face_crop.crop_internal_face``).

    Returns
    -------
    VideoCrops
        Frames where the masked video has no frame (shorter file) are left out.

    Raises
    ------
    ValueError
        If ``stride`` is not a whole number >= 1 (:func:`automated.checks.check_stride`)
        or either video cannot be read (``video.VideoError``).
    """
    from ..detection import MediaPipeFaceDetector
    from ..video import video_header

    check_stride(stride)
    own = detector is None
    detector = MediaPipeFaceDetector() if own else detector
    try:
        clear_file, masked_file = _cache_files(clear_path, masked_path, stride, detector, size_px, cache_dir)
        stored_clear = _load_clear(clear_file)
        hit_clear = stored_clear is not None
        if hit_clear:
            indices, boxes, clear, clear_wh = stored_clear
        else:
            indices, boxes, clear = _clear_crops(
                clear_path, stride=stride, detector=detector, size_px=size_px
            )
            clear_wh = video_header(clear_path)[1]  # the header: no second decode
            _save_clear(clear_file, indices, boxes, clear, clear_wh)
    finally:
        if own:
            detector.close()
    hit_masked = masked_file is not None and masked_file.is_file()
    if hit_masked:
        with np.load(masked_file) as stored:
            masked, found = stored["crops"], stored["found"]
    else:
        masked, found = _masked_crops(masked_path, indices, boxes, clear_wh, stride=stride, size_px=size_px)
        if masked_file is not None:
            save_npz(masked_file, compressed=False, crops=masked, found=found)
    return VideoCrops(indices[found], boxes[found], clear[found], masked[found], hit_clear and hit_masked)


def _cache_files(clear_path, masked_path, stride, detector, size_px, cache_dir) -> tuple:
    """``(clear file, masked file)`` of a pair's crops in ``cache_dir`` (None, None without one)."""
    from ..detection import detector_key

    if cache_dir is None:
        return None, None
    settings = settings_token(CACHE_VERSION, stride, detector_key(detector), size_px)
    clear_key = f"v{CACHE_VERSION}_{file_sha256(clear_path)[:24]}_{settings}"
    masked_key = f"{clear_key}_m{file_sha256(masked_path)[:24]}"
    return Path(cache_dir) / f"clear_{clear_key}.npz", Path(cache_dir) / f"masked_{masked_key}.npz"


def _load_clear(clear_file) -> tuple | None:
    if clear_file is None or not clear_file.is_file():
        return None
    with np.load(clear_file) as stored:
        return (
            stored["frame_indices"],
            stored["boxes_xyxy"],
            stored["crops"],
            tuple(stored["clear_wh"]),
        )


def _save_clear(clear_file, indices, boxes, crops, clear_wh) -> None:
    if clear_file is not None:
        save_npz(
            clear_file,
            compressed=False,
            frame_indices=indices,
            boxes_xyxy=boxes,
            crops=crops,
            clear_wh=np.asarray(clear_wh),
        )


class CropPass:
    """The attack's face crops of a clear/masked pair from another pass's decoding (a context manager).

    An observer of ``face_eval.run_frame_loop`` (``update(frame_index, clear_rgb,
    masked_rgb)`` for every ``stride``-th frame pair): the face evaluation decodes both
    files at the attack's stride anyway, so the crops :func:`video_face_crops` would make
    are made from those frames and stored in its cache, and the attack's per-video unit
    then reads them instead of decoding both files again (issue 20: each file decoded
    once). The clear box comes from this pass's own detector (``make_face_detector`` of
    the same name, fed the same frames in the same order as :func:`video_face_crops`), so
    the files are those :func:`video_face_crops` writes, array for array
    (tests/automated/attack/test_crop_pass.py). Frame pairs must be of one size (the face
    evaluation refuses others). Nothing is written when both files are cached already, or
    when the block exits with an exception.

    Parameters
    ----------
    clear_path, masked_path : path-like
    stride : int
        The frame step of the frames given to :meth:`update` (frames 0, stride, ...).
    detector : str
        A ``detection.make_face_detector`` name.
    cache_dir : path-like
        The attack's crop cache (``video_face_crops``' ``cache_dir``).
    size_px : int, default=160
    """

    def __init__(self, clear_path, masked_path, *, stride: int, detector: str, cache_dir, size_px: int = 160):
        check_stride(stride)
        self.paths = (clear_path, masked_path)
        self.stride, self.detector_name, self.cache_dir, self.size_px = stride, detector, cache_dir, size_px

    def __enter__(self) -> CropPass:
        from ..detection import make_face_detector

        self.detector = make_face_detector(self.detector_name)
        self.clear_file, self.masked_file = _cache_files(
            *self.paths, self.stride, self.detector, self.size_px, self.cache_dir
        )
        self.stored_clear = _load_clear(self.clear_file)
        self.done = self.stored_clear is not None and self.masked_file.is_file()
        self.rows = {int(f): i for i, f in enumerate(self.stored_clear[0])} if self.stored_clear else {}
        self.indices, self.boxes, self.clear, self.masked = [], [], [], []
        self.masked_by_row: dict[int, np.ndarray] = {}
        return self

    def update(self, frame_index: int, clear_rgb: np.ndarray, masked_rgb: np.ndarray) -> None:
        """One tested frame pair (uint8 RGB, shape (height, width, 3), both of one size)."""
        if self.done:
            return
        if self.stored_clear is not None:
            row = self.rows.get(int(frame_index))
            if row is not None:
                box = self.stored_clear[1][row]
                self.masked_by_row[row] = crop_internal_face(masked_rgb, box, size_px=self.size_px)
            return
        from ..detection import largest_face

        box = largest_face(self.detector.detect(clear_rgb, frame_index))
        if box is None:
            return
        self.indices.append(frame_index)
        self.boxes.append(box)
        self.clear.append(crop_internal_face(clear_rgb, box, size_px=self.size_px))
        self.masked.append(crop_internal_face(masked_rgb, box, size_px=self.size_px))

    def __exit__(self, exc_type, exc, tb) -> None:
        from ..video import video_header

        self.detector.close()
        if exc_type is not None or self.done:
            return
        size = self.size_px
        if self.stored_clear is None:
            _save_clear(
                self.clear_file,
                np.asarray(self.indices, np.int64),
                np.asarray(self.boxes, np.float32).reshape(-1, 4),
                np.asarray(self.clear, np.uint8).reshape(-1, size, size, 3),
                video_header(self.paths[0])[1],
            )
            masked = np.asarray(self.masked, np.uint8).reshape(-1, size, size, 3)
            found = np.ones(len(masked), bool)
        else:
            n = len(self.stored_clear[0])
            masked = np.zeros((n, size, size, 3), np.uint8)
            found = np.zeros(n, bool)
            for row, crop in self.masked_by_row.items():
                masked[row], found[row] = crop, True
        save_npz(self.masked_file, compressed=False, crops=masked, found=found)


def face_attack_data_from_videos(
    pairs: Sequence[tuple],
    identities: Sequence,
    *,
    stride: int = 5,
    detector=None,
    cache_dir=None,
    size_px: int = 160,
    features: bool = False,
    identity_metadata=None,
    roles: Sequence[str] | None = None,
) -> AttackData:
    """Face crops of clear/masked video pairs as ``AttackData`` (one group per video).

    Parameters
    ----------
    pairs : sequence of (clear_path, masked_path)
    identities : sequence, one label per pair
        The identity shown in each clear video.
    stride, detector, cache_dir, size_px
        See ``video_face_crops``; one detector is shared by all videos.
    features : bool, default=False
        Also compute dlib embeddings of the clear crops (for Distinctive / Center).
    identity_metadata : pandas.DataFrame, optional
    roles : sequence of str, one per pair, optional
        ``"evaluated"`` or ``"attacker_train"`` (the attacker's own material: trained on,
        never tested; ``AttackData.roles``). Default: all evaluated.

    Returns
    -------
    AttackData
        ``groups`` = position of the pair, ``time_index`` = frame index.

    Raises
    ------
    ValueError
        If ``pairs`` and ``identities`` (or ``roles``) differ in length, a role is
        unknown, or no frame of any video has a face.
    """
    from ..detection import MediaPipeFaceDetector

    if len(pairs) != len(identities):
        raise ValueError(f"{len(pairs)} video pairs but {len(identities)} identities")
    if roles is not None and len(roles) != len(pairs):
        raise ValueError(f"{len(pairs)} video pairs but {len(roles)} roles")
    own = detector is None
    detector = MediaPipeFaceDetector() if own else detector
    parts = []
    try:
        for group, ((clear_path, masked_path), identity) in enumerate(zip(pairs, identities)):
            crops = video_face_crops(
                clear_path,
                masked_path,
                stride=stride,
                detector=detector,
                cache_dir=cache_dir,
                size_px=size_px,
            )
            parts.append((group, identity, crops))
    finally:
        if own:
            detector.close()
    parts = [p for p in parts if len(p[2].frame_indices)]
    if not parts:
        raise ValueError("no face detected in any clear video frame")
    clear = np.concatenate([c.clear for _, _, c in parts])
    return AttackData(
        clear=clear,
        masked=np.concatenate([c.masked for _, _, c in parts]),
        identities=np.concatenate([[identity] * len(c.frame_indices) for _, identity, c in parts]),
        groups=np.concatenate([[group] * len(c.frame_indices) for group, _, c in parts]),
        time_index=np.concatenate([c.frame_indices for _, _, c in parts]),
        features=clear_embeddings(clear) if features else None,
        identity_metadata=identity_metadata,
        roles=None
        if roles is None
        else np.concatenate([[roles[group]] * len(c.frame_indices) for group, _, c in parts]),
    )
