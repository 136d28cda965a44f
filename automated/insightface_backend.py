"""InsightFace backend: SCRFD face detection and ArcFace embeddings from model packs on disk.

Runs the ``insightface`` package's own loading and inference code (``model_zoo.get_model``,
``SCRFD.detect``, ``face_align.norm_crop``, ``ArcFaceONNX.get_feat``) on ONNX Runtime's CPU
provider, from a model pack the user placed under the models folder::

    $DEID_MODELS_DIR/insightface/models/<pack>/*.onnx      (e.g. buffalo_l, buffalo_s)

Nothing is ever downloaded: the pack folder is checked first and its ``.onnx`` files are
passed to insightface by absolute path (insightface fetches only names it cannot find, and
only when asked to). docs/automated/insightface.md ("InsightFace model packs") says where packs come from and
their licence (non-commercial research use; the insightface code is MIT).

- ``InsightFaceDetector`` (detector registry name ``"insightface"``): the pack's SCRFD
  detector (Guo et al. 2021, "Sample and Computation Redistribution for Efficient Face
  Detection", arXiv:2105.04714): boxes, scores and 5 keypoints (eye centres, nose tip,
  mouth corners) per face.
- ``ArcFaceEmbedder`` (embedder registry name ``"arcface"``): the pack's ArcFace network
  (Deng et al. 2019, "ArcFace: Additive Angular Margin Loss", CVPR), on 112x112 chips
  aligned to insightface's 5-point template (``face_align.arcface_dst``) by a similarity
  transform, L2-normalised 512-D embeddings (the size is read from the model).

Frames are RGB (project convention); insightface works on BGR (OpenCV) images and swaps
to RGB in its input blob, so frames are flipped to BGR before they reach it.
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .chip_embedder import ChipEmbedder
from .models_dir import default_models_dir
from .face_boxes import Detector, FaceDetections, box_iou, check_frame, clip_boxes

#: Where packs live below the models folder (insightface's own layout, ``<root>/models/<pack>``).
PACKS_SUBDIR = Path("insightface") / "models"
DEFAULT_PACK = "buffalo_l"
README_SECTION = 'docs/automated/insightface.md, "InsightFace model packs"'

#: ArcFace decision threshold: cosine similarity >= 0.4 is "Same Person" (insightface 2.1,
#: ``insightface/gui/core/constants.py`` DEFAULT_THRESHOLD, used by
#: ``gui/core/recognition.py`` ``compare_embeddings``), i.e. cosine distance <= 0.6.
#: deepface's threshold for the same buffalo_l network is close: cosine distance 0.55,
#: L2 of normalised embeddings 1.1 (deepface/config/threshold.py, "Buffalo_L").
ARCFACE_COSINE_SIMILARITY = 0.4
ARCFACE_COSINE_DISTANCE = 1.0 - ARCFACE_COSINE_SIMILARITY
#: The same threshold as an L2 distance of the unit-length embeddings the project compares
#: (``recognition.l2_distances``): ||a - b||^2 = 2 (1 - cos), so sqrt(2 * 0.6) = 1.0954.
ARCFACE_L2_THRESHOLD = math.sqrt(2.0 * ARCFACE_COSINE_DISTANCE)

#: ArcFace input normalisation insightface applies to ONNX (not MXNet-converted) models:
#: (pixel - 127.5) / 127.5, RGB (``ArcFaceONNX.__init__``).
ARCFACE_INPUT_MEAN = 127.5
ARCFACE_INPUT_STD = 127.5
#: SCRFD input normalisation: (pixel - 127.5) / 128, RGB (``SCRFD._init_vars``).
SCRFD_INPUT_MEAN = 127.5
SCRFD_INPUT_STD = 128.0

#: Landmarks of a box from another detector: SCRFD is run on a square crop of this many
#: box sides around the box centre, resized to ``KEYPOINT_DET_SIZE``.
KEYPOINT_CROP_SCALE = 2.0
KEYPOINT_DET_SIZE = (256, 256)
#: A face SCRFD finds in that crop stands for the box when their IoU is at least this.
KEYPOINT_MIN_IOU = 0.3


def pack_dir(pack: str = DEFAULT_PACK, models_dir=None) -> Path:
    """Folder of the model pack ``pack``: ``<models_dir>/insightface/models/<pack>``.

    Raises
    ------
    ValueError
        If ``pack`` is not a plain folder name.
    """
    if not isinstance(pack, str) or not pack or pack in (".", "..") or "/" in pack or os.sep in pack:
        raise ValueError(f"pack must be a folder name such as 'buffalo_l', got {pack!r}")
    return Path(models_dir if models_dir is not None else default_models_dir()) / PACKS_SUBDIR / pack


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class InsightFacePack:
    """A loaded model pack: insightface's SCRFD detector and ArcFace recognizer.

    Attributes
    ----------
    path : Path
        The pack folder.
    detector : insightface.model_zoo.SCRFD
    recognizer : insightface.model_zoo.ArcFaceONNX
    detector_file, recognizer_file : str
        File names of the two models; ``*_sha256`` their contents' SHA-256 (cache keys).
    """

    path: Path
    detector: object
    recognizer: object
    detector_file: str
    recognizer_file: str
    detector_sha256: str
    recognizer_sha256: str

    @property
    def dim(self) -> int:
        """Embedding size (the recognizer's output width)."""
        return int(self.recognizer.output_shape[-1])


class ModelPackNotFoundError(FileNotFoundError, ValueError):
    """A model pack folder is missing or incomplete (also a ValueError: a bad setting, so
    run validation and the API report it as such)."""


def _missing(path: Path, what: str) -> ModelPackNotFoundError:
    return ModelPackNotFoundError(
        f"InsightFace model pack {what}: {path}. Place the pack's .onnx files there "
        f"(e.g. buffalo_l/det_10g.onnx and w600k_r50.onnx) or set DEID_MODELS_DIR; nothing is "
        f"downloaded. See {README_SECTION}."
    )


@functools.lru_cache(maxsize=4)
def _load_pack(path: str, num_threads: int | None) -> InsightFacePack:
    import insightface
    import onnxruntime

    folder = Path(path)
    if not folder.is_dir():
        raise _missing(folder, "not found")
    files = sorted(folder.glob("*.onnx"))
    if not files:
        raise _missing(folder, "has no .onnx files")
    options = onnxruntime.SessionOptions()
    if num_threads is not None:
        options.intra_op_num_threads = num_threads
    found = {}
    for file in files:
        # insightface routes each file by its inputs/outputs: SCRFD (>= 5 outputs),
        # landmarks (192x192), attributes (96x96), ArcFace (square >= 112 input).
        model = insightface.model_zoo.get_model(
            str(file.resolve()), providers=["CPUExecutionProvider"], sess_options=options
        )
        task = getattr(model, "taskname", None)
        if task in ("detection", "recognition") and task not in found:
            found[task] = (file, model)
    for task, kind in (("detection", "SCRFD/RetinaFace detector"), ("recognition", "ArcFace recognizer")):
        if task not in found:
            raise _missing(folder, f"has no {kind} (.onnx) in it")
    (det_file, detector), (rec_file, recognizer) = found["detection"], found["recognition"]
    return InsightFacePack(
        folder,
        detector,
        recognizer,
        det_file.name,
        rec_file.name,
        _file_sha256(det_file),
        _file_sha256(rec_file),
    )


def _check_threads(num_threads) -> None:
    if num_threads is not None and (
        isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1
    ):
        raise ValueError(f"num_threads must be a whole number >= 1, got {num_threads!r}")


def load_pack(
    pack: str = DEFAULT_PACK, *, models_dir=None, num_threads: int | None = None
) -> InsightFacePack:
    """Load a model pack from disk (once per process and settings).

    Parameters
    ----------
    pack : str, default "buffalo_l"
        Folder name below ``<models_dir>/insightface/models/``.
    models_dir : path-like, optional
        Default ``$DEID_MODELS_DIR`` (else ``../shared/models``).
    num_threads : int, optional
        ONNX Runtime intra-op threads (default: ONNX Runtime's choice).

    Returns
    -------
    InsightFacePack

    Raises
    ------
    ModelPackNotFoundError (a FileNotFoundError and ValueError)
        If the pack folder is missing, has no ``.onnx`` file, or lacks a detector or an
        ArcFace recognizer; the message names the folder and the README section.
    ValueError
        If ``pack`` is not a folder name or ``num_threads`` not a whole number >= 1.
    """
    _check_threads(num_threads)
    return _load_pack(str(pack_dir(pack, models_dir).resolve()), num_threads)


def _to_bgr(image_rgb: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(image_rgb[..., ::-1])


class InsightFaceDetector(Detector):
    """The pack's SCRFD face detector through insightface (``SCRFD.detect``).

    Parameters
    ----------
    pack : str, default "buffalo_l"
    min_confidence : float, default 0.5
        Score threshold in [0, 1] (insightface's ``det_thresh`` default).
    det_size : (int, int), default (640, 640)
        Network input (width, height), multiples of 32; the frame is resized into it
        keeping its aspect ratio (insightface's letterbox).
    models_dir : path-like, optional
    num_threads : int, optional

    Attributes
    ----------
    last_keypoints_xy : ndarray of shape (n, 5, 2), dtype float32
        Keypoints of the last ``detect`` call in frame pixels (left eye, right eye, nose,
        left and right mouth corner as seen in the image); NaN when the model has none.

    Raises
    ------
    FileNotFoundError
        As ``load_pack``.
    ValueError
        For a threshold outside [0, 1] or a size that is not two positive multiples of 32.
    """

    def __init__(
        self,
        pack: str = DEFAULT_PACK,
        *,
        min_confidence: float = 0.5,
        det_size=(640, 640),
        models_dir=None,
        num_threads: int | None = None,
    ):
        if isinstance(min_confidence, bool) or not 0.0 <= float(min_confidence) <= 1.0:
            raise ValueError(f"min_confidence must be in [0, 1], got {min_confidence!r}")
        size = tuple(int(v) for v in det_size)
        if len(size) != 2 or any(v <= 0 or v % 32 for v in size):
            raise ValueError(f"det_size must be (width, height), positive multiples of 32, got {det_size!r}")
        self.pack = pack
        self.min_confidence = float(min_confidence)
        self.det_size = size
        self._pack = load_pack(pack, models_dir=models_dir, num_threads=num_threads)
        self.last_keypoints_xy = np.zeros((0, 5, 2), np.float32)

    def detect(self, frame_rgb: np.ndarray, frame_index: int = 0) -> FaceDetections:
        """Detect faces in one RGB frame; see ``detection.MediaPipeFaceDetector.detect``."""
        check_frame(frame_rgb)
        height, width = frame_rgb.shape[:2]
        boxes, keypoints = _scrfd(self._pack.detector, _to_bgr(frame_rgb), self.det_size, self.min_confidence)
        self.last_keypoints_xy = keypoints
        if len(boxes) == 0:
            return FaceDetections.empty(frame_index)
        return FaceDetections(frame_index, clip_boxes(boxes[:, :4], width, height), boxes[:, 4].copy())

    def close(self) -> None:
        """Nothing to release (the pack is shared by the process)."""

    def cache_key(self) -> str:
        """Model file, library versions and every parameter that changes the boxes."""
        import insightface
        import onnxruntime

        return (
            f"insightface-{insightface.__version__}-ort-{onnxruntime.__version__}-{self.pack}-"
            f"{self._pack.detector_file}-{self._pack.detector_sha256[:16]}-size{self.det_size[0]}x"
            f"{self.det_size[1]}-conf{self.min_confidence!r}-nms{self._pack.detector.nms_thresh!r}"
        )


def _scrfd(detector, image_bgr: np.ndarray, det_size, threshold: float):
    """insightface's ``SCRFD.detect``: (boxes+scores (n, 5) float32, keypoints (n, 5, 2) float32)."""
    det, kps = detector.detect(image_bgr, input_size=det_size, det_thresh=threshold)
    det = np.asarray(det, np.float32).reshape(-1, 5)
    if kps is None:
        kps = np.full((len(det), 5, 2), np.nan, np.float32)
    return det, np.asarray(kps, np.float32).reshape(len(det), 5, 2)


def box_keypoints(box_xyxy) -> np.ndarray:
    """Template keypoints of a box: insightface's 5-point ArcFace template scaled to the
    box's square (side = the longer box side, centred on the box).

    ``norm_crop`` with these points is a plain resize of that square to 112x112: the
    alignment used when no landmark is found for a box.

    Returns
    -------
    ndarray of shape (5, 2), dtype float32, pixels
    """
    from insightface.utils.face_align import arcface_dst

    x1, y1, x2, y2 = (float(v) for v in box_xyxy)
    side = max(x2 - x1, y2 - y1, 1.0)
    origin = np.array([(x1 + x2 - side) / 2, (y1 + y2 - side) / 2], np.float32)
    return (arcface_dst / 112.0 * side + origin).astype(np.float32)


class ArcFaceEmbedder(ChipEmbedder):
    """The pack's ArcFace network through insightface: aligned 112x112 chips -> unit vectors.

    Each face needs its 5 keypoints: ``embed_keypoints`` takes them (from
    ``InsightFaceDetector.last_keypoints_xy``); ``embed_faces`` (boxes from any detector)
    finds them by running the pack's SCRFD on a square crop of ``KEYPOINT_CROP_SCALE``
    box sides around each box and taking the face overlapping the box most (IoU >=
    ``KEYPOINT_MIN_IOU``), else aligns the box's square (``box_keypoints``).

    Parameters
    ----------
    pack : str, default "buffalo_l"
    batch_size : int, default 32
        Chips per ONNX Runtime call (1 for a model with a fixed batch of 1).
    models_dir : path-like, optional
    num_threads : int, optional

    Attributes
    ----------
    name : str
        "arcface" (``recognition.EMBEDDERS``).
    dim : int
        Embedding size (512 for the buffalo packs), read from the model.
    distance, threshold
        "euclidean" with ``ARCFACE_L2_THRESHOLD`` (cosine similarity 0.4 on unit vectors).

    Raises
    ------
    FileNotFoundError
        As ``load_pack``.
    ValueError
        If ``batch_size`` or ``num_threads`` is not a whole number >= 1.
    """

    name = "arcface"
    distance = "euclidean"
    threshold = ARCFACE_L2_THRESHOLD

    def __init__(
        self,
        pack: str = DEFAULT_PACK,
        *,
        batch_size: int = 32,
        models_dir=None,
        num_threads: int | None = None,
    ):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a whole number >= 1, got {batch_size!r}")
        self.pack = pack
        self.batch_size = batch_size
        self._pack = load_pack(pack, models_dir=models_dir, num_threads=num_threads)

    @property
    def dim(self) -> int:
        return self._pack.dim

    @classmethod
    def model_dim(cls) -> int:
        """Embedding size of the default pack (loads it; ``FileNotFoundError`` if absent)."""
        return load_pack(DEFAULT_PACK).dim

    @property
    def chip_size(self) -> int:
        """Side of the aligned chip in pixels (the model's input, 112 for the buffalo packs)."""
        return int(self._pack.recognizer.input_size[0])

    def keypoints(self, image_rgb: np.ndarray, box_xyxy) -> np.ndarray:
        """The 5 keypoints of the face at ``box_xyxy`` (see the class notes), shape (5, 2) float32."""
        x1, y1, x2, y2 = (float(v) for v in box_xyxy)
        side = max(x2 - x1, y2 - y1, 1.0) * KEYPOINT_CROP_SCALE
        x0, y0 = (x1 + x2 - side) / 2, (y1 + y2 - side) / 2
        scale = KEYPOINT_DET_SIZE[0] / side
        # The crop (zero outside the image) resized straight to the detector's input size.
        warp = np.array([[scale, 0.0, -x0 * scale], [0.0, scale, -y0 * scale]], np.float32)
        import cv2

        crop = cv2.warpAffine(_to_bgr(image_rgb), warp, KEYPOINT_DET_SIZE, borderValue=0)
        det, kps = _scrfd(self._pack.detector, crop, KEYPOINT_DET_SIZE, self._pack.detector.det_thresh)
        if len(det):
            target = (np.array([x1, y1, x2, y2]) - [x0, y0, x0, y0]) * scale
            ious = [box_iou(target, d[:4]) for d in det]
            best = int(np.argmax(ious))
            if ious[best] >= KEYPOINT_MIN_IOU and np.isfinite(kps[best]).all():
                return (kps[best] / scale + [x0, y0]).astype(np.float32)
        return box_keypoints(box_xyxy)

    def align(self, image_rgb: np.ndarray, keypoints_xy) -> np.ndarray:
        """insightface's ``face_align.norm_crop``: the similarity transform taking the 5
        keypoints onto its ArcFace template, applied to the image.

        Parameters
        ----------
        image_rgb : ndarray (height, width, 3) uint8 RGB
        keypoints_xy : array-like of shape (5, 2), pixels

        Returns
        -------
        ndarray of shape (chip_size, chip_size, 3), dtype uint8, RGB
        """
        from insightface.utils import face_align

        points = np.asarray(keypoints_xy, np.float32).reshape(5, 2)
        return np.ascontiguousarray(face_align.norm_crop(image_rgb, points, image_size=self.chip_size))

    def embed_chips(self, chips_rgb) -> np.ndarray:
        """``ArcFaceONNX.get_feat`` on aligned chips, L2-normalised.

        Parameters
        ----------
        chips_rgb : array-like of shape (n, chip_size, chip_size, 3), uint8, RGB

        Returns
        -------
        ndarray of shape (n, dim), dtype float32, rows of unit length
        """
        chips = np.asarray(chips_rgb)
        if len(chips) == 0:
            return np.zeros((0, self.dim), np.float32)
        recognizer = self._pack.recognizer
        fixed_batch = isinstance(recognizer.input_shape[0], int)
        step = 1 if fixed_batch else self.batch_size
        out = []
        for start in range(0, len(chips), step):
            out.append(recognizer.get_feat([_to_bgr(c) for c in chips[start : start + step]]))
        features = np.concatenate(out).astype(np.float64).reshape(len(chips), self.dim)
        norms = np.linalg.norm(features, axis=1, keepdims=True)
        return (features / np.maximum(norms, 1e-12)).astype(np.float32)

    def embed_keypoints(self, image_rgb: np.ndarray, keypoints_xy) -> np.ndarray:
        """Embed the faces with these keypoints in one image.

        Parameters
        ----------
        image_rgb : ndarray (height, width, 3) uint8 RGB
        keypoints_xy : array-like of shape (n, 5, 2)

        Returns
        -------
        ndarray of shape (n, dim), dtype float32
        """
        check_frame(image_rgb, "image_rgb")
        points = np.asarray(keypoints_xy, np.float32).reshape(-1, 5, 2)
        return self.embed_chips([self.align(image_rgb, p) for p in points])

    def chips(self, faces) -> np.ndarray:
        """Aligned chips of ``(image_rgb, box_xyxy)`` pairs (keypoints from ``keypoints``).

        Returns
        -------
        ndarray of shape (n, chip_size, chip_size, 3), dtype uint8, RGB

        Raises
        ------
        ValueError
            If an image is not uint8 (height, width, 3) or a box is not 4 finite numbers.
        """
        chips = []
        for image_rgb, box in faces:
            check_frame(image_rgb, "image_rgb")
            box = np.asarray(box, np.float64).reshape(-1)
            if box.shape != (4,) or not np.isfinite(box).all():
                raise ValueError(f"a face box must be 4 finite numbers [x1, y1, x2, y2], got {box.tolist()}")
            chips.append(self.align(image_rgb, self.keypoints(image_rgb, box)))
        if not chips:
            return np.zeros((0, self.chip_size, self.chip_size, 3), np.uint8)
        return np.stack(chips)

    def cache_key(self) -> str:
        """Models, library versions and alignment that determine the embeddings (cache keys)."""
        import insightface
        import onnxruntime

        p = self._pack
        return (
            f"arcface-insightface-{insightface.__version__}-ort-{onnxruntime.__version__}-{self.pack}-"
            f"{p.recognizer_file}-{p.recognizer_sha256[:16]}-{self.dim}d-normcrop{self.chip_size}-"
            f"kps-{p.detector_file}-{p.detector_sha256[:16]}-crop{KEYPOINT_CROP_SCALE}-"
            f"det{KEYPOINT_DET_SIZE[0]}-iou{KEYPOINT_MIN_IOU}-l2norm"
        )
