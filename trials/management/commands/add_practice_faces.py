"""``manage.py add_practice_faces --campaign ID|SLUG``: the London practice people for a campaign."""

from django.core.management.base import BaseCommand, CommandError

from evalsite.management.campaigns import CAMPAIGN_HELP, find_campaign
from trials.practice import add_practice_faces, practice_faces_dir


class Command(BaseCommand):
    help = (
        "Give a campaign without practice identities the built-in practice people (12 of the Face "
        "Research Lab London Set, read from TRIALS_PRACTICE_FACES): practice trials then show them, "
        "with feedback, and never an evaluated person."
    )

    def add_arguments(self, parser):
        parser.add_argument("--campaign", metavar="ID_OR_SLUG", required=True, help=CAMPAIGN_HELP)

    def handle(self, *args, campaign, **options):
        found = find_campaign(campaign)
        if practice_faces_dir() is None:
            raise CommandError(
                "the London face set is not there: set TRIALS_PRACTICE_FACES to its folder "
                "(faces/london_face_set in DEID_DATA_DIR)"
            )
        try:
            added = add_practice_faces(found)
        except ValueError as error:
            raise CommandError(str(error)) from error
        if added:
            self.stdout.write(self.style.SUCCESS(f"{added} practice people added to campaign {found.name}."))
        else:
            self.stdout.write(f"Campaign {found.name} has practice identities already; nothing added.")
