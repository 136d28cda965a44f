"""Celery tasks of the attack evaluation."""
from celery import shared_task


@shared_task
def run_attack_task(run_id: int) -> int:
    """Execute the pending ``AttackRun`` ``run_id`` (``attack_service.execute_attack_run``); return its id."""
    from .attack_models import AttackRun
    from .attack_service import execute_attack_run

    execute_attack_run(AttackRun.objects.select_related("submission").get(pk=run_id))
    return run_id
