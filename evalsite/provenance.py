"""What a result was computed with: code version, package versions, model files' hashes.

Used by the results package (``evalsite.portal.package``) and by anything that records
provenance beside results. Every model file the automated evaluation can load is listed
with its SHA-256: the weights shipped inside ``face-recognition-models`` (dlib), the
face-classification models in ``DEID_MODELS_DIR`` and, when placed, the InsightFace
packs there too (DESIGN.md: models are loaded offline from packages or that folder).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import platform
import subprocess
from pathlib import Path

from django.conf import settings

from automated.models_dir import default_models_dir

#: Packages whose versions decide results (the science stack and the model carriers).
PACKAGES = (
    "deid-eval",
    "django",
    "numpy",
    "scipy",
    "pandas",
    "scikit-learn",
    "opencv-contrib-python",
    "mediapipe",
    "dlib",
    "face-recognition-models",
    "torch",
    "onnxruntime",
)
#: Python packages that carry model weights inside them: (distribution, module) pairs.
MODEL_PACKAGES = (("face-recognition-models", "face_recognition_models"),)
CHUNK = 1024 * 1024


def sha256_of(handle) -> str:
    """SHA-256 (hex) of an open binary file, read in 1 MiB chunks from its start."""
    digest = hashlib.sha256()
    handle.seek(0)
    for chunk in iter(lambda: handle.read(CHUNK), b""):
        digest.update(chunk)
    return digest.hexdigest()


def stored_sha256(field_file) -> str:
    """SHA-256 (hex) of a stored file (a ``FieldFile``), read through its storage."""
    with field_file.storage.open(field_file.name, "rb") as handle:
        return sha256_of(handle)


@functools.cache
def _path_sha256(path: str, size: int, mtime_ns: int) -> str:
    with open(path, "rb") as handle:
        return sha256_of(handle)


def path_sha256(path) -> str:
    """SHA-256 (hex) of a local file; cached per process while its size and time stay the same."""
    stat = Path(path).stat()
    return _path_sha256(str(path), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """``git describe --always --dirty --tags`` of the checkout, else ``deid-eval <version>``
    (an installed package without its repository). Read once per process (a deployed
    process runs one version)."""
    try:
        described = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--tags"],
            cwd=settings.BASE_DIR,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        described = ""
    if described:
        return f"git {described}"
    return f"deid-eval {_version('deid-eval') or 'unknown'}"


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def package_versions() -> dict[str, str | None]:
    """Installed version of each of :data:`PACKAGES` (None: not installed), plus Python's."""
    return {"python": platform.python_version(), **{name: _version(name) for name in PACKAGES}}


def model_files() -> list[dict]:
    """Every model file the automated evaluation may load, with its size and SHA-256.

    Returns
    -------
    list of dict
        ``{"source", "file", "bytes", "sha256"}``: ``source`` is the package (with its
        version) or ``DEID_MODELS_DIR``; ``file`` the path inside it. Sorted by source and
        file. Licence and notes files (``.md``, ``.txt``, ``LICENSE``) are left out.
    """
    found = []
    for distribution, module in MODEL_PACKAGES:
        spec = importlib.util.find_spec(module)
        if spec is None or not spec.submodule_search_locations:
            continue
        root = Path(next(iter(spec.submodule_search_locations)))
        found += _files(root, f"{distribution} {_version(distribution)}")
    models_dir = default_models_dir()
    if models_dir.is_dir():
        found += _files(models_dir, "DEID_MODELS_DIR")
    return sorted(found, key=lambda f: (f["source"], f["file"]))


def _files(root: Path, source: str) -> list[dict]:
    skip = {".py", ".pyc", ".md", ".txt", ".typed"}
    rows = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.suffix.lower() in skip or path.name.upper().startswith("LICENSE"):
            continue
        if "__pycache__" in path.parts:
            continue
        rows.append(
            {
                "source": source,
                "file": path.relative_to(root).as_posix(),
                "bytes": path.stat().st_size,
                "sha256": path_sha256(path),
            }
        )
    return rows


def provenance() -> dict:
    """``{"code_version", "packages", "models"}`` (:func:`code_version`, :func:`package_versions`,
    :func:`model_files`)."""
    return {"code_version": code_version(), "packages": package_versions(), "models": model_files()}
