"""Per-image face quality components, for fairness of quality across demographic groups.

The fairness measures of seeds/003_f24e77013896bd33.txt were made for *quality
components* (section 1: a quality assessment yields a vector of components such as the
OFIQ ones; section 3 compares one component across groups). Two classic, model-free
components are computed here on the internal-face crop of
:func:`automated.face_crop.crop_internal_face` (a square resized to ``size_px``, default
160 px, so that faces of different sizes are compared on one pixel grid):

- **sharpness**: variance of the 3x3 Laplacian (``cv2.Laplacian``, ``ksize=1``) of the
  8-bit grey crop, in squared grey levels (unbounded, >= 0; higher = sharper). Blur,
  defocus, motion and low resolution (a small face upsampled to 160 px) all lower it
  (Pech-Pacheco et al., "Diatom autofocusing in brightfield microscopy", ICPR 2000).
- **luminance**: mean grey level of the crop divided by 255, in [0, 1] (OFIQ's
  "luminance mean" idea; both under- and over-exposure are bad, so it is reported, not
  ranked).

Plus **face_height_px**, the detector box height in pixels of the original image (the
size the face was captured at; NaN when the whole image is taken as the face).

Where the square crop leaves the image, ``crop_internal_face`` fills it with black. Those
pixels (and, for the Laplacian, their 1-pixel border) are left out of both components so
a face at the frame edge does not gain sharpness from the artificial black edge.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from automated.detection import largest_face
from automated.face_boxes import check_frame
from automated.face_crop import NoFaceFoundError, crop_internal_face
from automated.video import iter_frames

QUALITY_COMPONENTS = ("sharpness", "luminance")


@dataclass(frozen=True)
class FaceQuality:
    """Quality components of one face image.

    Attributes
    ----------
    sharpness : float
        Variance of the Laplacian of the grey ``size_px`` crop, squared grey levels, >= 0.
    luminance : float
        Mean grey level of the crop / 255, in [0, 1].
    face_height_px : float
        Height of the face box in pixels of the original image; NaN if no box was used.
    """

    sharpness: float
    luminance: float
    face_height_px: float

    def as_dict(self) -> dict[str, float]:
        return {
            "sharpness": self.sharpness,
            "luminance": self.luminance,
            "face_height_px": self.face_height_px,
        }


def _grey(image_rgb: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(image_rgb, cv2.COLOR_RGB2GRAY)


def laplacian_sharpness(face_grey: np.ndarray, mask: np.ndarray | None = None) -> float:
    """Variance of the 3x3 Laplacian of a grey face crop (squared grey levels).

    Parameters
    ----------
    face_grey : ndarray of shape (height, width), dtype uint8
    mask : ndarray of shape (height, width), dtype bool, optional
        Pixels to use (True); the Laplacian at a pixel needs its 4 neighbours, so the
        mask is eroded by one pixel first.

    Returns
    -------
    float
        >= 0; 0 for a constant image.

    Raises
    ------
    ValueError
        If ``face_grey`` is not a 2-D uint8 array of at least 3x3 pixels, or the mask
        leaves no pixel.
    """
    if face_grey.ndim != 2 or face_grey.dtype != np.uint8 or min(face_grey.shape) < 3:
        raise ValueError(
            f"face_grey must be a 2-D uint8 image of at least 3x3, got {face_grey.shape} {face_grey.dtype}"
        )
    laplacian = cv2.Laplacian(face_grey.astype(np.float64), cv2.CV_64F, ksize=1)
    if mask is None:
        inner = np.zeros(face_grey.shape, bool)
        inner[1:-1, 1:-1] = True  # no border replication artefacts
    else:
        inner = cv2.erode(mask.astype(np.uint8), np.ones((3, 3), np.uint8), borderValue=0).astype(bool)
    if not inner.any():
        raise ValueError("the mask leaves no pixel to measure sharpness on")
    return float(laplacian[inner].var())


def face_quality(image_rgb: np.ndarray, box_xyxy=None, *, size_px: int = 160) -> FaceQuality:
    """Quality components of the face in ``box_xyxy`` (or of the whole image as the face).

    Parameters
    ----------
    image_rgb : ndarray of shape (height, width, 3), dtype uint8, RGB
    box_xyxy : array-like of shape (4,), optional
        Face box ``[x1, y1, x2, y2]`` in pixels. None: the image is already a face crop
        (e.g. a gallery still cropped to the internal face); it is resized to
        ``size_px`` x ``size_px`` as it is.
    size_px : int, default=160
        Side of the square crop the components are measured on.

    Returns
    -------
    FaceQuality

    Raises
    ------
    ValueError
        Bad image or box (see :func:`automated.face_crop.crop_internal_face`).
    """
    check_frame(image_rgb, "image_rgb")
    if box_xyxy is None:
        crop = cv2.resize(image_rgb, (size_px, size_px), interpolation=cv2.INTER_AREA)
        valid = np.ones((size_px, size_px), bool)
        height_px = float("nan")
    else:
        crop = crop_internal_face(image_rgb, box_xyxy, size_px=size_px)
        # The same crop of an all-white image marks which pixels came from the image.
        inside = crop_internal_face(np.full_like(image_rgb, 255), box_xyxy, size_px=size_px)
        box = np.asarray(box_xyxy, dtype=np.float64).reshape(4)
        height_px = float(box[3] - box[1])
        # Resizing smears the black fill over a few pixels (cubic: 2 source pixels each
        # side); drop that margin too.
        scale = size_px / max(box[2] - box[0], height_px)
        margin = int(np.ceil(2 * max(1.0, scale))) + 1
        kernel = np.ones((2 * margin + 1, 2 * margin + 1), np.uint8)
        valid = cv2.erode((inside[..., 0] == 255).astype(np.uint8), kernel, borderValue=1).astype(bool)
    grey = _grey(crop)
    if not valid.any():
        raise ValueError(f"face box {list(box_xyxy)} leaves no image pixel in the crop")
    return FaceQuality(
        sharpness=laplacian_sharpness(grey, valid),
        luminance=float(grey[valid].mean() / 255.0),
        face_height_px=height_px,
    )


def detect_face_quality(image_rgb: np.ndarray, detector, *, size_px: int = 160) -> FaceQuality:
    """Detect the largest face with ``detector`` and return its quality components.

    Parameters
    ----------
    image_rgb : ndarray of shape (height, width, 3), dtype uint8, RGB
        A gallery still or a clear video frame.
    detector : object with ``detect(image_rgb) -> FaceDetections``
        E.g. :class:`automated.detection.MediaPipeFaceDetector` (reuse one across images).
    size_px : int, default=160

    Returns
    -------
    FaceQuality

    Raises
    ------
    NoFaceFoundError
        (a ValueError) if the detector finds no face.
    """
    box = largest_face(detector.detect(image_rgb))
    if box is None:
        height, width = image_rgb.shape[:2]
        raise NoFaceFoundError(f"no face found in the {width}x{height} image")
    return face_quality(image_rgb, box, size_px=size_px)


def video_face_quality(video_path, detector, *, stride: int = 15, size_px: int = 160) -> FaceQuality:
    """Median quality components of the largest face over frames ``0, stride, 2*stride, ...``.

    One value per video, so a long clip does not weigh more than a short one when groups
    are compared. Frames without a detected face are skipped.

    Parameters
    ----------
    video_path : str or Path
        A clear (unmasked) video.
    detector : object with ``detect(image_rgb) -> FaceDetections``
    stride : int, default=15
        Frame step (15 frames = 0.6 s at 25 fps).
    size_px : int, default=160

    Returns
    -------
    FaceQuality
        Component-wise medians over the frames with a face.

    Raises
    ------
    NoFaceFoundError
        If no sampled frame has a face.
    automated.video.VideoError
        If the video cannot be read.
    """
    qualities = []
    for _, frame_rgb in iter_frames(video_path, stride=stride):
        box = largest_face(detector.detect(frame_rgb))
        if box is not None:
            qualities.append(face_quality(frame_rgb, box, size_px=size_px))
    if not qualities:
        raise NoFaceFoundError(f"no face found in any frame of {video_path} sampled every {stride} frames")
    return FaceQuality(
        sharpness=float(np.median([q.sharpness for q in qualities])),
        luminance=float(np.median([q.luminance for q in qualities])),
        face_height_px=float(np.median([q.face_height_px for q in qualities])),
    )
