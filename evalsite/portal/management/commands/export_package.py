"""``manage.py export_package --campaign ID|SLUG --output FILE.zip [--team NAME] [--force]``: the results package.

What the zip holds: ``evalsite/portal/package.py`` (and the README inside the zip). An
existing zip is replaced only with ``--force`` (evalsite/management/overwrite.py).
"""

from django.core.management.base import BaseCommand

from evalsite.management.campaigns import existing_team, find_campaign, team_name_warning
from evalsite.management.migrated import require_migrated
from evalsite.management.overwrite import refuse_overwrite
from evalsite.portal.package import write_package


class Command(BaseCommand):
    help = (
        "Write a campaign's results package (per-run reports, summary, leaderboard with intervals and "
        "comparisons, plots, data dictionary, anonymised human responses, run configurations, code and "
        "model versions, data checksums, MANIFEST with SHA-256 per file, README) as a zip; "
        "--team: one team's package (its own runs and the leaderboard as published to it)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--campaign", required=True, help="campaign id or slug (manage.py list_campaigns)"
        )
        parser.add_argument(
            "--output", required=True, help="the zip file to write; an existing file is kept unless --force"
        )
        parser.add_argument("--force", action="store_true", help="overwrite an existing --output file")
        parser.add_argument("--team", default=None, help="a team's name: that team's package only")

    def handle(self, *args, campaign, output, team, force=False, **options):
        require_migrated()
        found = find_campaign(campaign)
        chosen = None
        if team is not None:
            chosen = existing_team(found, team)
            warning = team_name_warning(team, chosen)
            if warning:
                self.stderr.write(warning)
        refuse_overwrite([output], force=force)
        path = write_package(found, output, team=chosen)
        self.stdout.write(self.style.SUCCESS(f"Wrote {path} ({path.stat().st_size} bytes)"))
