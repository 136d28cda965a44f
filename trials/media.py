"""What raters' browsers receive as media: face crops, web videos, and range responses.

- Gallery faces are cropped to the internal face at one size (MediaEval 2021 protocol,
  ``../shared/seeds/002_68b18bfdbdb94491.txt``, section 4.2: "cropped to show only the
  internal face, so that identification cannot be based on peripheral face cues such as
  hair style") with ``automated.face_crop``, then everything outside one fixed oval is
  painted flat grey (the square detector crop still shows hair at the sides, ears,
  collars and the studio background in the corners), and written as fresh PNGs, so no
  EXIF or text chunk of the upload survives. Before that every face is aligned on its
  eyes and colour normalised (:mod:`trials.face_norm`), so crop geometry, face size and
  colour are the same for every identity.
- Videos are transcoded once to H.264 MP4 with ``automated.video.transcode_for_web``
  (metadata stripped) and cached in the catalogue's ``web_file``, by
  :func:`trials.tasks.prepare_campaign_media` when rating opens, never inside a rater's
  request: a video not prepared yet is answered 503 with ``Retry-After``
  (:func:`not_prepared_response`).
- Preparation is idempotent under concurrency: files are made whole in a temporary
  folder and saved through the storage API under a fresh name (a reader never sees half
  a file; tools that need a path get one from ``evalsite.storage.local_path``), rows are claimed by the unique
  constraint (crops) or compare-and-set (web copies), and the loser of a race deletes
  its own file and uses the winner's.
- What a rater's browser receives is never these files themselves but per-trial
  variants of them (:mod:`trials.variants`), served with Range support.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
import shutil
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.core.files import File
from django.http import HttpResponse

from automated.face_boxes import check_frame
from automated.video import frames_to_web_copy, transcode_for_web
from evalsite.storage import local_path

from . import face_norm, lineups
from .models import CATCH_VIDEO_SUFFIX, GalleryCrop

logger = logging.getLogger("deid.trials")

#: Seconds a rater's browser is asked to wait for media still being prepared.
RETRY_AFTER_S = 5

#: Grey level (0-255) painted outside the face oval.
OVAL_GREY = 128
#: Oval semi-axes as fractions of the crop side: the detector square spans cheek to cheek
#: and brows to chin, so the oval keeps that and drops the corners and side edges.
OVAL_SEMI_AXES = (0.38, 0.49)


def crop_size_px() -> int:
    """Side in pixels of every face crop raters see (``TRIALS_FACE_SIZE_PX``, default 160)."""
    return settings.TRIALS_FACE_SIZE_PX


def oval_alpha(size: int) -> np.ndarray:
    """Opacity of the face oval in a ``size`` x ``size`` crop, float32 in [0, 1] (anti-aliased edge)."""
    mask = np.zeros((size, size), np.uint8)
    axes = (int(round(size * OVAL_SEMI_AXES[0])), int(round(size * OVAL_SEMI_AXES[1])))
    cv2.ellipse(mask, (size // 2, size // 2), axes, 0, 0, 360, 255, -1, cv2.LINE_AA)
    return mask.astype(np.float32) / 255.0


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
    alpha = oval_alpha(crop_rgb.shape[0])[..., None]
    blended = crop_rgb.astype(np.float32) * alpha + OVAL_GREY * (1.0 - alpha)
    return np.round(blended).astype(np.uint8)


def read_image_rgb(source) -> np.ndarray:
    """Read any image OpenCV decodes (PGM, PNG, JPEG ...) as RGB uint8 (height, width, 3).

    Parameters
    ----------
    source : path-like or FieldFile
        A file path, or a stored file (read with the storage API).

    Raises
    ------
    ValueError
        If the file cannot be decoded as an image.
    """
    if hasattr(source, "storage"):
        with source.open("rb") as handle:
            data = np.frombuffer(handle.read(), dtype=np.uint8)
        name = Path(source.name).name
    else:
        data, name = np.fromfile(str(source), dtype=np.uint8), Path(source).name
    image = cv2.imdecode(data, cv2.IMREAD_COLOR)
    if image is None:
        raise ValueError(f"not a readable image: {name}")
    return cv2.cvtColor(image, cv2.COLOR_BGR2RGB)


def normalised_face(image_rgb: np.ndarray, *, size_px: int) -> np.ndarray:
    """The rater crop of a still: aligned on the eyes, Lab-normalised, grey outside the oval.

    See :mod:`trials.face_norm`. A still in which no detector finds a face (e.g. a tight
    92x112 ORL face, already internal) is taken as framed: its centre square is used.

    Parameters
    ----------
    image_rgb : ndarray of shape (height, width, 3), dtype uint8, RGB
    size_px : int
        Side of the square crop in pixels.

    Returns
    -------
    ndarray of shape (size_px, size_px, 3), dtype uint8
        Eye centres at ``face_norm.EYE_TARGETS``; inside the oval, L*, a*, b* have the
        means and deviations of ``face_norm.LAB_TARGETS``.

    Raises
    ------
    ValueError
        If the image is not uint8 (height, width, 3).
    """
    check_frame(image_rgb, "image_rgb")
    eyes = face_norm.eye_centres(image_rgb)
    if eyes is None:
        eyes = face_norm.centre_square_eyes(image_rgb)
    aligned = face_norm.align_on_eyes(image_rgb, eyes, size_px)
    inside = oval_alpha(size_px) >= 0.5
    # Twice: gamut clipping of the first pass moves the statistics a little.
    normalised = face_norm.normalise_lab(face_norm.normalise_lab(aligned, inside), inside)
    return oval_mask(normalised)


def face_crop_png(image_rgb: np.ndarray, *, size_px: int) -> bytes:
    """The rater crop of a still (:func:`normalised_face`) as PNG bytes without metadata.

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
    crop_rgb = normalised_face(image_rgb, size_px=size_px)
    ok, encoded = cv2.imencode(".png", cv2.cvtColor(crop_rgb, cv2.COLOR_RGB2BGR))
    if not ok:
        raise ValueError("PNG encoding of the face crop failed")
    return encoded.tobytes()


def store_atomically(field_file, filename: str, produce) -> str:
    """Make a new file for ``field_file`` locally, then save it to storage under a new name.

    The file is written whole in a temporary folder first and then saved with the
    storage API under a fresh, opaque name that no row refers to yet, so no reader ever
    sees half a file (the caller points its row at the name afterwards).

    Parameters
    ----------
    field_file : FieldFile
        Gives the storage and ``upload_to`` of the new name.
    filename : str
        Suggested name (only its suffix survives the project's opaque ``upload_to``).
    produce : callable(Path) -> object
        Writes the complete file at the given temporary path (same suffix).

    Returns
    -------
    str
        The storage name of the new file; the row is not changed.

    Raises
    ------
    Exception
        Whatever ``produce`` raises; nothing is stored then.
    """
    name = field_file.field.generate_filename(field_file.instance, filename)
    with tempfile.TemporaryDirectory(prefix=PARTIAL_FOLDER_PREFIX) as folder:
        path = Path(folder) / f".partial-{Path(name).name}"
        produce(path)
        with path.open("rb") as handle:
            return field_file.storage.save(name, File(handle))


#: Prefix of :func:`store_atomically`'s temporary folders (in ``tempfile.gettempdir()``).
PARTIAL_FOLDER_PREFIX = "deid-media-"


def remove_stale_partials(older_than_s: float) -> int:
    """Delete the temporary folders of :func:`store_atomically` that a killed writer left.

    A writer killed mid-file (SIGKILL, a lost machine) never runs the ``TemporaryDirectory``
    clean-up, and a half video stays in this machine's temporary folder. Only folders whose
    newest entry is older than ``older_than_s`` go: a younger one may still be written by a
    live worker of this machine. Nothing of the media storage is touched (the file is saved
    to it whole, under a new name, only once made).

    Returns
    -------
    int
        Folders deleted.
    """
    cutoff = time.time() - older_than_s
    removed = 0
    for folder in Path(tempfile.gettempdir()).glob(f"{PARTIAL_FOLDER_PREFIX}*"):
        with contextlib.suppress(FileNotFoundError):
            if not folder.is_dir():
                continue
            newest = max([folder.stat().st_mtime] + [p.stat().st_mtime for p in folder.iterdir()])
            if newest < cutoff:
                shutil.rmtree(folder, ignore_errors=True)
                removed += 1
    return removed


def ensure_gallery_crop(gallery_image) -> GalleryCrop:
    """The rater-facing crop of a gallery image, created once even under concurrent requests.

    A crop of another size or an older :attr:`GalleryCrop.version` is replaced (row and
    file), so a changed crop style reaches raters without manual clean-up. When several
    requests create the same crop at once, the first row stored wins (one crop per
    gallery image is a unique constraint) and the others delete their files and return it.

    Raises
    ------
    ValueError
        If the gallery image cannot be decoded.
    """
    size_px = crop_size_px()
    version = GalleryCrop.CURRENT_VERSION
    existing = GalleryCrop.objects.filter(gallery_image=gallery_image).first()
    if existing is not None and (existing.size_px, existing.version) == (size_px, version):
        return existing
    png = face_crop_png(read_image_rgb(gallery_image.image), size_px=size_px)
    crop = GalleryCrop(gallery_image=gallery_image, size_px=size_px, version=version)
    crop.file.name = store_atomically(crop.file, "crop.png", lambda path: path.write_bytes(png))
    try:
        with transaction.atomic():
            if existing is not None:  # its PNG and probe go after the commit (trials.models)
                GalleryCrop.objects.filter(
                    pk=existing.pk, size_px=existing.size_px, version=existing.version
                ).delete()
            crop.save()
    except IntegrityError:  # a concurrent request stored its crop first: use that one
        crop.file.storage.delete(crop.file.name)
        return GalleryCrop.objects.get(gallery_image=gallery_image)
    return crop


def web_file_ready(video) -> bool:
    """Whether the SourceVideo or MaskedVideo has its browser copy in storage."""
    return bool(video.web_file) and video.web_file.storage.exists(video.web_file.name)


def ensure_web_file(video) -> bool:
    """Transcode a SourceVideo or MaskedVideo to H.264 MP4 once (``video.web_file``).

    Safe to run twice at once (a redelivered task): the first copy stored is kept and the
    other is deleted. Never called from a rater's request (transcoding takes seconds).

    Returns
    -------
    bool
        True if this call stored the copy, False if one was there already.

    Raises
    ------
    automated.video.VideoError
        If ffmpeg cannot transcode the file (nothing is stored then).
    """
    if web_file_ready(video):
        return False
    old_name = video.web_file.name or ""

    def produce(path: Path) -> None:
        with local_path(video.file) as source:
            transcode_for_web(source, path)

    name = store_atomically(video.web_file, "web.mp4", produce)
    if not type(video).objects.filter(pk=video.pk, web_file=old_name).update(web_file=name):
        video.web_file.storage.delete(name)  # prepared concurrently: keep the other copy
        video.refresh_from_db(fields=["web_file"])
        return False
    video.web_file.name = name
    return True


def not_prepared_response() -> HttpResponse:
    """503 with ``Retry-After``: the medium is being prepared (RFC 9110, section 10.2.3)."""
    response = HttpResponse(
        "This video is still being prepared for raters. Please try again in a few seconds.\n",
        status=503,
        content_type="text/plain; charset=utf-8",
    )
    response["Retry-After"] = str(RETRY_AFTER_S)
    return private_response(response)


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


def private_response(response: HttpResponse) -> HttpResponse:
    """``response`` marked private and uncacheable, its type not to be sniffed; returned."""
    response["Cache-Control"] = "private, no-store"
    response["X-Content-Type-Options"] = "nosniff"
    return response


#: Catch-trial probe video when the campaign has no probed evaluated clip: frames, frame
#: rate and frame size (those of the GRID clips).
CATCH_FRAMES, CATCH_FPS, CATCH_FRAME_SIZE = 75, 25, (360, 288)


def catch_video_spec(campaign, probe_image_id: int | None = None) -> tuple[int, float, tuple[int, int]]:
    """Frames, frame rate and ``(width, height)`` a catch-trial probe of the campaign takes
    when it is made now.

    With ``probe_image_id`` (the gallery image the probe is made of), those of the
    evaluated source video whose footage the probe is drawn on now (:func:`catch_footage`,
    seeded by the secret key and the image), so catch videos have the formats and lengths
    of the clips they are mixed with in the same proportions: no header field, length or
    size tells them apart (a probe of the median format only would mark every other format
    "not a check"). Without it, the medians. :data:`CATCH_FRAMES`, :data:`CATCH_FPS`,
    :data:`CATCH_FRAME_SIZE` for a campaign without probed videos.

    The draw moves when items change (finding B of the review: on GRID, flagging one
    masked copy moved 4-5 of the 10 probes' draw away from what had been encoded: 95 of 200
    over 20 secret keys, 33 of them on the flagged copy), so a probe
    once made is described by what its crop recorded (``GalleryCrop.catch_frames``,
    ``catch_fps``, :func:`ensure_catch_video`), not by this function.
    """
    rows = _catch_format_rows(campaign)
    if not rows:
        return CATCH_FRAMES, CATCH_FPS, CATCH_FRAME_SIZE
    if probe_image_id is None:
        return _format_of(sorted(column)[len(rows) // 2] for column in list(zip(*rows)))
    source_id, _ = _catch_footage_ids(campaign, probe_image_id, rows)
    return _format_of(next(row for row in rows if row[0] == source_id))


def _format_of(row) -> tuple[int, float, tuple[int, int]]:
    _, frames, fps, width, height = row
    return int(frames), float(fps), (int(width) // 2 * 2, int(height) // 2 * 2)


def _catch_format_rows(campaign) -> list:
    from evalsite.models import SourceVideo

    return list(
        SourceVideo.objects.filter(campaign=campaign, in_evaluated_subset=True, practice=False)
        .exclude(frame_count=None)
        .exclude(fps=None)
        .exclude(width=None)
        .exclude(height=None)
        .order_by("id")
        .values_list("id", "frame_count", "fps", "width", "height")
    )


def _catch_draw(probe_image_id: int, n_rows: int) -> int:
    digest = hashlib.sha256(f"{settings.SECRET_KEY}:catch-format:{probe_image_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % n_rows


def _catch_footage_pool(campaign, rows: list) -> tuple[dict, dict, dict, dict]:
    """What probe footage is drawn from: ``(weights, footage, plans, identity_of)``.

    ``footage``: ``{condition: [(source id, masked id or None), ...]}`` (condition: None for
    clear, else the submission id), the identity-task items' footage among ``rows``;
    ``weights``: their target counts per condition; ``plans``: the lineup blocks
    (:func:`trials.lineups.identity_plans`); ``identity_of``: ``{source id: identity id}``.

    A probe is an identity trial, so it stands only on footage that identity trials show
    (finding A of the review: drawn from every evaluated clip, 259 of 600 GRID probes over
    the review's 100 secret keys, 245 of 600 over the test's, stood on a woman's clip,
    which has action items only, its thin group
    getting no lineups: an identity trial on a clip no identity trial shows, with another
    group's body, hair and clothes than its lineup). Before rating opens (no identity items
    yet, so no condition shares either): the clear clips the lineup plan gives identity
    trials (those :func:`trials.assignment.sync_items` will make identity items of), or
    every clip when the plan gives none (a campaign without lineup blocks has no evaluated
    identity trial to look like).
    """
    from .models import Item, Task

    sources = {row[0] for row in rows}
    plans, videos = lineups.identity_plans(campaign)
    identity_of = dict(videos)
    weights: dict[int | None, int] = {}
    footage: dict[int | None, list] = {}
    items = (
        Item.objects.evaluated(campaign)
        .filter(task=Task.IDENTITY, source_video_id__in=sources)
        .order_by("source_video_id", "masked_video_id")
        .values_list("source_video_id", "masked_video_id", "masked_video__submission_id", "target_count")
    )
    for source_id, masked_id, submission_id, target in items:
        weights[submission_id] = weights.get(submission_id, 0) + target
        if (source_id, masked_id) not in footage.setdefault(submission_id, []):
            footage[submission_id].append((source_id, masked_id))
    if not weights or not sum(weights.values()):
        planned = lineups.identity_videos(plans, videos)
        clips = [row[0] for row in rows if row[0] in planned] or [row[0] for row in rows]
        weights, footage = {None: 1}, {None: [(pk, None) for pk in clips]}
    return weights, footage, plans, identity_of


def _catch_footage_ids(
    campaign, probe_image_id: int, rows: list, pool: tuple | None = None
) -> tuple[int, int | None]:
    """``(source video id, masked video id or None)`` of the footage of a catch probe
    (``pool``: :func:`_catch_footage_pool` of ``rows`` when the caller has it).

    Evaluated identity trials show clear clips and the masked copies of every submission in
    rating in proportion to their items' target counts (:class:`trials.models.Item`, one
    item per clip, condition and task), and masked copies are coded differently from clear
    ones (GRID with blurred faces, 30 served copies each: mean slice QP 17.05 against 17.84,
    first-frame log slice bytes 8.23 against 8.53, complexity 6.94 against 7.01). Probes
    made of clear footage only were coded like clear clips and told from a mixture of
    mostly masked ones (hostile pass 3, issue 19). So the condition of a probe's footage
    is drawn in the identity items' proportions, stratified over the campaign's gallery
    images (the image's rank in a keyed order of them is its quantile: of a campaign's few
    probes, as many stand on each condition as its share gives, not a binomial draw of
    them). The clip is then drawn among the condition's identity-trial footage
    (:func:`_catch_footage_pool`) of people in the lineup block of the probe's person
    (:func:`trials.design.exposure_plan`: an evaluated trial's clip always shows a member
    of its lineup's block, so the footage's body, hair and clothes are of the lineup's
    group), or among all of it when that block has none (the person is in no block: a
    thin group, whose probes no check shows).
    """
    from evalsite.models import GalleryImage

    weights, footage, plans, identity_of = _catch_footage_pool(campaign, rows) if pool is None else pool
    images = dict(GalleryImage.objects.filter(identity__campaign=campaign).values_list("id", "identity_id"))
    plan = plans.get(images.get(probe_image_id))
    block = set(plan.block) if plan is not None else set()
    order = sorted(
        _catch_stratum(images, plans, block),
        key=lambda pk: hashlib.sha256(f"{settings.SECRET_KEY}:catch-stratum:{pk}".encode()).digest(),
    )
    rank = (
        order.index(probe_image_id)
        if probe_image_id in order
        else _catch_draw(probe_image_id, len(order) or 1)
    )
    quantile = (rank + 0.5) / max(len(order), 1) * sum(weights.values())
    conditions = sorted(weights, key=lambda key: (key is not None, key or 0))  # clear first
    cumulative = np.cumsum([weights[key] for key in conditions])
    condition = conditions[min(int(np.searchsorted(cumulative, quantile, side="right")), len(conditions) - 1)]
    choices = [pair for pair in footage[condition] if identity_of.get(pair[0]) in block] or footage[condition]
    return choices[_catch_draw(probe_image_id, len(choices))]


def _catch_stratum(images: dict, plans: dict, block: set) -> list[int]:
    """The probe stills drawn together with a probe of ``block``'s (``images``: ``{image id:
    identity id}``): those of the block's people (:func:`trials.lineups.probe_image_pk`), or,
    for a person in no block, those of every person in none. A check shows the probes of
    one block, so each block's probes split over clear and masked footage in the items'
    shares; stratified over all stills instead, GRID's 6 men's probes stood on 2-5 masked
    copies per secret key (not 3), and in 2 of 10 bytes-bot replays the checks' coded
    complexity told them from the evaluated trials (55 of 64 against a base rate of 39).
    """
    by_identity: dict[int, list[int]] = {}
    for image_pk, identity_pk in sorted(images.items()):
        by_identity.setdefault(identity_pk, []).append(image_pk)
    members = block if block else {identity for identity in by_identity if not _in_a_block(plans, identity)}
    probes = (lineups.probe_image_pk(by_identity.get(identity, [])) for identity in members)
    return [pk for pk in probes if pk is not None]


def _in_a_block(plans: dict, identity_pk: int) -> bool:
    plan = plans.get(identity_pk)
    return plan is not None and bool(plan.block)


def catch_footage(campaign, probe_image_id: int):
    """``(source video, masked video or None)`` a catch probe of the image is drawn on now
    (:func:`_catch_footage_ids`): the probe is that footage (the masked copy's when there
    is one) with the lineup face pasted over the clip's face, tracked on the clear clip
    (:func:`catch_video_frames` with :func:`clip_eye_track`), or, when no face is tracked,
    a composite on its wall (:func:`wall_ground_frames`). ``(None, None)`` when the
    campaign has no probed evaluated video.
    """
    from evalsite.models import MaskedVideo, SourceVideo

    rows = _catch_format_rows(campaign)
    if not rows:
        return None, None
    source_id, masked_id = _catch_footage_ids(campaign, probe_image_id, rows)
    masked = None if masked_id is None else MaskedVideo.objects.filter(pk=masked_id).first()
    return SourceVideo.objects.get(pk=source_id), masked


#: Share of a clip's width and height, from its top corners, taken as its wall (no person):
#: a talking-head clip frames the person in the middle, shoulders at the bottom corners.
WALL_WIDTH_SHARE, WALL_HEIGHT_SHARE = 0.16, 0.5


def wall_ground_frames(clip_frames: list[np.ndarray], size: tuple[int, int]) -> list[np.ndarray]:
    """A real clip's background, without its person, as moving ground for a catch probe.

    From every frame, the two top corners (:data:`WALL_WIDTH_SHARE` of the width,
    :data:`WALL_HEIGHT_SHARE` of the height: wall, lighting, camera noise and coding
    texture of real footage) are each tiled in mirrored copies, resized to ``size`` and
    cross-faded from left to right (the room's light gradient, no seam). A probe
    on it looks, frame by frame, like footage of that camera, not like a picture on a
    synthetic ground (issue 19: attention checks indistinguishable by any byte statistic).

    Parameters
    ----------
    clip_frames : list of ndarray of shape (height, width, 3), dtype uint8
        RGB frames of the clip (at least one).
    size : (int, int)
        ``(width, height)`` of the ground, pixels.

    Returns
    -------
    list of ndarray of shape (size[1], size[0], 3), dtype float32
        One ground per clip frame.

    Raises
    ------
    ValueError
        If ``clip_frames`` is empty or too small to hold a wall patch.
    """
    if not clip_frames:
        raise ValueError("a wall ground needs at least one clip frame")
    height, width = clip_frames[0].shape[:2]
    patch_w, patch_h = int(width * WALL_WIDTH_SHARE), int(height * WALL_HEIGHT_SHARE)
    if patch_w < 4 or patch_h < 4:
        raise ValueError(f"a {width}x{height} clip is too small for a wall ground")
    # The room's light gradient: the left wall's weight falls from 1 to 0 across the ground.
    far_weight = np.ascontiguousarray(
        np.broadcast_to(np.linspace(0.0, 1.0, size[0], dtype=np.float32), size[::-1])
    )
    near_weight = 1 - far_weight
    grounds = []
    for frame in clip_frames:
        sides = []
        for patch in (frame[:patch_h, :patch_w], frame[:patch_h, width - patch_w :][:, ::-1]):
            tile = np.hstack([patch, patch[:, ::-1]])
            tile = np.vstack([tile, tile[::-1]])
            sides.append(cv2.resize(tile, size, interpolation=cv2.INTER_LINEAR).astype(np.float32))
        far = np.ascontiguousarray(sides[1][:, ::-1])
        grounds.append(cv2.blendLinear(sides[0], far, near_weight, far_weight))
    return grounds


def catch_video_frames(
    crop_rgb: np.ndarray,
    *,
    n_frames: int,
    frame_size: tuple[int, int],
    seed: int,
    wall: list[np.ndarray] | None = None,
    eyes: np.ndarray | None = None,
    indices=None,
) -> list[np.ndarray]:
    """Frames of a catch-trial probe: the lineup face, transformed, on real footage.

    With ``eyes`` (the eye track of ``wall``, :func:`clip_eye_track`), the probe is the
    real clip itself with the lineup face pasted over the clip's face, following it frame
    by frame (:func:`_footage_frames`): motion, texture, noise and lighting are the
    footage's, so a reader of the served bytes (slice QP, slice sizes, coded complexity)
    finds a real clip's statistics (issue 19, hostile pass 3: on the composite below,
    mean slice QP 13.1-15.0 against the clips' 16.1-19.4 told every check, 360/360).
    Without ``eyes`` (no face found in the clip, or no clip), the older composite below.

    The probe must be easy for a human (the same photo of the same person) but no
    pixel match of the lineup face: the face is mirrored, relit (a side-light gradient,
    per-channel gains, gamma), softened, slightly warped and stretched, rotated 10-16
    degrees, shown larger than in the lineup and off-centre, drifting and turning over the
    clip, on the wall of a real clip of the campaign (``wall``, :func:`wall_ground_frames`;
    without one, a low-saturation synthetic texture), with per-frame sensor noise.

    Parameters
    ----------
    crop_rgb : ndarray of shape (size, size, 3), dtype uint8
        The rater crop of the gallery face (the face the lineup shows).
    n_frames : int
        Frames to make (the campaign's clip length, :func:`catch_video_spec`).
    frame_size : (int, int)
        ``(width, height)`` in pixels.
    seed : int
        Seeds every random choice (one probe per face crop).
    wall : list of ndarray, optional
        RGB frames of a real clip or its masked copy (:func:`catch_footage`): the footage
        the face is pasted on, or whose wall is the ground (used in turn, cycled).
    eyes : ndarray of shape (len(wall), 2, 2), optional
        Eye centres of the clip's face in every ``wall`` frame (:func:`clip_eye_track`):
        the probe is then the footage with the face pasted on.
    indices : iterable of int, optional
        Make only these frames (each equal to that frame of the whole probe: every frame's
        noise has its own seed); default all ``n_frames``.

    Returns
    -------
    list of ndarray of shape (height, width, 3), dtype uint8
        ``n_frames`` RGB frames (or one per index).
    """
    rng = np.random.default_rng(seed)
    width, height = frame_size
    size = crop_rgb.shape[0]
    pad = max(8, height // 7)
    colours = rng.uniform(70, 190, (5, 6, 3)).astype(np.float32)
    colours = 0.35 * colours + 0.65 * colours.mean(axis=2, keepdims=True)
    ground = cv2.resize(colours, (width + 2 * pad, height + 2 * pad), interpolation=cv2.INTER_CUBIC)
    texture = rng.normal(0, 18, ground.shape[:2]).astype(np.float32)
    indices = list(range(n_frames) if indices is None else indices)
    if wall and eyes is not None:
        grounds = []  # the footage itself is the ground (:func:`_footage_frames`)
    elif wall:
        grounds = wall_ground_frames(
            [wall[i % len(wall)] for i in indices], (width + 2 * pad, height + 2 * pad)
        )
    else:
        grounds = [np.clip(ground + cv2.GaussianBlur(texture, (0, 0), 2.5)[..., None], 0, 255)] * len(indices)

    face = crop_rgb[:, ::-1].astype(np.float32)
    x = np.linspace(-1, 1, size, dtype=np.float32)
    side_light = rng.choice([-1, 1]) * rng.uniform(0.35, 0.5)
    light = (1 + side_light * x)[None, :, None] * (1 + rng.uniform(-0.15, 0.15) * x)[:, None, None]
    # A soft shadow over part of the face (the light comes from one side and above).
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) / size
    spot = rng.uniform(0.2, 0.8, 2)
    shadow = np.exp(-((xx - spot[0]) ** 2 + (yy - spot[1]) ** 2) / (2 * 0.18**2))
    light = light * (1 - rng.uniform(0.3, 0.4) * shadow)[..., None]
    gains = rng.uniform(0.85, 1.15, 3).astype(np.float32)
    face = 255 * (np.clip(face * light * gains, 0, 255) / 255) ** rng.uniform(0.75, 1.3)
    face = cv2.GaussianBlur(face, (0, 0), 1.0)
    grid = np.meshgrid(np.arange(size, dtype=np.float32), np.arange(size, dtype=np.float32))
    shift = [
        0.025 * size * cv2.resize(rng.normal(0, 1, (4, 4)).astype(np.float32), (size, size)) for _ in range(2)
    ]
    face = cv2.remap(
        face, grid[0] + shift[0], grid[1] + shift[1], cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE
    )
    if wall and eyes is not None:
        return _footage_frames(face, wall, eyes, rng, frame_size=frame_size, indices=indices)
    # A slightly tighter oval than the lineup's: its rim (hairline, ears) is no silhouette cue.
    alpha = _tight_oval(size, 0.9)

    aspect = rng.uniform(0.85, 1.15)
    scale0 = rng.uniform(0.62, 0.86) * height / size
    angle0 = rng.choice([-1, 1]) * rng.uniform(16, 24)
    centre0 = np.array((width * (0.5 + rng.uniform(-0.18, 0.18)), height * (0.5 + rng.uniform(-0.08, 0.08))))
    phase = rng.uniform(0, 2 * np.pi, 3)
    noise_sigma = np.float32(rng.uniform(1.6, 3.0))
    yaw0 = rng.choice([-1, 1]) * rng.uniform(0.18, 0.26)
    frames = []
    for i, ground in zip(indices, grounds, strict=True):
        t = i / max(n_frames - 1, 1)
        angle = angle0 + 4 * np.sin(2 * np.pi * t + phase[0])
        scale = scale0 * (1 + 0.06 * np.sin(np.pi * t + phase[1]))
        centre = centre0 + (
            0.04 * width * np.sin(2 * np.pi * t + phase[2]),
            0.03 * height * np.cos(2 * np.pi * t + phase[2]),
        )
        homography = _probe_homography(size, angle, scale, aspect, yaw0 + 0.05 * np.sin(np.pi * t), centre)
        shown = cv2.warpPerspective(face, homography, (width, height), flags=cv2.INTER_LINEAR)
        opacity = cv2.warpPerspective(alpha, homography, (width, height), flags=cv2.INTER_LINEAR)
        left, top = int(pad * (1 + 0.8 * np.sin(np.pi * t))), int(pad * (1 + 0.5 * np.cos(np.pi * t)))
        window = np.ascontiguousarray(ground[top : top + height, left : left + width])
        frame = cv2.blendLinear(shown, window, opacity, 1 - opacity)
        noise = np.random.default_rng([seed, i]).standard_normal(frame.shape, dtype=np.float32)
        noise *= noise_sigma
        # Sensor noise; OpenCV rounds and saturates to 0-255 on the way to uint8.
        frames.append(cv2.add(frame, noise, dtype=cv2.CV_8U))
    return frames


#: Pasted face: its size over the clip face's (eye distance), a seeded draw in this range
#: (a little larger covers the clip's own brows, cheeks and chin).
FOOTAGE_FACE_GROW = (1.04, 1.14)
#: Share of the colour difference between the clip's face and the pasted one made up, per
#: frame (the pasted face follows the footage's light without losing its own complexion).
FOOTAGE_COLOUR_MATCH = 0.6


def _footage_frames(face, wall, eyes, rng, *, frame_size, indices) -> list[np.ndarray]:
    """A probe made of real footage (issue 19, hostile pass 3): clip frame ``i`` with
    ``face`` (float32 RGB square, eyes at :data:`trials.face_norm.EYE_TARGETS`) pasted over
    the clip's face, mapped by the similarity that takes its eyes onto ``eyes[i]`` (scaled
    up by a seeded :data:`FOOTAGE_FACE_GROW`), soft-edged, shifted towards the colour of
    the clip's face (:data:`FOOTAGE_COLOUR_MATCH`). Frame ``i`` depends on ``i`` and the
    seed only.

    The footage is not mirrored (it was for half the seeds, against a pixel match of the
    footage with its clip; a bot that decodes pixels sees the instruction anyway): x264
    codes a mirrored copy of a clip's web copy finer than the copy itself, and mirrored
    probes were told from the clips by their bytes (GRID, the 10 web copies through the
    probe's encoding with and without mirroring, one served copy each with the same rate
    factors: mean slice QP -0.99, complexity -0.113, each of the 10 lower; probes of one
    campaign differed from their clips by -0.146 complexity when mirrored, correlation
    -0.84 over 40, the probe's largest per-seed effect). Nor is noise added: 2.0-2.6 grey
    levels of it (0.8-1.4 before) made up for probes coded finer than the clips, which was
    the mirroring's doing, and gave every frame a floor of coded noise that flattened the
    spread of a probe's per-frame complexity (sd -0.029 against the clear clips, -0.047
    against the masked copies; a replay of the bytes-only bot told checks by it 48/64).
    Unmirrored and without noise, paired as above (10 clips and their blurred copies, a
    probe of another person's face on each): mean slice QP -0.10 against the clear clip,
    +0.38 against the masked copy (the pasted face is sharp where the copy's was
    blurred), complexity -0.006 and +0.041, sd of complexity -0.011 and -0.019."""
    width, height = frame_size
    size = face.shape[0]
    alpha = cv2.GaussianBlur(_tight_oval(size, 0.88), (0, 0), 0.02 * size)
    inside = alpha > 0.5
    face_mean = face[inside].mean(axis=0)
    targets = np.asarray(face_norm.EYE_TARGETS, np.float64) * size
    grow = rng.uniform(*FOOTAGE_FACE_GROW)
    frames = []
    for i in indices:
        clip = wall[i % len(wall)]
        eye_pair = np.asarray(eyes[i % len(eyes)], np.float64).copy()
        clip_h, clip_w = clip.shape[:2]
        if (clip_w, clip_h) != (width, height):
            clip = cv2.resize(clip, (width, height), interpolation=cv2.INTER_AREA)
            eye_pair *= (width / clip_w, height / clip_h)
        matrix = _eye_similarity(targets, eye_pair, grow)
        shown = cv2.warpAffine(face, matrix, (width, height), flags=cv2.INTER_LINEAR)
        opacity = cv2.warpAffine(alpha, matrix, (width, height), flags=cv2.INTER_LINEAR)
        ground = np.ascontiguousarray(clip, dtype=np.float32)
        # The clip's face: a box below and between its eyes (cheeks, nose, mouth).
        spread = float(np.hypot(*(eye_pair[1] - eye_pair[0])))
        centre = eye_pair.mean(axis=0)
        x0, x1 = int(max(centre[0] - 0.8 * spread, 0)), int(min(centre[0] + 0.8 * spread, width))
        y0, y1 = int(max(centre[1] - 0.2 * spread, 0)), int(min(centre[1] + 1.2 * spread, height))
        if x1 > x0 and y1 > y0:
            shift = FOOTAGE_COLOUR_MATCH * (ground[y0:y1, x0:x1].reshape(-1, 3).mean(axis=0) - face_mean)
            shown = shown + shift.astype(np.float32)
        frame = cv2.blendLinear(shown, ground, opacity, 1 - opacity)
        frames.append(np.clip(np.rint(frame), 0, 255).astype(np.uint8))
    return frames


def _eye_similarity(targets: np.ndarray, eyes: np.ndarray, grow: float) -> np.ndarray:
    """2x3 similarity taking the two ``targets`` points onto ``eyes``, then scaled by ``grow``
    about the eyes' midpoint."""
    source = complex(*(targets[1] - targets[0]))
    dest = complex(*(eyes[1] - eyes[0]))
    factor = dest / source * grow
    middle_s, middle_d = targets.mean(axis=0), eyes.mean(axis=0)
    linear = np.array([[factor.real, -factor.imag], [factor.imag, factor.real]])
    offset = middle_d - linear @ middle_s
    return np.hstack([linear, offset[:, None]]).astype(np.float64)


#: Frames of a clip whose eyes are interpolated when the detector misses them; a clip with
#: fewer frames found than this share has no eye track (the composite probe then).
EYE_TRACK_MIN_FOUND = 0.5


def clip_eye_track(frames: list[np.ndarray]) -> np.ndarray | None:
    """The eye centres of the largest face in every frame of a clip, for a footage probe.

    MediaPipe BlazeFace keypoints (:class:`automated.detection.MediaPipeFaceDetector`, about
    3 ms a 360x288 frame), viewer's-left eye first; frames without a face get the
    neighbouring frames' eyes linearly interpolated; then a 3-frame moving average (the
    keypoints jitter by a pixel or so, the head does not).

    Parameters
    ----------
    frames : list of ndarray of shape (height, width, 3), dtype uint8, RGB

    Returns
    -------
    ndarray of shape (len(frames), 2, 2), float32, or None
        ``[[x, y] of the viewer's-left eye, [x, y] of the other]`` per frame, pixels; None
        when a face is found in fewer than :data:`EYE_TRACK_MIN_FOUND` of the frames.
    """
    from automated.detection import MediaPipeFaceDetector

    if not frames:
        return None
    track = np.full((len(frames), 4), np.nan)
    with MediaPipeFaceDetector() as detector:
        for index, frame in enumerate(frames):
            boxes = detector.detect(np.ascontiguousarray(frame)).boxes_xyxy
            if len(boxes):
                largest = int(np.argmax((boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])))
                pair = detector.last_keypoints_xy[largest, :2].astype(np.float64)
                track[index] = pair[np.argsort(pair[:, 0])].ravel()
    found = ~np.isnan(track[:, 0])
    if found.sum() < max(1, EYE_TRACK_MIN_FOUND * len(frames)):
        return None
    steps = np.arange(len(frames))
    for column in range(4):
        track[:, column] = np.interp(steps, steps[found], track[found, column])
    padded = np.vstack([track[:1], track, track[-1:]])
    smooth = (padded[:-2] + padded[1:-1] + padded[2:]) / 3
    return smooth.reshape(-1, 2, 2).astype(np.float32)


def _probe_footage(source, masked, n_frames: int):
    """``(frames, eyes)`` of the footage a catch probe is made of (:func:`catch_footage`):
    the masked copy's frames when it is one (else the clip's), and the eye track of the
    clear clip (:func:`clip_eye_track`; a masked face is not tracked, and a masked copy
    has its clip's frames and size, :mod:`evalsite.validation`); ``eyes`` None when no
    face is tracked, frames None when no clip."""
    clip = _video_frames(source, n_frames)
    wall = (_video_frames(masked, n_frames) if masked is not None else None) or clip
    return wall, (clip_eye_track(clip) if clip else None)


def _video_frames(video, n_frames: int) -> list[np.ndarray] | None:
    """Up to ``n_frames`` RGB frames of a source or masked video (its web copy, else its
    file); None when there is none or it cannot be read."""
    from automated.video import VideoError, iter_frames

    field_file = None if video is None else (video.web_file or video.file)
    if not field_file:
        return None
    frames: list[np.ndarray] = []
    try:
        with local_path(field_file) as path:
            for _, frame in iter_frames(path):
                frames.append(frame)
                if len(frames) >= n_frames:
                    break
    except (FileNotFoundError, VideoError) as error:
        logger.warning("catch probe: no footage from %s %s (%s)", type(video).__name__, video.pk, error)
        return None
    return frames or None


def _tight_oval(size: int, shrink: float) -> np.ndarray:
    """Opacity of a centred oval ``shrink`` times the lineup's (:func:`oval_alpha`), float32."""
    mask = np.zeros((size, size), np.uint8)
    axes = tuple(int(round(size * a * shrink)) for a in OVAL_SEMI_AXES)
    cv2.ellipse(mask, (size // 2, size // 2), axes, 0, 0, 360, 255, -1, cv2.LINE_AA)
    return mask.astype(np.float32) / 255.0


def _probe_homography(size, angle, scale, aspect, yaw, centre) -> np.ndarray:
    """3x3 map of a ``size`` square face onto the frame: foreshortened on one side by
    ``yaw`` (a head turned a little: that side shorter and narrower), stretched by
    ``aspect``, rotated ``angle`` degrees, scaled ``scale`` and centred on ``centre``."""
    half = size / 2
    near, far = 1.0, 1.0 - abs(yaw)
    squeeze = 1.0 - abs(yaw) / 2
    left, right = (near, far) if yaw > 0 else (far, near)
    corners = np.array(
        [
            (-half * squeeze, -half * left),
            (half * squeeze, -half * right),
            (half * squeeze, half * right),
            (-half * squeeze, half * left),
        ]
    )
    corners[:, 0] *= aspect
    theta = np.deg2rad(angle)
    rotation = np.array([[np.cos(theta), np.sin(theta)], [-np.sin(theta), np.cos(theta)]])
    target = corners @ rotation.T * scale + centre
    source = np.array([(0, 0), (size, 0), (size, size), (0, size)], np.float32)
    return cv2.getPerspectiveTransform(source, target.astype(np.float32))


def _catch_video_current(crop: GalleryCrop) -> bool:
    """Whether ``crop`` has a catch probe of the current style in storage, its footage and
    length recorded."""
    current = crop.catch_video.name.endswith(CATCH_VIDEO_SUFFIX) if crop.catch_video else False
    current = current and crop.catch_frames is not None and bool(crop.catch_fps)
    return current and crop.catch_video.storage.exists(crop.catch_video.name)


def _catch_footage_current(crop: GalleryCrop) -> bool:
    """Whether the footage ``crop``'s probe was made of may still carry a probe: one of the
    identity-trial footage :func:`_catch_footage_pool` draws from now (its source video
    still evaluated with a probed format, and an identity item of its condition still
    taking trials: not superseded, its masked copy not replaced, flagged or taken out of
    rating) of the condition (clear, or which submission's copies) drawn for it now
    (:func:`_catch_footage_ids`), or no clip while the campaign has none with a probed format."""
    campaign = crop.gallery_image.identity.campaign
    rows = _catch_format_rows(campaign)
    if crop.catch_source_pk is None or not rows:
        return crop.catch_source_pk is None and not rows
    pool = _catch_footage_pool(campaign, rows)
    footage = pool[1]
    recorded = (crop.catch_source_pk, crop.catch_masked_pk)
    condition = next((key for key, pairs in footage.items() if recorded in pairs), False)
    if condition is False:
        return False
    # And of the condition drawn now: when a submission enters rating its masked copies must
    # appear in checks too (hostile pass h61: a probe kept on its old condition left a third
    # of the identity trials, the new submission's, never a check).
    drawn = _catch_footage_ids(campaign, crop.gallery_image_id, rows, pool)
    return next((key for key, pairs in footage.items() if drawn in pairs), None) == condition


def retire_probes_on(*, source_video_pk: int | None = None, masked_video_pk: int | None = None) -> int:
    """Have the catch probes made of a replaced file's footage made again on their next use.

    A probe records the footage it was made of by id (``catch_source_pk``,
    ``catch_masked_pk``), and a replaced clear file keeps its source video's id: its probes
    would go on showing the old clip's frames and length, which no evaluated trial shows any
    more (a bot comparing a trial's wall or length with the clips it has seen could tell the
    check). Forgetting the recorded length makes :func:`ensure_catch_video` make the probe
    again (on the footage drawn then) and delete the old file.

    Parameters
    ----------
    source_video_pk : int, optional
        Probes on this source video's footage, clear or masked (its clear file was replaced).
    masked_video_pk : int, optional
        Probes on this masked video (it was replaced by a newer file).

    Returns
    -------
    int
        Probes to be made again.
    """
    crops = GalleryCrop.objects.none()
    if source_video_pk is not None:
        crops |= GalleryCrop.objects.filter(catch_source_pk=source_video_pk)
    if masked_video_pk is not None:
        crops |= GalleryCrop.objects.filter(catch_masked_pk=masked_video_pk)
    return crops.exclude(catch_frames=None).update(catch_frames=None)


#: The crop's fields a probe is described by (:func:`ensure_catch_video`).
CATCH_FIELDS = ["catch_video", "catch_source_pk", "catch_masked_pk", "catch_frames", "catch_fps"]


def ensure_catch_video(crop: GalleryCrop, *, recheck_footage: bool = False) -> bool:
    """Make the catch-trial probe video of a face crop once (``crop.catch_video``).

    Safe to run twice at once (compare-and-set like :func:`ensure_web_file`). A probe of
    an older style (its name does not end in ``CATCH_VIDEO_SUFFIX``, e.g. the zoomed crop on
    grey) is replaced and its file deleted. Frames, frame rate and size are those of the
    footage drawn for it (:func:`catch_footage`, :func:`catch_video_spec`); the frames are
    :func:`catch_video_frames` on that footage and its eye track (:func:`clip_eye_track`,
    about 0.3 CPU s a 3 s clip).

    The crop records what the probe was made of (``catch_source_pk``, ``catch_masked_pk``,
    ``catch_frames``, ``catch_fps``: finding B of the review), and what needs the probe's
    length reads it there (:func:`trials.plausibility.clip_duration_ms`): the draw moves
    when items change, and flagging one masked copy of GRID moved 4-5 of the 10 probes' drawn
    length and footage away from what was encoded. A probe is made again only when its
    style is old, its file is missing, nothing is recorded (a probe of the code before, or
    one whose footage's file was replaced: :func:`retire_probes_on`), or, with ``recheck_footage`` (:func:`trials.tasks.prepare_campaign_media`: when rating
    opens and when a submission enters it), its footage may no longer carry a probe
    (:func:`_catch_footage_current`: the source video left the evaluated subset or was
    deleted, the masked copy was replaced, flagged or its submission taken out of rating,
    no identity item of it is left), or its condition is no longer the one drawn for it (a
    submission entered or left rating: the probes' conditions follow the identity items'
    shares). Not when only the clip drawn within its condition moved (other blocks): such a
    probe still stands on identity-trial footage, and keeping it keeps its length the one
    of the copies already served (an open check keeps its stored copy either way). A rater's request never runs the
    footage check (four queries an evaluated trial's request does not make: a check's
    requests would take longer), so a probe whose footage was flagged is served until
    media are prepared again (opening rating again prepares them).

    Where the database locks rows (PostgreSQL), concurrent calls for one crop make it once:
    the first holds the crop's row lock while it makes the probe, the others wait for it and
    read it. Without media prepared ahead, every rater's first trials can be checks showing
    one of a few faces (a campaign without practice material practises on still-probe checks,
    :func:`trials.assignment._practice_trial`), and each of many requests arriving at once
    made the same probe (1-2 CPU s) only to throw it away. On SQLite (no row locks; a
    transaction there would hold the database's write lock while encoding) the
    compare-and-set alone keeps one.

    Returns
    -------
    bool
        True if this call stored the video.

    Raises
    ------
    automated.video.VideoError
        If ffmpeg cannot encode it.
    """

    def current() -> bool:
        return _catch_video_current(crop) and (not recheck_footage or _catch_footage_current(crop))

    if current():
        return False
    if not connection.features.has_select_for_update:
        return _make_catch_video(crop)
    with transaction.atomic():
        list(GalleryCrop.objects.select_for_update().filter(pk=crop.pk).values_list("pk"))
        # as another request may have made it while this one waited
        crop.refresh_from_db(fields=CATCH_FIELDS)
        if current():
            return False
        return _make_catch_video(crop)


def _make_catch_video(crop: GalleryCrop) -> bool:
    """Make and store ``crop``'s catch probe and record its footage and length
    (:func:`ensure_catch_video`); True if this call stored it, False if another one's was
    stored first (this one's file is deleted)."""
    crop_rgb = read_image_rgb(crop.file)
    campaign = crop.gallery_image.identity.campaign
    source, masked = catch_footage(campaign, crop.gallery_image_id)
    if source is None:
        n_frames, fps, frame_size = CATCH_FRAMES, CATCH_FPS, CATCH_FRAME_SIZE
    else:
        n_frames, fps, frame_size = _format_of(
            (source.pk, source.frame_count, source.fps, source.width, source.height)
        )
    digest = hashlib.sha256(f"{settings.SECRET_KEY}:catch-probe:{crop.pk}".encode()).digest()
    seed = int.from_bytes(digest[:8], "big")
    wall, eyes = _probe_footage(source, masked, n_frames)

    def produce(path: Path) -> None:
        frames = catch_video_frames(
            crop_rgb, n_frames=n_frames, frame_size=frame_size, seed=seed, wall=wall, eyes=eyes
        )
        frames_to_web_copy(frames, path, fps=fps, resolution_wh=frame_size)

    old_name = crop.catch_video.name or ""
    name = store_atomically(crop.catch_video, "catch.mp4", produce)
    made = {
        "catch_source_pk": None if source is None else source.pk,
        "catch_masked_pk": None if masked is None else masked.pk,
        "catch_frames": n_frames,
        "catch_fps": fps,
    }
    if not GalleryCrop.objects.filter(pk=crop.pk, catch_video=old_name).update(catch_video=name, **made):
        crop.catch_video.storage.delete(name)
        crop.refresh_from_db(fields=CATCH_FIELDS)
        return False
    if old_name:  # a probe of an older style, or on footage that may no longer carry one
        crop.catch_video.storage.delete(old_name)
    crop.catch_video.name = name
    for field, value in made.items():
        setattr(crop, field, value)
    return True
