"""k-anonymity-style face anonymizations of seeds/000 section 5.6.1: k-Same-Pixel and k-RTIO.

k-Same-Pixel k = 10 (Newton et al. 2005; background faces from scikit-image's LFW subset);
k-RTIO alpha = 0.4, blocksize = 18, k = 3 (Rajabi et al. 2021; overlays: natural images
shipped in scikit-image), its randomness from AES-CTR keystreams (``permutations``).
"""

from __future__ import annotations

import functools

import cv2
import numpy as np

from .permutations import counter_nonce, keystream_permutation
from .regions import region_box

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
    x1, y1, x2, y2 = region_box(frame_rgb, region_xyxy)
    overlays = rtio_overlays() if overlays is None else tuple(overlays)
    if not 0.0 <= alpha <= 1.0 or block_px < 1 or not 1 <= k <= min(15, len(overlays)):
        raise ValueError(
            f"k-RTIO needs alpha in [0, 1], block_px >= 1 and 1 <= k <= {min(15, len(overlays))}; "
            f"got {alpha}, {block_px}, {k}"
        )
    height, width = y2 - y1, x2 - x1
    rows, cols = -(-height // block_px), -(-width // block_px)
    mixed = np.zeros((height, width, 3), np.float64)
    for j, index in enumerate(keystream_permutation(len(overlays), key, counter_nonce(nonce, 0))[:k]):
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
        blocks = blocks[keystream_permutation(rows * cols, key, counter_nonce(nonce, j + 1))]
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
    x1, y1, x2, y2 = region_box(frame_rgb, region_xyxy)
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
