"""Admin actions that start and re-queue automated runs (evalsite's Submission admin, through ``evalsite.plugins``, and ours).

Each action goes through ``dispatch`` (the same path as the commands and the API): the
run is created, then its per-video tasks are queued once the row is committed. The
querysets handed to actions are those of the page, already scoped to the user's
campaigns; starting a run needs the model's add permission.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.urls import reverse
from django.utils.html import format_html

from . import dispatch, evaluate_all


def _start_runs(request, submissions, kind: str) -> None:
    model = dispatch.RUN_KINDS[kind].kind.model
    opts = model._meta
    if not request.user.has_perm(f"{opts.app_label}.add_{opts.model_name}"):
        messages.error(request, f"You may not start {opts.verbose_name_plural}.")
        return
    started = []
    for submission in submissions:
        try:
            started.append(dispatch.start_run(kind, submission))
        except Exception as error:  # one refused or failed submission must not hide the others
            messages.error(request, f"{submission}: {error}")
    if started:
        url = reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
        ids = ",".join(str(run.pk) for run in started)
        states = ", ".join(f"run {run.pk} {run.status} ({run.progress})" for run in started)
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


@admin.action(
    description="Evaluate everything (face with behaviour, then attack) on the selected submissions"
)
def evaluate_everything(modeladmin, request, queryset):
    """``evaluate_all.evaluate_everything`` per submission: starts only the parts not running or up to date."""
    if not evaluate_all.may_evaluate(request.user):
        messages.error(request, "You may not start automated runs (face evaluation and attack).")
        return
    for submission in queryset:
        try:
            outcomes = evaluate_all.evaluate_everything(
                submission, background=evaluate_all.background_possible()
            )
        except Exception as error:  # one failed submission must not hide the others
            messages.error(request, f"{submission}: {error}")
            continue
        url = reverse("automated:submission_progress", args=[submission.pk])
        parts = "; ".join(f"{o.kind} {o.state}: {o.detail}" for o in outcomes)
        messages.info(
            request, format_html('{}: {}. <a href="{}">Follow the progress</a>.', submission, parts, url)
        )


#: Actions for ``evalsite.admin.SubmissionAdmin`` (registered in ``evalsite.plugins`` by ``apps.py``).
SUBMISSION_ACTIONS = [evaluate_everything, run_face_evaluation, run_attack_suite]


@admin.action(description="Re-queue the unfinished videos of the selected runs")
def requeue_runs(modeladmin, request, queryset):
    """For runs whose queued tasks were lost (e.g. a broker restarted without persistence)."""
    opts = modeladmin.model._meta
    if not request.user.has_perm(f"{opts.app_label}.add_{opts.model_name}"):
        messages.error(request, f"You may not start {opts.verbose_name_plural}.")
        return
    for run in queryset:
        queued = dispatch.enqueue(run)
        messages.info(request, f"run {run.pk}: {queued} video task(s) queued; {dispatch.describe(run)}")
