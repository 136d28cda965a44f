"""Import a campaign (identities, gallery faces, clear videos) from a folder.

Folder layout (also in docs/own-data.md)::

    <folder>/
      campaign.json            optional: {"name", "description", "action_vocabulary",
                               "raters_per_video", "foils_per_trial",
                               "demographic_attributes", "target_absent_share",
                               "attention_check_rate", "consent_text"}
      identities.csv           column ``identity`` (pseudonymous code, e.g. ID01) plus one
                               column per demographic attribute (e.g. gender, race,
                               age_band); empty cells are stored as "unknown".
                               Optional ``practice`` (true/false/1/0/yes/no; empty:
                               false): practice identities appear only in practice
                               trials (their faces and videos), never in evaluated ones;
                               all their videos must be practice videos
      gallery/<identity>/*     one or more stills per identity (.png, .jpg, .jpeg)
      videos.csv               columns ``video`` (file name inside videos/, e.g.
                               clip01.mp4), ``identity``, ``action``; optional
                               ``resolution_tier`` (high/low; empty: high when the frame
                               height is >= 480 pixels) and ``in_evaluated_subset``
                               (true/false/1/0/yes/no; empty: true), ``role``
                               (evaluated/practice/attacker_train; empty: evaluated) or
                               ``practice`` (true/false): practice videos are shown only
                               in practice trials, with feedback, and never evaluated;
                               attacker_train videos are the automated attacker's own
                               labelled material (teams mask them, the attack trains on
                               them and never tests them, raters never see them). Other
                               columns are ignored (e.g. provenance notes).
      videos/*                 the clear source videos (any container ffmpeg/OpenCV reads)

The *video name* that masked videos must be named after is the file stem (``clip01``).
Names must be unique within a campaign, ignoring case (the submission validator matches
case-insensitively). Every problem found is collected and reported together in one
:class:`DatasetError`; nothing is written unless the whole folder is valid, and a
failure while writing rolls back the database rows and deletes the files already stored.
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.files import File
from django.db import transaction
from django.utils.text import slugify
from PIL import Image, UnidentifiedImageError

from automated.video import VideoError, VideoInfo

from .booleans import ACCEPTED, FALSE_WORDS, TRUE_WORDS
from .models import (
    Campaign,
    GalleryImage,
    Identity,
    ResolutionTier,
    SourceVideo,
    delete_stored,
    digit_slug_problem,
)
from .storage import store_video

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg"}
CAMPAIGN_KEYS = {
    "name",
    "description",
    "action_vocabulary",
    "raters_per_video",
    "foils_per_trial",
    "demographic_attributes",
    "target_absent_share",
    "attention_check_rate",
    "consent_text",
}
HIGH_TIER_MIN_HEIGHT = 480  # pixels; used when resolution_tier is left empty
_CODE_PATTERN = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
# The yes/no words of every form, API field and setting (evalsite.booleans); blank = true.
_TRUE = {"", *TRUE_WORDS}
_FALSE = set(FALSE_WORDS)


class DatasetError(ValueError):
    """The dataset folder is invalid; ``problems`` lists every problem found."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        listing = "\n".join(f"- {p}" for p in self.problems)
        super().__init__(f"{len(self.problems)} problem(s) in the dataset folder:\n{listing}")


@dataclass
class ImportReport:
    """What :func:`import_dataset` stored."""

    campaign: Campaign
    identities: int
    gallery_images: int
    videos: int
    notes: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return (
            f"campaign '{self.campaign.name}' (slug {self.campaign.slug}): "
            f"{self.identities} identities, {self.gallery_images} gallery images, "
            f"{self.videos} source videos"
        )


@dataclass
class _VideoRow:
    name: str
    path: Path
    identity: str
    action: str
    resolution_tier: str
    in_evaluated_subset: bool
    info: VideoInfo
    practice: bool = False
    attacker_train: bool = False


def _read_csv(path: Path, required: list[str], problems: list[str]) -> list[dict]:
    if not path.is_file():
        problems.append(f"{path.name} is missing")
        return []
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        columns = [c.strip() for c in (reader.fieldnames or [])]
        missing = [c for c in required if c not in columns]
        if missing:
            problems.append(f"{path.name}: missing column(s) {missing}; found {columns}")
            return []
        return [{(k or "").strip(): (v or "").strip() for k, v in row.items()} for row in reader]


def _read_campaign_json(folder: Path, problems: list[str]) -> dict:
    path = folder / "campaign.json"
    if not path.exists():
        return {}
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        problems.append(f"campaign.json is not valid JSON: {error}")
        return {}
    if not isinstance(config, dict):
        problems.append("campaign.json must hold a JSON object")
        return {}
    unknown = sorted(set(config) - CAMPAIGN_KEYS)
    if unknown:
        problems.append(f"campaign.json: unknown key(s) {unknown}; allowed {sorted(CAMPAIGN_KEYS)}")
    return {k: v for k, v in config.items() if k in CAMPAIGN_KEYS}


def _check_identities(rows: list[dict], problems: list[str], practice: set[str]) -> dict[str, dict]:
    """Attributes by identity code; codes of practice identities are added to ``practice``."""
    identities: dict[str, dict] = {}
    for line, row in enumerate(rows, start=2):
        code = row.pop("identity")
        flag = (row.pop("practice", "") or "").strip().lower()
        if flag and flag not in _TRUE | _FALSE:
            problems.append(f"identities.csv line {line}: practice must be {ACCEPTED}, got {flag!r}")
        elif flag in _TRUE - {""}:
            practice.add(code)
        if not _CODE_PATTERN.match(code):
            problems.append(
                f"identities.csv line {line}: identity code {code!r} must be 1-64 letters, "
                "digits, '_', '-' or '.'"
            )
        elif code.lower() in {c.lower() for c in identities}:
            problems.append(f"identities.csv line {line}: duplicate identity {code!r}")
        else:
            identities[code] = {k: (v or "unknown") for k, v in row.items() if k}
    return identities


def _check_gallery(folder: Path, identities: dict, problems: list[str]) -> dict[str, list[Path]]:
    gallery_dir = folder / "gallery"
    gallery: dict[str, list[Path]] = {}
    if not gallery_dir.is_dir():
        problems.append("gallery/ folder is missing")
        return gallery
    for sub in sorted(p for p in gallery_dir.iterdir() if p.is_dir()):
        if sub.name not in identities:
            problems.append(f"gallery/{sub.name}/: identity {sub.name!r} is not in identities.csv")
    for code in identities:
        images = []
        for path in sorted((gallery_dir / code).glob("*")) if (gallery_dir / code).is_dir() else []:
            if path.name.startswith("."):
                continue
            if path.suffix.lower() not in IMAGE_SUFFIXES:
                problems.append(f"gallery/{code}/{path.name}: not an image file (.png, .jpg, .jpeg)")
                continue
            try:
                with Image.open(path) as image:
                    image.verify()
            except (UnidentifiedImageError, OSError) as error:
                problems.append(f"gallery/{code}/{path.name}: unreadable image ({error})")
                continue
            images.append(path)
        if not images:
            problems.append(f"identity {code!r} has no gallery image in gallery/{code}/")
        gallery[code] = images
    return gallery


def _parse_subset(value: str, where: str, problems: list[str]) -> bool:
    lowered = value.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    problems.append(f"{where}: in_evaluated_subset must be {ACCEPTED}, got {value!r}")
    return True


ROLES = ("evaluated", "practice", "attacker_train")


def _parse_role(row: dict, where: str, problems: list[str]) -> str:
    """``"evaluated"``, ``"practice"`` (column ``role``, or ``practice`` = true) or ``"attacker_train"``."""
    role = (row.get("role") or "").strip().lower()
    if role not in {"", *ROLES}:
        problems.append(f"{where}: role must be one of {', '.join(ROLES)}, got {row.get('role')!r}")
    flag = (row.get("practice") or "").strip().lower()
    if flag and flag not in _TRUE | _FALSE:
        problems.append(f"{where}: practice must be {ACCEPTED}, got {row.get('practice')!r}")
    if role == "attacker_train":
        if flag in _TRUE - {""}:
            problems.append(f"{where}: an attacker_train video cannot be practice material")
        return role
    if (role == "evaluated" and flag in _TRUE - {""}) or (role == "practice" and flag in _FALSE):
        problems.append(f"{where}: role {role} contradicts practice={row.get('practice')!r}")
    return "practice" if role == "practice" or (bool(flag) and flag in _TRUE) else "evaluated"


def _check_videos(
    folder: Path,
    rows: list[dict],
    identities: dict,
    vocabulary: list[str] | None,
    problems: list[str],
) -> list[_VideoRow]:
    videos: list[_VideoRow] = []
    seen: dict[str, str] = {}
    tiers = {choice.value for choice in ResolutionTier}
    for line, row in enumerate(rows, start=2):
        where = f"videos.csv line {line}"
        file_name, code, action = row["video"], row["identity"], row["action"]
        path = folder / "videos" / file_name
        name = Path(file_name).stem
        if not file_name or Path(file_name).name != file_name:
            problems.append(f"{where}: video {file_name!r} must be a plain file name inside videos/")
            continue
        if name.lower() in seen:
            problems.append(
                f"{where}: duplicate video name {name!r} (also {seen[name.lower()]!r}; "
                "names are compared ignoring case and extension)"
            )
            continue
        seen[name.lower()] = file_name
        if code not in identities:
            problems.append(f"{where}: unknown identity {code!r} (not in identities.csv)")
        if not action:
            problems.append(f"{where}: action is empty")
        elif vocabulary is not None and action not in vocabulary:
            problems.append(f"{where}: action {action!r} is not in the action vocabulary {vocabulary}")
        tier = row.get("resolution_tier", "").lower()
        if tier and tier not in tiers:
            problems.append(f"{where}: resolution_tier must be one of {sorted(tiers)}, got {tier!r}")
        subset = _parse_subset(row.get("in_evaluated_subset", ""), where, problems)
        role = _parse_role(row, where, problems)
        practice, attacker_train = role == "practice", role == "attacker_train"
        if role != "evaluated" and row.get("in_evaluated_subset", "").strip().lower() in _TRUE - {""}:
            problems.append(
                f"{where}: {'an' if role == 'attacker_train' else 'a'} {role} video cannot be in the evaluated subset"
            )
        subset = subset and role == "evaluated"
        if not path.is_file():
            problems.append(f"{where}: file videos/{file_name} is missing")
            continue
        try:
            info = VideoInfo.from_video_path(path)
        except VideoError as error:
            problems.append(f"{where}: videos/{file_name} is not a usable video: {error}")
            continue
        if not tier:
            tier = (
                ResolutionTier.HIGH if info.resolution_wh[1] >= HIGH_TIER_MIN_HEIGHT else ResolutionTier.LOW
            )
        videos.append(_VideoRow(name, path, code, action, tier, subset, info, practice, attacker_train))
    listed = {Path(r["video"]).name for r in rows}
    if (folder / "videos").is_dir():
        for path in sorted((folder / "videos").iterdir()):
            if path.is_file() and not path.name.startswith(".") and path.name not in listed:
                problems.append(f"videos/{path.name} is not listed in videos.csv")
    return videos


def _organizer_users(organizers, problems: list[str]) -> list:
    """Users (or usernames) as staff accounts; problems name unknown and non-staff ones."""
    users = []
    for entry in organizers:
        user = entry
        if isinstance(entry, str):
            user = get_user_model().objects.filter(username=entry).first()
            if user is None:
                problems.append(
                    f"organizer {entry!r}: no such user (create it with createsuperuser or "
                    "in the admin, or run make demo for the 'organizer' login)"
                )
                continue
        if not (user.is_staff and user.is_active):
            problems.append(
                f"organizer {user.username!r} is not an active staff user, so could not log in "
                "to the admin: tick 'staff status' first"
            )
            continue
        users.append(user)
    return users


def import_dataset(
    folder, campaign_name: str | None = None, *, organizers=(), web_copies: bool = True
) -> ImportReport:
    """Validate a dataset folder and store it as a new campaign, all or nothing.

    Parameters
    ----------
    folder : path-like
        Dataset folder in the layout of this module's docstring.
    campaign_name : str, optional
        Campaign name; overrides ``name`` in ``campaign.json``. One of them is required.
    organizers : iterable of User or str (username)
        Staff users who organize the campaign: they see it in the admin, the organizer
        pages and the API (``evalsite/scoping.py``); superusers see it anyway.
    web_copies : bool, default=True
        Transcode each clear video once to a browser-playable H.264 MP4
        (``SourceVideo.web_file``, ~0.3 s per 3 s clip).

    Returns
    -------
    ImportReport

    Raises
    ------
    DatasetError
        Listing every problem: missing file or column, unknown identity, duplicate
        identity or video name, unreadable image or video, action outside the
        vocabulary, existing campaign of the same name or slug, unknown or non-staff
        organizer.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise DatasetError([f"dataset folder not found: {folder}"])
    problems: list[str] = []
    config = _read_campaign_json(folder, problems)
    name = (campaign_name or config.get("name") or "").strip()
    if not name:
        problems.append("no campaign name: pass one or set 'name' in campaign.json")
    elif Campaign.objects.filter(name=name).exists() or Campaign.objects.filter(slug=slugify(name)).exists():
        problems.append(f"campaign {name!r} already exists")
    elif digit_slug_problem(slugify(name)[:80]):
        problems.append(
            f"campaign name {name!r}: its slug {slugify(name)[:80]!r} would be made only of digits, "
            "which the commands read as a campaign id; add a letter to the name"
        )

    organizer_users = _organizer_users(organizers, problems)
    identity_rows = _read_csv(folder / "identities.csv", ["identity"], problems)
    practice_codes: set[str] = set()
    identities = _check_identities(identity_rows, problems, practice_codes)
    attributes = config.get("demographic_attributes")
    columns = sorted({k for attrs in identities.values() for k in attrs})
    if attributes is None:
        attributes = columns
    missing_attributes = [a for a in attributes if a not in columns]
    if identities and missing_attributes:
        problems.append(f"demographic attribute(s) {missing_attributes} are not columns of identities.csv")
    gallery = _check_gallery(folder, identities, problems)

    video_rows = _read_csv(folder / "videos.csv", ["video", "identity", "action"], problems)
    vocabulary = config.get("action_vocabulary")
    videos = _check_videos(folder, video_rows, identities, vocabulary, problems)
    for row in videos:
        if row.identity in practice_codes and not row.practice:
            problems.append(
                f"videos.csv: video {row.name!r} of practice identity {row.identity!r} must be a "
                "practice video (role=practice): a practice identity is never evaluated"
            )
    if not videos and not problems:
        problems.append("videos.csv lists no video")
    elif videos and all(v.practice or v.attacker_train for v in videos):
        problems.append(
            "videos.csv lists no evaluated video: every video is practice or attacker_train material"
        )
    if problems:
        raise DatasetError(problems)

    if vocabulary is None:
        vocabulary = sorted({v.action for v in videos})
    campaign_fields = {
        k: v for k, v in config.items() if k not in {"name", "action_vocabulary", "demographic_attributes"}
    }
    stored_files = []
    try:
        with transaction.atomic():
            campaign = Campaign(
                name=name,
                slug=slugify(name)[:80],
                action_vocabulary=vocabulary,
                demographic_attributes=list(attributes),
                **campaign_fields,
            )
            campaign.full_clean()
            campaign.save()
            campaign.organizers.add(*organizer_users)
            identity_objects = {}
            n_images = 0
            for code, attrs in identities.items():
                identity_objects[code] = Identity.objects.create(
                    campaign=campaign, code=code, attributes=attrs, practice=code in practice_codes
                )
                for path in gallery[code]:
                    image = GalleryImage(identity=identity_objects[code], original_name=path.name)
                    with path.open("rb") as handle:
                        image.image.save(path.name, File(handle), save=True)
                    stored_files.append(image.image)
                    n_images += 1
            for row in videos:
                video = SourceVideo(
                    campaign=campaign,
                    identity=identity_objects[row.identity],
                    name=row.name,
                    action=row.action,
                    resolution_tier=row.resolution_tier,
                    in_evaluated_subset=row.in_evaluated_subset,
                    practice=row.practice,
                    attacker_train=row.attacker_train,
                )
                stored_files += store_video(
                    video, row.path, row.info, name=row.path.name, web_copy=web_copies
                )
                video.save()
    except Exception:
        delete_stored(stored_files)
        raise
    report = ImportReport(campaign, len(identities), n_images, len(videos))
    return report
