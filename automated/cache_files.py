"""Atomic writes of cache files: a reader sees the old file or the whole new one, never half.

Caches (attack face crops, embeddings, pose series) live in folders shared by worker
processes, and by machines when the folder is on shared storage. Each file is written
under a temporary name in the same folder and then renamed over its target:
``os.replace`` is atomic within one filesystem (POSIX ``rename(2)``), so a concurrent
reader never opens a partly written file, and two writers of the same entry leave one
whole copy.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path

import numpy as np


@contextlib.contextmanager
def atomic_file(path, *, shared: bool = False):
    """Yield a binary handle whose bytes appear at ``path`` only once it is closed whole.

    The folder is created if missing. On an exception the temporary file is removed and
    ``path`` is left as it was.

    Parameters
    ----------
    path : path-like
        The final file.
    shared : bool, default=False
        False: readable by the owner only (``mkstemp``'s 0600: caches hold face crops and
        embeddings). True: the mode ``open()`` gives (0666 less the process's umask), for
        reports that sit beside files written the ordinary way.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, partial = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        if shared:
            os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(partial)
        raise


def _umask() -> int:
    """The process's umask, read without changing it where Linux shows it (``os.umask`` sets
    it while reading: another thread creating a file meanwhile would get the wrong mode)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def save_npz(path, *, compressed: bool = True, **arrays) -> None:
    """``numpy.savez[_compressed](path, **arrays)``, atomically (see ``atomic_file``)."""
    with atomic_file(path) as handle:
        (np.savez_compressed if compressed else np.savez)(handle, **arrays)


def save_npy(path, array) -> None:
    """``numpy.save(path, array)``, atomically (see ``atomic_file``)."""
    with atomic_file(path) as handle:
        np.save(handle, np.asarray(array))


def settings_token(*parts) -> str:
    """A short hex token (SHA-256, 16 hex digits) of every setting that changes a cached result.

    Used in cache file names so that a changed detector, detector parameter, embedder or
    library version never reuses an entry computed with other settings.
    """
    return hashlib.sha256("|".join(str(p) for p in parts).encode()).hexdigest()[:16]
