"""``manage.py list_campaigns [--format table|csv]``: every campaign with its id and counts."""

import pandas as pd
from evalsite import spreadsheet
from evalsite.management.migrated import require_migrated
from django.core.management.base import BaseCommand
from django.db.models import Count

from evalsite.models import Campaign


def campaigns_table() -> pd.DataFrame:
    """One row per campaign, by id: ``id``, ``name``, ``slug``, ``organizers`` (usernames,
    comma-separated, '-' if none), ``identities``, ``source_videos``, ``submissions``,
    ``teams`` (distinct teams with a submission), ``rating_open`` (yes/no)."""
    campaigns = Campaign.objects.annotate(
        n_identities=Count("identities", distinct=True),
        n_videos=Count("source_videos", distinct=True),
        n_submissions=Count("submissions", distinct=True),
        n_teams=Count("submissions__team", distinct=True),
    ).order_by("pk")
    rows = [
        {
            "id": c.pk,
            "name": c.name,
            "slug": c.slug,
            "organizers": ", ".join(c.organizers.order_by("username").values_list("username", flat=True))
            or "-",
            "identities": c.n_identities,
            "source_videos": c.n_videos,
            "submissions": c.n_submissions,
            "teams": c.n_teams,
            "rating_open": "yes" if c.rating_open else "no",
        }
        for c in campaigns
    ]
    columns = ["id", "name", "slug", "organizers", "identities", "source_videos", "submissions", "teams"]
    return pd.DataFrame(rows, columns=[*columns, "rating_open"])


class Command(BaseCommand):
    help = (
        "List every campaign with its id (what the other commands take), organizers, counts and rating state."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--format",
            choices=("table", "csv"),
            default="table",
            help="an aligned table for reading (default) or CSV for scripts",
        )

    def handle(self, *args, format, **options):
        require_migrated()
        table = campaigns_table()
        if format == "csv":
            self.stdout.write(spreadsheet.frame_csv(table), ending="")  # formula-safe cells
        elif table.empty:
            self.stdout.write("No campaigns yet (manage.py import_dataset or manage.py demo makes one).")
        else:
            self.stdout.write(table.to_string(index=False))
