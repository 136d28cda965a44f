"""Baseline anonymizers: reference points every campaign is scored against.

Each transform is a pure function of an RGB frame (``frame_rgb``: ndarray of shape
(height, width, 3), dtype uint8; plus the face region in pixels where it masks only the
face) that returns a new ``uint8`` frame of the same shape, leaves its input untouched
and raises ``ValueError`` naming the dtype and shape of anything else. ``BASELINE_METHODS``
maps a method name to a ``BaselineMethod``; ``anonymize_video`` applies one to a video and
writes a lossless FFV1 ``.mkv`` (PrivHAR-Bench distributes lossless frames "so the
scrambling isn't accidentally fixed by video compression", seeds/004, section 2.A).

Settings and sources:

- Gaussian blur, sigma = 15 pixels (PrivHAR-Bench tier 1, seeds/004, section 2.B);
  kernel 91 x 91 (OpenCV's 6 sigma + 1 for uint8). seeds/000 (section 5.6.1) instead
  gives a 101-pixel kernel on 224-pixel face crops, without a sigma.
- Canny edges (PrivHAR-Bench tier 2); thresholds 100/200 (not given in the seed; the
  OpenCV tutorial values).
- Keyed block permutation (PrivHAR-Bench tier 3): the region is cut into B x B blocks
  (B = 16 default; 8 and 4 also in the seed) whose order is permuted by sorting an
  AES-CTR keystream, with a fresh nonce per frame so blocks cannot be tracked over time.
  The nonce (``frame_nonce``) is a random 8-byte video nonce drawn per video, then the
  frame index, then the block counter: one key may serve a whole submission without two
  frames of any videos sharing a keystream (CTR nonce reuse would give frame i of every
  video the same permutation). ``block_permute_fixed`` is the weak variant the seed's
  per-frame nonce guards against, and the central example of
  seeds/000_0b74979cb8a3f1c3.txt (a fixed pixel permutation fools a naive attacker but
  not a parrot): the face region is cut into a fixed 8 x 8 grid of cells (cell size
  follows the face size) permuted by ONE permutation, from the key and an all-zero
  nonce, for every frame of every video of a submission (``grid_permute``).
- Eye masking: a black strip over the eyes, 140 pixels high on 224-pixel face crops in
  seeds/000_0b74979cb8a3f1c3.txt (section 5.6.1), i.e. 0.625 of the face height.
- Pixelation: the face is averaged over 16 x 16-pixel cells (no seed value; the same cell
  size as the coarse block permutation).
- ``identity``: the unmasked frame, the worst case (clear accuracy) of every campaign.
- The face anonymizations of seeds/000_0b74979cb8a3f1c3.txt (section 5.6.1) with its
  parameters, on the face region: k-Same-Pixel (k = 10, Newton et al. 2005; background
  faces from scikit-image's LFW subset), DP-Pix (epsilon = 2, b = 12, m = 16, Fan 2018),
  DP-Snow (d = 0.01, John et al. 2020), DP-Samp (epsilon = 5, k = 24, m = 12, Reilly and
  Fan 2021) and k-RTIO (alpha = 0.4, blocksize = 18, k = 3, Rajabi et al. 2021; overlays:
  natural images shipped in scikit-image). The paper applies them to 224-pixel face
  crops; pixel sizes are kept as given. Their randomness comes from the video's key
  (``frame_rng``, AES-CTR for k-RTIO), fresh per frame.

Face region: the face detector's box enlarged by ``FACE_MARGIN`` of its size on each side
(detector boxes cut the forehead and chin), clipped to the frame.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from .detection import MediaPipeFaceDetector, largest_face
from .video import VideoInfo, VideoWriter, iter_frames

BLUR_SIGMA_PX = 15.0
PIXELATE_CELL_PX = 16
BLOCK_PX = 16
GRID_CELLS = 8
EYE_STRIP_FRACTION = 140 / 224
CANNY_THRESHOLDS = (100, 200)
FACE_MARGIN = 0.2


class NoFaceInVideoError(ValueError):
    """A face-region method was asked to mask a video in which no face is detected."""


def _check_frame(frame_rgb: np.ndarray) -> None:
    if (
        not isinstance(frame_rgb, np.ndarray)
        or frame_rgb.ndim != 3
        or frame_rgb.shape[2] != 3
        or frame_rgb.dtype != np.uint8
    ):
        raise ValueError(
            f"frame_rgb must be uint8 of shape (height, width, 3), got "
            f"{getattr(frame_rgb, 'dtype', type(frame_rgb).__name__)} {getattr(frame_rgb, 'shape', '')}"
        )


def face_region(
    box_xyxy, resolution_wh: tuple[int, int], *, margin: float = FACE_MARGIN
) -> tuple[int, int, int, int]:
    """Integer region ``(x1, y1, x2, y2)`` around a face box, enlarged and clipped.

    Parameters
    ----------
    box_xyxy : array-like of shape (4,)
        Face box in pixels.
    resolution_wh : tuple of (int, int)
        Frame (width, height) in pixels.
    margin : float, default=FACE_MARGIN
        Added on each side as a fraction of the box width (x) and height (y).

    Raises
    ------
    ValueError
        If the region is empty after clipping.
    """
    x1, y1, x2, y2 = (float(v) for v in np.asarray(box_xyxy, dtype=np.float64).reshape(4))
    width, height = resolution_wh
    dx, dy = margin * (x2 - x1), margin * (y2 - y1)
    region = (
        max(0, int(np.floor(x1 - dx))),
        max(0, int(np.floor(y1 - dy))),
        min(width, int(np.ceil(x2 + dx))),
        min(height, int(np.ceil(y2 + dy))),
    )
    if region[2] <= region[0] or region[3] <= region[1]:
        raise ValueError(f"face box {[x1, y1, x2, y2]} gives an empty region in a {width}x{height} frame")
    return region


def identity(frame_rgb: np.ndarray) -> np.ndarray:
    """The unmasked frame (a copy): the worst-case reference."""
    _check_frame(frame_rgb)
    return frame_rgb.copy()


def blur_frame(frame_rgb: np.ndarray, *, sigma_px: float = BLUR_SIGMA_PX) -> np.ndarray:
    """Gaussian blur of the whole frame (PrivHAR-Bench tier 1, sigma = 15 pixels)."""
    _check_frame(frame_rgb)
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
    out = frame_rgb.copy()
    x1, y1, x2, y2 = region_xyxy
    out[y1:y2, x1:x2] = blur_frame(frame_rgb, sigma_px=sigma_px)[y1:y2, x1:x2]
    return out


def pixelate_face(frame_rgb: np.ndarray, region_xyxy, *, cell_px: int = PIXELATE_CELL_PX) -> np.ndarray:
    """Replace the face region by cells of about ``cell_px`` x ``cell_px`` pixels of its mean colour."""
    _check_frame(frame_rgb)
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
    _check_frame(frame_rgb)
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
    _check_frame(frame_rgb)
    edges = cv2.Canny(cv2.cvtColor(frame_rgb, cv2.COLOR_RGB2GRAY), *thresholds)
    return np.repeat(edges[:, :, None], 3, axis=2)


def keystream_permutation(n: int, key: bytes, nonce: bytes) -> np.ndarray:
    """Permutation of ``range(n)`` drawn from an AES-CTR keystream.

    Each position gets a 64-bit word of keystream (AES-CTR encryption of zero bytes,
    ``cryptography``'s ``modes.CTR`` with the full 16-byte block as initial counter);
    the permutation is the stable argsort of those words: sorting by random keys, which
    draws every permutation with equal probability up to ties among the 2**64 word
    values (probability below n**2 / 2**65).

    Parameters
    ----------
    n : int
    key : bytes
        AES key, 16, 24 or 32 bytes.
    nonce : bytes
        16-byte initial counter block (``frame_nonce``); never reuse one under the same
        key for different frames: a fresh nonce gives an independent permutation.

    Returns
    -------
    ndarray of shape (n,), dtype int64

    Raises
    ------
    ValueError
        If the key or nonce has the wrong length.
    """
    if len(key) not in (16, 24, 32):
        raise ValueError(f"AES key must be 16, 24 or 32 bytes, got {len(key)}")
    if len(nonce) != 16:
        raise ValueError(f"AES-CTR nonce must be 16 bytes, got {len(nonce)}")
    encryptor = Cipher(algorithms.AES(key), modes.CTR(nonce)).encryptor()
    words = np.frombuffer(encryptor.update(bytes(8 * n)) + encryptor.finalize(), dtype="<u8")
    return np.argsort(words, kind="stable")


def frame_nonce(frame_index: int, video_nonce: bytes = bytes(8)) -> bytes:
    """Initial 16-byte AES-CTR counter block of one frame (NIST SP 800-38A, appendix B).

    Layout: ``video_nonce`` (bytes 0-7), ``frame_index`` big-endian (bytes 8-11), block
    counter starting at 0 (bytes 12-15). CTR mode increments the whole block, so a frame
    may use up to 2**32 AES blocks (64 GiB of keystream) before running into the next
    frame's counters; a permutation needs 8 bytes per image block.

    Parameters
    ----------
    frame_index : int
        0-based frame index, in 0 .. 2**32 - 1.
    video_nonce : bytes, default=bytes(8)
        8 bytes unique per (key, video); ``anonymize_video`` draws them at random.

    Returns
    -------
    bytes
        16 bytes.

    Raises
    ------
    ValueError
        If ``frame_index`` is out of range or ``video_nonce`` is not 8 bytes.
    """
    if not 0 <= frame_index < 2**32:
        raise ValueError(f"frame_index must be in 0 .. 2**32 - 1, got {frame_index}")
    if len(video_nonce) != 8:
        raise ValueError(f"video_nonce must be 8 bytes, got {len(video_nonce)}")
    return bytes(video_nonce) + int(frame_index).to_bytes(4, "big") + bytes(4)


def block_permute(
    frame_rgb: np.ndarray, region_xyxy, *, key: bytes, nonce: bytes, block_px: int = BLOCK_PX
) -> np.ndarray:
    """Shuffle the ``block_px`` x ``block_px`` blocks of a region (PrivHAR-Bench tier 3).

    The region is extended right and down to whole blocks; where that would leave the
    frame it is shrunk to whole blocks instead (a strip of fewer than ``block_px`` pixels
    at the frame edge stays in place). Fewer than two blocks: the frame is unchanged.

    Parameters
    ----------
    frame_rgb : ndarray of shape (height, width, 3), dtype uint8
    region_xyxy : tuple of int (x1, y1, x2, y2)
    key : bytes
        AES key (16, 24 or 32 bytes).
    nonce : bytes
        16-byte CTR nonce; ``frame_nonce(frame_index)`` for a fresh nonce per frame.
    block_px : int, default=16
        B in the seed (16, 8 or 4).
    """
    _check_frame(frame_rgb)
    if block_px < 1:
        raise ValueError(f"block_px must be >= 1, got {block_px}")
    height, width = frame_rgb.shape[:2]
    x1, y1, x2, y2 = region_xyxy
    # Extend the region to whole blocks where the frame allows it, else shrink it.
    cols = -(-(x2 - x1) // block_px)
    rows = -(-(y2 - y1) // block_px)
    if x1 + cols * block_px > width:
        cols = (width - x1) // block_px
    if y1 + rows * block_px > height:
        rows = (height - y1) // block_px
    out = frame_rgb.copy()
    if rows * cols < 2:
        return out
    region = frame_rgb[y1 : y1 + rows * block_px, x1 : x1 + cols * block_px]
    blocks = (
        region.reshape(rows, block_px, cols, block_px, 3)
        .swapaxes(1, 2)
        .reshape(rows * cols, block_px, block_px, 3)
    )
    shuffled = blocks[keystream_permutation(rows * cols, key, nonce)]
    out[y1 : y1 + rows * block_px, x1 : x1 + cols * block_px] = (
        shuffled.reshape(rows, cols, block_px, block_px, 3)
        .swapaxes(1, 2)
        .reshape(rows * block_px, cols * block_px, 3)
    )
    return out


def grid_permute(
    frame_rgb: np.ndarray, region_xyxy, *, key: bytes, nonce: bytes = bytes(16), grid_cells: int = GRID_CELLS
) -> np.ndarray:
    """Shuffle a fixed ``grid_cells`` x ``grid_cells`` grid of cells covering a region.

    Unlike :func:`block_permute` (fixed block size, so the number of blocks and hence
    the permutation change with the face size), the number of cells is fixed: the same
    key and nonce give the same permutation of face parts in every frame and video: the
    "consistently the same block permutation" of seeds/000_0b74979cb8a3f1c3.txt
    (section 1 and section 3, the deterministic block permutation example) that a
    parrot attacker, trained on anonymized data, can learn.

    The region is grown right and down to a multiple of ``grid_cells`` pixels per side
    and moved inside the frame where it would leave it.

    Parameters
    ----------
    frame_rgb : ndarray of shape (height, width, 3), dtype uint8
    region_xyxy : tuple of int (x1, y1, x2, y2), pixels
    key : bytes
        AES key (16, 24 or 32 bytes).
    nonce : bytes, default=16 zero bytes
        16-byte CTR initial counter block.
    grid_cells : int, default=8
        Cells per side (>= 2).

    Returns
    -------
    ndarray of shape (height, width, 3), dtype uint8

    Raises
    ------
    ValueError
        If ``grid_cells < 2`` or the frame is smaller than the grid, or on a bad frame.
    """
    _check_frame(frame_rgb)
    if grid_cells < 2:
        raise ValueError(f"grid_cells must be >= 2, got {grid_cells}")
    height, width = frame_rgb.shape[:2]
    x1, y1, x2, y2 = (int(v) for v in region_xyxy)
    cell_w = max(1, -(-(x2 - x1) // grid_cells))
    cell_h = max(1, -(-(y2 - y1) // grid_cells))
    if cell_w * grid_cells > width or cell_h * grid_cells > height:
        raise ValueError(
            f"a {grid_cells}x{grid_cells} grid of {cell_w}x{cell_h}-pixel cells "
            f"does not fit a {width}x{height} frame"
        )
    x1 = min(max(0, x1), width - cell_w * grid_cells)
    y1 = min(max(0, y1), height - cell_h * grid_cells)
    rows = cols = grid_cells
    region = frame_rgb[y1 : y1 + rows * cell_h, x1 : x1 + cols * cell_w]
    cells = (
        region.reshape(rows, cell_h, cols, cell_w, 3).swapaxes(1, 2).reshape(rows * cols, cell_h, cell_w, 3)
    )
    shuffled = cells[keystream_permutation(rows * cols, key, nonce)]
    out = frame_rgb.copy()
    out[y1 : y1 + rows * cell_h, x1 : x1 + cols * cell_w] = (
        shuffled.reshape(rows, cols, cell_h, cell_w, 3)
        .swapaxes(1, 2)
        .reshape(rows * cell_h, cols * cell_w, 3)
    )
    return out


# --- The face anonymizations of seeds/000 section 5.6.1 (parameters cited there) --------

#: DP-Pix (Fan 2018): epsilon, cell side b in pixels, m pixels that may differ.
DP_PIX_EPSILON, DP_PIX_CELL_PX, DP_PIX_M = 2.0, 12, 16
#: DP-Snow (John et al. 2020): share d of the face's pixels kept; the rest turn grey.
DP_SNOW_DELTA, SNOW_GREY = 0.01, 127
#: DP-Samp (Reilly and Fan 2021): epsilon, k-means clusters, m pixels that may differ.
DP_SAMP_EPSILON, DP_SAMP_K, DP_SAMP_M = 5.0, 24, 12
#: k-RTIO (Rajabi et al. 2021): weight of the face, overlay block side in pixels, overlays.
K_RTIO_ALPHA, K_RTIO_BLOCK_PX, K_RTIO_K = 0.4, 18, 3
#: k-Same-Pixel (Newton et al. 2005): faces averaged.
K_SAME_K = 10
#: Natural images shipped inside scikit-image, none of a face: the k-RTIO overlay set.
K_RTIO_OVERLAYS = (
    "chelsea",
    "coffee",
    "rocket",
    "hubble_deep_field",
    "immunohistochemistry",
    "colorwheel",
    "brick",
    "grass",
    "gravel",
    "moon",
    "clock",
    "coins",
)


def _region_box(frame_rgb: np.ndarray, region_xyxy) -> tuple[int, int, int, int]:
    _check_frame(frame_rgb)
    x1, y1, x2, y2 = (int(v) for v in region_xyxy)
    height, width = frame_rgb.shape[:2]
    if not (0 <= x1 < x2 <= width and 0 <= y1 < y2 <= height):
        raise ValueError(f"region {[x1, y1, x2, y2]} is empty or outside the {width}x{height} frame")
    return x1, y1, x2, y2


def frame_rng(key: bytes, video_nonce: bytes, frame_index: int) -> np.random.Generator:
    """The noise generator of one frame: seeded by SHA-256 of (key, video nonce, frame index).

    DP noise must be unpredictable to the attacker: it follows from the video's secret key
    (``anonymize_video`` draws a fresh random one unless given), and differs per frame.
    """
    digest = hashlib.sha256(bytes(key) + bytes(video_nonce) + int(frame_index).to_bytes(8, "big")).digest()
    return np.random.default_rng(np.frombuffer(digest, dtype="<u4").tolist())


def dp_pix_scale(
    *,
    epsilon: float = DP_PIX_EPSILON,
    cell_px: int = DP_PIX_CELL_PX,
    m: int = DP_PIX_M,
    n_pixels: int | None = None,
) -> float:
    """Laplace scale of DP-Pix: sensitivity / epsilon = 255 * m / (b**2 * epsilon).

    A cell mean over n = b**2 pixels moves by at most 255 * m / n when m pixels change
    (Fan 2018, "Image pixelization with differential privacy", DBSec, the m-neighbourhood);
    a cell cut by the region edge (``n_pixels`` < b**2) uses its own n and min(m, n).
    With the seed's values (epsilon 2, b 12, m 16): 255 * 16 / 288 = 14.17 grey levels.
    """
    n = cell_px * cell_px if n_pixels is None else int(n_pixels)
    return 255.0 * min(m, n) / (n * epsilon)


def dp_pix(
    frame_rgb: np.ndarray,
    region_xyxy,
    *,
    rng: np.random.Generator,
    epsilon: float = DP_PIX_EPSILON,
    cell_px: int = DP_PIX_CELL_PX,
    m: int = DP_PIX_M,
) -> np.ndarray:
    """DP-Pix: pixelate the region into b x b cells, add Laplace noise to each cell mean.

    seeds/000 section 5.6.1 (epsilon = 2, b = 12, m = 16), after Fan 2018 as adapted to RGB
    by Reilly and Fan 2021 (each channel's cell mean gets its own noise; the formal
    guarantee holds for grey images). Cells start at the region's top-left corner; the
    last row/column of cells may be cut by the region edge. Noise scale ``dp_pix_scale``;
    values are rounded and clipped to [0, 255].

    Parameters
    ----------
    frame_rgb : ndarray of shape (height, width, 3), dtype uint8
    region_xyxy : tuple of int (x1, y1, x2, y2), pixels
    rng : numpy.random.Generator
        Noise source (``frame_rng``).
    epsilon : float > 0, cell_px : int >= 1, m : int >= 1

    Returns
    -------
    ndarray of shape (height, width, 3), dtype uint8
    """
    x1, y1, x2, y2 = _region_box(frame_rgb, region_xyxy)
    if epsilon <= 0 or cell_px < 1 or m < 1:
        raise ValueError(f"DP-Pix needs epsilon > 0, cell_px >= 1, m >= 1; got {epsilon}, {cell_px}, {m}")
    out = frame_rgb.copy()
    patch = frame_rgb[y1:y2, x1:x2].astype(np.float64)
    for top in range(0, y2 - y1, cell_px):
        for left in range(0, x2 - x1, cell_px):
            cell = patch[top : top + cell_px, left : left + cell_px]
            scale = dp_pix_scale(
                epsilon=epsilon, cell_px=cell_px, m=m, n_pixels=cell.shape[0] * cell.shape[1]
            )
            value = cell.mean(axis=(0, 1)) + rng.laplace(0.0, scale, size=3)
            out[y1 + top : y1 + top + cell.shape[0], x1 + left : x1 + left + cell.shape[1]] = np.clip(
                np.rint(value), 0, 255
            )
    return out


def dp_snow(
    frame_rgb: np.ndarray,
    region_xyxy,
    *,
    rng: np.random.Generator,
    delta: float = DP_SNOW_DELTA,
    grey: int = SNOW_GREY,
) -> np.ndarray:
    """DP-Snow: all but a share ``delta`` of the region's pixels become grey.

    seeds/000 section 5.6.1 (d = 0.01), after John et al. 2020 ("Let it snow", ETRA): a
    uniformly random set of floor((1 - delta) * n) of the region's n pixels is replaced by
    (127, 127, 127), the rest kept, as in the paper's implementation.

    Parameters
    ----------
    frame_rgb : ndarray of shape (height, width, 3), dtype uint8
    region_xyxy : tuple of int (x1, y1, x2, y2)
    rng : numpy.random.Generator
    delta : float in [0, 1]
    grey : int in [0, 255]

    Returns
    -------
    ndarray of shape (height, width, 3), dtype uint8
    """
    x1, y1, x2, y2 = _region_box(frame_rgb, region_xyxy)
    if not 0.0 <= delta <= 1.0:
        raise ValueError(f"DP-Snow delta must be in [0, 1], got {delta}")
    out = frame_rgb.copy()
    flat = out[y1:y2, x1:x2].reshape(-1, 3)  # a copy: the region slice is not contiguous
    flat[rng.choice(len(flat), size=int(np.floor((1.0 - delta) * len(flat))), replace=False)] = grey
    out[y1:y2, x1:x2] = flat.reshape(y2 - y1, x2 - x1, 3)
    return out


def dp_samp_counts(frequencies, *, epsilon: float = DP_SAMP_EPSILON, m: int = DP_SAMP_M) -> np.ndarray:
    """Pixels DP-Samp may sample from each cluster.

    Cluster i (f_i of N pixels) gets budget epsilon_i = epsilon * f_i / N and samples the
    largest x_i in [0, f_i - m] with C(f_i, x) / C(f_i - m, x) <= exp(epsilon_i): the
    ratio of the chances that a sample of x misses m given pixels when they may or may not
    be in the image (Reilly and Fan 2021; clusters of at most m pixels give 0).

    Parameters
    ----------
    frequencies : array-like of int of shape (k,)
    epsilon : float > 0, m : int >= 1

    Returns
    -------
    ndarray of int64 of shape (k,)
    """
    frequencies = np.asarray(frequencies, dtype=np.int64)
    total = frequencies.sum()
    counts = np.zeros(len(frequencies), np.int64)
    for i, f in enumerate(frequencies):
        if f <= m:
            continue
        j = np.arange(f - m)
        log_ratio = np.concatenate([[0.0], np.cumsum(np.log((f - j) / (f - m - j)))])  # x = 0 .. f - m
        counts[i] = np.searchsorted(log_ratio, epsilon * f / total, side="right") - 1
    return counts


def dp_samp(
    frame_rgb: np.ndarray,
    region_xyxy,
    *,
    rng: np.random.Generator,
    epsilon: float = DP_SAMP_EPSILON,
    k: int = DP_SAMP_K,
    m: int = DP_SAMP_M,
) -> np.ndarray:
    """DP-Samp: cluster colours, sample few pixels per cluster, interpolate the rest.

    seeds/000 section 5.6.1 (epsilon = 5, k = 24, m = 12), after Reilly and Fan 2021 as
    implemented for the paper: k-means (scikit-learn, fitted on up to 4096 of the region's
    pixels) groups the colours into k clusters; ``dp_samp_counts`` pixels are drawn
    uniformly from each cluster and take their cluster's centre colour; the region is
    rebuilt from them by linear interpolation (scipy ``griddata``; nearest sample outside
    their convex hull). No sample at all: the region turns grey.

    Parameters
    ----------
    frame_rgb : ndarray of shape (height, width, 3), dtype uint8
    region_xyxy : tuple of int (x1, y1, x2, y2)
    rng : numpy.random.Generator
    epsilon : float > 0, k : int >= 1, m : int >= 1

    Returns
    -------
    ndarray of shape (height, width, 3), dtype uint8
    """
    from threadpoolctl import threadpool_limits

    x1, y1, x2, y2 = _region_box(frame_rgb, region_xyxy)
    if epsilon <= 0 or k < 1 or m < 1:
        raise ValueError(f"DP-Samp needs epsilon > 0, k >= 1, m >= 1; got {epsilon}, {k}, {m}")
    # One thread: OpenMP/BLAS threads of k-means and interpolation on a shared machine
    # made a frame 100x slower (measured 3 s instead of 30 ms under load).
    with threadpool_limits(limits=1):
        return _dp_samp(frame_rgb, (x1, y1, x2, y2), rng=rng, epsilon=epsilon, k=k, m=m)


def _dp_samp(frame_rgb, region, *, rng, epsilon, k, m):
    x1, y1, x2, y2 = region
    out = frame_rgb.copy()
    points, colours = dp_samp_pixels(frame_rgb[y1:y2, x1:x2], rng=rng, epsilon=epsilon, k=k, m=m)
    if len(points) == 0:
        out[y1:y2, x1:x2] = SNOW_GREY
        return out
    out[y1:y2, x1:x2] = _interpolate(points, colours, (y2 - y1, x2 - x1))
    return out


def dp_samp_pixels(
    region_rgb: np.ndarray,
    *,
    rng: np.random.Generator,
    epsilon: float = DP_SAMP_EPSILON,
    k: int = DP_SAMP_K,
    m: int = DP_SAMP_M,
) -> tuple[np.ndarray, np.ndarray]:
    """The pixels DP-Samp releases: positions and cluster-centre colours (see ``dp_samp``).

    Parameters
    ----------
    region_rgb : ndarray of uint8 of shape (h, w, 3)

    Returns
    -------
    points : ndarray of int64 of shape (n, 2)
        (row, column) of each sampled pixel; ``dp_samp_counts`` of each cluster.
    colours : ndarray of float64 of shape (n, 3)
        The centre of each sampled pixel's cluster.
    """
    from sklearn.cluster import KMeans

    height, width = region_rgb.shape[:2]
    pixels = region_rgb.reshape(-1, 3).astype(np.float64)
    fit_on = pixels[rng.choice(len(pixels), size=min(len(pixels), 4096), replace=False)]
    n_clusters = min(k, len(np.unique(fit_on, axis=0)))
    kmeans = KMeans(n_clusters=n_clusters, n_init=1, random_state=int(rng.integers(2**31 - 1))).fit(fit_on)
    labels = kmeans.predict(pixels)
    counts = dp_samp_counts(np.bincount(labels, minlength=n_clusters), epsilon=epsilon, m=m)
    chosen = [
        rng.choice(np.flatnonzero(labels == i), size=c, replace=False) for i, c in enumerate(counts) if c
    ]
    chosen = np.concatenate(chosen) if chosen else np.zeros(0, np.int64)
    return np.stack(np.divmod(chosen, width), axis=1).reshape(-1, 2), kmeans.cluster_centers_[labels[chosen]]


def _interpolate(points, colours, shape_hw) -> np.ndarray:
    """Linear interpolation of sampled colours over a (h, w) grid, nearest outside their hull."""
    from scipy.interpolate import griddata
    from scipy.spatial import QhullError

    grid = tuple(np.mgrid[0 : shape_hw[0], 0 : shape_hw[1]])
    rebuilt = griddata(points, colours, grid, method="nearest")
    try:
        linear = griddata(points, colours, grid, method="linear")
        rebuilt = np.where(np.isnan(linear), rebuilt, linear)
    except (QhullError, ValueError):
        pass  # fewer than 3 samples or all on a line: nearest only
    return np.clip(np.rint(rebuilt), 0, 255).astype(np.uint8)


@functools.lru_cache(maxsize=1)
def rtio_overlays() -> tuple[np.ndarray, ...]:
    """The k-RTIO overlay set: ``K_RTIO_OVERLAYS`` from ``skimage.data``, RGB uint8 (offline)."""
    import skimage.data

    images = []
    for name in K_RTIO_OVERLAYS:
        image = np.asarray(getattr(skimage.data, name)())
        images.append(
            np.repeat(image[..., None], 3, axis=2) if image.ndim == 2 else image[..., :3].astype(np.uint8)
        )
    return tuple(images)


def _counter_nonce(nonce: bytes, block: int) -> bytes:
    """``nonce`` with its 4-byte block counter started at ``block * 2**28``: disjoint
    keystreams for the overlay choice (block 0) and each overlay's permutation."""
    return bytes(nonce[:12]) + (block << 28).to_bytes(4, "big")


def k_rtio(
    frame_rgb: np.ndarray,
    region_xyxy,
    *,
    key: bytes,
    nonce: bytes,
    alpha: float = K_RTIO_ALPHA,
    block_px: int = K_RTIO_BLOCK_PX,
    k: int = K_RTIO_K,
    overlays=None,
) -> np.ndarray:
    """k-RTIO: blend the face with k block-permuted overlay images chosen by a keyed PRF.

    seeds/000 section 5.6.1 (alpha = 0.4, blocksize = 18, k = 3), after Rajabi et al. 2021
    ("On the (im)practicality of adversarial perturbation for image privacy", PoPETs): k
    distinct overlays are chosen from ``overlays`` by an AES-CTR keystream permutation
    (``keystream_permutation``), each is resized to the region (grown to whole blocks),
    its ``block_px`` blocks are permuted by another keystream, and the region becomes
    ``alpha * face + (1 - alpha) * mean(overlays)`` (the paper's implementation weighs the
    face by alpha), rounded. A fresh ``nonce`` per frame (``frame_nonce``) gives new
    overlays and permutations in every frame.

    Parameters
    ----------
    frame_rgb : ndarray of shape (height, width, 3), dtype uint8
    region_xyxy : tuple of int (x1, y1, x2, y2)
    key : bytes
        AES key (16, 24 or 32 bytes).
    nonce : bytes
        16-byte initial counter block.
    alpha : float in [0, 1], block_px : int >= 1
    k : int in [1, min(15, len(overlays))]
    overlays : sequence of ndarray uint8 (h, w, 3), optional
        Default ``rtio_overlays()``.

    Returns
    -------
    ndarray of shape (height, width, 3), dtype uint8
    """
    x1, y1, x2, y2 = _region_box(frame_rgb, region_xyxy)
    overlays = rtio_overlays() if overlays is None else tuple(overlays)
    if not 0.0 <= alpha <= 1.0 or block_px < 1 or not 1 <= k <= min(15, len(overlays)):
        raise ValueError(
            f"k-RTIO needs alpha in [0, 1], block_px >= 1 and 1 <= k <= {min(15, len(overlays))}; "
            f"got {alpha}, {block_px}, {k}"
        )
    height, width = y2 - y1, x2 - x1
    rows, cols = -(-height // block_px), -(-width // block_px)
    mixed = np.zeros((height, width, 3), np.float64)
    for j, index in enumerate(keystream_permutation(len(overlays), key, _counter_nonce(nonce, 0))[:k]):
        overlay = cv2.resize(
            np.ascontiguousarray(overlays[index]),
            (cols * block_px, rows * block_px),
            interpolation=cv2.INTER_AREA,
        )
        blocks = (
            overlay.reshape(rows, block_px, cols, block_px, 3)
            .swapaxes(1, 2)
            .reshape(-1, block_px, block_px, 3)
        )
        blocks = blocks[keystream_permutation(rows * cols, key, _counter_nonce(nonce, j + 1))]
        permuted = (
            blocks.reshape(rows, cols, block_px, block_px, 3)
            .swapaxes(1, 2)
            .reshape(rows * block_px, cols * block_px, 3)
        )
        mixed += permuted[:height, :width]
    out = frame_rgb.copy()
    blend = alpha * frame_rgb[y1:y2, x1:x2].astype(np.float64) + (1.0 - alpha) * mixed / k
    out[y1:y2, x1:x2] = np.clip(np.rint(blend), 0, 255).astype(np.uint8)
    return out


@functools.lru_cache(maxsize=1)
def default_background_faces() -> np.ndarray:
    """k-Same-Pixel's default background set: the 100 faces of scikit-image's LFW subset.

    ``skimage.data.lfw_subset()`` ships 100 grey 25 x 25 face crops of Labeled Faces in
    the Wild (then 100 non-faces), offline; people who are in no campaign.

    Returns
    -------
    ndarray of uint8 of shape (100, 25, 25)
    """
    import skimage.data

    return np.rint(skimage.data.lfw_subset()[:100] * 255.0).astype(np.uint8)


def k_same_pixel(frame_rgb: np.ndarray, region_xyxy, *, background=None, k: int = K_SAME_K) -> np.ndarray:
    """k-Same-Pixel: the face averaged with its k - 1 nearest faces of a background set.

    seeds/000 section 5.6.1 (k = 10), after Newton et al. 2005 ("Preserving privacy by
    de-identifying face images", IEEE TKDE): as in the paper, which anonymizes image by
    image, the k - 1 closest faces come from a separate background set of other people
    (one face per person), so the formal k-anonymity does not hold. Closeness: Euclidean
    distance of grey pixels at the background's size. The region becomes the pixel-wise
    mean of the face and the k - 1 background faces (scaled to the region), rounded.

    Parameters
    ----------
    frame_rgb : ndarray of shape (height, width, 3), dtype uint8
    region_xyxy : tuple of int (x1, y1, x2, y2)
    background : ndarray of uint8, (n, h, w) grey or (n, h, w, 3) RGB, optional
        Default ``default_background_faces()``.
    k : int in [1, n + 1]

    Returns
    -------
    ndarray of shape (height, width, 3), dtype uint8
    """
    x1, y1, x2, y2 = _region_box(frame_rgb, region_xyxy)
    background = default_background_faces() if background is None else np.asarray(background)
    if (
        background.dtype != np.uint8
        or background.ndim not in (3, 4)
        or (background.ndim == 4 and background.shape[3] != 3)
    ):
        raise ValueError(
            f"background faces must be uint8 (n, h, w) or (n, h, w, 3), got {background.dtype} "
            f"{background.shape}"
        )
    if not 1 <= k <= len(background) + 1:
        raise ValueError(
            f"k must be in [1, {len(background) + 1}] for {len(background)} background faces, got {k}"
        )
    rgb = background if background.ndim == 4 else np.repeat(background[..., None], 3, axis=3)
    grey = np.stack([cv2.cvtColor(np.ascontiguousarray(face), cv2.COLOR_RGB2GRAY) for face in rgb]).astype(
        np.float64
    )
    patch = frame_rgb[y1:y2, x1:x2]
    probe = cv2.cvtColor(
        cv2.resize(patch, (grey.shape[2], grey.shape[1]), interpolation=cv2.INTER_AREA), cv2.COLOR_RGB2GRAY
    ).astype(np.float64)
    nearest = np.argsort(np.linalg.norm((grey - probe).reshape(len(grey), -1), axis=1), kind="stable")[
        : k - 1
    ]
    total = patch.astype(np.float64)
    for i in nearest:
        total += cv2.resize(np.ascontiguousarray(rgb[i]), (x2 - x1, y2 - y1), interpolation=cv2.INTER_LINEAR)
    out = frame_rgb.copy()
    out[y1:y2, x1:x2] = np.clip(np.rint(total / k), 0, 255).astype(np.uint8)
    return out


def _frame_rng(context: FrameContext) -> np.random.Generator:
    return frame_rng(context.key, context.video_nonce, context.frame_index)


@dataclass(frozen=True)
class FrameContext:
    """What a baseline method may use for one frame.

    Attributes
    ----------
    frame_index : int
    box_xyxy : ndarray of shape (4,) or None
        The face box in pixels (None when the method does not need it).
    eyes_xy : ndarray of shape (2, 2) or None
        Eye centres in pixels, when known.
    key : bytes
        AES key of the video (keyed methods).
    video_nonce : bytes
        8 bytes unique per (key, video), the first half of every ``frame_nonce``.
    """

    frame_index: int
    box_xyxy: np.ndarray | None = None
    eyes_xy: np.ndarray | None = None
    key: bytes = bytes(32)
    video_nonce: bytes = bytes(8)


@dataclass(frozen=True)
class BaselineMethod:
    """A named baseline: ``apply(frame_rgb, context) -> frame_rgb``; ``needs_face`` if it masks the face region."""

    name: str
    description: str
    needs_face: bool
    apply: Callable[[np.ndarray, FrameContext], np.ndarray]


def _region(frame_rgb: np.ndarray, context: FrameContext):
    return face_region(context.box_xyxy, (frame_rgb.shape[1], frame_rgb.shape[0]))


BASELINE_METHODS: dict[str, BaselineMethod] = {
    method.name: method
    for method in (
        BaselineMethod("identity", "unmasked frames (worst case)", False, lambda f, c: identity(f)),
        BaselineMethod(
            "blur_face",
            "Gaussian blur sigma=15 px on the face region",
            True,
            lambda f, c: blur_face(f, _region(f, c)),
        ),
        BaselineMethod(
            "blur_frame", "Gaussian blur sigma=15 px on the whole frame", False, lambda f, c: blur_frame(f)
        ),
        BaselineMethod(
            "pixelate_face",
            "16 px pixelation of the face region",
            True,
            lambda f, c: pixelate_face(f, _region(f, c)),
        ),
        BaselineMethod(
            "eye_mask",
            "black strip over the eyes (0.625 of face height)",
            True,
            lambda f, c: eye_mask(f, c.box_xyxy, c.eyes_xy),
        ),
        BaselineMethod(
            "block_permute_fixed",
            "8x8-cell permutation of the face region, one key and permutation for all frames and videos",
            True,
            lambda f, c: grid_permute(f, _region(f, c), key=c.key),
        ),
        BaselineMethod(
            "block_permute_keyed",
            "16 px AES-CTR block permutation of the face region, fresh nonce per frame",
            True,
            lambda f, c: block_permute(
                f, _region(f, c), key=c.key, nonce=frame_nonce(c.frame_index, c.video_nonce)
            ),
        ),
        BaselineMethod("canny", "Canny edge map of the whole frame", False, lambda f, c: canny_edges(f)),
        BaselineMethod(
            "k_same_pixel",
            "k-Same-Pixel k=10: face averaged with its 9 nearest LFW background faces",
            True,
            lambda f, c: k_same_pixel(f, _region(f, c)),
        ),
        BaselineMethod(
            "dp_pix",
            "DP-Pix epsilon=2, 12 px cells, m=16: cell means + Laplace noise (b=14.2)",
            True,
            lambda f, c: dp_pix(f, _region(f, c), rng=_frame_rng(c)),
        ),
        BaselineMethod(
            "dp_snow",
            "DP-Snow d=0.01: 99% of the face pixels replaced by grey",
            True,
            lambda f, c: dp_snow(f, _region(f, c), rng=_frame_rng(c)),
        ),
        BaselineMethod(
            "dp_samp",
            "DP-Samp epsilon=5, k=24, m=12: DP pixel sampling per colour cluster, interpolated",
            True,
            lambda f, c: dp_samp(f, _region(f, c), rng=_frame_rng(c)),
        ),
        BaselineMethod(
            "k_rtio",
            "k-RTIO alpha=0.4, 18 px blocks, k=3: block-permuted overlays, fresh per frame",
            True,
            lambda f, c: k_rtio(f, _region(f, c), key=c.key, nonce=frame_nonce(c.frame_index, c.video_nonce)),
        ),
    )
}


def face_track(video_path, *, detector=None) -> tuple[np.ndarray, np.ndarray]:
    """Largest face box and eye centres in every frame, gaps filled from neighbours.

    A frame where the detector finds no face takes the box of the nearest earlier frame
    with one, or, before the first detection, of the first later frame with one: a
    masking baseline must never leave a face bare because the detector blinked.

    Parameters
    ----------
    video_path : path-like
    detector : MediaPipeFaceDetector, optional
        Default: a new ``MediaPipeFaceDetector()`` (its keypoints give the eyes).

    Returns
    -------
    boxes_xyxy : ndarray of shape (n_frames, 4), float32
    eyes_xy : ndarray of shape (n_frames, 2, 2), float32
        NaN where the detector gives no keypoints (e.g. dlib HOG).

    Raises
    ------
    NoFaceInVideoError
        If no frame of the video has a face.
    """
    own = detector is None
    detector = MediaPipeFaceDetector() if own else detector
    boxes, eyes = [], []
    try:
        for frame_index, frame_rgb in iter_frames(video_path):
            detections = detector.detect(frame_rgb, frame_index)
            box = largest_face(detections)
            boxes.append(box if box is not None else np.full(4, np.nan, np.float32))
            keypoints = getattr(detector, "last_keypoints_xy", None)
            if box is not None and keypoints is not None and len(keypoints) == len(detections):
                areas = np.prod(detections.boxes_xyxy[:, 2:] - detections.boxes_xyxy[:, :2], axis=1)
                eyes.append(keypoints[int(np.argmax(areas)), :2])
            else:
                eyes.append(np.full((2, 2), np.nan, np.float32))
    finally:
        if own:
            detector.close()
    boxes_xyxy = np.asarray(boxes, np.float32).reshape(-1, 4)
    eyes_xy = np.asarray(eyes, np.float32).reshape(-1, 2, 2)
    found = np.flatnonzero(~np.isnan(boxes_xyxy[:, 0]))
    if len(found) == 0:
        raise NoFaceInVideoError(f"{Path(video_path).name}: no face detected in any frame")
    # Nearest earlier detection, else the first later one.
    source = np.maximum.accumulate(np.where(~np.isnan(boxes_xyxy[:, 0]), np.arange(len(boxes_xyxy)), -1))
    source[source < 0] = found[0]
    return boxes_xyxy[source], eyes_xy[source]


def anonymize_video(
    src_path,
    dst_path,
    method: str,
    *,
    key: bytes | None = None,
    video_nonce: bytes | None = None,
    detector=None,
) -> VideoInfo:
    """Apply a baseline method to every frame of a video; write lossless FFV1.

    Frames are streamed (one decoded frame in memory at a time); face-region methods
    first run ``face_track`` over the video (only the boxes are kept).

    Parameters
    ----------
    src_path : path-like
        Clear source video.
    dst_path : path-like
        Output file, ``.mkv`` (FFV1, lossless, RGB).
    method : str
        A key of ``BASELINE_METHODS``.
    key : bytes, optional
        AES key for the block permutations (16, 24 or 32 bytes). Default: 32 fresh random
        bytes from ``os.urandom``, not stored (the permutation cannot be undone).
    video_nonce : bytes, optional
        8 bytes that make this video's per-frame nonces unique under ``key``
        (``frame_nonce``). Default: 8 fresh random bytes, so one key can mask many
        videos; pass a fixed value only to reproduce a masking.
    detector : optional
        Face detector for face-region methods (default MediaPipe).

    Returns
    -------
    VideoInfo
        Of the written file: same frame count, size and fps as the source.

    Raises
    ------
    ValueError
        On an unknown method, a ``dst_path`` not ending in ``.mkv``, or a key or
        video nonce of the wrong length.
    NoFaceInVideoError
        If a face-region method finds no face in the whole video.
    RuntimeError
        If the written video's frame count differs from the source's.
    """
    if method not in BASELINE_METHODS:
        raise ValueError(f"unknown baseline method {method!r}; choose one of {', '.join(BASELINE_METHODS)}")
    dst_path = Path(dst_path)
    if dst_path.suffix.lower() != ".mkv":
        raise ValueError(f"baseline videos are written as lossless FFV1 .mkv, got {dst_path.name}")
    key = os.urandom(32) if key is None else bytes(key)
    if len(key) not in (16, 24, 32):
        raise ValueError(f"AES key must be 16, 24 or 32 bytes, got {len(key)}")
    video_nonce = os.urandom(8) if video_nonce is None else bytes(video_nonce)
    if len(video_nonce) != 8:
        raise ValueError(f"video_nonce must be 8 bytes, got {len(video_nonce)}")
    baseline = BASELINE_METHODS[method]
    source = VideoInfo.from_video_path(src_path)
    boxes = eyes = None
    if baseline.needs_face:
        boxes, eyes = face_track(src_path, detector=detector)
    with VideoWriter(dst_path, source.fps, source.resolution_wh, codec="ffv1") as writer:
        for frame_index, frame_rgb in iter_frames(src_path):
            context = FrameContext(frame_index, key=key, video_nonce=video_nonce)
            if boxes is not None:
                eye_pair = eyes[frame_index]
                context = FrameContext(
                    frame_index,
                    boxes[frame_index],
                    None if np.isnan(eye_pair).any() else eye_pair,
                    key,
                    video_nonce,
                )
            writer.write(baseline.apply(frame_rgb, context))
    written = VideoInfo.from_video_path(dst_path)
    if written.frame_count != source.frame_count:
        raise RuntimeError(
            f"{dst_path.name}: wrote {written.frame_count} frames, source has {source.frame_count}"
        )
    return written
