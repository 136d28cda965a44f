"""Background work without a broker (the default): tasks run in-process, quietly."""

import logging

from django.conf import settings

from fairness.django_app.models import FaceQualityScore
from fairness.django_app.tasks import compute_face_quality_task


def test_without_a_broker_delay_runs_the_task_in_process_without_a_broker_warning(campaign, caplog):
    assert settings.CELERY_TASK_ALWAYS_EAGER
    with caplog.at_level(logging.WARNING):
        result = compute_face_quality_task.delay(campaign.pk)
    # The tiny campaign: 3 gallery stills + 3 clear videos measured, before .delay returned.
    assert result.get() == 6
    assert FaceQualityScore.objects.filter(face_found=True).count() == 6
    # Celery used to fall back to amqp://localhost and log "No hostname was supplied".
    assert [r.getMessage() for r in caplog.records if r.name.startswith(("kombu", "celery"))] == []
