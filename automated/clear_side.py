"""The clear side of a face evaluation, computed once per source video and kept on disk.

Every submission of a campaign masks the same clear source videos, so the clear half of
``face_eval.evaluate_video`` (face boxes and embeddings of every tested frame) is the
same for all of them. ``ClearSide`` holds it; ``ClearSideStore`` keeps it in memory and
in a cache folder shared by workers, processes and later runs.

A stored entry is keyed by the clear file's content (SHA-256, so a replaced file with the
same name is never reused) and every setting that changes it: stride, the detector and
its parameters (``detection.detector_key``), the embedder (its ``cache_key``) and the
format version. Files are written atomically (``cache_files.save_npz``: temporary file +
``os.replace``), so a worker killed mid-write leaves no half entry, and an unreadable
entry is recomputed, not trusted.
"""

from __future__ import annotations

import hashlib
import logging
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .cache_files import save_npz, settings_token
from .detection import detector_key

logger = logging.getLogger(__name__)
FORMAT_VERSION = 1
_HASHES: dict = {}  # (path, size, mtime_ns) -> SHA-256 hex of the file's bytes


class Stopwatch:
    """Accumulates CPU seconds per stage into a caller's dict (for the benchmarks).

    ``time.process_time`` (CPU time of this process) rather than wall time, so that other
    processes on a shared machine do not inflate the figures.
    """

    def __init__(self, into: dict | None):
        self.into = into

    def add(self, stage: str, since: float) -> float:
        now = time.process_time()
        if self.into is not None:
            self.into[stage] = self.into.get(stage, 0.0) + now - since
        return now


def file_sha256(path) -> str:
    """SHA-256 hex digest of a file's bytes, memoised per (path, size, mtime) in this process."""
    path = Path(path).resolve()
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key not in _HASHES:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        _HASHES[key] = digest.hexdigest()
    return _HASHES[key]


def embedder_key(embedder) -> str:
    """The embedder's ``cache_key()``, or its class name for an embedder without one."""
    return embedder.cache_key() if hasattr(embedder, "cache_key") else type(embedder).__qualname__


def clear_side_key(clear_path, *, stride: int, detector, embedder) -> str:
    """Cache key (hex token) of a clear video's analysis: content hash and every setting."""
    return settings_token(
        "clear-side",
        FORMAT_VERSION,
        file_sha256(clear_path),
        stride,
        detector_key(detector),
        embedder_key(embedder),
    )


@dataclass(frozen=True)
class ClearSide:
    """Faces of every tested frame of a clear video.

    Attributes
    ----------
    frame_indices : ndarray of shape (m,), dtype int64
        The tested frames (0, stride, 2*stride, ...).
    boxes : tuple of m ndarrays of shape (n_t, 4), dtype float32
        Every face detected in tested frame t, ``[x1, y1, x2, y2]`` in pixels.
    embeddings : tuple of m ndarrays of shape (n_t, dim), dtype float32
        Their embeddings (the clear faces, aligned as the embedder does).
    """

    frame_indices: np.ndarray
    boxes: tuple
    embeddings: tuple

    def save(self, path) -> None:
        """Write atomically to ``path`` (.npz): concatenated faces and per-frame counts."""
        dim = self.embeddings[0].shape[1] if self.embeddings else 0
        save_npz(
            path,
            frame_indices=np.asarray(self.frame_indices, np.int64),
            counts=np.asarray([len(b) for b in self.boxes], np.int64),
            boxes=np.concatenate(self.boxes) if self.boxes else np.zeros((0, 4), np.float32),
            embeddings=np.concatenate(self.embeddings) if self.embeddings else np.zeros((0, dim), np.float32),
        )

    @classmethod
    def load(cls, path) -> ClearSide:
        """Read a file written by ``save``.

        Raises
        ------
        ValueError
            If the file is truncated, not an npz of this format, or inconsistent.
        """
        try:
            with np.load(path) as data:
                indices, counts = data["frame_indices"], data["counts"]
                boxes, embeddings = data["boxes"], data["embeddings"]
        except (OSError, KeyError, EOFError, zipfile.BadZipFile) as error:
            raise ValueError(f"{path}: not a readable clear-side cache file ({error})") from error
        if len(indices) != len(counts) or counts.sum() != len(boxes) or len(boxes) != len(embeddings):
            raise ValueError(f"{path}: inconsistent clear-side cache file")
        splits = np.cumsum(counts)[:-1]
        return cls(
            indices,
            tuple(np.split(boxes.astype(np.float32), splits)),
            tuple(np.split(embeddings.astype(np.float32), splits)),
        )


class ClearSideStore:
    """Clear-side analyses in memory and, optionally, in a cache folder on disk.

    Parameters
    ----------
    memory : dict, optional
        In-process entries by key (the caller owns and bounds it).
    folder : path-like, optional
        Cache folder shared by processes and machines (one ``<key>.npz`` per entry).
    """

    def __init__(self, memory: dict | None = None, folder=None):
        self.memory = memory
        self.folder = Path(folder) if folder is not None else None

    def _path(self, key: str) -> Path:
        return self.folder / f"clear_side_{key}.npz"

    def get(self, key: str) -> ClearSide | None:
        """The entry ``key``, or None (a damaged file counts as missing and is recomputed)."""
        if self.memory is not None and key in self.memory:
            if self.folder is not None and not self._path(key).exists():  # e.g. the folder was emptied
                self.put(key, self.memory[key])
            return self.memory[key]
        if self.folder is None or not self._path(key).exists():
            return None
        try:
            side = ClearSide.load(self._path(key))
        except ValueError:
            return None
        if self.memory is not None:
            self.memory[key] = side
        return side

    def put(self, key: str, side: ClearSide) -> None:
        """Keep ``side`` under ``key`` (atomic file write when there is a folder)."""
        if self.memory is not None:
            self.memory[key] = side
        if self.folder is not None:
            try:
                side.save(self._path(key))
            except OSError as error:  # a full or read-only cache folder costs time, not the result
                logger.warning("clear side not cached in %s: %s", self.folder, error)
