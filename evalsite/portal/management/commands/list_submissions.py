"""``manage.py list_submissions [--campaign ID|SLUG] [--format table|csv]``: submissions with ids and state."""

import pandas as pd
from evalsite.management.campaigns import find_campaign
from evalsite import spreadsheet
from evalsite.management.migrated import require_migrated
from django.core.management.base import BaseCommand

from automated.django_app.dispatch import RUN_KINDS
from evalsite.models import Campaign, MaskedVideo, Submission
from evalsite.staleness import run_staleness


def _latest_run(model, submission) -> str:
    run = model.objects.filter(submission=submission).order_by("-created_at", "-id").first()
    if run is None:
        return "-"
    shown = f"{run.status} {run.progress.removesuffix(' videos')}"
    if run.status != run.Status.COMPLETED:
        return shown
    # the reports' staleness (evalsite.staleness): a planned video replaced after the run was
    # created, or a plan a video role change altered
    stale = run_staleness(submission, run)
    if not stale:
        return shown
    parts = [
        f"{len(videos)} video{'s' if len(videos) != 1 else ''} {what}"
        for videos, what in (
            (stale["replaced"], "replaced since"),
            (stale["plan_changed"], "with a changed role"),
        )
        if videos
    ]
    return f"{shown}, stale: {', '.join(parts)}"


def submissions_table(campaign: Campaign | None = None) -> pd.DataFrame:
    """One row per submission (of ``campaign``, or of all), by id.

    Columns: ``id``, ``campaign`` (id), ``team``, ``name``, ``baseline`` (method or '-'),
    ``videos`` (``"<valid>/<source videos>"``: current masked videos that match their clear
    video), ``upload`` (latest upload's status, '-' if none), then one column per run kind
    (``face``, ``attack``, ...): the latest run's status and ``done/total`` videos, '-' if
    never run; a completed run whose results are stale (a video it planned, masked or
    clear, was replaced after it was created, or a video role change altered its plan:
    ``evalsite.staleness``) adds ``", stale: <n> videos replaced since"`` and/or
    ``"<m> videos with a changed role"``.
    """
    submissions = Submission.objects.select_related("team", "campaign").order_by("pk")
    if campaign is not None:
        submissions = submissions.filter(campaign=campaign)
    rows = []
    for s in submissions:
        upload = s.uploads.order_by("-uploaded_at", "-id").first()
        valid = MaskedVideo.objects.filter(submission=s).valid().count()
        rows.append(
            {
                "id": s.pk,
                "campaign": s.campaign_id,
                "team": s.team.name,
                "name": s.name,
                "baseline": s.baseline_method or "-",
                "videos": f"{valid}/{s.campaign.source_videos.count()}",
                "upload": upload.status if upload else "-",
                **{kind: _latest_run(run_type.kind.model, s) for kind, run_type in RUN_KINDS.items()},
            }
        )
    columns = ["id", "campaign", "team", "name", "baseline", "videos", "upload", *RUN_KINDS]
    return pd.DataFrame(rows, columns=columns)


class Command(BaseCommand):
    help = (
        "List submissions with their ids (what export_report, upload_submission and the runs take), "
        "team, valid masked videos, latest upload and the latest run of each kind."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--campaign",
            metavar="ID_OR_SLUG",
            help="only this campaign's submissions (its id or slug, see list_campaigns; default: all)",
        )
        parser.add_argument(
            "--format",
            choices=("table", "csv"),
            default="table",
            help="an aligned table for reading (default) or CSV for scripts",
        )

    def handle(self, *args, campaign, format, **options):
        require_migrated()
        table = submissions_table(find_campaign(campaign) if campaign else None)
        if format == "csv":
            self.stdout.write(spreadsheet.frame_csv(table), ending="")  # formula-safe cells
        elif table.empty:
            self.stdout.write("No submissions" + (" in this campaign." if campaign else " yet."))
        else:
            self.stdout.write(table.to_string(index=False))
