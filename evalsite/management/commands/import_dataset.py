"""``manage.py import_dataset FOLDER --campaign NAME --organizer USER``: see evalsite/importer.py."""

from django.core.management.base import BaseCommand, CommandError

from evalsite.importer import DatasetError, import_dataset


class Command(BaseCommand):
    help = "Import identities, gallery stills and clear videos from a dataset folder as a new campaign."

    def add_arguments(self, parser):
        parser.add_argument("folder", help="dataset folder (layout: see docs/own-data.md)")
        parser.add_argument("--campaign", help="campaign name (default: 'name' in campaign.json)")
        parser.add_argument(
            "--organizer",
            action="append",
            default=[],
            metavar="USER",
            help="username of a staff user who organizes the campaign (repeatable); "
            "only organizers and superusers see a campaign",
        )
        parser.add_argument(
            "--no-web-copies",
            action="store_true",
            help="skip the browser-playable H.264 copies of the clear videos",
        )

    def handle(self, *args, folder, campaign, organizer, no_web_copies, **options):
        try:
            report = import_dataset(folder, campaign, organizers=organizer, web_copies=not no_web_copies)
        except DatasetError as error:
            raise CommandError(str(error)) from error
        self.stdout.write(self.style.SUCCESS(f"Imported {report}"))
        if not organizer:
            self.stdout.write(
                "No --organizer given: only superusers see this campaign until one is added "
                "(admin: Campaigns > organizers)."
            )
