"""Gallery faces normalised so that crop geometry and colour give raters no cue.

A lineup face that is larger, tilted, brighter or warmer than the others can be told
apart without recognising anyone (and the stills of a dataset share a look the others do
not), so every face a rater sees is made the same way (no Django here):

1. **Aligned on the eyes** (:func:`align_on_eyes`): the similarity transform (rotation,
   uniform scale, translation) that puts the two eye centres on :data:`EYE_TARGETS`, so
   the eyes sit at the same pixels and the face has the same size in every crop. Eyes
   come from MediaPipe BlazeFace's keypoints (the project's detector,
   ``automated.detection.MediaPipeFaceDetector``), else dlib's 5-point landmarks inside a
   dlib HOG box (``automated.recognition``); a still where neither finds a face (e.g. a
   tight 92x112 ORL face) is taken as already framed: its centre square is used.
2. **Colour normalised in CIE L*a*b*** (:func:`normalise_lab`): inside the face oval,
   each of L*, a*, b* is shifted and scaled to the fixed mean and standard deviation of
   :data:`LAB_TARGETS` (the per-channel statistics transfer of Reinhard et al., "Color
   transfer between images", IEEE CG&A 21(5), 2001, section 2, with a fixed target
   instead of a target image), so brightness, contrast and colour cast are the same for
   every identity.
3. Everything outside the oval is flat grey (``trials.media.oval_mask``).
"""

from __future__ import annotations

import math

import cv2
import numpy as np

#: Where the eye centres land, as fractions (x, y) of the crop side: the viewer's left
#: eye (the subject's right) first. Inter-ocular distance 0.35 of the side, eyes at 0.40
#: of the height: the internal face (brows to chin, cheek to cheek) fills the oval.
EYE_TARGETS = ((0.325, 0.40), (0.675, 0.40))

#: (mean, standard deviation) of L* (0-100), a*, b* inside the face oval after normalisation.
LAB_TARGETS = ((58.0, 16.0), (12.0, 5.0), (16.0, 6.0))

#: A channel flatter than this (e.g. a* and b* of a grey still) is shifted, not stretched:
#: stretching would only amplify compression noise.
MIN_STD = 1.0


def eye_centres(image_rgb: np.ndarray) -> np.ndarray | None:
    """The two eye centres of the largest face, or None when no face is found.

    Parameters
    ----------
    image_rgb : ndarray of shape (height, width, 3), dtype uint8, RGB

    Returns
    -------
    ndarray of shape (2, 2), float64, or None
        ``[[x, y] of the eye on the viewer's left, [x, y] of the other]`` in pixels.
    """
    from automated.detection import DlibHogFaceDetector, MediaPipeFaceDetector, largest_face

    with MediaPipeFaceDetector() as detector:
        detections = detector.detect(image_rgb)
        if len(detections):
            boxes = detections.boxes_xyxy
            largest = int(np.argmax((boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])))
            return _ordered(detector.last_keypoints_xy[largest, :2])
    box = largest_face(DlibHogFaceDetector(upsample=1).detect(image_rgb))
    if box is None:
        return None
    import dlib

    from automated.recognition import shape_predictor

    shape = shape_predictor()(np.ascontiguousarray(image_rgb), dlib.rectangle(*(int(round(v)) for v in box)))
    points = np.array([[p.x, p.y] for p in shape.parts()], np.float64)
    # dlib's 5-point model: corners of one eye (0, 1), of the other (2, 3), nose base (4).
    return _ordered(np.stack([points[0:2].mean(axis=0), points[2:4].mean(axis=0)]))


def _ordered(eyes) -> np.ndarray:
    eyes = np.asarray(eyes, np.float64).reshape(2, 2)
    return eyes[np.argsort(eyes[:, 0])]


def eye_transform(eyes_xy, size_px: int) -> np.ndarray:
    """The 2x3 similarity matrix mapping ``eyes_xy`` onto :data:`EYE_TARGETS` of a crop.

    Parameters
    ----------
    eyes_xy : array-like of shape (2, 2)
        Viewer's-left eye then the other, pixels of the source image.
    size_px : int
        Side of the square crop.

    Returns
    -------
    ndarray of shape (2, 3), float64
        For ``cv2.warpAffine``: destination = M @ [x, y, 1].

    Raises
    ------
    ValueError
        If the two eyes coincide.
    """
    src = np.asarray(eyes_xy, np.float64).reshape(2, 2)
    dst = np.asarray(EYE_TARGETS, np.float64) * size_px
    src_vec, dst_vec = src[1] - src[0], dst[1] - dst[0]
    src_len = math.hypot(*src_vec)
    if src_len < 1e-6:
        raise ValueError("the two eye centres coincide")
    scale = math.hypot(*dst_vec) / src_len
    angle = math.atan2(dst_vec[1], dst_vec[0]) - math.atan2(src_vec[1], src_vec[0])
    cos, sin = scale * math.cos(angle), scale * math.sin(angle)
    rotation = np.array([[cos, -sin], [sin, cos]])
    shift = dst[0] - rotation @ src[0]
    return np.hstack([rotation, shift[:, None]])


def align_on_eyes(image_rgb: np.ndarray, eyes_xy, size_px: int) -> np.ndarray:
    """The ``size_px`` square crop with the eyes on :data:`EYE_TARGETS`.

    Large stills are first shrunk with area averaging (no aliasing), so the warp itself
    never shrinks by more than 2x. Pixels from outside the still repeat its edge (they lie
    outside the face oval, which is painted grey afterwards).

    Parameters
    ----------
    image_rgb : ndarray of shape (height, width, 3), dtype uint8
    eyes_xy : array-like of shape (2, 2)
        From :func:`eye_centres`.
    size_px : int

    Returns
    -------
    ndarray of shape (size_px, size_px, 3), dtype uint8
    """
    eyes = np.asarray(eyes_xy, np.float64).reshape(2, 2)
    matrix = eye_transform(eyes, size_px)
    scale = math.hypot(*matrix[:, 0])
    if scale < 0.5:
        shrink = 2.0 * scale
        height, width = image_rgb.shape[:2]
        size = (max(1, int(round(width * shrink))), max(1, int(round(height * shrink))))
        image_rgb = cv2.resize(image_rgb, size, interpolation=cv2.INTER_AREA)
        eyes = eyes * np.array([size[0] / width, size[1] / height])
        matrix = eye_transform(eyes, size_px)
    return cv2.warpAffine(
        image_rgb, matrix, (size_px, size_px), flags=cv2.INTER_CUBIC, borderMode=cv2.BORDER_REPLICATE
    )


def centre_square_eyes(image_rgb: np.ndarray) -> np.ndarray:
    """Eye positions that make :func:`align_on_eyes` cut the still's centre square.

    For stills with no detectable face, taken as already framed on the face.
    """
    height, width = image_rgb.shape[:2]
    side = min(height, width)
    left, top = (width - side) / 2, (height - side) / 2
    return np.array([[left + x * side, top + y * side] for x, y in EYE_TARGETS])


def lab_statistics(image_rgb: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean and standard deviation of L*, a*, b* over the pixels where ``mask`` is set.

    Parameters
    ----------
    image_rgb : ndarray of shape (h, w, 3), dtype uint8
    mask : ndarray of shape (h, w), bool

    Returns
    -------
    ndarray of shape (3, 2), float64
        ``[[mean, std] of L*, of a*, of b*]``; L* in 0-100 (OpenCV's float conversion).
    """
    lab = cv2.cvtColor(image_rgb.astype(np.float32) / 255.0, cv2.COLOR_RGB2Lab)[mask]
    return np.stack([lab.mean(axis=0), lab.std(axis=0)], axis=1).astype(np.float64)


def normalise_lab(image_rgb: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Give L*, a*, b* inside ``mask`` the means and deviations of :data:`LAB_TARGETS`.

    Parameters
    ----------
    image_rgb : ndarray of shape (h, w, 3), dtype uint8
    mask : ndarray of shape (h, w), bool
        The face region the statistics are taken over (the oval).

    Returns
    -------
    ndarray of shape (h, w, 3), dtype uint8
        The whole image transformed (values leaving the RGB gamut are clipped).

    Raises
    ------
    ValueError
        If ``mask`` selects no pixel.
    """
    if not mask.any():
        raise ValueError("the face mask selects no pixel")
    lab = cv2.cvtColor(image_rgb.astype(np.float32) / 255.0, cv2.COLOR_RGB2Lab)
    for channel, (target_mean, target_std) in enumerate(LAB_TARGETS):
        values = lab[..., channel]
        mean, std = float(values[mask].mean()), float(values[mask].std())
        gain = target_std / std if std >= MIN_STD else 1.0
        lab[..., channel] = (values - mean) * gain + target_mean
    lab[..., 0] = np.clip(lab[..., 0], 0.0, 100.0)
    rgb = cv2.cvtColor(lab, cv2.COLOR_Lab2RGB)
    return np.clip(np.round(rgb * 255.0), 0, 255).astype(np.uint8)
