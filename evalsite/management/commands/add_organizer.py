"""``manage.py add_organizer --campaign ID|SLUG USERNAME [--new-password]``: a staff login for one campaign."""

from django.core.management.base import BaseCommand, CommandError

from evalsite.management.campaigns import CAMPAIGN_HELP, find_campaign
from evalsite.organizer_accounts import ORGANIZER_APPS, add_organizer


class Command(BaseCommand):
    help = (
        "Make USERNAME a staff organizer of a campaign (the account is created with a random password "
        "if new): they log in at /admin/ and see that campaign (and others they organize) in the admin, "
        f"the organizer pages and the API, with the permissions of the apps {', '.join(ORGANIZER_APPS)} "
        "and none on accounts."
    )

    def add_arguments(self, parser):
        parser.add_argument("--campaign", metavar="ID_OR_SLUG", required=True, help=CAMPAIGN_HELP)
        parser.add_argument("username", help="login name of the organizer (created if it does not exist)")
        parser.add_argument(
            "--new-password",
            action="store_true",
            help="give an existing account a new random password (printed once)",
        )

    def handle(self, *args, campaign, username, new_password, **options):
        found = find_campaign(campaign)
        try:
            user, password = add_organizer(found, username, new_password=new_password)
        except ValueError as error:
            raise CommandError(str(error)) from error
        self.stdout.write(
            self.style.SUCCESS(f"{user.username} organizes campaign {found.name} ({found.slug}).")
        )
        if password is not None:
            self.stdout.write(f"Password: {password} (shown once; log in at <site address>/admin/)")
        else:
            self.stdout.write("The account keeps its password (--new-password gives it a new one).")
