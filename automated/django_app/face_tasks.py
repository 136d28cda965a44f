"""Celery tasks of the face evaluation."""
from celery import shared_task


@shared_task
def run_face_evaluation_task(run_id: int) -> int:
    """Execute the pending ``AutomatedRun`` ``run_id`` (``services.execute_face_run``); return its id."""
    from .face_models import AutomatedRun
    from .services import execute_face_run

    execute_face_run(AutomatedRun.objects.select_related("submission").get(pk=run_id))
    return run_id
