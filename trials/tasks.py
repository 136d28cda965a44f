"""Background work for rating: prepare every medium raters will see, once per campaign.

Runs in-process by default (``CELERY_TASK_ALWAYS_EAGER``) and on Celery workers when a
broker is configured. Rater requests never transcode: until this task has made a
video's browser copy, the media view answers 503 with ``Retry-After``.
"""

import logging

from celery import shared_task
from django.conf import settings
from django.core.files.storage import default_storage

from automated.video import VideoError
from evalsite.models import Campaign, GalleryImage, MaskedVideo, SourceVideo

from . import media, variants
from .assignment import probe_image_of

logger = logging.getLogger("deid.trials")


@shared_task(acks_late=True)  # idempotent: a redelivery after a worker died redoes only what is missing
def prepare_campaign_media(campaign_id: int) -> dict:
    """Crop every gallery face and transcode every video raters may see in a campaign.

    Source videos (clear trials and practice), the masked videos of the evaluated
    subset, and (when the campaign has attention checks) the catch probe video of each
    identity's probe still (:func:`trials.assignment.probe_image_of`), so the first
    request of a catch trial does the same work as an evaluated trial's (its per-trial
    variant only): a probe made on first use made checks stand out by their slow first
    request. Already prepared files are kept (``web_file`` / :class:`trials.models.GalleryCrop`),
    so reopening rating costs nothing; running twice at once stores each file once
    (:mod:`trials.media`). A file that cannot be prepared is logged and listed, and the
    others are still prepared; temporary files of a killed earlier run are removed.

    Returns
    -------
    dict
        ``{"faces": n, "videos": n, "transcoded": n, "catch_videos": n, "failed": [names],
        "stills_checked": n}``: media now ready, how many copies this run made (web copies,
        catch probes), what could not be prepared, and
        how many gallery stills were (re)compared with their identity's evaluated videos
        (:func:`trials.stills.check_stills`, for the organizer's warnings).
    """
    # A worker killed mid-transcode leaves its temporary file: gone once surely dead.
    media.remove_stale_partials(older_than_s=2 * settings.DEID_TRANSCODE_TIMEOUT_S)
    # Per-trial video variants older than a day (and twice the claim time): their trials are
    # long answered or released (a variant asked for again is made again).
    variants.remove_old_variants(
        default_storage, older_than_s=max(2 * settings.TRIALS_CLAIM_TIMEOUT_S, 24 * 3600)
    )
    # ... and those of this campaign's answered or released trials, whatever their age.
    campaign = Campaign.objects.get(pk=campaign_id)
    variants.remove_served_variants(campaign)
    faces = videos = transcoded = 0
    failed = []
    for image in GalleryImage.objects.filter(identity__campaign_id=campaign_id):
        try:
            media.ensure_gallery_crop(image)
            faces += 1
        except ValueError as error:
            logger.warning("gallery image %s: %s", image.pk, error)
            failed.append(f"gallery image {image.pk}: {error}")
    masked = MaskedVideo.objects.filter(
        submission__campaign_id=campaign_id, source_video__in_evaluated_subset=True
    )
    for video in [*SourceVideo.objects.filter(campaign_id=campaign_id), *masked]:
        try:
            transcoded += media.ensure_web_file(video)
            videos += 1
        except VideoError as error:
            logger.warning("%s %s: %s", type(video).__name__, video.pk, error)
            failed.append(f"{type(video).__name__} {video.pk}: {error}")
    catch_videos = 0
    if campaign.attention_check_rate > 0:
        for identity_pk in (
            campaign.identities.filter(gallery_images__isnull=False).distinct().values_list("pk", flat=True)
        ):
            image = probe_image_of(identity_pk)
            try:
                catch_videos += media.ensure_catch_video(
                    media.ensure_gallery_crop(image), recheck_footage=True
                )
            except (ValueError, VideoError) as error:
                logger.warning("catch video of gallery image %s: %s", image.pk, error)
                failed.append(f"catch video of gallery image {image.pk}: {error}")
    from .stills import check_stills  # imports media and models, like this module

    stills_checked = check_stills(campaign)
    return {
        "faces": faces,
        "videos": videos,
        "transcoded": transcoded,
        "catch_videos": catch_videos,
        "failed": failed,
        "stills_checked": stills_checked,
    }


@shared_task(acks_late=True)  # idempotent: unchanged stills are not compared again
def check_campaign_stills(campaign_id: int) -> int:
    """Compare the campaign's gallery stills with their identities' evaluated videos now
    (:func:`trials.stills.check_stills`; also part of :func:`prepare_campaign_media`).

    Returns
    -------
    int
        Stills (re)checked.
    """
    from .stills import check_stills

    return check_stills(Campaign.objects.get(pk=campaign_id))
