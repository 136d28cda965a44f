"""Reports computed into the cache when a campaign's automated runs are done (issue 21).

``lifecycle`` queues :func:`warm_reports_task` after the commit that completes a run
(``DEID_WARM_REPORTS``); the task computes the campaign's reports into the shared report
cache (``evalsite.report_cache.warm``) once no run of the campaign is pending or running,
so the last run to finish warms them once, and the first page after the runs is read from
the cache. On a Celery worker when a broker is configured, otherwise in the process that
completed the run.
"""

from celery import shared_task

from evalsite import report_cache
from evalsite.models import Campaign

from .attack_models import AttackRun
from .face_models import AutomatedRun
from .run_models import RunStatus


@shared_task(name="automated.warm_reports")
def warm_reports_task(campaign_id: int) -> bool:
    """Compute campaign ``campaign_id``'s reports into the cache; False (nothing done) while
    one of its runs is pending or running, or if the campaign is gone."""
    active = (RunStatus.PENDING, RunStatus.RUNNING)
    for model in (AutomatedRun, AttackRun):
        if model.objects.filter(submission__campaign_id=campaign_id, status__in=active).exists():
            return False
    campaign = Campaign.objects.filter(pk=campaign_id).first()
    if campaign is None:
        return False
    report_cache.warm(campaign)
    return True
