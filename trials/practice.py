"""Built-in practice people: the Face Research Lab London Set, never evaluated.

Practice with feedback must teach nothing about the study's people (issue 19): feedback on
an evaluated person's video hands its answer to whoever practises (throw-away sessions),
and a person shown in practice could be struck off later lineups of the session. A
campaign without imported practice material (``identities.csv`` ``practice=true`` with
``role=practice`` videos) gets practice identities from the London set with ``manage.py
add_practice_faces --campaign ...`` (:func:`add_practice_faces`): real people with self-reported gender and ethnicity
(DeBruine & Jones 2017, *Face Research Lab London Set*, figshare
doi:10.6084/m9.figshare.5047666.v5, CC BY 4.0; ``faces/london_face_set/SOURCE.md`` in
``DATA_DIR``), one neutral front photo as the gallery face and a short clip made from the
smiling photo of the same person as the practice "video" (a slow zoom: the same session,
shirt and background for everybody, so only the face tells people apart). Practice
lineups are of practice faces only, matched like evaluated ones; the files are read from
``TRIALS_PRACTICE_FACES`` (under ``DATA_DIR`` by default) and stored in the campaign's
media like any gallery image, never in the repository.
"""

from __future__ import annotations

import csv
import hashlib
import logging
import tempfile
from pathlib import Path

import cv2
import numpy as np
from django.conf import settings
from django.core.files import File
from django.db import transaction

from automated.video import frames_to_web_copy


logger = logging.getLogger("deid.trials")

#: Practice people taken per gender (one ethnicity: the set's largest group, so every
#: practice lineup is matched on gender and ethnicity).
PEOPLE_PER_GENDER = 6
#: Code prefix of the practice identities this module adds (never a real name).
CODE_PREFIX = "practice-london-"
#: Side in pixels of the stored gallery photo (the 1350 px original halved twice over).
PHOTO_PX = 540
#: Zoom of the practice clip from its first to its last frame.
CLIP_ZOOM = 0.08


def practice_faces_dir() -> Path | None:
    """The London set's folder (``TRIALS_PRACTICE_FACES``), or None if unset or absent."""
    folder = settings.TRIALS_PRACTICE_FACES
    if not folder:
        return None
    folder = Path(folder)
    return folder if (folder / "identities.csv").is_file() else None


def practice_people(folder: Path, per_gender: int = PEOPLE_PER_GENDER) -> list[dict]:
    """Rows of ``identities.csv`` chosen as practice people: the first ``per_gender``
    women and men (by face id) of the set's largest ethnicity.

    Returns
    -------
    list of dict
        ``face_id``, ``gender``, ``ethnicity``, ``neutral_image``, ``smiling_image`` ...

    Raises
    ------
    ValueError
        If the table has fewer than ``per_gender`` people of a gender in that group.
    """
    with open(folder / "identities.csv", newline="") as handle:
        rows = sorted(csv.DictReader(handle), key=lambda row: row["face_id"])
    groups: dict[str, int] = {}
    for row in rows:
        groups[row["ethnicity"]] = groups.get(row["ethnicity"], 0) + 1
    ethnicity = max(groups, key=groups.get)
    chosen = []
    for gender in ("female", "male"):
        people = [row for row in rows if row["gender"] == gender and row["ethnicity"] == ethnicity]
        if len(people) < per_gender:
            raise ValueError(
                f"{folder / 'identities.csv'}: {len(people)} {ethnicity} {gender} people, need {per_gender}"
            )
        chosen += people[:per_gender]
    return chosen


def clip_frames(photo_rgb: np.ndarray, *, n_frames: int, frame_size: tuple[int, int]) -> list[np.ndarray]:
    """A short clip made from one photo: the head and shoulders, slowly zooming in.

    Parameters
    ----------
    photo_rgb : ndarray of shape (height, width, 3), dtype uint8
        A centred head-and-shoulders photo (the London set's 1350x1350 px).
    n_frames : int
    frame_size : (int, int)
        ``(width, height)`` of the clip.

    Returns
    -------
    list of ndarray of shape (height, width, 3), dtype uint8
    """
    width, height = frame_size
    # Down to about twice the frame first: warping the 1350 px photo per frame is slow.
    shrink = min(1.0, 2.0 * height / min(photo_rgb.shape[:2]))
    if shrink < 1.0:
        photo_rgb = cv2.resize(photo_rgb, None, fx=shrink, fy=shrink, interpolation=cv2.INTER_AREA)
    side = min(photo_rgb.shape[:2])
    frames = []
    for i in range(n_frames):
        zoom = 1.0 + CLIP_ZOOM * i / max(n_frames - 1, 1)
        crop_h = 0.78 * side / zoom
        crop_w = crop_h * width / height
        cx, cy = photo_rgb.shape[1] / 2, photo_rgb.shape[0] * 0.46
        matrix = np.array(
            [
                [width / crop_w, 0, -(cx - crop_w / 2) * width / crop_w],
                [0, height / crop_h, -(cy - crop_h / 2) * height / crop_h],
            ],
            np.float32,
        )
        frames.append(
            cv2.warpAffine(
                photo_rgb, matrix, (width, height), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE
            )
        )
    return frames


def _cached(name: str, make) -> Path:
    """A derived file in ``CACHE_DIR/practice_faces`` (made once by ``make(path)``)."""
    folder = Path(settings.CACHE_DIR) / "practice_faces"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    if not path.exists():
        with tempfile.TemporaryDirectory(dir=folder) as tmp:
            partial = Path(tmp) / name
            make(partial)
            partial.replace(path)
    return path


def _photo_png(source: Path, out: Path) -> None:
    image = cv2.imread(str(source), cv2.IMREAD_COLOR)
    if image is None:
        raise ValueError(f"not a readable image: {source}")
    cv2.imwrite(str(out), cv2.resize(image, (PHOTO_PX, PHOTO_PX), interpolation=cv2.INTER_AREA))


def _clip_mp4(source: Path, out: Path, *, n_frames: int, fps: float, frame_size: tuple[int, int]) -> None:
    """The practice clip as an H.264 browser copy (:func:`automated.video.frames_to_web_copy`)."""
    image = cv2.imread(str(source), cv2.IMREAD_COLOR)
    if image is None:
        raise ValueError(f"not a readable image: {source}")
    frames = clip_frames(image[..., ::-1], n_frames=n_frames, frame_size=frame_size)
    frames_to_web_copy(frames, out, fps=fps, resolution_wh=frame_size)


def add_practice_faces(campaign) -> int:
    """Give ``campaign`` the London practice people, unless it has practice material.

    Each person becomes a practice :class:`~evalsite.models.Identity` (code
    ``practice-london-<face id>``, attributes ``gender`` and ``ethnicity``, self-reported),
    a :class:`~evalsite.models.GalleryImage` of the neutral photo and a practice
    :class:`~evalsite.models.SourceVideo` (outside the evaluated subset, no action) of a
    clip made from the smiling photo in the format of the campaign's clips
    (:func:`trials.media.catch_video_spec`). Derived files are cached in ``CACHE_DIR``.
    Idempotent: a campaign that already has practice identities gets nothing. Practice
    identities are no part of the automated gallery, and their videos need no masked
    video (``Submission.missing_source_videos``); they do appear in the campaign's lists
    of identities and source videos (the per-video report lists them without figures).

    Returns
    -------
    int
        Practice identities added (0 when the set is absent or the campaign has practice
        identities already).

    Raises
    ------
    ValueError
        If the set's table or a photo cannot be read.
    """
    from evalsite.models import GalleryImage, Identity, SourceVideo

    from .media import catch_video_spec

    folder = practice_faces_dir()
    if folder is None or Identity.objects.filter(campaign=campaign, practice=True).exists():
        return 0
    n_frames, fps, frame_size = catch_video_spec(campaign)
    people = practice_people(folder)
    files = []
    for row in people:
        key = f"{row['face_id']}-{hashlib.sha256(row['smiling_image'].encode()).hexdigest()[:8]}"
        photo = _cached(
            f"{key}-{PHOTO_PX}.png", lambda out, row=row: _photo_png(folder / row["neutral_image"], out)
        )
        clip = _cached(
            f"{key}-{frame_size[0]}x{frame_size[1]}-{n_frames}-{fps:g}-exact-rate.mp4",
            lambda out, row=row: _clip_mp4(
                folder / row["smiling_image"], out, n_frames=n_frames, fps=fps, frame_size=frame_size
            ),
        )
        files.append((row, photo, clip))
    with transaction.atomic():
        for row, photo, clip in files:
            identity = Identity.objects.create(
                campaign=campaign,
                code=f"{CODE_PREFIX}{row['face_id']}",
                attributes={"gender": row["gender"], "ethnicity": row["ethnicity"]},
                practice=True,
            )
            image = GalleryImage(identity=identity, original_name="practice.png")
            with open(photo, "rb") as handle:
                image.image.save("practice.png", File(handle), save=True)
            video = SourceVideo(
                campaign=campaign,
                identity=identity,
                name=f"{CODE_PREFIX}{row['face_id']}",
                action="",
                in_evaluated_subset=False,
                practice=True,
                frame_count=n_frames,
                fps=fps,
                duration_s=n_frames / fps,
                width=frame_size[0],
                height=frame_size[1],
            )
            with open(clip, "rb") as handle:
                video.file.save("practice.mp4", File(handle), save=False)
            video.web_file.name = video.file.name  # already an H.264 browser copy
            video.save()
    return len(files)


def practice_attributes(campaign, pool) -> list[str]:
    """The attributes practice lineups are matched on: the campaign's, when every practice
    identity has a known value for each; else the attributes every practice identity
    has a known value for (the London people: gender and ethnicity)."""
    from .design import known_value

    def known(name):
        return all(known_value((attrs or {}).get(name)) is not None for attrs in pool.values())

    wanted = [name for name in campaign.demographic_attributes if known(name)]
    if wanted and len(wanted) == len(campaign.demographic_attributes):
        return wanted
    names = sorted({name for attrs in pool.values() for name in (attrs or {})})
    return [name for name in names if known(name)]
