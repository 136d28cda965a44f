"""Per-trial byte variants of faces and videos, so no file is its own answer key.

A face crop or video served with fixed bytes lets a cheating rater (or a bot across
throw-away sessions) learn answers by file size or hash. Every medium is therefore served
as a variant derived from the trial's (or face's) opaque token:

- PNG faces: re-encoded with invisible noise (a random half of the pixels moved by one
  grey level, at most 1/255 per channel) and a private ancillary padding chunk
  (``paDd``, ignored by decoders, PNG 1.2 section 4.4) of random length and content.
- MP4 videos: a top-level ``free`` box (ISO/IEC 14496-12, section 8.1.2: "free space",
  its contents irrelevant and ignored) of random length and content right after ``ftyp``,
  with every chunk offset (``stco`` / ``co64``) moved by its length, so the file still
  plays and seeks and no byte range from the start on is the same as in another trial.
  Catch-trial probes are also padded to at least a size drawn from the campaign's
  evaluated videos (:func:`size_floor`), so a size threshold does not tell them apart.

The variant is a pure function of the token (seeded by the server's secret key), so a
reload and every Range request of one trial see the same bytes. Nothing in a variant
carries the answer: the padding is random bytes.
"""

from __future__ import annotations

import hashlib
import random
import struct
import zlib

import cv2
import numpy as np
from django.conf import settings
from django.http import HttpResponse, StreamingHttpResponse

from .media import _private, not_prepared_response, parse_range

#: Random padding length range (bytes) of a PNG chunk or MP4 free box.
PADDING_BYTES = (16, 4096)

_CONTAINERS = {b"moov", b"trak", b"mdia", b"minf", b"stbl", b"edts", b"dinf"}


def variant_rng(token: str) -> random.Random:
    """The random source of a token's variant: secret, stable for that token."""
    digest = hashlib.sha256(f"{settings.SECRET_KEY}:media-variant:{token}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _padding(rng: random.Random) -> bytes:
    return rng.randbytes(rng.randint(*PADDING_BYTES))


def png_variant(png: bytes, token: str) -> bytes:
    """The PNG re-encoded with one-grey-level noise and a random padding chunk.

    Parameters
    ----------
    png : bytes
        A PNG (the rater crop of a gallery face).
    token : str
        The face's opaque token (seeds the noise and padding).

    Returns
    -------
    bytes
        A PNG of the same size in pixels whose every pixel differs from ``png`` by at
        most 1 per channel, and whose length and hash differ from any other token's.

    Raises
    ------
    ValueError
        If ``png`` does not decode.
    """
    rng = variant_rng(token)
    image = cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_COLOR)
    if image is None:
        raise ValueError("not a decodable PNG")
    noise_rng = np.random.default_rng(rng.getrandbits(64))
    noise = noise_rng.integers(-1, 2, size=image.shape[:2], dtype=np.int16)[..., None]
    noisy = np.clip(image.astype(np.int16) + noise, 0, 255).astype(np.uint8)
    ok, encoded = cv2.imencode(".png", noisy, [cv2.IMWRITE_PNG_COMPRESSION, rng.randint(1, 9)])
    if not ok:
        raise ValueError("PNG encoding failed")
    data = encoded.tobytes()
    iend = data.rfind(b"IEND") - 4  # the IEND chunk starts with its 4-byte length
    payload = _padding(rng)
    chunk = struct.pack(">I", len(payload)) + b"paDd" + payload
    chunk += struct.pack(">I", zlib.crc32(b"paDd" + payload) & 0xFFFFFFFF)
    return data[:iend] + chunk + data[iend:]


def _boxes(data: bytes | memoryview, start: int, end: int):
    """``(type, offset, header_size, size)`` of the boxes in ``data[start:end]``."""
    offset = start
    while offset + 8 <= end:
        size, kind = struct.unpack_from(">I4s", data, offset)
        header = 8
        if size == 1:
            (size,) = struct.unpack_from(">Q", data, offset + 8)
            header = 16
        elif size == 0:
            size = end - offset
        if size < header or offset + size > end:
            raise ValueError(f"damaged MP4 box {kind!r} at byte {offset}")
        yield kind, offset, header, size
        offset += size


def _shift_chunk_offsets(moov: bytearray, delta: int) -> None:
    """Add ``delta`` to every ``stco``/``co64`` entry inside ``moov`` (in place)."""

    def walk(start: int, end: int) -> None:
        for kind, offset, header, size in list(_boxes(moov, start, end)):
            body = offset + header
            if kind in _CONTAINERS:
                walk(body, offset + size)
            elif kind in (b"stco", b"co64"):
                (count,) = struct.unpack_from(">I", moov, body + 4)
                fmt, width = (">I", 4) if kind == b"stco" else (">Q", 8)
                for i in range(count):
                    at = body + 8 + i * width
                    (value,) = struct.unpack_from(fmt, moov, at)
                    if kind == b"stco" and value + delta >= 2**32:
                        raise ValueError("chunk offset overflows stco")
                    struct.pack_into(fmt, moov, at, value + delta)

    walk(8, len(moov))


def mp4_variant(path, token: str, *, min_size: int = 0) -> tuple[list, int]:
    """The spans of the token's variant of an MP4 file: ``ftyp``, a random ``free`` box,
    the ``moov`` with shifted chunk offsets, then the rest of the file unchanged.

    Parameters
    ----------
    path : path-like
        An MP4 (ISO base media) file, e.g. a ``web_file`` from ``transcode_for_web``.
    token : str
        The trial's media token.
    min_size : int
        The variant is padded (a longer ``free`` box) to at least this many bytes
        (:func:`size_floor`: a size drawn from the campaign's evaluated videos).

    Returns
    -------
    spans : list
        Each ``bytes`` (served as is) or ``(offset, length)`` (a byte range of ``path``).
    size : int
        Total length in bytes.

    Raises
    ------
    ValueError
        If the file is not an MP4 starting with ``ftyp`` or has a damaged box.
    FileNotFoundError
        If ``path`` does not exist.
    """
    rng = variant_rng(token)
    with open(path, "rb") as handle:
        data = handle.read()  # web copies are small (seconds of H.264); moov must be read anyway
    boxes = list(_boxes(data, 0, len(data)))
    if not boxes or boxes[0][0] != b"ftyp":
        raise ValueError("not an MP4 file (no leading ftyp box)")
    payload = _padding(rng)
    short = min_size - (len(data) + 8 + len(payload))
    if short > 0:
        payload += rng.randbytes(short)
    free = struct.pack(">I4s", 8 + len(payload), b"free") + payload
    spans: list = []
    for kind, offset, _, size in boxes:
        if kind == b"moov":
            moov = bytearray(data[offset : offset + size])
            _shift_chunk_offsets(moov, len(free))
            spans.append(bytes(moov))
        else:
            spans.append((offset, size))
        if kind == b"ftyp":
            spans.append(free)
    return spans, len(data) + len(free)


def size_floor(campaign, token: str) -> int:
    """A size in bytes drawn (per token, stable) from the campaign's evaluated videos' variants.

    A catch-trial probe is padded to at least this (:func:`mp4_variant`): its size is that
    of an evaluated video's variant picked at random (its browser copy plus a random
    ``free`` box, reproduced here), or its own if larger, so a size threshold does not
    tell catch trials from evaluated ones.

    Returns
    -------
    int
        0 when the campaign has no evaluated video with a browser copy.
    """
    from .models import Item

    items = Item.objects.evaluated(campaign).order_by("pk")
    count = items.count()
    if not count:
        return 0
    rng = variant_rng(f"size-floor:{token}")
    item = items.select_related("source_video", "masked_video")[rng.randrange(count)]
    field = item.video_for_raters().web_file
    try:
        size = field.size if field else 0
    except (FileNotFoundError, OSError):
        return 0
    return size + 8 + rng.randint(*PADDING_BYTES) if size else 0


def read_spans(path, spans: list, start: int, end: int):
    """Yield the bytes ``start``..``end`` (inclusive) of the variant described by ``spans``."""
    position = 0
    with open(path, "rb") as handle:
        for span in spans:
            length = len(span) if isinstance(span, bytes) else span[1]
            lo, hi = max(start, position), min(end + 1, position + length)
            if lo < hi:
                if isinstance(span, bytes):
                    yield span[lo - position : hi - position]
                else:
                    handle.seek(span[0] + lo - position)
                    remaining = hi - lo
                    while remaining > 0:
                        chunk = handle.read(min(64 * 1024, remaining))
                        if not chunk:
                            return
                        remaining -= len(chunk)
                        yield chunk
            position += length
            if position > end:
                return


def _ranged(request, size: int, read, content_type: str, on_sent=None):
    """A 200/206/416 response of ``size`` bytes produced by ``read(start, end)``.

    ``on_sent(n)`` is called with the bytes actually sent once the body ends (also when
    the client went away), which is what the plausibility checks count.
    """
    header = request.headers.get("Range", "")
    try:
        byte_range = parse_range(header, size) if header else None
    except ValueError:
        response = HttpResponse(status=416)
        response["Content-Range"] = f"bytes */{size}"
        return _private(response)
    start, end = byte_range if byte_range else (0, size - 1)

    def body():
        sent = 0
        try:
            for chunk in read(start, end):
                sent += len(chunk)
                yield chunk
        finally:
            if on_sent is not None:
                on_sent(sent)

    response = StreamingHttpResponse(body(), status=206 if byte_range else 200, content_type=content_type)
    if byte_range:
        response["Content-Range"] = f"bytes {start}-{end}/{size}"
    response["Content-Length"] = str(end - start + 1)
    response["Accept-Ranges"] = "bytes"
    return _private(response)


def png_variant_response(request, field_file, token: str):
    """The token's :func:`png_variant` of a prepared PNG (503 while it is being prepared)."""
    try:
        with field_file.open("rb") as handle:
            data = png_variant(handle.read(), token)
    except (FileNotFoundError, ValueError):
        return not_prepared_response()
    return _ranged(request, len(data), lambda s, e: iter([data[s : e + 1]]), "image/png")


def mp4_variant_response(request, field_file, token: str, on_sent=None, on_size=None, min_size: int = 0):
    """The token's :func:`mp4_variant` of a prepared MP4 with Range support.

    ``on_size(size)`` is told the variant's length; ``on_sent(n)`` the bytes sent;
    ``min_size`` pads the variant (:func:`size_floor`).
    """
    if not field_file:
        return not_prepared_response()
    path = field_file.path
    try:
        spans, size = mp4_variant(path, token, min_size=min_size)
    except FileNotFoundError:
        return not_prepared_response()
    if on_size is not None:
        on_size(size)
    return _ranged(request, size, lambda s, e: read_spans(path, spans, s, e), "video/mp4", on_sent)
