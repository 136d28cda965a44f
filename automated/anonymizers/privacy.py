"""Differentially private face anonymizations of seeds/000 section 5.6.1: DP-Pix, DP-Snow, DP-Samp.

Parameters as cited there: DP-Pix epsilon = 2, b = 12, m = 16 (Fan 2018); DP-Snow
d = 0.01 (John et al. 2020); DP-Samp epsilon = 5, k = 24, m = 12 (Reilly and Fan 2021).
Their randomness comes from the video's key (``frame_rng``), fresh per frame.
"""

from __future__ import annotations

import hashlib

import numpy as np

from .regions import region_box

#: DP-Pix (Fan 2018): epsilon, cell side b in pixels, m pixels that may differ.
DP_PIX_EPSILON, DP_PIX_CELL_PX, DP_PIX_M = 2.0, 12, 16
#: DP-Snow (John et al. 2020): share d of the face's pixels kept; the rest turn grey.
DP_SNOW_DELTA, SNOW_GREY = 0.01, 127
#: DP-Samp (Reilly and Fan 2021): epsilon, k-means clusters, m pixels that may differ.
DP_SAMP_EPSILON, DP_SAMP_K, DP_SAMP_M = 5.0, 24, 12


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
    x1, y1, x2, y2 = region_box(frame_rgb, region_xyxy)
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
    x1, y1, x2, y2 = region_box(frame_rgb, region_xyxy)
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

    x1, y1, x2, y2 = region_box(frame_rgb, region_xyxy)
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

    grid = np.mgrid[0 : shape_hw[0], 0 : shape_hw[1]].reshape(2, -1).T  # (h * w, 2): row, column
    try:
        rebuilt = griddata(points, colours, grid, method="linear")
    except (QhullError, ValueError):  # fewer than 3 samples or all on a line: nearest only
        rebuilt = np.full((len(grid), colours.shape[1]), np.nan)
    # The nearest sample only where the linear one is undefined (outside the hull): the
    # same pixels as interpolating the whole grid both ways, a third less CPU per frame.
    outside = np.isnan(rebuilt).any(axis=1)
    if outside.any():
        rebuilt[outside] = griddata(points, colours, grid[outside], method="nearest")
    return np.clip(np.rint(rebuilt), 0, 255).astype(np.uint8).reshape(*shape_hw, colours.shape[1])
