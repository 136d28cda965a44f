"""``manage.py create_submission --campaign SLUG --team NAME --name METHOD [--phase NAME]``."""

from django.core.management.base import BaseCommand, CommandError

from evalsite.models import Campaign
from evalsite.services import create_submission


class Command(BaseCommand):
    help = "Create a team's submission (one masking method) in a campaign; prints its id."

    def add_arguments(self, parser):
        parser.add_argument(
            "--campaign", required=True, help="campaign slug (manage.py list_campaigns lists them)"
        )
        parser.add_argument("--team", required=True, help="team name (created if new)")
        parser.add_argument("--name", required=True, help="method name")
        parser.add_argument("--description", default="", help="what the method does (shown with its reports)")
        parser.add_argument(
            "--phase",
            default=None,
            help="phase name: the submission is a run of it (numbered, quota checked)",
        )

    def handle(self, *args, campaign, team, name, description, phase, **options):
        found = Campaign.objects.filter(slug=campaign).first()
        if found is None:
            raise CommandError(f"no campaign with slug {campaign!r}")
        try:
            submission = create_submission(found, team, name, description=description, phase=phase)
        except ValueError as error:
            raise CommandError(str(error)) from error
        self.stdout.write(self.style.SUCCESS(f"Created submission {submission.pk}: {submission}"))
