"""``python manage.py make_baseline <campaign_slug> (--method M ... | --all)``."""

from django.core.management.base import BaseCommand, CommandError

from automated.anonymizers import BASELINE_METHODS
from automated.django_app.services import create_baseline_submission
from evalsite.models import Campaign, MaskedVideo


class Command(BaseCommand):
    help = "Mask every source video of a campaign with baseline anonymizers, one submission per method."

    def add_arguments(self, parser):
        parser.add_argument("campaign_slug", help="slug of the campaign (python manage.py list_campaigns)")
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
            "--team", default="Baselines", help="team name of the baseline submissions (default Baselines)"
        )
        parser.add_argument(
            "--no-web-copies",
            action="store_true",
            help="skip the H.264 copies raters' browsers play (masking only, e.g. for automated runs)",
        )

    def handle(self, *args, campaign_slug, methods, all, team, no_web_copies, **options):
        try:
            campaign = Campaign.objects.get(slug=campaign_slug)
        except Campaign.DoesNotExist:
            raise CommandError(f"no campaign with slug {campaign_slug!r}") from None
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
