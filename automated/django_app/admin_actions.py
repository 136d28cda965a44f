"""Admin actions that start and re-queue automated runs (evalsite's Submission admin, through ``evalsite.plugins``, and ours).

The start actions go through ``evaluate_all.evaluate_everything`` (the path of the API):
a part already running or up to date starts nothing; a new run is created, then its
per-video tasks are queued once the row is committed (no broker: executed in a thread of
the server, so the page answers at once). The
querysets handed to actions are those of the page, already scoped to the user's
campaigns; starting a run needs the model's add permission.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.urls import reverse
from django.utils.html import format_html

from . import dispatch, evaluate_all, lifecycle, rerun


def _start_runs(request, submissions, kind: str) -> None:
    """One part (``kind``) of ``evaluate_all.evaluate_everything`` per submission, in the background.

    A run of the kind already pending or running, or a completed one that is current, is
    reported as such and nothing is started; the request answers at once (no broker: the
    runs execute in a thread of the server).
    """
    model = dispatch.RUN_KINDS[kind].kind.model
    opts = model._meta
    if not request.user.has_perm(f"{opts.app_label}.add_{opts.model_name}"):
        messages.error(request, f"You may not start {opts.verbose_name_plural}.")
        return
    covered = []
    for submission in submissions:
        try:
            (outcome,) = evaluate_all.evaluate_everything(submission, background=True, parts=[kind])
        except Exception as error:  # one failed submission must not hide the others
            messages.error(request, f"{submission}: {error}")
            continue
        if outcome.run is None:  # waiting: the reason the run cannot start
            messages.error(request, f"{submission}: {outcome.detail}")
            continue
        covered.append(outcome)
    if covered:
        url = reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
        ids = ",".join(str(o.run.pk) for o in covered)
        states = ", ".join(f"{o.state}: run {o.run.pk} {o.run.status} ({o.run.progress})" for o in covered)
        messages.success(
            request,
            format_html(
                '{}: {}. <a href="{}?id__in={}">Follow their progress</a>.',
                opts.verbose_name_plural.capitalize(),
                states,
                url,
                ids,
            ),
        )


@admin.action(description="Run face evaluation (stride 5, MediaPipe) on the selected submissions")
def run_face_evaluation(modeladmin, request, queryset):
    _start_runs(request, queryset, "face")


@admin.action(description="Run attack suite (default attackers and recognizers) on the selected submissions")
def run_attack_suite(modeladmin, request, queryset):
    _start_runs(request, queryset, "attack")


def _started(request, queryset, start):
    """Yield ``(object, start(object, background=True))`` for each selected object, if the
    user may start automated runs; a failure is a message and the others still start."""
    if not evaluate_all.may_evaluate(request.user):
        messages.error(request, "You may not start automated runs (face evaluation and attack).")
        return
    for item in queryset:
        try:
            outcomes = start(item, background=True)
        except Exception as error:  # one failed object must not hide the others
            messages.error(request, f"{item}: {error}")
            continue
        yield item, outcomes


@admin.action(
    description="Evaluate everything (face with behaviour, then attack) on the selected submissions"
)
def evaluate_everything(modeladmin, request, queryset):
    """``evaluate_all.evaluate_everything`` per submission: starts only the parts not running or up to date."""
    for submission, outcomes in _started(request, queryset, evaluate_all.evaluate_everything):
        url = reverse("automated:submission_progress", args=[submission.pk])
        parts = "; ".join(f"{o.kind} {o.state}: {o.detail}" for o in outcomes)
        messages.info(
            request, format_html('{}: {}. <a href="{}">Follow the progress</a>.', submission, parts, url)
        )


#: Actions for ``evalsite.admin.SubmissionAdmin`` (registered in ``evalsite.plugins`` by ``apps.py``).
SUBMISSION_ACTIONS = [evaluate_everything, run_face_evaluation, run_attack_suite]


@admin.action(
    description="Re-run everything: evaluate every submission of the selected campaigns with their settings"
)
def rerun_campaigns(modeladmin, request, queryset):
    """``rerun.rerun_campaign`` per campaign (the path of ``manage.py rerun_campaign`` and the API).

    Uses each campaign's current settings (``Campaign.evaluation_options``; change them with
    the command or the API); parts already running or up to date start nothing.
    """
    for campaign, outcomes in _started(request, queryset, rerun.rerun_campaign):
        states = [o.state for _, parts in outcomes for o in parts]
        counts = ", ".join(f"{states.count(s)} {s}" for s in dict.fromkeys(states)) or "no runs"
        messages.info(request, f"{campaign}: {len(outcomes)} submission(s); parts {counts}.")


@admin.action(description="Re-queue the unfinished videos of the selected runs")
def requeue_runs(modeladmin, request, queryset):
    """For runs whose queued tasks were lost (e.g. a broker restarted without persistence).

    Without a broker: a run whose process is gone is resumed in a thread of this server;
    one another live process runs is left to it.
    """
    opts = modeladmin.model._meta
    if not request.user.has_perm(f"{opts.app_label}.add_{opts.model_name}"):
        messages.error(request, f"You may not start {opts.verbose_name_plural}.")
        return
    for run in queryset:
        if not dispatch.runs_in_process():
            queued = dispatch.enqueue(run)
            messages.info(request, f"run {run.pk}: {queued} video task(s) queued; {dispatch.describe(run)}")
        elif run.status in lifecycle.ACTIVE and lifecycle.take(type(run), run.pk):
            dispatch.queue(run, background=True)
            messages.info(request, f"run {run.pk}: resumed in this server; {dispatch.describe(run)}")
        else:
            messages.info(request, f"run {run.pk}: nothing to re-queue; {dispatch.describe(run)}")
