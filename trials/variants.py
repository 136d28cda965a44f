"""Per-trial byte variants of faces and videos: bytes that carry nothing but the picture.

A medium served with bytes that recur across trials is an answer key for a bot that
never decodes it (issue 19: the size of a video minus its padding named the video in 48
of 48 trials; the hash of its coded payload too; the largest face PNG once its padding
chunk was removed picked the target in 28.5 % of lineups). So every medium a rater gets
is made for that trial from a secret seed (:func:`variant_seed`), and its sizes are
fixed by format, never by content:

- **Videos** (:func:`render_mp4_variant`) are decoded and re-encoded per trial: every
  pixel moved by at most one grey level of seeded noise (invisible; every coded byte
  differs), H.264 with one fixed set of encoder settings per frame format (no B-frames,
  one key frame then periodic intra refresh, no scene-cut key frames, a mean rate of
  :data:`BITS_PER_PIXEL` per pixel per frame, no SEI message). Each frame's rate is the
  mean times a secret seeded log-normal factor (:func:`rate_factors`, x264 rate zones,
  capped at :data:`PEAK_RATE`): the real coded size of a frame, which a bot reads from
  the bytes by skipping the filler below (hostile pass 2: per-frame size profiles named
  the video 47/56 times and spotted attention checks 87/90), is then mostly that draw,
  not the picture. A filler can always be told from coded data (a decoder must find
  where the data ends), so the payload's own sizes must carry nothing. Then every coded
  frame is padded to the same size with an H.264 filler-data NAL unit (ITU-T H.264,
  section 7.3.2.7, type 12: decoders discard it) and the MP4's sample tables are
  rewritten for one frame per chunk (:func:`uniform_samples`). Header and ``mdat`` sizes then depend on the frame
  size, frame rate and frame count only: two clips of one format and length have
  byte-identical ``moov`` boxes. Last, a trailing ``free`` box (ISO/IEC 14496-12,
  section 8.1.2) pads the file to one size for the whole campaign
  (:func:`campaign_video_size`), larger than any of its videos' variants, so the
  Content-Range total is the same number for every trial, evaluated or attention check.
- **Attention checks** are the same pipeline with an instruction burnt into the frames
  for a stretch starting at a random moment (:func:`instruction_frames`): a box of 1-5
  scattered dots (crossed out: "not present") and then the words "Choose face"; the
  answer is the instructed position. A text reader (OCR) reads the same two words in
  every check; a person counts the dots.
- **Faces** (:func:`png_variant`) are re-rendered per trial (a seeded sub-pixel shift,
  scale and rotation, a one-level brightness offset and one-level noise inside the
  face oval) and written as *uncompressed* PNGs (zlib stored blocks), so every face of
  one crop size has the same byte length whatever the face: no size, padding or
  compression-ratio cue (a compressed PNG's size is its picture's entropy, stable per
  identity: that is why the largest PNG picked the identity with the most videos).

The variant is a pure function of the token and the secret key; a video variant is
made on the trial's first media request and kept in storage (:func:`stored_variant`),
so every Range request of one trial sees the same bytes. The plausibility check counts
the distinct bytes of the file sent (:func:`mark_blocks`), not repeated ranges.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import struct
import subprocess
import tempfile
import time
import zlib
from pathlib import Path

import cv2
import numpy as np
from django.conf import settings
from django.core.files.base import ContentFile
from django.db import transaction
from django.http import HttpResponse, StreamingHttpResponse

from automated.video import VideoError, ffmpeg_executable, iter_frames, transcode_timeout_s

from .media import OVAL_GREY, not_prepared_response, private_response, oval_alpha, parse_range

logger = logging.getLogger("deid.trials")

#: Mean bit rate of a coded frame, bits per pixel (0.3 for a 360x288 frame: 3.9 kB).
BITS_PER_PIXEL = 0.3
#: Peak rate and VBV buffer, in mean frame budgets: no coded frame is larger.
PEAK_RATE = 1.6
#: Standard deviation of the natural log of each frame's seeded rate factor
#: (:func:`rate_factors`): the spread it gives the coded sizes (coefficient of
#: variation about 45 %) is ten times the one the content leaves (about 4 %).
RATE_LOG_SIGMA = 0.5
#: At most this many rate zones per video (longer videos share a factor between
#: neighbouring frames, keeping ffmpeg's command line short).
MAX_RATE_ZONES = 2000
#: Bytes every coded frame is padded to above its VBV peak (the first frame also carries
#: the parameter sets).
FRAME_SLACK_BYTES = 1024
#: Smallest H.264 filler NAL unit in an MP4 sample: 4-byte length, header, trailing bits.
MIN_FILLER_BYTES = 6
#: Intra-refresh period in seconds (the first frame is the only key frame, so the
#: sync-sample table is the same for every video).
KEYFRAME_INTERVAL_S = 2.0
#: The campaign-wide video size is rounded up to a multiple of this many bytes.
SIZE_STEP_BYTES = 64 * 1024
#: Header bytes allowed per video in the campaign-wide size: a fixed part plus per frame.
HEADER_BYTES_FIXED, HEADER_BYTES_PER_FRAME = 8192, 16
#: Block size of the distinct-bytes record (:func:`mark_blocks`).
BLOCK_BYTES = 4096

_CONTAINERS = {b"moov", b"trak", b"mdia", b"minf", b"stbl", b"edts", b"dinf"}


def variant_seed(token: str, purpose: str = "media-variant") -> int:
    """A 64-bit seed for ``token``'s variant: secret (keyed by ``SECRET_KEY``), stable per token."""
    digest = hmac.new(settings.SECRET_KEY.encode(), f"{purpose}:{token}".encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big")


# --- faces -----------------------------------------------------------------------------


def uncompressed_png(image_rgb: np.ndarray) -> bytes:
    """An RGB PNG written with zlib *stored* blocks: its length depends on its shape only.

    IHDR, one IDAT (every row with filter type 0), IEND; no ancillary chunk.

    Parameters
    ----------
    image_rgb : ndarray of shape (height, width, 3), dtype uint8

    Returns
    -------
    bytes
        ``8 + 25 + (12 + zlib length of height * (1 + 3 * width) bytes) + 12`` bytes.
    """
    height, width = image_rgb.shape[:2]
    raw = np.zeros((height, 1 + 3 * width), np.uint8)
    raw[:, 1:] = image_rgb.reshape(height, 3 * width)

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body))
            + kind
            + body
            + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw.tobytes(), 0))
        + chunk(b"IEND", b"")
    )


def rerender_face(crop_rgb: np.ndarray, seed: int) -> np.ndarray:
    """A trial's re-rendering of a face crop: no pixel equals the stored crop's by design.

    A similarity transform about the centre (scale 1 +- 1.5 %, rotation +- 1.5 degrees,
    shift +- 1.5 px), a brightness offset of -1, 0 or +1 grey level, and +-1 level noise,
    inside the face oval only: outside it stays flat :data:`trials.media.OVAL_GREY`
    (no rim cue).

    Parameters
    ----------
    crop_rgb : ndarray of shape (size, size, 3), dtype uint8
    seed : int

    Returns
    -------
    ndarray of shape (size, size, 3), dtype uint8
    """
    rng = np.random.default_rng(seed)
    size = crop_rgb.shape[0]
    matrix = cv2.getRotationMatrix2D(
        (size / 2 - 0.5, size / 2 - 0.5), rng.uniform(-1.5, 1.5), 1 + rng.uniform(-0.015, 0.015)
    )
    matrix[:, 2] += rng.uniform(-1.5, 1.5, 2)
    moved = cv2.warpAffine(
        crop_rgb, matrix, (size, size), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE
    )
    shifted = moved.astype(np.int16) + int(rng.integers(-1, 2))
    shifted += rng.integers(-1, 2, size=(size, size, 1), dtype=np.int16)
    alpha = oval_alpha(size)[..., None]
    blended = np.clip(shifted, 0, 255) * alpha + OVAL_GREY * (1.0 - alpha)
    return np.round(blended).astype(np.uint8)


def png_variant(png: bytes, token: str) -> bytes:
    """The trial's face: :func:`rerender_face` of the stored crop, as :func:`uncompressed_png`.

    Parameters
    ----------
    png : bytes
        The stored rater crop (any image OpenCV decodes).
    token : str
        The face's opaque token (seeds the re-rendering).

    Returns
    -------
    bytes
        A PNG of the crop's pixel size whose length is the same for every face of that
        size and whose pixels differ from any other token's.

    Raises
    ------
    ValueError
        If ``png`` does not decode.
    """
    image = cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_COLOR)
    if image is None:
        raise ValueError("not a decodable image")
    rgb = cv2.cvtColor(image, cv2.COLOR_BGR2RGB)
    return uncompressed_png(rerender_face(rgb, variant_seed(token, "face")))


# --- videos: per-trial encoding ------------------------------------------------------------


def frame_budget_bytes(width: int, height: int) -> int:
    """Bytes of every coded frame of a ``width`` x ``height`` variant (VBV peak + slack)."""
    return int(PEAK_RATE * BITS_PER_PIXEL * width * height / 8) + FRAME_SLACK_BYTES


def rate_factors(n_frames: int, seed: int) -> np.ndarray:
    """Each frame's seeded multiplier of the mean bit rate: log-normal, median 1.

    The coded size of a frame is then mostly this secret draw, not the picture: a bot
    that reads the real size of every coded frame from the bytes (issue 19, hostile
    pass 2: per-frame size profiles named the video 47/56 times and spotted attention
    checks 87/90) sees a profile that differs from copy to copy of one video as much as
    between videos. Frames beyond :data:`MAX_RATE_ZONES` zones share a factor with their
    neighbours.

    Parameters
    ----------
    n_frames : int
    seed : int

    Returns
    -------
    ndarray of shape (n_frames,), dtype float64
        ``exp(N(0, RATE_LOG_SIGMA))`` per frame (equal within a zone).
    """
    per_zone = -(-max(n_frames, 1) // MAX_RATE_ZONES)
    draws = np.exp(np.random.default_rng(seed).normal(0.0, RATE_LOG_SIGMA, -(-n_frames // per_zone)))
    return np.repeat(draws, per_zone)[:n_frames]


#: The words of every attention check's instruction; the answer is in the dots beside them.
INSTRUCTION_CAPTION = "Choose face"


#: Share of the instruction's stretch over which it is uncovered from its left edge (the box
#: of dots first) and, at its end, covered again (:func:`instruction_frames`).
INSTRUCTION_WIPE_SHARE = 0.4


def instruction_frames(frames: list, choice: str, seed: int) -> list:
    """Draw the instruction for ``choice`` on a stretch of ``frames`` starting at a random moment.

    The stretch starts between 10 % and 50 % of the clip and lasts 40 % of it (at least
    one frame): about 1.2 s of a 3 s clip, long enough to read, and replays show it
    again. :data:`INSTRUCTION_CAPTION` with a box of dots (:func:`draw_instruction`),
    about a fifth of the frame high, at a random height. It is wiped on from the left
    (the box first) over the first :data:`INSTRUCTION_WIPE_SHARE` of the stretch and off
    again over its last: drawn whole in one frame, it was coded in that frame alone (a
    P-frame about 4 times the bytes its quantiser gives the frames around it: coded
    complexity +1.44, then -0.05 while it stands), and the spread of a served check's
    per-frame complexity told it from the evaluated clips (GRID, 30 served copies of
    each clip with and without the instruction, same rate factors: sd of complexity +0.056
    drawn at once, +0.010 wiped over 6 frames, +0.000 over 12; mean slice QP +0.20,
    +0.06, +0.11). In a 75-frame clip the box stands whole for 26 of the stretch's 30
    frames (about 1 s), the whole caption for 8 (tests/trials/test_bytes_carry_nothing.py).

    Parameters
    ----------
    frames : list of ndarray of shape (height, width, 3), dtype uint8
    choice : str
        The instructed answer, ``"0"`` (not present) to ``"5"``.
    seed : int

    Returns
    -------
    list
        The same frames (those of the stretch drawn on).
    """
    rng = np.random.default_rng(seed)
    n = len(frames)
    if not n:
        return frames
    first = int(n * rng.uniform(0.1, 0.5))
    last = min(n, first + max(1, int(round(0.4 * n))))
    height, width = frames[0].shape[:2]
    box = instruction_layout(width, height)[4]
    y = int(rng.uniform(box + 0.05 * height, 0.95 * height))
    dots_seed = int(rng.integers(2**63))
    wipe = max(1, int(round(INSTRUCTION_WIPE_SHARE * (last - first))))
    left, right = instruction_extent(width, height)
    for index in range(first, last):
        share = min(1.0, (index - first + 1) / wipe, (last - index) / wipe)
        drawn = draw_instruction(frames[index].copy(), choice, y, dots_seed)
        if share < 1:
            cut = left + int(round(share * (right - left)))
            drawn[:, cut:] = frames[index][:, cut:]
        frames[index] = drawn
    return frames


def instruction_extent(width: int, height: int) -> tuple[int, int]:
    """``(first column, column after the last)`` an instruction draws on in a ``width`` x
    ``height`` frame (:func:`instruction_box` and the caption after it, outline included)."""
    _, scale, thickness, _, _ = instruction_layout(width, height)
    left, _, _, caption_x = instruction_box(width, height, 0)
    (text_w, _), _ = cv2.getTextSize(INSTRUCTION_CAPTION, cv2.FONT_HERSHEY_DUPLEX, scale, thickness + 3)
    margin = thickness + 3
    return max(0, left - margin), min(width, caption_x + text_w + margin)


def instruction_layout(width: int, height: int) -> tuple[int, float, int, int, int]:
    """``(x, font scale, thickness, text height, box side)`` of an instruction in a
    ``width`` x ``height`` frame: box and caption centred together (``x``: the box's left
    edge, the caption after it, :func:`instruction_box`), at most 90 % of the width, the
    caption a tenth of the height high and the box of dots twice that."""
    font = cv2.FONT_HERSHEY_DUPLEX
    (text_w, text_h), _ = cv2.getTextSize(INSTRUCTION_CAPTION, font, 1.0, 2)
    # caption + gap (0.5 text height) + box (2 text heights), all within 90 % of the width
    scale = min(0.9 * width / (text_w + 2.5 * text_h), 0.1 * height / text_h)
    thickness = max(1, int(round(2 * scale)))
    (text_w, text_h), _ = cv2.getTextSize(INSTRUCTION_CAPTION, font, scale, thickness)
    box = 2 * text_h
    return (width - (text_w + text_h // 2 + box)) // 2, scale, thickness, text_h, box


def instruction_box(width: int, height: int, y: int) -> tuple[int, int, int, int]:
    """``(box left, box top, box side, caption x)`` of an instruction with baseline ``y`` in
    a ``width`` x ``height`` frame (:func:`instruction_layout`): the box of dots first, then
    :data:`INSTRUCTION_CAPTION` half a text height to its right, the box centred on the
    caption's letters.

    The box comes before the words, not after them: "Choose face" then the box put the box
    where a written answer's digit stood ("Choose face 3", the checks before), and a text
    reader matching the written answers there compared the box's dots with the digits.
    Measured with the OCR-style reader of ``tests/trials/test_bytes_carry_nothing.py`` on
    checks rendered from the six probes of one test run (seeded, every answer; scratch
    replay, branch ``check-flake``). Box after the words, 263 checks before encoding: one
    dot read "1" 38/39 times (other counts 89/154), a cross "4" 28/39; the reads told
    0.54 bits of the answer given the footage, against 0.29 with the answers shuffled
    (99th percentile 0.36); hits on the answers a check can have (any but the face shown)
    0.227 (95 % bootstrap 0.19-0.26, chance 0.2), 0.32 on one probe; 190 encoded checks:
    0.54 bits (shuffled 0.31, 99th percentile 0.41), hits 0.182. Box first, 217 checks
    before encoding: 0.24 bits (shuffled 0.17, 99th percentile 0.25), hits 0.191
    (0.14-0.24); the reads follow the footage, not the dots.
    """
    x, scale, thickness, text_h, box = instruction_layout(width, height)
    return x, y - text_h // 2 - box // 2, box, x + box + text_h // 2


def dot_centres(n: int, side: int, seed: int) -> list[tuple[int, int]]:
    """``n`` dot centres scattered in a ``side`` px box at least 2.6 radii apart (seeded).

    The dots are where an OCR reads nothing: no digit, no fixed die pattern to match.
    Returns ``(x, y)`` pixel offsets from the box's top-left corner.
    """
    rng = np.random.default_rng(seed)
    radius = max(2.0, side * 0.09)
    low, high = 0.12 * side + radius, 0.88 * side - radius
    for _ in range(100):  # dart throwing, started again when stuck
        points: list = []
        for _ in range(200 * max(n, 1)):
            if len(points) == n:
                break
            candidate = rng.uniform(low, high, 2)
            if all(np.hypot(*(candidate - p)) >= 2.6 * radius for p in points):
                points.append(candidate)
        if len(points) == n:
            return [(int(round(x)), int(round(y))) for x, y in points]
    raise ValueError(f"cannot place {n} dots in a {side} px box")


def draw_instruction(frame: np.ndarray, choice: str, y: int, seed: int) -> np.ndarray:
    """``frame`` (RGB uint8) with the instruction for ``choice``, baseline at ``y``.

    A dark box with as many white dots as the face to choose (1-5, scattered at seeded
    places, :func:`dot_centres`), or crossed out for "not present" (``"0"``), then
    :data:`INSTRUCTION_CAPTION` in white letters outlined in black beside it
    (:func:`instruction_box`: the box first, so it is not where a written answer's digit
    would be). A person counts up to five dots at a glance; a text reader finds the same
    two words in every check.

    Raises
    ------
    ValueError
        If ``choice`` is not "0"-"5".
    """
    if choice not in {"0", "1", "2", "3", "4", "5"}:
        raise ValueError(f"an instructed choice is '0'-'5', got {choice!r}")
    height, width = frame.shape[:2]
    _, scale, thickness, _, _ = instruction_layout(width, height)
    left, top, box, caption_x = instruction_box(width, height, y)
    frame = np.ascontiguousarray(frame)
    font = cv2.FONT_HERSHEY_DUPLEX
    cv2.putText(
        frame, INSTRUCTION_CAPTION, (caption_x, y), font, scale, (0, 0, 0), thickness + 3, cv2.LINE_AA
    )
    cv2.putText(
        frame, INSTRUCTION_CAPTION, (caption_x, y), font, scale, (255, 255, 255), thickness, cv2.LINE_AA
    )
    cv2.rectangle(frame, (left, top), (left + box, top + box), (20, 20, 20), -1)
    cv2.rectangle(frame, (left, top), (left + box, top + box), (255, 255, 255), max(1, thickness // 2 + 1))
    if choice == "0":
        pad = box // 5
        for a, b in (((pad, pad), (box - pad, box - pad)), ((pad, box - pad), (box - pad, pad))):
            cv2.line(
                frame,
                (left + a[0], top + a[1]),
                (left + b[0], top + b[1]),
                (255, 255, 255),
                thickness + 1,
                cv2.LINE_AA,
            )
    else:
        radius = max(2, int(round(box * 0.09)))
        for dx, dy in dot_centres(int(choice), box, seed):
            cv2.circle(frame, (left + dx, top + dy), radius, (255, 255, 255), -1, cv2.LINE_AA)
    return frame


def _write_raw(frames: list, path: Path) -> None:
    """``frames`` (RGB uint8, one size) as raw ``rgb24`` video, frame after frame: what
    :func:`_encode` feeds ffmpeg (written once, read again by a re-encode at a lower rate)."""
    with open(path, "wb") as handle:
        for frame in frames:
            handle.write(np.ascontiguousarray(frame).data)


def _encode(raw: Path, size: tuple[int, int], fps: float, out: Path, rate_scale: float, factors) -> None:
    """H.264 of the raw frames in ``raw`` (:func:`_write_raw`, ``size`` = (width, height)):
    mean rate :data:`BITS_PER_PIXEL` x ``rate_scale``, frame ``i``'s
    rate times ``factors[i]`` (x264 rate zones), capped at :data:`PEAK_RATE`; periodic
    intra refresh instead of key frames after the first (a key frame fills the cap, and
    what it leaves below it is the picture's: 14/75 copies named by frame 50's size
    alone, 2/75 with intra refresh); no SEI (the encoder's settings message would spell
    the zones out).

    The frames reach ffmpeg's standard input from the file: piped from memory by
    ``subprocess.run(input=...)`` they went in 4 kB writes, each with a poll (about a third
    of a CPU second for a 3 s clip, as much as the encoding)."""
    width, height = size
    budget_bits = int(BITS_PER_PIXEL * width * height * rate_scale)
    peak_bits = int(PEAK_RATE * budget_bits)
    keyint = max(1, int(round(KEYFRAME_INTERVAL_S * fps)))
    bounds = np.flatnonzero(np.diff(factors, prepend=np.nan, append=np.nan))
    zones = "/".join(f"{a},{b - 1},b={factors[a]:.3f}" for a, b in zip(bounds[:-1], bounds[1:]))
    command = [
        ffmpeg_executable(), "-y", "-loglevel", "error",
        "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{width}x{height}", "-r", repr(float(fps)), "-i", "-",
        "-an", "-map_metadata", "-1",
        "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p",
        "-bf", "0", "-g", str(keyint), "-keyint_min", str(keyint), "-sc_threshold", "0",
        "-b:v", str(int(budget_bits * fps)), "-maxrate", str(int(peak_bits * fps)), "-bufsize", str(peak_bits),
        "-x264-params", f"intra-refresh=1:zones={zones}", "-bsf:v", "filter_units=remove_types=6",
        "-movflags", "+faststart", str(out),
    ]  # fmt: skip
    try:
        with open(raw, "rb") as frames_in:
            result = subprocess.run(
                command, stdin=frames_in, capture_output=True, timeout=transcode_timeout_s()
            )
    except subprocess.TimeoutExpired:
        raise VideoError("encoding a trial's video took too long") from None
    if result.returncode != 0:
        raise VideoError(f"cannot encode a trial's video: {result.stderr.decode(errors='replace')[-500:]}")


def _add_unit_noise(frame: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """``frame`` (H x W x 3 uint8) plus ``noise`` (H x W, values -1, 0, 1) on every channel,
    saturated at 0 and 255: ``clip(frame + noise, 0, 255)`` in two saturating OpenCV passes
    (about half the time of numpy's int16 round trip in a whole render; the same bytes)."""
    up = (noise == 1).view(np.uint8)
    down = (noise == -1).view(np.uint8)
    return cv2.subtract(cv2.add(frame, cv2.merge([up, up, up])), cv2.merge([down, down, down]))


def render_mp4_variant(source: bytes, seed: int, *, total_size: int = 0, instruction: str = "") -> bytes:
    """A trial's copy of a browser video: re-encoded with seeded noise, uniform frames, padded.

    Parameters
    ----------
    source : bytes
        A video ffmpeg and OpenCV read (the prepared H.264 web copy, or a catch probe).
    seed : int
        :func:`variant_seed` of the trial's media token.
    total_size : int
        Pad the file to this many bytes (:func:`campaign_video_size`); a variant already
        larger is left as is and logged (its size would then be a cue).
    instruction : str
        For attention checks, the instructed choice ("0"-"5") drawn on a random stretch
        of the clip (:func:`instruction_frames`); empty for none.

    Returns
    -------
    bytes
        An MP4 (``ftyp``, ``moov``, ``mdat`` of equal-sized samples, ``free``) of the same
        frames, frame rate and frame size; each pixel within 1 grey level of the source
        before coding.

    Raises
    ------
    automated.video.VideoError
        If the source cannot be decoded or ffmpeg fails.
    """
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory(prefix="deid-variant-") as folder:
        source_path, out = Path(folder) / "source.mp4", Path(folder) / "variant.mp4"
        source_path.write_bytes(source)
        capture = cv2.VideoCapture(str(source_path))
        fps = float(capture.get(cv2.CAP_PROP_FPS) or 0.0)
        capture.release()
        frames = []
        for _, frame in iter_frames(source_path):
            noise = rng.integers(-1, 2, size=frame.shape[:2], dtype=np.int16)
            frames.append(_add_unit_noise(frame, noise))
        if not frames or fps <= 0:
            raise VideoError("a trial's video source has no decodable frame or frame rate")
        # Every copy draws an instruction: an evaluated trial's on a list it then drops, so
        # making a check's copy takes no longer (it took 25 ms more of a first request's
        # ~190: 49 of 60 checks told by that time, hostile pass h61).
        drawn = instruction_frames(
            list(frames), instruction or str(rng.integers(6)), int(rng.integers(2**63))
        )
        frames = drawn if instruction else frames
        height, width = frames[0].shape[:2]
        budget = frame_budget_bytes(width, height)
        factors = rate_factors(len(frames), int(rng.integers(2**63)))
        raw = Path(folder) / "frames.rgb"
        _write_raw(frames, raw)
        for rate_scale in (1.0, 0.8, 0.6, 0.4):
            _encode(raw, (width, height), fps, out, rate_scale, factors)
            try:
                data = uniform_samples(out.read_bytes(), budget)
                break
            except FrameTooLarge:
                continue  # a frame beyond the budget: encode at a lower rate
        else:
            raise VideoError("a trial's video does not fit its frame budget even at 40 % of the rate")
    if total_size and len(data) > total_size:
        logger.warning("video variant of %d bytes exceeds the campaign size %d", len(data), total_size)
    return pad_mp4(data, total_size)


_SLICE_QP_DELTA = re.compile(r"\bslice_qp_delta\s+\S+\s+=\s+(-?\d+)")
_PIC_INIT_QP = re.compile(r"\bpic_init_qp_minus26\s+\S+\s+=\s+(-?\d+)")


def parse_slice_qps(trace: str) -> np.ndarray:
    """Each slice's QP from the text of ffmpeg's ``trace_headers`` bitstream filter.

    A slice's QP is ``26 + pic_init_qp_minus26`` (of the picture parameter set in force,
    ITU-T H.264 section 7.4.2.2) ``+ slice_qp_delta`` (its slice header, section 7.4.3).
    What a bot reads without decoding a pixel (hostile pass 3, issue 19).

    Raises
    ------
    ValueError
        If a slice comes before any picture parameter set.
    """
    qps, init = [], None
    for line in trace.splitlines():
        if (found := _PIC_INIT_QP.search(line)) is not None:
            init = 26 + int(found.group(1))
        elif (found := _SLICE_QP_DELTA.search(line)) is not None:
            if init is None:
                raise ValueError("a slice header before any picture parameter set")
            qps.append(init + int(found.group(1)))
    return np.array(qps, float)


def slice_qps(data: bytes) -> np.ndarray:
    """Each slice's QP of an H.264 MP4 (a served variant: its padding is dropped first), read
    from the headers by ffmpeg's ``trace_headers`` filter (:func:`parse_slice_qps`).

    Raises
    ------
    automated.video.VideoError
        If ffmpeg cannot read it.
    """
    with tempfile.TemporaryDirectory(prefix="deid-qp-") as folder:
        path = Path(folder) / "video.mp4"
        path.write_bytes(data[: content_length(data)] if data[4:8] == b"ftyp" else data)
        command = [
            ffmpeg_executable(), "-hide_banner", "-nostdin", "-i", str(path),
            "-map", "0:v:0", "-c", "copy", "-bsf:v", "filter_units=remove_types=12,trace_headers",
            "-f", "null", "-",
        ]  # fmt: skip
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=transcode_timeout_s())
        except subprocess.TimeoutExpired:
            raise VideoError("reading a video's slice headers took too long") from None
    if result.returncode != 0:
        raise VideoError(f"cannot read a video's slice headers: {result.stderr[-500:]}")
    return parse_slice_qps(result.stderr)


def complexity(data: bytes) -> float:
    """Mean coded complexity of a served variant's frames after the first:
    ``log(slice bytes) + (QP - 26) ln 2 / 6`` (a frame's bits times its quantiser step,
    which doubles every 6 QP: the rate factor divided out; hostile pass 3)."""
    qps = slice_qps(data)
    sizes = np.array(slice_bytes(data), float)
    if len(sizes) != len(qps) or len(qps) < 2:
        raise ValueError(f"{len(qps)} slices for {len(sizes)} frames")
    return float(np.mean(np.log(sizes[1:]) + (qps[1:] - 26) * np.log(2) / 6))


def slice_bytes(data: bytes) -> list[int]:
    """Each frame's coded slice bytes (NAL units of types 1 and 5, length fields included)
    of a one-track MP4 with 4-byte NAL lengths, read from its sample tables."""
    top = _tree(data[: content_length(data)], 0, content_length(data))
    moov = next(node for node in top if node[0] == b"moov")
    (stbl_node,) = _find(moov[1], b"stbl")
    offsets, sizes = _sample_offsets(stbl_node[1])
    out = []
    for offset, size in zip(offsets, sizes):
        total, at = 0, offset
        while at < offset + size:
            (length,) = struct.unpack_from(">I", data, at)
            if data[at + 4] & 0x1F in (1, 5):
                total += 4 + length
            at += 4 + length
        out.append(total)
    return out


def pad_mp4(data: bytes, total_size: int) -> bytes:
    """``data`` followed by a ``free`` box of random bytes making it ``total_size`` long
    (at least an 8-byte box; nothing is added when it is already longer)."""
    short = total_size - len(data)
    if short < 8:
        return data
    return data + struct.pack(">I4s", short, b"free") + np.random.default_rng().bytes(short - 8)


# --- MP4 rewriting ------------------------------------------------------------------------


class FrameTooLarge(ValueError):
    """A coded frame is larger than the frame budget minus a filler NAL unit."""


def mp4_boxes(data: bytes | memoryview, start: int, end: int):
    """Yield ``(type, offset, header_size, size)`` of the boxes in ``data[start:end]``
    (ISO/IEC 14496-12, section 4.2: 32-bit size, or 1 and a 64-bit size, or 0 to the end).

    Raises
    ------
    ValueError
        If a box is shorter than its header or runs past ``end``.
    """
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


def _tree(data: bytes, start: int, end: int) -> list:
    """Boxes as ``[kind, children (list) or body (bytes)]``; containers are parsed."""
    return [
        [
            kind,
            _tree(data, offset + header, offset + size)
            if kind in _CONTAINERS
            else data[offset + header : offset + size],
        ]
        for kind, offset, header, size in mp4_boxes(data, start, end)
    ]


def _serialise(nodes: list) -> bytes:
    out = b""
    for kind, content in nodes:
        body = _serialise(content) if isinstance(content, list) else content
        out += struct.pack(">I4s", 8 + len(body), kind) + body
    return out


def _find(nodes: list, kind: bytes) -> list:
    """Every node of ``kind`` in the tree, depth first."""
    found = []
    for node in nodes:
        if node[0] == kind:
            found.append(node)
        if isinstance(node[1], list):
            found += _find(node[1], kind)
    return found


def _sample_offsets(stbl: list) -> tuple[list[int], list[int]]:
    """File offsets and sizes of the samples of one track's ``stbl``."""
    (stsz,) = [body for kind, body in stbl if kind == b"stsz"]
    uniform, count = struct.unpack_from(">II", stsz, 4)
    sizes = [uniform] * count if uniform else list(struct.unpack_from(f">{count}I", stsz, 12))
    chunk_offsets = []
    for kind, body in stbl:
        if kind in (b"stco", b"co64"):
            (n,) = struct.unpack_from(">I", body, 4)
            chunk_offsets = list(struct.unpack_from(f">{n}{'I' if kind == b'stco' else 'Q'}", body, 8))
    (stsc,) = [body for kind, body in stbl if kind == b"stsc"]
    (n_runs,) = struct.unpack_from(">I", stsc, 4)
    runs = [struct.unpack_from(">III", stsc, 8 + 12 * i)[:2] for i in range(n_runs)]
    offsets, sample = [], 0
    for chunk_index, chunk_offset in enumerate(chunk_offsets, start=1):
        per_chunk = [per for first, per in runs if first <= chunk_index][-1]
        position = chunk_offset
        for _ in range(per_chunk):
            if sample >= count:
                break
            offsets.append(position)
            position += sizes[sample]
            sample += 1
    if len(offsets) != count:
        raise ValueError(f"sample tables describe {len(offsets)} of {count} samples")
    return offsets, sizes


def uniform_samples(data: bytes, frame_bytes: int) -> bytes:
    """Rewrite a one-track H.264 MP4 so that every sample is ``frame_bytes`` long.

    Each sample gets an H.264 filler-data NAL unit (type 12, ITU-T H.264 section
    7.3.2.7; decoders drop it) filling it up; the sample tables become one sample per
    chunk (``stsc`` one entry, ``stsz`` one uniform size, ``stco`` one offset per
    sample) and the ``btrt`` box states the padded rate. Layout: ``ftyp``, ``moov``,
    ``mdat``.

    Parameters
    ----------
    data : bytes
        An MP4 with one H.264 track of 4-byte NAL lengths (ffmpeg's libx264 output).
    frame_bytes : int
        Size of every sample after padding.

    Returns
    -------
    bytes

    Raises
    ------
    FrameTooLarge
        If a sample is larger than ``frame_bytes - MIN_FILLER_BYTES``.
    ValueError
        If the file is not such an MP4.
    """
    top = _tree(data, 0, len(data))
    kinds = [kind for kind, _ in top]
    if kinds[:1] != [b"ftyp"] or kinds.count(b"moov") != 1:
        raise ValueError("not an MP4 file with one moov box")
    moov = next(node for node in top if node[0] == b"moov")
    traks = _find(moov[1], b"trak")
    if len(traks) != 1:
        raise ValueError(f"expected one track, found {len(traks)}")
    (stbl_node,) = _find(traks[0][1], b"stbl")
    stbl = stbl_node[1]
    stsd = next(body for kind, body in stbl if kind == b"stsd")
    at = stsd.find(b"avcC")
    if at < 0 or (stsd[at + 8] & 3) + 1 != 4:
        raise ValueError("expected an H.264 track with 4-byte NAL lengths")
    offsets, sizes = _sample_offsets(stbl)
    if max(sizes) > frame_bytes - MIN_FILLER_BYTES:
        raise FrameTooLarge(f"a frame of {max(sizes)} bytes exceeds {frame_bytes - MIN_FILLER_BYTES}")
    count = len(sizes)
    payload = bytearray()
    for offset, size in zip(offsets, sizes):
        filler = frame_bytes - size
        payload += data[offset : offset + size]
        payload += struct.pack(">IB", filler - 4, 0x0C) + b"\xff" * (filler - MIN_FILLER_BYTES) + b"\x80"
    # btrt: buffer size, maximum and average rate (bits/s) of the padded stream.
    (mdhd,) = [body for kind, body in _find(traks[0][1], b"mdhd")]
    timescale, duration = (
        struct.unpack_from(">IQ", mdhd, 20) if mdhd[0] == 1 else struct.unpack_from(">II", mdhd, 12)
    )
    rate = int(round(8 * frame_bytes * count * timescale / max(duration, 1)))
    btrt = stsd.find(b"btrt")
    if btrt >= 4:
        stsd = stsd[: btrt + 4] + struct.pack(">III", frame_bytes, rate, rate) + stsd[btrt + 16 :]
    new_stbl = []
    for kind, body in stbl:
        if kind == b"stsd":
            new_stbl.append([kind, stsd])
        elif kind == b"stsz":
            new_stbl.append([kind, struct.pack(">III", 0, frame_bytes, count)])
        elif kind == b"stsc":
            new_stbl.append([kind, struct.pack(">IIIII", 0, 1, 1, 1, 1)])
        elif kind in (b"stco", b"co64"):
            new_stbl.append([b"stco", struct.pack(">II", 0, count) + b"\0" * (4 * count)])
        else:
            new_stbl.append([kind, body])
    stbl_node[1] = new_stbl
    ftyp = _serialise([top[0]])
    mdat_start = len(ftyp) + len(_serialise([moov])) + 8
    if mdat_start + count * frame_bytes >= 2**32:
        raise ValueError("video too large for 32-bit chunk offsets")
    chunk_offsets = struct.pack(f">{count}I", *(mdat_start + i * frame_bytes for i in range(count)))
    for node in new_stbl:
        if node[0] == b"stco":
            node[1] = struct.pack(">II", 0, count) + chunk_offsets
    return ftyp + _serialise([moov]) + struct.pack(">I4s", 8 + len(payload), b"mdat") + bytes(payload)


def content_length(data: bytes) -> int:
    """Bytes of a variant before its trailing padding ``free`` box (what a player reads)."""
    end = 0
    for kind, offset, _, size in mp4_boxes(data, 0, len(data)):
        if kind != b"free":
            end = offset + size
    return end


# --- one size per campaign ----------------------------------------------------------------


def campaign_video_size(campaign) -> int:
    """The length in bytes of every video variant served in ``campaign``.

    The largest variant any of its rateable videos can give (frame budget x frames +
    header allowance, :func:`frame_budget_bytes`; frame counts with 10 % spare), from the
    probed metadata of its source and masked videos, rounded up to
    :data:`SIZE_STEP_BYTES`. Catch-trial probes take the formats of the evaluated videos
    (:func:`trials.media.catch_video_spec`), so they are covered too.

    Returns
    -------
    int
        0 when no video of the campaign has probed metadata (no padding then).
    """
    from evalsite.models import MaskedVideo, SourceVideo

    columns = ("frame_count", "width", "height")
    rows = list(
        SourceVideo.objects.filter(campaign=campaign, attacker_train=False)
        .exclude(frame_count=None)
        .exclude(width=None)
        .exclude(height=None)
        .values_list(*columns)
    ) + list(
        MaskedVideo.objects.filter(submission__campaign=campaign)
        .exclude(frame_count=None)
        .exclude(width=None)
        .exclude(height=None)
        .values_list(*columns)
    )
    if not rows:
        return 0
    largest = max(
        int(frames * 1.1 + 1) * (frame_budget_bytes(width // 2 * 2, height // 2 * 2) + HEADER_BYTES_PER_FRAME)
        for frames, width, height in rows
    )
    largest += HEADER_BYTES_FIXED
    return -(-largest // SIZE_STEP_BYTES) * SIZE_STEP_BYTES


def variant_name(token: str) -> str:
    """Storage name of a trial's video variant: keyed by the secret, so not guessable."""
    digest = hmac.new(settings.SECRET_KEY.encode(), f"variant-name:{token}".encode(), hashlib.sha256)
    return f"variants/{digest.hexdigest()[:40]}.mp4"


def variant_stored(storage, token: str) -> bool:
    """Whether the trial of media token ``token`` has its video variant in ``storage``."""
    return storage.exists(variant_name(token))


def stored_variant(field_file, token: str, *, lock, total_size, instruction: str = "") -> bytes:
    """The trial's video variant: read from storage, or made once and stored.

    Parameters
    ----------
    field_file : FieldFile
        The prepared source (a web copy or a catch probe), read with the storage API.
    token : str
        The trial's media token (seed and storage name, :func:`variant_name`).
    lock : callable
        Called inside a transaction before making the variant (locks the trial's row),
        so concurrent first requests make it once and every later request reads it.
    total_size : callable() -> int
        The size to pad to (:func:`campaign_video_size`), asked only when making it.
    instruction : str
        The instructed choice, as :func:`render_mp4_variant`.

    Raises
    ------
    FileNotFoundError
        If the source is not in storage.
    automated.video.VideoError
        If the variant cannot be encoded.
    """
    storage = field_file.storage
    name = variant_name(token)
    with transaction.atomic():
        if not storage.exists(name):
            lock()
        if storage.exists(name):  # made before, or by a concurrent request while we waited
            with storage.open(name, "rb") as handle:
                return handle.read()
        with field_file.open("rb") as handle:
            source = handle.read()
        data = render_mp4_variant(
            source, variant_seed(token), total_size=total_size(), instruction=instruction
        )
        stored = storage.save(name, ContentFile(data))
        if stored != name:  # cannot happen under the lock; never serve two copies
            storage.delete(stored)
    return data


def remove_old_variants(storage, older_than_s: float) -> int:
    """Delete stored video variants older than ``older_than_s`` seconds (made again if asked).

    Returns
    -------
    int
        Files deleted.
    """
    try:
        _, names = storage.listdir("variants")
    except FileNotFoundError:
        return 0
    cutoff = time.time() - older_than_s
    removed = 0
    for name in names:
        path = f"variants/{name}"
        try:
            if storage.get_modified_time(path).timestamp() < cutoff:
                storage.delete(path)
                removed += 1
        except FileNotFoundError:
            continue
    return removed


def remove_variants(storage, tokens) -> int:
    """Delete the stored video variants of the trials with these media tokens (if made).

    Called once a trial is answered or released (:mod:`trials.assignment`) and for a
    whole campaign when rating closes (:func:`remove_served_variants`): a served copy is
    biometric data and is kept no longer than its trial needs it. A late request of the
    same trial makes it again (same frames: the seed is the token's).

    Returns
    -------
    int
        Files deleted.
    """
    removed = 0
    for token in tokens:
        name = variant_name(token)
        try:
            if storage.exists(name):
                storage.delete(name)
                removed += 1
        except FileNotFoundError:  # deleted concurrently
            continue
    return removed


def remove_served_variants(campaign, *, answered_only: bool = True) -> int:
    """Delete the stored variants of ``campaign``'s answered or released trials (every
    trial's with ``answered_only=False``, when rating closes).

    Returns
    -------
    int
        Files deleted.
    """
    from django.core.files.storage import default_storage
    from django.db.models import Q

    from .models import Trial

    try:
        _, names = default_storage.listdir("variants")
    except FileNotFoundError:
        return 0
    stored = {f"variants/{name}" for name in names}
    trials = Trial.objects.filter(session__campaign=campaign)
    if answered_only:
        trials = trials.filter(Q(completed=True) | Q(released=True))
    tokens = [
        token for token in trials.values_list("media_token", flat=True) if variant_name(token) in stored
    ]
    return remove_variants(default_storage, tokens)


def drop_variants_on_commit(tokens) -> None:
    """:func:`remove_variants` of ``tokens`` once the current transaction commits."""
    from django.core.files.storage import default_storage

    tokens = list(tokens)
    if tokens:
        transaction.on_commit(lambda: remove_variants(default_storage, tokens))


def instruction_text(choice: str) -> str:
    """What an attention check's instruction for the answer ``choice`` ("0"-"5") tells a
    person (drawn as words and dots, :func:`draw_instruction`)."""
    return "Choose: not present" if choice == "0" else f"Choose face {choice}"


def instructed_choice(probe_position: int, n_faces: int, rng) -> str:
    """The answer an attention check instructs: any of "0" (not present) and "1".."n_faces"
    but the position of the face shown in its video, uniformly (``rng``: ``random.Random``).

    A rater (or face-recognition bot) who answers by the face and not by the words is
    always wrong on it.

    Raises
    ------
    ValueError
        If ``probe_position`` is not in 1..n_faces.
    """
    if not 1 <= probe_position <= n_faces:
        raise ValueError(f"probe_position must be in 1..{n_faces}, got {probe_position}")
    return rng.choice([str(i) for i in range(n_faces + 1) if i != probe_position])


# --- serving and the distinct-bytes record -------------------------------------------------


def mark_blocks(bitmap: bytes, start: int, length: int, limit: int) -> bytes:
    """``bitmap`` with the :data:`BLOCK_BYTES` blocks of ``[start, start + length)`` set.

    Only bytes below ``limit`` (the content, not the padding) count; a block counts when
    the range covers it whole (the last, shorter block of the content when it covers
    that), so repeating a range never adds a block twice.

    Parameters
    ----------
    bitmap : bytes
        One bit per block, block ``i`` at bit ``i % 8`` of byte ``i // 8``.
    start, length, limit : int
        Bytes.

    Returns
    -------
    bytes
    """
    n_blocks = -(-limit // BLOCK_BYTES)
    bits = bytearray(bitmap.ljust(-(-n_blocks // 8), b"\0"))
    end = min(start + length, limit)
    first = -(-start // BLOCK_BYTES)
    for block in range(first, n_blocks):
        block_end = min((block + 1) * BLOCK_BYTES, limit)
        if block_end > end:
            break
        bits[block // 8] |= 1 << (block % 8)
    return bytes(bits)


def distinct_bytes(bitmap: bytes, limit: int) -> int:
    """Bytes below ``limit`` covered by the blocks set in ``bitmap`` (:func:`mark_blocks`)."""
    total = 0
    for block in range(-(-limit // BLOCK_BYTES)):
        if block // 8 < len(bitmap) and bitmap[block // 8] >> (block % 8) & 1:
            total += min((block + 1) * BLOCK_BYTES, limit) - block * BLOCK_BYTES
    return total


def ranged_bytes_response(request, data: bytes, content_type: str, on_sent=None) -> HttpResponse:
    """A 200/206/416 response of ``data`` with Range support (RFC 9110, section 14).

    ``on_sent(start, n)`` is called with the first byte and the count of bytes actually
    sent once the body ends (also when the client went away). No file name is sent and
    the response is private and uncached.
    """
    size = len(data)
    header = request.headers.get("Range", "")
    try:
        byte_range = parse_range(header, size) if header else None
    except ValueError:
        response = HttpResponse(status=416)
        response["Content-Range"] = f"bytes */{size}"
        return private_response(response)
    start, end = byte_range if byte_range else (0, size - 1)

    def body():
        sent = 0
        try:
            for offset in range(start, end + 1, 64 * 1024):
                chunk = data[offset : min(offset + 64 * 1024, end + 1)]
                sent += len(chunk)
                yield chunk
        finally:
            if on_sent is not None:
                on_sent(start, sent)

    response = StreamingHttpResponse(body(), status=206 if byte_range else 200, content_type=content_type)
    if byte_range:
        response["Content-Range"] = f"bytes {start}-{end}/{size}"
    response["Content-Length"] = str(end - start + 1)
    response["Accept-Ranges"] = "bytes"
    return private_response(response)


def png_variant_response(request, field_file, token: str) -> HttpResponse:
    """The token's :func:`png_variant` of a prepared crop (503 while it is being prepared)."""
    try:
        with field_file.open("rb") as handle:
            data = png_variant(handle.read(), token)
    except (FileNotFoundError, ValueError):
        return not_prepared_response()
    return ranged_bytes_response(request, data, "image/png")
