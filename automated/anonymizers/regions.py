"""Face regions of the baseline anonymizers: the detector box enlarged, and a region check.

Face region: the face detector's box enlarged by ``FACE_MARGIN`` of its size on each side
(detector boxes cut the forehead and chin), clipped to the frame.
"""

from __future__ import annotations

import numpy as np

from ..face_boxes import check_frame

FACE_MARGIN = 0.2


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


def region_box(frame_rgb: np.ndarray, region_xyxy) -> tuple[int, int, int, int]:
    """Check a frame and a region inside it; return the region as four ints.

    Parameters
    ----------
    frame_rgb : ndarray of shape (height, width, 3), dtype uint8
    region_xyxy : 4 numbers (x1, y1, x2, y2), pixels

    Returns
    -------
    tuple of int (x1, y1, x2, y2)

    Raises
    ------
    ValueError
        On a bad frame (``face_boxes.check_frame``), or a region that is empty or leaves
        the frame.
    """
    check_frame(frame_rgb)
    x1, y1, x2, y2 = (int(v) for v in region_xyxy)
    height, width = frame_rgb.shape[:2]
    if not (0 <= x1 < x2 <= width and 0 <= y1 < y2 <= height):
        raise ValueError(f"region {[x1, y1, x2, y2]} is empty or outside the {width}x{height} frame")
    return x1, y1, x2, y2
