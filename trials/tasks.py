"""Background work for rating: prepare every medium raters will see, once per campaign.

Runs in-process by default (``CELERY_TASK_ALWAYS_EAGER``) and on Celery workers when a
broker is configured.
"""
from celery import shared_task

from evalsite.models import GalleryImage, MaskedVideo, SourceVideo

from . import media


@shared_task
def prepare_campaign_media(campaign_id: int) -> dict:
    """Crop every gallery face and transcode every evaluated video of a campaign for browsers.

    Already prepared files are kept (``web_file`` / :class:`trials.models.GalleryCrop`),
    so reopening rating costs nothing.

    Returns
    -------
    dict
        ``{"faces": n, "videos": n}`` counts of media now ready.
    """
    faces = 0
    for image in GalleryImage.objects.filter(identity__campaign_id=campaign_id):
        media.ensure_gallery_crop(image)
        faces += 1
    videos = 0
    for video in SourceVideo.objects.filter(campaign_id=campaign_id):
        media.ensure_web_file(video)
        videos += 1
    for video in MaskedVideo.objects.filter(
        submission__campaign_id=campaign_id, source_video__in_evaluated_subset=True
    ):
        media.ensure_web_file(video)
        videos += 1
    return {"faces": faces, "videos": videos}
