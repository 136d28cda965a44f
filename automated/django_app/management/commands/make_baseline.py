"""``python manage.py make_baseline CAMPAIGN_ID_OR_SLUG (--method M ... | --all) [--team NAME]``."""

from django.core.management.base import BaseCommand, CommandError

from automated.anonymizers import BASELINE_METHODS
from automated.django_app.services import create_baseline_submission
from evalsite.management.campaigns import CAMPAIGN_HELP, find_campaign, team_name_warning
from evalsite.models import MaskedVideo, find_team


class Command(BaseCommand):
    help = "Mask every source video of a campaign with baseline anonymizers, one submission per method."

    def add_arguments(self, parser):
        parser.add_argument("campaign", metavar="CAMPAIGN", help=CAMPAIGN_HELP)
        group = parser.add_mutually_exclusive_group(required=True)
        group.add_argument(
            "--method",
            action="append",
            choices=sorted(BASELINE_METHODS),
            dest="methods",
            help="a baseline anonymizer (automated.anonymizers.BASELINE_METHODS); repeat for several",
        )
        group.add_argument("--all", action="store_true", help="every baseline method")
        parser.add_argument(
            "--team",
            default="Baselines",
            help="team name of the baseline submissions, matched ignoring case (default Baselines)",
        )
        parser.add_argument(
            "--no-web-copies",
            action="store_true",
            help="skip the H.264 copies raters' browsers play (masking only, e.g. for automated runs)",
        )

    def handle(self, *args, campaign, methods, all, team, no_web_copies, **options):
        campaign = find_campaign(campaign)
        existing = find_team(campaign, team)
        warning = existing and team_name_warning(team, existing)
        if warning:
            self.stdout.write(self.style.WARNING(warning))
        team = existing.name if existing else team.strip()
        for method in list(BASELINE_METHODS) if all else methods:
            # Re-runs mask only what is missing; say so, so that nothing looks redone.
            before = MaskedVideo.objects.filter(
                submission__campaign=campaign, submission__team__name=team, submission__name=method
            ).count()
            try:
                submission = create_baseline_submission(
                    campaign, method, team_name=team, web_copies=not no_web_copies
                )
            except ValueError as error:
                raise CommandError(f"{method}: {error}") from error
            total = submission.masked_videos.count()
            self.stdout.write(
                f"submission {submission.pk} {submission}: {total} masked videos "
                f"({total - before} new, {before} kept)"
            )
