"""What raters' browsers receive as media: face crops, web videos, and range responses.

- Gallery faces are cropped to the internal face at one size (MediaEval 2021 protocol,
  ``../shared/seeds/002_68b18bfdbdb94491.txt``, section 4.2: "cropped to show only the
  internal face, so that identification cannot be based on peripheral face cues such as
  hair style") with ``automated.face_crop``, then everything outside one fixed oval is
  painted flat grey (the square detector crop still shows hair at the sides, ears,
  collars and the studio background in the corners), and written as fresh PNGs, so no
  EXIF or text chunk of the upload survives.
- Videos are transcoded once to H.264 MP4 with ``automated.video.transcode_for_web``
  (metadata stripped) and cached in the catalogue's ``web_file``.
- :func:`ranged_file_response` answers HTTP Range requests (RFC 9110, section 14) so the
  video can seek and replay in every browser.
"""
from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import cv2
import numpy as np
from django.conf import settings
from django.core.files import File
from django.core.files.base import ContentFile
from django.http import HttpResponse, StreamingHttpResponse

from automated.face_crop import NoFaceFoundError, crop_internal_face, detect_and_crop_face
from automated.video import transcode_for_web

from .models import GalleryCrop


#: Grey level (0-255) painted outside the face oval.
OVAL_GREY = 128
#: Oval semi-axes as fractions of the crop side: the detector square spans cheek to cheek
#: and brows to chin, so the oval keeps that and drops the corners and side edges.
OVAL_SEMI_AXES = (0.38, 0.49)


def crop_size_px() -> int:
    """Side in pixels of every face crop raters see (``TRIALS_FACE_SIZE_PX``, default 160)."""
    return int(getattr(settings, "TRIALS_FACE_SIZE_PX", 160))


def oval_mask(crop_rgb: np.ndarray) -> np.ndarray:
    """Paint everything outside the centred face oval :data:`OVAL_GREY` (anti-aliased edge).

    Parameters
    ----------
    crop_rgb : ndarray of shape (size, size, 3), dtype uint8
        A square internal-face crop.

    Returns
    -------
    ndarray of shape (size, size, 3), dtype uint8
    """
    size = crop_rgb.shape[0]
    mask = np.zeros(crop_rgb.shape[:2], np.uint8)
    axes = (int(round(size * OVAL_SEMI_AXES[0])), int(round(size * OVAL_SEMI_AXES[1])))
    cv2.ellipse(mask, (size // 2, size // 2), axes, 0, 0, 360, 255, -1, cv2.LINE_AA)
    alpha = mask[..., None].astype(np.float32) / 255.0
    blended = crop_rgb.astype(np.float32) * alpha + OVAL_GREY * (1.0 - alpha)
    return np.round(blended).astype(np.uint8)


def read_image_rgb(path) -> np.ndarray:
    """Read any image OpenCV decodes (PGM, PNG, JPEG ...) as RGB uint8 (height, width, 3).

    Raises
    ------
    ValueError
        If the file cannot be decoded as an image.
    """
    data = np.fromfile(str(path), dtype=np.uint8)
    image = cv2.imdecode(data, cv2.IMREAD_COLOR)
    if image is None:
        raise ValueError(f"not a readable image: {Path(path).name}")
    return cv2.cvtColor(image, cv2.COLOR_BGR2RGB)


def face_crop_png(image_rgb: np.ndarray, *, size_px: int) -> bytes:
    """The oval internal-face crop of a still as PNG bytes without metadata.

    A still in which no detector finds a face (e.g. a tight 92x112 ORL face, already
    internal) is cropped around its centre square, which is what the detector box would be.

    Parameters
    ----------
    image_rgb : ndarray of shape (height, width, 3), dtype uint8, RGB
    size_px : int
        Side of the square crop in pixels.

    Returns
    -------
    bytes
        PNG of a ``size_px`` x ``size_px`` RGB image, grey outside the face oval
        (:func:`oval_mask`).

    Raises
    ------
    ValueError
        If the image is not uint8 RGB or PNG encoding fails.
    """
    try:
        crop_rgb = detect_and_crop_face(image_rgb, size_px=size_px)
    except NoFaceFoundError:
        height, width = image_rgb.shape[:2]
        crop_rgb = crop_internal_face(image_rgb, [0, 0, width, height], size_px=size_px)
    ok, encoded = cv2.imencode(".png", cv2.cvtColor(oval_mask(crop_rgb), cv2.COLOR_RGB2BGR))
    if not ok:
        raise ValueError("PNG encoding of the face crop failed")
    return encoded.tobytes()


def ensure_gallery_crop(gallery_image) -> GalleryCrop:
    """Create (once) the rater-facing crop of a gallery image.

    A crop of another size or an older :attr:`GalleryCrop.version` is replaced (row and
    file), so a changed crop style reaches raters without manual clean-up.
    """
    size_px = crop_size_px()
    version = GalleryCrop.CURRENT_VERSION
    existing = GalleryCrop.objects.filter(gallery_image=gallery_image).first()
    if existing is not None and (existing.size_px, existing.version) == (size_px, version):
        return existing
    if existing is not None:
        existing.file.delete(save=False)
        existing.delete()
    png = face_crop_png(read_image_rgb(gallery_image.image.path), size_px=size_px)
    crop = GalleryCrop(gallery_image=gallery_image, size_px=size_px, version=version)
    crop.file.save("crop.png", ContentFile(png), save=True)
    return crop


def ensure_web_file(video) -> None:
    """Transcode a SourceVideo or MaskedVideo to H.264 MP4 once (``video.web_file``)."""
    if video.web_file and video.web_file.storage.exists(video.web_file.name):
        return
    with tempfile.TemporaryDirectory() as tmp:
        out = transcode_for_web(video.file.path, Path(tmp) / "web.mp4")
        with open(out, "rb") as handle:
            video.web_file.save("web.mp4", File(handle), save=False)
    type(video).objects.filter(pk=video.pk).update(web_file=video.web_file.name)


_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


def parse_range(header: str, size: int) -> tuple[int, int] | None:
    """Parse a single-range ``Range`` header into inclusive ``(start, end)`` byte offsets.

    Returns None for a header we do not honour (multiple ranges, other units: the full
    file is sent with 200, which RFC 9110 allows).

    Raises
    ------
    ValueError
        If the range is syntactically valid but not satisfiable (answer 416).
    """
    match = _RANGE.match(header.strip().replace(" ", ""))
    if match is None:
        return None
    first, last = match.groups()
    if first == "" and last == "":
        return None
    if first == "":  # suffix range: the last N bytes
        length = int(last)
        if length == 0:
            raise ValueError("empty suffix range")
        return max(size - length, 0), size - 1
    start = int(first)
    end = size - 1 if last == "" else min(int(last), size - 1)
    if start >= size or end < start:
        raise ValueError(f"range {header!r} not satisfiable for {size} bytes")
    return start, end


def _iter_file(path, start: int, length: int, chunk: int = 64 * 1024):
    with open(path, "rb") as handle:
        handle.seek(start)
        remaining = length
        while remaining > 0:
            data = handle.read(min(chunk, remaining))
            if not data:
                break
            remaining -= len(data)
            yield data


def ranged_file_response(request, path, content_type: str) -> HttpResponse:
    """Serve ``path`` with Range support: 206 + Content-Range for a range, else 200.

    No file name is sent (no Content-Disposition) and responses are private, uncached.
    """
    size = os.path.getsize(path)
    header = request.headers.get("Range", "")
    try:
        byte_range = parse_range(header, size) if header else None
    except ValueError:
        response = HttpResponse(status=416)
        response["Content-Range"] = f"bytes */{size}"
        return _private(response)
    if byte_range is None:
        # Not FileResponse: it would send the stored file name in Content-Disposition.
        response = StreamingHttpResponse(_iter_file(path, 0, size), content_type=content_type)
        response["Content-Length"] = str(size)
    else:
        start, end = byte_range
        response = StreamingHttpResponse(
            _iter_file(path, start, end - start + 1), status=206, content_type=content_type
        )
        response["Content-Range"] = f"bytes {start}-{end}/{size}"
        response["Content-Length"] = str(end - start + 1)
    response["Accept-Ranges"] = "bytes"
    return _private(response)


def _private(response: HttpResponse) -> HttpResponse:
    response["Cache-Control"] = "private, no-store"
    response["X-Content-Type-Options"] = "nosniff"
    return response
