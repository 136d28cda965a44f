"""``manage.py demo``: build, import, mask, evaluate, report, and print the login (evalsite/demo.py)."""

import time

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from evalsite.demo import run_demo


class Command(BaseCommand):
    help = (
        "Build and import the demo campaign from the real data, make every baseline submission, "
        "run the automated face evaluation, write reports to var/reports/ and print an organizer login."
    )

    def add_arguments(self, parser):
        parser.add_argument("--stride", type=int, default=5, help="evaluate every n-th frame (default 5)")
        parser.add_argument(
            "--method",
            action="append",
            dest="methods",
            help="only this baseline method (repeatable; default: all)",
        )
        parser.add_argument(
            "--no-attack",
            action="store_false",
            dest="attack",
            help="skip the demo attack suite (naive/parrot attackers)",
        )
        parser.add_argument(
            "--url",
            default="http://127.0.0.1:8000/",
            help="address the site is served at, for the printed login (make demo passes its DEMO_ADDRESS)",
        )

    def handle(self, *args, stride, methods, attack, url, **options):
        started = time.monotonic()
        executor = MigrationExecutor(connection)
        if executor.migration_plan(executor.loader.graph.leaf_nodes()):  # e.g. a new checkout
            self.stdout.write("Setting up the database (manage.py migrate) ...")
            call_command("migrate", interactive=False, verbosity=0)
        try:
            result = run_demo(stride=stride, methods=methods, attack=attack, log=self.stdout.write)
        except ValueError as error:
            raise CommandError(str(error)) from error
        write = self.stdout.write
        write("")
        write(f"Campaign: {result.campaign.name} (slug {result.campaign.slug})")
        write(f"Reports:  {len(result.report_paths)} files in {result.summary_path.parent}/")
        write(f"Summary:  {result.summary_path}")
        write(
            self.style.SUCCESS(
                f"Organizer login: {url.rstrip('/')}/admin/  user '{result.username}'  "
                f"password '{result.password}' (new on every run)"
            )
        )
        write(f"Demo finished in {time.monotonic() - started:.0f} s.")
        if result.failures:
            raise CommandError("some baselines failed:\n" + "\n".join(result.failures))
