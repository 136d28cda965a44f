"""``manage.py add_team_member --campaign ID|SLUG TEAM USERNAME [--new-password]``: a login for the team pages."""

from django.core.management.base import BaseCommand, CommandError

from evalsite.management.campaigns import CAMPAIGN_HELP, existing_team, find_campaign, team_name_warning
from evalsite.team_accounts import add_team_member


class Command(BaseCommand):
    help = (
        "Make USERNAME a member of team TEAM of a campaign (the account is created with a random "
        "password if new), so they can log in at /team/ and see their team's submissions and reports."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--campaign",
            metavar="ID_OR_SLUG",
            required=True,
            help=CAMPAIGN_HELP + "; teams are per campaign",
        )
        parser.add_argument(
            "team",
            help="team name in that campaign, matched ignoring case (the team must exist: list_submissions)",
        )
        parser.add_argument("username", help="login name of the member (created if it does not exist)")
        parser.add_argument(
            "--new-password",
            action="store_true",
            help="give an existing account a new random password (printed once)",
        )

    def handle(self, *args, campaign, team, username, new_password, **options):
        found_campaign = find_campaign(campaign)
        found = existing_team(found_campaign, team)
        warning = team_name_warning(team, found)
        if warning:
            self.stdout.write(self.style.WARNING(warning))
        try:
            user, password = add_team_member(found, username, new_password=new_password)
        except ValueError as error:
            raise CommandError(str(error)) from error
        self.stdout.write(
            self.style.SUCCESS(f"{user.username} is a member of team {found.name} ({found_campaign.slug}).")
        )
        if password is not None:
            self.stdout.write(f"Password: {password} (shown once; log in at <site address>/team/login/)")
        else:
            self.stdout.write("The account keeps its password (--new-password gives it a new one).")
