"""Organizer pages of an attack run: the cross-video report and its verification curves (PNG).

The page shows the headline (the cross-video worst case: its recognizer x attacker pair,
mean over folds, sd, range, 95 % interval, chance level and clear bound), the counts of
identities, videos and frames, the per-pair table, per-identity accuracy of the
worst-case pair (with a caveat naming tested identities alone in a video format:
``attack_service.format_confounded_identities``), the verification figures of the pretrained embedding (CMC ranks 1-5,
EER, FNMR at FMR 1e-2 / 1e-3) with their CMC / ROC / DET plot, and, apart, the
within-video scene-memorisation table, which is never the worst case. Above the worst
case, the declared attacker (the headline, ``attack_privacy``); beside verification the
linkability with its intervals, per demographic group, and a plot of the mated /
non-mated score densities with D<->(s); then identity over time (per masked video
consistency and flicker, the linking attacker). A baseline whose worst case reads 1.00 gets
the note why (``evalsite.dictionary.BASELINE_NOTE``).

Staff only, and only runs of campaigns the user organizes (``evalsite.scoping``): another
campaign's organizer gets 404, as for every organizer page.
"""

from __future__ import annotations

from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, render

from automated.attack.linkability import plot_linkability, result_from_record
from automated.attack.verification import plot_verification
from evalsite.dictionary import BASELINE_NOTE, baseline_at_ceiling
from evalsite.scoping import scope

from .attack_models import AttackRun
from .attack_service import attack_summary


def _run(request, run_id: int) -> AttackRun:
    runs = scope(AttackRun.objects.select_related("submission__campaign"), request.user)
    return get_object_or_404(runs, pk=run_id, status=AttackRun.Status.COMPLETED)


@staff_member_required
def attack_run_report(request, run_id: int):
    """The report page of completed attack run ``run_id``."""
    run = _run(request, run_id)
    summary = attack_summary(run)
    confounded = list(dict.fromkeys(f["identity"] for f in summary["format_confounded_identities"]))
    return render(
        request,
        "automated/attack_run.html",
        {
            "run": run,
            "submission": run.submission,
            "summary": summary,
            "has_plot": bool(run.verification),
            "format_confounded": ", ".join(confounded),
            "format_confounded_one": len(confounded) == 1,
            # A baseline's pairs all near 1.00 side by side: say why (issue 21).
            "baseline_note": (
                BASELINE_NOTE
                if baseline_at_ceiling(run.submission, summary.get("worst_case_chance_normalised"))
                else ""
            ),
            "temporal_videos": [
                {"video": name, **values}
                for name, values in sorted(
                    ((run.privacy or {}).get("temporal") or {}).get("per_video", {}).items()
                )
            ],
        },
    )


@staff_member_required
def attack_run_verification_png(request, run_id: int):
    """CMC, ROC and DET of the run's verification figures as PNG; 404 when none were computed."""
    run = _run(request, run_id)
    if not run.verification:
        raise Http404("this attack run has no verification figures")
    image = plot_verification(
        run.verification, title=f"Masked probes vs clear gallery, cross-video folds: {run.submission}"
    )
    response = HttpResponse(image, content_type="image/png")
    response["Cache-Control"] = "private, no-store"
    return response


@staff_member_required
def attack_run_linkability_png(request, run_id: int, embedder: str):
    """Mated / non-mated score densities with D<->(s) of one embedder's verification (PNG).

    Gomez-Barrero et al. 2018, eq. 6-7 (``attack.linkability.plot_linkability``), from the
    curve stored with the run; 404 for an unknown embedder or a run stored before it.
    """
    run = _run(request, run_id)
    record = (run.verification or {}).get(embedder)
    if record is None:
        raise Http404("no verification of this embedder in this run")
    try:
        result = result_from_record(record)
    except ValueError as error:
        raise Http404(str(error)) from None
    image = plot_linkability(result, title=f"{embedder}, masked probes vs clear gallery")
    response = HttpResponse(image, content_type="image/png")
    response["Cache-Control"] = "private, no-store"
    return response
