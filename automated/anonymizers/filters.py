"""Image filters of the baseline anonymizers: identity, blur, pixelation, eye mask, edges.

Sources (see the package docstring): Gaussian blur sigma = 15 pixels and Canny edges
(PrivHAR-Bench tiers 1 and 2, seeds/004, section 2.B); eye masking 140 / 224 of the face
height (seeds/000, section 5.6.1); pixelation in 16-pixel cells.
"""

from __future__ import annotations

import cv2
import numpy as np

from ..face_boxes import check_frame
from .regions import FACE_MARGIN

BLUR_SIGMA_PX = 15.0
PIXELATE_CELL_PX = 16
EYE_STRIP_FRACTION = 140 / 224
CANNY_THRESHOLDS = (100, 200)


def identity(frame_rgb: np.ndarray) -> np.ndarray:
    """The unmasked frame (a copy): the worst-case reference."""
    check_frame(frame_rgb)
    return frame_rgb.copy()


def blur_frame(frame_rgb: np.ndarray, *, sigma_px: float = BLUR_SIGMA_PX) -> np.ndarray:
    """Gaussian blur of the whole frame (PrivHAR-Bench tier 1, sigma = 15 pixels)."""
    check_frame(frame_rgb)
    return cv2.GaussianBlur(frame_rgb, (0, 0), sigmaX=sigma_px, borderType=cv2.BORDER_REFLECT_101)


def blur_face(frame_rgb: np.ndarray, region_xyxy, *, sigma_px: float = BLUR_SIGMA_PX) -> np.ndarray:
    """Gaussian blur inside the face region only.

    The blur is computed on the whole frame and pasted into the region, so the region's
    edge pixels average real neighbours instead of a padded border.

    Parameters
    ----------
    frame_rgb : ndarray of shape (height, width, 3), dtype uint8
    region_xyxy : tuple of int (x1, y1, x2, y2)
        From ``face_region``.
    sigma_px : float, default=15
    """
    check_frame(frame_rgb)
    out = frame_rgb.copy()
    x1, y1, x2, y2 = region_xyxy
    if x2 <= x1 or y2 <= y1:
        return out
    # Only the window the region's pixels read from is blurred: the kernel's radius around
    # the region, cut at the frame's edges (where the frame's own border rule applies, as
    # for the whole frame). The region's pixels are those of the whole-frame blur, bit for
    # bit (OpenCV's 8-bit Gaussian is fixed-point), at about 1/5 of its cost on a GRID face.
    radius = gaussian_radius_px(sigma_px)
    height, width = frame_rgb.shape[:2]
    wx1, wy1 = max(0, x1 - radius), max(0, y1 - radius)
    wx2, wy2 = min(width, x2 + radius), min(height, y2 + radius)
    window = blur_frame(np.ascontiguousarray(frame_rgb[wy1:wy2, wx1:wx2]), sigma_px=sigma_px)
    out[y1:y2, x1:x2] = window[y1 - wy1 : y2 - wy1, x1 - wx1 : x2 - wx1]
    return out


def gaussian_radius_px(sigma_px: float) -> int:
    """Half the width of the kernel ``cv2.GaussianBlur`` builds for an 8-bit image when given
    ``ksize=(0, 0)``: ``round(sigma * 3 * 2 + 1) | 1`` taps (OpenCV ``createGaussianKernels``)."""
    return (int(round(sigma_px * 6 + 1)) | 1) // 2


def pixelate_face(frame_rgb: np.ndarray, region_xyxy, *, cell_px: int = PIXELATE_CELL_PX) -> np.ndarray:
    """Replace the face region by cells of about ``cell_px`` x ``cell_px`` pixels of its mean colour."""
    check_frame(frame_rgb)
    if cell_px < 1:
        raise ValueError(f"cell_px must be >= 1, got {cell_px}")
    out = frame_rgb.copy()
    x1, y1, x2, y2 = region_xyxy
    patch = frame_rgb[y1:y2, x1:x2]
    cells_w = max(1, round((x2 - x1) / cell_px))
    cells_h = max(1, round((y2 - y1) / cell_px))
    small = cv2.resize(patch, (cells_w, cells_h), interpolation=cv2.INTER_AREA)
    out[y1:y2, x1:x2] = cv2.resize(small, (x2 - x1, y2 - y1), interpolation=cv2.INTER_NEAREST)
    return out


def eye_mask(
    frame_rgb: np.ndarray, box_xyxy, eyes_xy=None, *, strip_fraction: float = EYE_STRIP_FRACTION
) -> np.ndarray:
    """Black strip over the eyes (Eye Masking, seeds/000, section 5.6.1).

    The strip runs along the line through both eyes, as long as the face box is wide
    (plus the margin) and ``strip_fraction`` of the face box high.

    Parameters
    ----------
    frame_rgb : ndarray of shape (height, width, 3), dtype uint8
    box_xyxy : array-like of shape (4,)
        Face box in pixels.
    eyes_xy : array-like of shape (2, 2), optional
        Centres of the two eyes in pixels (MediaPipe keypoints 0 and 1). Without them the
        eye line is taken as horizontal at 30% of the box height (where BlazeFace puts
        the eyes on the GRID clips).
    strip_fraction : float, default=140/224
    """
    check_frame(frame_rgb)
    x1, y1, x2, y2 = (float(v) for v in np.asarray(box_xyxy, dtype=np.float64).reshape(4))
    if eyes_xy is None:
        eye_y = y1 + 0.3 * (y2 - y1)
        eyes = np.array([[x1, eye_y], [x2, eye_y]])
    else:
        eyes = np.asarray(eyes_xy, dtype=np.float64).reshape(2, 2)
    centre = eyes.mean(axis=0)
    along = eyes[1] - eyes[0]
    norm = np.linalg.norm(along)
    along = along / norm if norm > 0 else np.array([1.0, 0.0])
    across = np.array([-along[1], along[0]])
    half_length = (1 + 2 * FACE_MARGIN) * (x2 - x1) / 2
    half_height = strip_fraction * (y2 - y1) / 2
    corners = np.array(
        [
            centre + sa * half_length * along + sc * half_height * across
            for sa, sc in ((-1, -1), (1, -1), (1, 1), (-1, 1))
        ]
    )
    out = frame_rgb.copy()
    cv2.fillPoly(out, [np.round(corners).astype(np.int32)], (0, 0, 0))
    return out


def canny_edges(frame_rgb: np.ndarray, *, thresholds: tuple[int, int] = CANNY_THRESHOLDS) -> np.ndarray:
    """Canny edge map of the whole frame, white edges on black, as RGB (PrivHAR-Bench tier 2)."""
    check_frame(frame_rgb)
    edges = cv2.Canny(cv2.cvtColor(frame_rgb, cv2.COLOR_RGB2GRAY), *thresholds)
    return np.repeat(edges[:, :, None], 3, axis=2)
