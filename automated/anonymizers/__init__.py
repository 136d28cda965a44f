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

Modules, by family (every public name is re-exported here, so
``from automated.anonymizers import X`` works for all of them):

- ``regions``: ``face_region``, ``region_box``, ``FACE_MARGIN``;
- ``filters``: ``identity``, ``blur_frame``, ``blur_face``, ``pixelate_face``,
  ``eye_mask``, ``canny_edges``;
- ``permutations``: AES-CTR keystreams (``keystream_permutation``, ``frame_nonce``,
  ``counter_nonce``), ``block_permute``, ``grid_permute``;
- ``privacy``: differential privacy (``frame_rng``, DP-Pix, DP-Snow, DP-Samp);
- ``kanonymity``: k-Same-Pixel and k-RTIO;
- ``registry``: ``BASELINE_METHODS``, ``FrameContext``, ``BaselineMethod``, the video
  driver ``anonymize_video`` and ``face_track``.
"""

from .filters import (
    blur_face,
    blur_frame,
    BLUR_SIGMA_PX,
    canny_edges,
    CANNY_THRESHOLDS,
    eye_mask,
    EYE_STRIP_FRACTION,
    identity,
    PIXELATE_CELL_PX,
    pixelate_face,
)
from .kanonymity import (
    default_background_faces,
    k_rtio,
    K_RTIO_ALPHA,
    K_RTIO_BLOCK_PX,
    K_RTIO_K,
    K_RTIO_OVERLAYS,
    K_SAME_K,
    k_same_pixel,
    rtio_overlays,
)
from .permutations import (
    block_permute,
    BLOCK_PX,
    counter_nonce,
    frame_nonce,
    GRID_CELLS,
    grid_permute,
    keystream_permutation,
)
from .privacy import (
    dp_pix,
    DP_PIX_CELL_PX,
    DP_PIX_EPSILON,
    DP_PIX_M,
    dp_pix_scale,
    dp_samp,
    dp_samp_counts,
    DP_SAMP_EPSILON,
    DP_SAMP_K,
    DP_SAMP_M,
    dp_samp_pixels,
    dp_snow,
    DP_SNOW_DELTA,
    frame_rng,
    SNOW_GREY,
)
from .regions import (
    FACE_MARGIN,
    face_region,
    region_box,
)
from .registry import (
    anonymize_video,
    BASELINE_METHODS,
    BaselineMethod,
    face_track,
    FrameContext,
    NoFaceInVideoError,
)

__all__ = [
    "BASELINE_METHODS",
    "BLOCK_PX",
    "BLUR_SIGMA_PX",
    "BaselineMethod",
    "CANNY_THRESHOLDS",
    "DP_PIX_CELL_PX",
    "DP_PIX_EPSILON",
    "DP_PIX_M",
    "DP_SAMP_EPSILON",
    "DP_SAMP_K",
    "DP_SAMP_M",
    "DP_SNOW_DELTA",
    "EYE_STRIP_FRACTION",
    "FACE_MARGIN",
    "FrameContext",
    "GRID_CELLS",
    "K_RTIO_ALPHA",
    "K_RTIO_BLOCK_PX",
    "K_RTIO_K",
    "K_RTIO_OVERLAYS",
    "K_SAME_K",
    "NoFaceInVideoError",
    "PIXELATE_CELL_PX",
    "SNOW_GREY",
    "anonymize_video",
    "block_permute",
    "blur_face",
    "blur_frame",
    "canny_edges",
    "counter_nonce",
    "default_background_faces",
    "dp_pix",
    "dp_pix_scale",
    "dp_samp",
    "dp_samp_counts",
    "dp_samp_pixels",
    "dp_snow",
    "eye_mask",
    "face_region",
    "face_track",
    "frame_nonce",
    "frame_rng",
    "grid_permute",
    "identity",
    "k_rtio",
    "k_same_pixel",
    "keystream_permutation",
    "pixelate_face",
    "region_box",
    "rtio_overlays",
]
