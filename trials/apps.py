"""Human evaluation: raters, sessions, trials, responses, assignment, scoring."""

from django.apps import AppConfig


class TrialsConfig(AppConfig):
    name = "trials"
    verbose_name = "human evaluation"

    def ready(self):
        from . import human_report

        human_report.register()  # columns, summary section, caveats, data-dictionary entries

        from evalsite import plugins
        from evalsite.signals import gallery_image_replaced, masked_video_replaced, source_video_replaced

        from . import services

        # The catalogue's admin (and any page of another app) opens and closes rating through this.
        plugins.register_rating(
            plugins.RatingControl(
                open=services.open_rating,
                close=services.close_rating,
                blockers=services.rating_blockers,
                refused=services.CannotOpenRating,
            )
        )

        masked_video_replaced.connect(_on_masked_video_replaced, dispatch_uid="trials.supersede_masked_video")
        source_video_replaced.connect(_on_source_video_replaced, dispatch_uid="trials.supersede_clear_video")
        gallery_image_replaced.connect(_on_gallery_image_replaced, dispatch_uid="trials.new_crop_of_still")


def _on_masked_video_replaced(sender, old, new, **kwargs):
    """Rating moves to the replacement (``trials.services.supersede_masked_video``)."""
    from .services import supersede_masked_video

    supersede_masked_video(old, new)


def _on_source_video_replaced(sender, source, **kwargs):
    """Clear-video rating moves to the new clear file (``trials.services.supersede_clear_video``)."""
    from .services import supersede_clear_video

    supersede_clear_video(source)


def _on_gallery_image_replaced(sender, image, **kwargs):
    """A new still: its rater crop and probe go (with their files, ``models``' receiver) and
    are made again from it by the media preparation queued after the commit while rating is
    open (else on next use, ``trials.media.ensure_gallery_crop``)."""
    from functools import partial

    from django.db import transaction

    from .models import GalleryCrop
    from .tasks import prepare_campaign_media

    GalleryCrop.objects.filter(gallery_image=image).delete()
    campaign = image.identity.campaign
    if campaign.rating_open:  # made ahead, not inside a rater's request (a check's would take longer)
        transaction.on_commit(partial(prepare_campaign_media.delay, campaign.pk))
