"""Organizer warnings about gallery material that gives raters the answer without recognition.

- **A still that is a frame of an evaluated video.** Matching pixels then answers a clear
  (and a lightly masked) trial with no face recognition at all. Each gallery still is
  compared with every frame of its identity's evaluated clips by a DCT perceptual hash
  (:func:`phash`; Zauner, "Implementation and benchmarking of perceptual image hash
  functions", 2010, section 3.3: the sign of the low-frequency DCT coefficients of a
  grey, shrunk image against their median), ``HASH_SIZE`` x ``HASH_SIZE`` = 256 bits. A
  frame within :data:`MATCH_BITS` bits is a match. On the GRID and CREMA-D demo clips a
  still taken from the clip itself is 0-4 bits from its nearest frame (also as a 2/3-size
  JPEG), other clips of the same person 10-124 bits; two clips of one GRID recording
  session can still match (they look alike frame for frame: ID07's still and its clip
  sgbc3n, 2 bits, so the demo makes sgbc3n the attacker's own, never rated), which is
  then worth the warning too. Only evaluated clips are compared: raters never see the
  attacker's own (``attacker_train``) clips. Results are stored per still
  (:class:`trials.models.StillCheck`) by :func:`check_stills`, run when rating media are
  prepared (``trials.tasks``), and read by the organizer page and reports without
  decoding video.
- **An identity alone in its format or demographic group** (:func:`lonely_identities`):
  an identity that is the only one with videos of some format (frame size, frame rate,
  container; ``evalsite.video_formats``), even if it has videos of a shared format too
  (on the demo: ID11, the one CREMA-D actor, 480x360 at 29.97 fps in FLV; ID07, the only
  one with 720x576 clips, though its lwbsza is 360x288 like the others'), or whose
  demographic profile nobody else shares, can be picked out of a lineup by that alone.

For the reports: :func:`stills_from_evaluated_clips` (identity -> the evaluated video its
still looks like a frame of) and ``GalleryImage.still_check.from_evaluated_clip``.
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter, defaultdict

import cv2
import numpy as np

from automated.face_boxes import check_frame
from automated.video import VideoError, iter_frames
from evalsite.storage import local_path
from evalsite.models import Campaign, GalleryImage, Identity, SourceVideo
from evalsite.video_formats import alone_in_format, video_format

from . import design
from .media import read_image_rgb
from .models import StillCheck

logger = logging.getLogger("deid.trials")

#: Side of the low-frequency DCT block kept: a hash of HASH_SIZE**2 bits.
HASH_SIZE = 16
#: A frame within this many differing bits (of 256) is taken as the still's source.
MATCH_BITS = 8


def phash(image_rgb: np.ndarray, hash_size: int = HASH_SIZE) -> np.ndarray:
    """DCT perceptual hash of an image (Zauner 2010, section 3.3).

    The image is converted to grey, shrunk to ``4 * hash_size`` pixels square (area
    averaging), transformed by an orthonormal 2-D DCT-II; each of the ``hash_size`` x
    ``hash_size`` lowest-frequency coefficients gives one bit: above their median or not.

    Parameters
    ----------
    image_rgb : ndarray of shape (height, width, 3), dtype uint8
    hash_size : int, default=16

    Returns
    -------
    ndarray of shape (hash_size**2,), dtype bool

    Raises
    ------
    ValueError
        If the image is not uint8 (height, width, 3) (:func:`automated.face_boxes.check_frame`).
    """
    # imported here: scipy is slow to import, and Django start-up imports this module
    from scipy.fft import dctn

    check_frame(image_rgb, "image_rgb")
    grey = cv2.cvtColor(image_rgb, cv2.COLOR_RGB2GRAY).astype(np.float32)
    side = 4 * hash_size
    small = cv2.resize(grey, (side, side), interpolation=cv2.INTER_AREA)
    low = dctn(small, norm="ortho")[:hash_size, :hash_size]
    return (low > np.median(low)).reshape(-1)


def closest_frame(still_rgb: np.ndarray, video_path) -> tuple[int, int]:
    """Bits between the still's :func:`phash` and the nearest frame's, and that frame's index.

    Every frame is compared (a 3-second clip at 25 fps is 75 small hashes).

    Returns
    -------
    (distance_bits, frame_index) : tuple of int
        ``(HASH_SIZE**2, -1)`` for a video without decodable frames.

    Raises
    ------
    automated.video.VideoError
        If the video cannot be opened.
    """
    target = phash(still_rgb)
    best, best_index = HASH_SIZE**2, -1
    for index, frame in iter_frames(video_path):
        distance = int(np.count_nonzero(phash(frame) != target))
        if distance < best:
            best, best_index = distance, index
    return best, best_index


def _evaluated_videos(identity_id: int) -> list[SourceVideo]:
    return list(
        SourceVideo.objects.filter(
            identity_id=identity_id, in_evaluated_subset=True, practice=False
        ).order_by("id")
    )


def _fingerprint(image: GalleryImage, videos) -> str:
    names = [image.image.name, *(f"{v.pk}:{v.file.name}" for v in videos), f"{HASH_SIZE}:{MATCH_BITS}"]
    return hashlib.sha256("\n".join(names).encode()).hexdigest()


def check_stills(campaign: Campaign) -> int:
    """Compare every gallery still of ``campaign`` with its identity's evaluated clips.

    Stores one :class:`trials.models.StillCheck` per still; a check whose still and videos
    are unchanged is kept (nothing decoded). A video that cannot be decoded is logged and
    skipped.

    Returns
    -------
    int
        Stills (re)checked by this call.
    """
    checked = 0
    for image in GalleryImage.objects.filter(identity__campaign=campaign).select_related("still_check"):
        videos = _evaluated_videos(image.identity_id)
        fingerprint = _fingerprint(image, videos)
        existing = getattr(image, "still_check", None)
        if existing is not None and existing.fingerprint == fingerprint:
            continue
        try:
            still = read_image_rgb(image.image)
        except (ValueError, FileNotFoundError) as error:
            logger.warning("gallery image %s: %s", image.pk, error)
            continue
        best, matched = None, None
        for video in videos:
            try:
                with local_path(video.file) as path:
                    distance, _ = closest_frame(still, path)
            except (VideoError, FileNotFoundError) as error:
                logger.warning("source video %s: %s", video.pk, error)
                continue
            if best is None or distance < best:
                best = distance
                matched = video if distance <= MATCH_BITS else None
        StillCheck.objects.update_or_create(
            gallery_image=image,
            defaults={"matched_video": matched, "distance_bits": best, "fingerprint": fingerprint},
        )
        checked += 1
    return checked


def stills_from_evaluated_clips(campaign: Campaign) -> dict[int, list[str]]:
    """Identities whose gallery still looks like a frame of one of their evaluated videos.

    For the organizer page and the reports (e.g. a per-video or summary mark "the gallery
    still of this identity comes from this clip": recognising such an identity in a clear
    trial is pixel matching, not face recognition). Reads the stored checks of
    :func:`check_stills` (made when rating media are prepared); stills not checked yet
    are not listed.

    Returns
    -------
    dict
        ``{identity_pk: [names of the evaluated source videos matched]}``.
    """
    found: dict[int, list[str]] = defaultdict(list)
    rows = StillCheck.objects.filter(
        gallery_image__identity__campaign=campaign, matched_video__isnull=False
    ).values_list("gallery_image__identity_id", "matched_video__name")
    for identity_pk, video_name in rows:
        found[identity_pk].append(video_name)
    return dict(found)


def unchecked_stills(campaign: Campaign) -> int:
    """Gallery stills of ``campaign`` without an up-to-date :class:`StillCheck` (cheap: no video read)."""
    images = GalleryImage.objects.filter(identity__campaign=campaign).select_related("still_check")
    stale = 0
    for image in images:
        check = getattr(image, "still_check", None)
        if check is None or check.fingerprint != _fingerprint(image, _evaluated_videos(image.identity_id)):
            stale += 1
    return stale


def lonely_identities(campaign: Campaign, *, practice: bool = False) -> list[str]:
    """Identities a rater can pick out of a lineup by format or demographic group alone.

    Among the identities of one kind (evaluated, or with ``practice`` the practice ones)
    that have a gallery face and videos:

    - a format (``evalsite.video_formats.video_format``: frame size, frame rate,
      container) whose videos (evaluated and the attacker's own alike) all show one
      identity (``alone_in_format``), named with that identity and those videos;
    - an identity whose profile on the campaign's matching attributes (none unknown) no
      other identity shares.

    Returns
    -------
    list of str
        One plain-language warning per finding, naming the identity and the value.
    """
    identities = {
        i.pk: i
        for i in Identity.objects.filter(campaign=campaign, practice=practice, gallery_images__isnull=False)
        .distinct()
        .order_by("code")
    }
    videos = SourceVideo.objects.filter(identity_id__in=list(identities)).select_related("identity")
    warnings = [
        f"{found['format']}: only identity {found['identity']} ({', '.join(found['videos'])}): raters "
        "can tell its lineups by video format alone; add identities recorded the same way or leave "
        "these videos out of the evaluated subset"
        for found in alone_in_format((v.identity.code, v.name, video_format(v)) for v in videos)
    ]
    attributes = list(campaign.demographic_attributes)
    if attributes:
        profiles = {pk: design.profile_of(i.attributes or {}, attributes) for pk, i in identities.items()}
        counts = Counter(p for p in profiles.values() if None not in p)
        for pk, identity in identities.items():
            profile = profiles[pk]
            if None not in profile and counts[profile] == 1 and len(identities) > 1:
                values = ", ".join(f"{a}={v}" for a, v in zip(attributes, profile))
                warnings.append(
                    f"identity {identity.code} is the only one with {values}: its demographic group "
                    "alone picks it out of a lineup"
                )
    return warnings


def still_warnings(campaign: Campaign) -> list[str]:
    """Warnings for stills that look like frames of evaluated videos (stored checks only)."""
    codes = dict(Identity.objects.filter(campaign=campaign).values_list("pk", "code"))
    warnings = [
        f"identity {codes[pk]}: its gallery still looks like a frame of the evaluated video"
        f"{'s' if len(names) > 1 else ''} {', '.join(sorted(names))} (perceptual hash within "
        f"{MATCH_BITS} of {HASH_SIZE**2} bits): raters can answer its clear trials by matching "
        "pixels; use a still from another recording"
        for pk, names in sorted(stills_from_evaluated_clips(campaign).items(), key=lambda kv: codes[kv[0]])
    ]
    pending = unchecked_stills(campaign)
    if pending:
        warnings.append(
            f"{pending} gallery still(s) not yet compared with their identity's evaluated videos "
            "(done when rating media are prepared)"
        )
    return warnings


def material_warnings(campaign: Campaign) -> list[str]:
    """Every warning of this module: stills from evaluated clips, then lonely identities."""
    return still_warnings(campaign) + lonely_identities(campaign)
