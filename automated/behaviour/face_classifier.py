"""The pretrained mini-Xception face classifiers: expression (FER-2013) and gender.

Weights: ``<models dir>/face_classification/`` (``SOURCE.md`` there: Arriaga,
Valdenegro-Toro and Ploeger 2017, repository ``oarriaga/face_classification``, MIT),
run by ``keras_model.KerasGraph``. Facts from SOURCE.md used here:

- Output order, expression: angry, disgust, fear, happy, sad, surprise, neutral;
  gender: woman, man.
- Input: a grey face crop resized to the model's input (64 x 64 for both files, from
  their model configs), scaled to [-1, 1] as ``(x / 255 - 0.5) * 2``.
- The source demo crops the detected face box with a margin (20 px horizontally and
  40 px vertically at webcam resolution, i.e. about 10 % of the face width and 20 % of
  its height on each side). Here the face box is the extent of the face mesh (cheek to
  cheek, forehead to chin) and the margins are those fractions, so the crop does not
  depend on the frame's resolution. The crop is resized without keeping its aspect
  ratio, as the source does (``cv2.resize`` to the input size, bilinear).
- The same repository's video demos crop 1.5 times wider for the gender model
  (``gender_offsets = (30, 60)`` beside ``emotion_offsets = (20, 40)``, e.g.
  ``src/video_emotion_gender_demo.py``): 15 % and 30 % here. It matters: on 10 clips
  (CREMA-D 1001 and GRID speakers, by-eye labels) frames were classified correctly
  81 % of the time with the expression margins and 90-95 % with wider ones.

Research models with known demographic biases (SOURCE.md): their outputs are
measurements of what a masking keeps, not truths about people.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

import cv2
import numpy as np

from ..dlib_torch import torch_threads
from ..face_boxes import check_frame
from ..models_dir import default_models_dir

if TYPE_CHECKING:
    import torch

EXPRESSION_LABELS = ("angry", "disgust", "fear", "happy", "sad", "surprise", "neutral")
GENDER_LABELS = ("woman", "man")
EXPRESSION_FILE = "fer2013_mini_XCEPTION.102-0.66.hdf5"
GENDER_FILE = "gender_mini_XCEPTION.21-0.95.hdf5"
# fractions of the face box's width / height added on each side (module docstring)
EXPRESSION_MARGIN_XY = (0.10, 0.20)
GENDER_MARGIN_XY = (0.15, 0.30)


def mesh_box(landmarks_px: np.ndarray) -> np.ndarray:
    """Face box ``[x1, y1, x2, y2]`` (float64, pixels): the extent of the 468 mesh points."""
    points = np.asarray(landmarks_px, np.float64)[:468, :2]
    return np.concatenate([points.min(axis=0), points.max(axis=0)])


def face_crop(
    frame_rgb: np.ndarray,
    box_xyxy,
    *,
    size_px: int = 64,
    margin_xy: tuple[float, float] = EXPRESSION_MARGIN_XY,
) -> np.ndarray:
    """Grey face crop for the classifiers (module docstring: source demo's margins).

    Parameters
    ----------
    frame_rgb : ndarray of shape (height, width, 3), dtype uint8, RGB
    box_xyxy : array-like of shape (4,)
        Face box in pixels; widened by ``margin_xy`` and clipped to the frame.
    size_px : int, default=64
    margin_xy : (float, float)
        Fractions of the box width and height added on each side.

    Returns
    -------
    ndarray of shape (size_px, size_px), dtype uint8

    Raises
    ------
    ValueError
        If the frame is not uint8 (height, width, 3), or the box has no area inside the frame.
    """
    check_frame(frame_rgb)
    height, width = frame_rgb.shape[:2]
    x1, y1, x2, y2 = (float(v) for v in np.asarray(box_xyxy, np.float64).reshape(4))
    dx, dy = (x2 - x1) * margin_xy[0], (y2 - y1) * margin_xy[1]
    left, top = max(int(round(x1 - dx)), 0), max(int(round(y1 - dy)), 0)
    right, bottom = min(int(round(x2 + dx)), width), min(int(round(y2 + dy)), height)
    if right <= left or bottom <= top:
        raise ValueError(f"face box {[x1, y1, x2, y2]} has no area inside the {width}x{height} frame")
    grey = cv2.cvtColor(np.ascontiguousarray(frame_rgb[top:bottom, left:right]), cv2.COLOR_RGB2GRAY)
    return cv2.resize(grey, (size_px, size_px), interpolation=cv2.INTER_LINEAR)


def preprocess(crops: np.ndarray) -> torch.Tensor:
    """uint8 crops (n, h, w) -> float32 tensor (n, 1, h, w) in [-1, 1]: ``(x / 255 - 0.5) * 2``."""
    import torch  # on use: every web and worker process imports this module, few run the models

    crops = np.asarray(crops)
    if crops.ndim != 3 or crops.dtype != np.uint8:
        raise ValueError(f"crops must be uint8 of shape (n, height, width), got {crops.dtype} {crops.shape}")
    scaled = (crops.astype(np.float32) / 255.0 - 0.5) * 2.0
    return torch.from_numpy(scaled[:, None])


class FaceClassifier:
    """A pretrained mini-Xception classifier with its label names.

    Parameters
    ----------
    path : path-like
        The Keras HDF5 file.
    labels : tuple of str
        Class names in output order (SOURCE.md).
    margin_xy : (float, float), default=EXPRESSION_MARGIN_XY
        Crop margins (``face_crop``) this model was used with.
    num_threads : int or None, default=1
        ``torch.set_num_threads`` during inference. One thread: a 64x64 crop costs about
        2 ms of CPU, and more threads only spin (70 ms per crop measured with 2 threads
        on a loaded 2-core machine); None keeps PyTorch's setting.

    Raises
    ------
    FileNotFoundError
        If the file is missing (the message says where the models are expected).
    keras_model.KerasModelError
        If the file is not a supported Keras model, or its output size differs from
        ``len(labels)``.
    """

    def __init__(
        self,
        path,
        labels: tuple[str, ...],
        *,
        margin_xy: tuple[float, float] = EXPRESSION_MARGIN_XY,
        num_threads: int | None = 1,
    ):
        self.path = Path(path)
        self.margin_xy = tuple(margin_xy)
        self.num_threads = num_threads
        if not self.path.is_file():
            raise FileNotFoundError(
                f"classifier weights not found: {self.path} (set DEID_MODELS_DIR to the folder holding "
                f"face_classification/, see its SOURCE.md)"
            )
        from .keras_model import KerasGraph, KerasModelError  # torch, on use (see preprocess)

        self.network = KerasGraph(self.path)
        self.labels = tuple(labels)
        if self.network.n_outputs != len(self.labels):
            raise KerasModelError(
                f"{self.path.name} has {self.network.n_outputs} outputs, {len(self.labels)} labels given"
            )
        self.input_size = int(self.network.input_shape[0])

    def crop(self, frame_rgb: np.ndarray, box_xyxy) -> np.ndarray:
        """This model's face crop of a frame: ``face_crop`` with its margins and input size."""
        return face_crop(frame_rgb, box_xyxy, size_px=self.input_size, margin_xy=self.margin_xy)

    def predict(self, crops: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Class probabilities and penultimate features of face crops.

        Parameters
        ----------
        crops : ndarray of shape (n, 64, 64), dtype uint8 (``face_crop``)

        Returns
        -------
        probabilities : ndarray of shape (n, len(labels)), float64, rows sum to 1
        features : ndarray of shape (n, 128), float32 (``KerasGraph.forward``)

        Raises
        ------
        ValueError
            If the crops are not uint8 (n, input size, input size).
        """
        crops = np.asarray(crops)
        if crops.ndim != 3 or crops.shape[1:] != (self.input_size, self.input_size):
            raise ValueError(
                f"crops must have shape (n, {self.input_size}, {self.input_size}), got {crops.shape}"
            )
        if len(crops) == 0:
            return np.zeros((0, len(self.labels))), np.zeros((0, 128), np.float32)
        with torch_threads(self.num_threads):
            outputs, features = self.network(preprocess(crops))
        return outputs.double().numpy(), features.numpy()

    @functools.cached_property
    def settings(self) -> str:
        """File name, SHA-256 prefix and crop margins (for cache keys)."""
        digest = hashlib.sha256(self.path.read_bytes()).hexdigest()[:16]
        return f"{self.path.name}-{digest}-margin{self.margin_xy}"


@functools.lru_cache(maxsize=8)
def _shared(
    path: Path, mtime_ns: int, labels: tuple[str, ...], margin_xy: tuple[float, float]
) -> FaceClassifier:
    # Inference only and stateless: one loaded network per file serves every extractor.
    return FaceClassifier(path, labels, margin_xy=margin_xy)


def _classifier(models_dir, filename: str, labels, margin_xy) -> FaceClassifier:
    path = (Path(models_dir) if models_dir else default_models_dir()) / "face_classification" / filename
    if not path.is_file():
        return FaceClassifier(path, labels, margin_xy=margin_xy)  # raises the explained FileNotFoundError
    return _shared(path.resolve(), path.stat().st_mtime_ns, labels, margin_xy)


def expression_classifier(models_dir=None) -> FaceClassifier:
    """The FER-2013 expression mini-Xception (7 classes, ``EXPRESSION_LABELS``), loaded once per file."""
    return _classifier(models_dir, EXPRESSION_FILE, EXPRESSION_LABELS, EXPRESSION_MARGIN_XY)


def gender_classifier(models_dir=None) -> FaceClassifier:
    """The IMDB-WIKI gender mini-Xception (2 classes, ``GENDER_LABELS``), loaded once per file."""
    return _classifier(models_dir, GENDER_FILE, GENDER_LABELS, GENDER_MARGIN_XY)
