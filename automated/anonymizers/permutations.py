"""Keyed permutations of the baseline anonymizers: AES-CTR keystreams, block and grid shuffles.

PrivHAR-Bench tier 3 (seeds/004, section 2.B): the face region is cut into B x B blocks
permuted by sorting an AES-CTR keystream, with a fresh nonce per frame (``frame_nonce``);
``grid_permute`` is the fixed-permutation variant of seeds/000 (sections 1 and 3).
"""

from __future__ import annotations

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from ..face_boxes import check_frame

BLOCK_PX = 16
GRID_CELLS = 8


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
    check_frame(frame_rgb)
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
    check_frame(frame_rgb)
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


def counter_nonce(nonce: bytes, block: int) -> bytes:
    """``nonce`` with its 4-byte block counter started at ``block * 2**28``.

    Disjoint keystreams under one nonce: k-RTIO draws its overlay choice from block 0 and
    each overlay's permutation from blocks 1, 2, ... (each may use 2**28 AES blocks).

    Parameters
    ----------
    nonce : bytes
        16-byte initial counter block (``frame_nonce``); its first 12 bytes are kept.
    block : int
        In 0 .. 15.

    Returns
    -------
    bytes
        16 bytes.
    """
    return bytes(nonce[:12]) + (block << 28).to_bytes(4, "big")
