"""Organizer pages of a submission's automated runs: evaluate everything, follow the progress.

Mounted under /organizer/automated/ (``urls.py``); staff only, and the submission looked up
among the campaigns the user organizes (``evalsite.scoping``), so another campaign's
submission is a 404. Both pages first resume the submission's runs whose in-process owner
process is gone (``dispatch.recover``):

- ``POST submission/<id>/evaluate/``: ``evaluate_all.evaluate_everything``, then back to the
  progress page (403 without the add permission of every run kind);
- ``GET submission/<id>/progress/``: each run with a progress bar (every unit of work:
  videos, cross-video folds, the summary step; ``run_progress.units``) and its log (``run_progress.run_log``), a part never run with the reason it waits
  (``evaluate_all.not_run_text``), updating itself from
- ``GET submission/<id>/progress.json``: ``{"submission", "active", "runs": [...]}``.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.core.exceptions import PermissionDenied
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST
from evalsite.models import Submission
from evalsite.scoping import scope

from . import dispatch, evaluate_all, run_progress

#: Runs shown on the progress page (newest first); older ones are in the admin.
MAX_RUNS = 6


def _submission(request, submission_id: int) -> Submission:
    visible = scope(Submission.objects.select_related("team", "campaign"), request.user)
    return get_object_or_404(visible, pk=submission_id)


@staff_member_required
@require_POST
def evaluate(request, submission_id: int):
    """Start what is missing of the submission's automated evaluation; say what happened to each part."""
    submission = _submission(request, submission_id)
    if not evaluate_all.may_evaluate(request.user):
        raise PermissionDenied("you may not start automated runs")
    outcomes = evaluate_all.evaluate_everything(submission, background=True)
    for outcome in outcomes:
        level = (
            messages.WARNING
            if outcome.state in (evaluate_all.WAITING, evaluate_all.NOT_QUEUED)
            else messages.INFO
        )
        messages.add_message(request, level, f"{outcome.kind}: {outcome.state}: {outcome.detail}")
    return redirect("automated:submission_progress", submission_id=submission.pk)


def _runs(submission) -> list[dict]:
    """The newest run of each part (face, then attack), then the older runs, newest first.

    Runs whose in-process owner is gone (a server restarted during them) are resumed first
    (``dispatch.recover``, in a thread of this server), so none shows "running" for good.
    """
    dispatch.recover(submission, background=True)
    runs = run_progress.submission_runs(submission)
    latest = [next((r for r in runs if dispatch.kind_name(r) == kind), None) for kind in evaluate_all.PARTS]
    latest = [r for r in latest if r is not None]
    ordered = latest + [r for r in runs if r not in latest]
    return [run_progress.progress_payload(run) for run in ordered[:MAX_RUNS]]


@staff_member_required
@require_GET
def progress(request, submission_id: int):
    """Each recent run of the submission with its progress bar and log."""
    submission = _submission(request, submission_id)
    runs = _runs(submission)
    shown = {run["kind"] for run in runs}  # the newest run of each part run so far is among them
    context = {
        "submission": submission,
        "campaign": submission.campaign,
        "runs": runs,
        # Parts never run: why they cannot start yet, or "not run".
        "not_run": [
            evaluate_all.not_run_text(kind, submission) for kind in evaluate_all.PARTS if kind not in shown
        ],
        "active": any(run["active"] for run in runs),
        "may_evaluate": evaluate_all.may_evaluate(request.user),
    }
    return render(request, "automated/progress.html", context)


@staff_member_required
@require_GET
def progress_json(request, submission_id: int):
    """The progress page's data: ``{"submission", "active", "runs"}`` (runs as ``run_progress.progress_payload``)."""
    submission = _submission(request, submission_id)
    runs = _runs(submission)
    return JsonResponse(
        {"submission": str(submission), "active": any(run["active"] for run in runs), "runs": runs}
    )
