"""Django side of the fairness app: face quality per stored file, and samples tables.

The science stays in Django-free modules (``automated.quality``, ``fairness.summary``);
this module only reads the catalogue and stores results.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from PIL import Image

from automated.detection import MediaPipeFaceDetector
from automated.quality import detect_face_quality, video_face_quality
from automated.video import VideoError
from evalsite.models import GalleryImage, SourceVideo
from evalsite.reports import per_video_report
from evalsite.storage import local_path

from .models import FaceQualityScore

# pandas is imported where it is used: slow to import, and Django start-up imports this module.
if TYPE_CHECKING:
    import pandas as pd

QUALITY_FIELDS = ("sharpness", "luminance", "face_height_px")
CLEAR_VIDEO_STRIDE = 15  # frames between sampled clear frames (0.6 s at 25 fps)


def compute_face_quality(campaign, *, force: bool = False) -> int:
    """Store the face quality of every gallery still and clear video of ``campaign``.

    Parameters
    ----------
    campaign : evalsite.models.Campaign
    force : bool, default=False
        Recompute items that already have a score.

    Returns
    -------
    int
        Number of items (re)computed. Items without a detectable face are stored with
        ``face_found=False`` and the reason, so they are not retried on every report.
    """
    images = GalleryImage.objects.filter(
        identity__campaign=campaign, identity__practice=False
    )  # not practice people
    videos = SourceVideo.objects.filter(campaign=campaign, identity__practice=False)
    if not force:
        images = images.filter(face_quality__isnull=True)
        videos = videos.filter(face_quality__isnull=True)
    images, videos = list(images), list(videos)
    if not images and not videos:
        return 0
    with MediaPipeFaceDetector() as detector:
        for image in images:
            _store(_measure(lambda: detect_face_quality(_read_rgb(image), detector)), gallery_image=image)
        for video in videos:
            _store(_measure(lambda: _video_quality(video, detector)), source_video=video)
    return len(images) + len(videos)


def _video_quality(video: SourceVideo, detector):
    with local_path(video.file) as path:  # a temporary copy if the storage has no local files
        return video_face_quality(path, detector, stride=CLEAR_VIDEO_STRIDE)


def _read_rgb(image: GalleryImage) -> np.ndarray:
    with image.image.open("rb") as handle, Image.open(handle) as picture:
        return np.asarray(picture.convert("RGB"))


def _measure(compute) -> dict:
    try:
        quality = compute()
    except (ValueError, OSError, VideoError) as error:  # no face, unreadable file
        return {"face_found": False, "error": str(error)[:300], **dict.fromkeys(QUALITY_FIELDS)}
    return {"face_found": True, "error": "", **quality.as_dict()}


def _store(values: dict, **item) -> None:
    FaceQualityScore.objects.update_or_create(**item, defaults=values)


def quality_samples(campaign) -> pd.DataFrame:
    """One row per measured item: ``kind`` ("gallery" or "clear_video"), quality fields
    and one column per identity attribute (identity codes are not included)."""
    import pandas as pd

    rows = []
    scores = FaceQualityScore.objects.filter(face_found=True).select_related(
        "gallery_image__identity", "source_video__identity"
    )
    for score in scores.filter(gallery_image__identity__campaign=campaign):
        rows.append(
            {
                "kind": "gallery",
                **score.gallery_image.identity.attributes,
                **{field: getattr(score, field) for field in QUALITY_FIELDS},
            }
        )
    for score in scores.filter(source_video__campaign=campaign):
        rows.append(
            {
                "kind": "clear_video",
                **score.source_video.identity.attributes,
                **{field: getattr(score, field) for field in QUALITY_FIELDS},
            }
        )
    return pd.DataFrame(rows, columns=["kind", *QUALITY_FIELDS] if not rows else None)


def video_samples(submission) -> pd.DataFrame:
    """The per-video report of ``submission`` joined with each video's identity attributes.

    Attribute columns that clash with report columns are not added (the report wins).
    """
    import pandas as pd

    report = per_video_report(submission)
    attributes = {identity.code: identity.attributes for identity in submission.campaign.identities.all()}
    extra = pd.DataFrame([attributes.get(code, {}) for code in report["identity_code"]], index=report.index)
    extra = extra[[column for column in extra.columns if column not in report.columns]]
    return report.join(extra)
