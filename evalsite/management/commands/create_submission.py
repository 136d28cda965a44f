"""``manage.py create_submission --campaign ID|SLUG --team NAME --name METHOD [--phase NAME]``."""

from django.core.management.base import BaseCommand, CommandError

from evalsite.management.campaigns import CAMPAIGN_HELP, find_campaign, team_name_warning
from evalsite.services import create_submission


class Command(BaseCommand):
    help = "Create a team's submission (one masking method) in a campaign; prints its id."

    def add_arguments(self, parser):
        parser.add_argument("--campaign", metavar="ID_OR_SLUG", required=True, help=CAMPAIGN_HELP)
        parser.add_argument(
            "--team",
            required=True,
            help="team name, matched ignoring case ('team tester' is 'Team Tester'); created if new",
        )
        parser.add_argument("--name", required=True, help="method name")
        parser.add_argument("--description", default="", help="what the method does (shown with its reports)")
        parser.add_argument(
            "--phase",
            default=None,
            help="phase name: the submission is a run of it (numbered, quota checked)",
        )

    def handle(self, *args, campaign, team, name, description, phase, **options):
        found = find_campaign(campaign)
        try:
            submission = create_submission(found, team, name, description=description, phase=phase)
        except ValueError as error:
            raise CommandError(str(error)) from error
        warning = team_name_warning(team, submission.team)
        if warning:
            self.stdout.write(self.style.WARNING(warning))
        self.stdout.write(self.style.SUCCESS(f"Created submission {submission.pk}: {submission}"))
