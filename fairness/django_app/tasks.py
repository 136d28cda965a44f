"""Background work of the fairness app (Celery; runs inline when no broker is set)."""

from celery import shared_task

from evalsite.models import Campaign

from .services import compute_face_quality


@shared_task
def compute_face_quality_task(campaign_id: int, force: bool = False) -> int:
    """Measure the face quality of a campaign's gallery stills and clear videos."""
    return compute_face_quality(Campaign.objects.get(pk=campaign_id), force=force)
