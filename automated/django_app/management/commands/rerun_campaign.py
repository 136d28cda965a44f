"""``manage.py rerun_campaign --campaign ID|SLUG [--phase NAME] [--options JSON]``: re-run everything.

``automated/django_app/rerun.py``: every submission (of the phase) is evaluated again
with the campaign's settings, changed first by ``--options``; current results are kept.
"""

import json

from django.core.management.base import BaseCommand, CommandError

from evalsite.management.campaigns import CAMPAIGN_HELP, find_campaign

from ...rerun import rerun_campaign


class Command(BaseCommand):
    help = (
        "Re-evaluate every submission of a campaign (or phase) with the campaign's settings; --options "
        'changes them first, e.g. \'{"face": {"stride": 10}}\'. Runs already current are kept.'
    )

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True, help=CAMPAIGN_HELP)
        parser.add_argument("--phase", default=None, help="only the runs of this phase (its name)")
        parser.add_argument(
            "--options", default=None, help='new settings as JSON, e.g. \'{"face": {"stride": 10}}\''
        )

    def handle(self, *args, campaign, phase, options, **rest):
        found = find_campaign(campaign)
        chosen = None
        if phase is not None:
            chosen = found.phases.filter(name=phase.strip()).first()
            if chosen is None:
                known = ", ".join(found.phases.values_list("name", flat=True)) or "none"
                raise CommandError(f"campaign {found.slug!r} has no phase {phase!r}; its phases: {known}")
        try:
            given = json.loads(options) if options else None
            if given is not None and not isinstance(given, dict):
                raise ValueError("--options must be a JSON object of parts")
            outcomes = rerun_campaign(found, given, phase=chosen)
        except json.JSONDecodeError as error:
            raise CommandError(f"--options is not valid JSON: {error}") from None
        except ValueError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"settings of {found.slug}: {json.dumps(found.evaluation_options, sort_keys=True)}")
        for submission, parts in outcomes:
            for part in parts:
                self.stdout.write(f"{submission}: {part.kind}: {part.state}: {part.detail}")
