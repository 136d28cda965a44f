"""``manage.py demo``: build, import, mask, evaluate, report, and print the login (evalsite/portal/demo.py)."""

import time
from urllib.parse import urlsplit

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from automated.anonymizers import BASELINE_METHODS
from evalsite import conf
from evalsite.portal.demo import check_arguments, run_demo, site_url


def _checked_url(url: str) -> str:
    """``url`` with one trailing slash; a clear error unless it is an http(s) address."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(
            f"--url must be an http:// or https:// address such as http://127.0.0.1:8000/, got {url!r}"
        )
    return url.rstrip("/") + "/"


class Command(BaseCommand):
    help = (
        "Build and import the demo campaign from the real data, make every baseline submission, "
        "run the automated face evaluation, write reports to var/reports/ and print an organizer login."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--stride", type=int, default=5, metavar="N", help="evaluate every N-th frame, N >= 1 (default 5)"
        )
        parser.add_argument(
            "--method",
            action="append",
            dest="methods",
            metavar="METHOD",
            help=f"only this baseline method (repeatable; default: all of {', '.join(BASELINE_METHODS)})",
        )
        parser.add_argument(
            "--no-attack",
            action="store_false",
            dest="attack",
            help="skip the demo attack suite (naive/parrot attackers)",
        )
        parser.add_argument(
            "--url",
            help="address the site is served at, for the printed logins (default: made from DEID_WEB_BIND, "
            "the address gunicorn binds, default 127.0.0.1:8000; make demo passes its DEMO_ADDRESS)",
        )

    def handle(self, *args, stride, methods, attack, url, **options):
        started = time.monotonic()
        try:  # every argument is checked before the database (or the organizer's password) is touched
            check_arguments(stride=stride, methods=methods)
            url = _checked_url(url) if url else site_url(conf.value("DEID_WEB_BIND"))
        except ValueError as error:
            raise CommandError(str(error)) from error
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
                f"Organizer login: {url}admin/  user '{result.username}'  "
                f"password '{result.password}' (new on every run)"
            )
        )
        if result.team_username:
            write(
                f"Team login:      {url}team/  user '{result.team_username}'  password '{result.team_password}' "
                "(the baselines' team; manage.py add_team_member makes others)"
            )
        write(f"Demo finished in {time.monotonic() - started:.0f} s.")
        if result.failures:
            raise CommandError("some baselines failed:\n" + "\n".join(result.failures))
