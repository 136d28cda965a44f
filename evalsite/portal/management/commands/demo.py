"""``manage.py demo``: build, import, mask, evaluate, report, and print the login (evalsite/portal/demo.py).

``--serve HOST:PORT`` (``make demo``) also serves the site from as soon as the campaign is
imported (evalsite/portal/demo_server.py) and keeps serving after the demo until Ctrl-C.
"""

import signal
import time
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from automated.anonymizers import BASELINE_METHODS
from evalsite import conf
from evalsite.portal import demo_server
from evalsite.portal.demo import check_arguments, run_demo, site_url


def _checked_url(url: str) -> str:
    """``url`` with one trailing slash; a clear error unless it is an http(s) address."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(
            f"--url must be an http:// or https:// address such as http://127.0.0.1:8000/, got {url!r}"
        )
    return url.rstrip("/") + "/"


def _interrupt(signum, frame):
    raise KeyboardInterrupt


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
        parser.add_argument(
            "--serve",
            metavar="HOST:PORT",
            help="serve the site with gunicorn (DEBUG off) from as soon as the campaign is imported, "
            "evaluate the baselines behind it, then keep serving until Ctrl-C (make demo passes "
            "DEMO_ADDRESS; its log goes to var/demo-server.log)",
        )

    def handle(self, *args, serve, **options):
        if not serve:
            return self._demo(serve=None, **options)
        # A SIGTERM (kill, a supervisor) stops the demo and its server as Ctrl-C does.
        previous = signal.signal(signal.SIGTERM, _interrupt)
        try:
            return self._demo(serve=serve, **options)
        finally:
            signal.signal(signal.SIGTERM, previous)

    def _demo(self, *, stride, methods, attack, url, serve, **options):
        started = time.monotonic()
        try:  # every argument is checked before the database (or the organizer's password) is touched
            check_arguments(stride=stride, methods=methods)
            served_at = site_url(serve) if serve else None
            url = _checked_url(url) if url else served_at or site_url(conf.value("DEID_WEB_BIND"))
        except ValueError as error:
            raise CommandError(str(error)) from error
        executor = MigrationExecutor(connection)
        if executor.migration_plan(executor.loader.graph.leaf_nodes()):  # e.g. a new checkout
            self.stdout.write("Setting up the database (manage.py migrate) ...")
            call_command("migrate", interactive=False, verbosity=0)
        server = {}

        def start_serving(ready):
            self._organizer_login(ready, url)
            log_path = Path(settings.VAR_DIR) / "demo-server.log"
            server["process"] = demo_server.start_site(serve, log_path=log_path)
            self.stdout.write(
                self.style.SUCCESS(f"Serving the demo on {url} (log: {log_path}); Ctrl-C stops it.")
            )
            self.stdout.write(
                "The baselines are evaluated behind it: their pages and the leaderboard fill in."
            )

        try:
            result = run_demo(
                stride=stride, methods=methods, attack=attack, log=self.stdout.write,
                on_ready=start_serving if serve else None,
            )  # fmt: skip
        except BaseException as error:
            if "process" in server:
                demo_server.stop_site(server["process"])
            if isinstance(error, (ValueError, RuntimeError)):
                raise CommandError(str(error)) from error
            raise
        write = self.stdout.write
        write("")
        write(f"Campaign: {result.campaign.name} (slug {result.campaign.slug})")
        write(f"Reports:  {len(result.report_paths)} files in {result.summary_path.parent}/")
        write(f"Summary:  {result.summary_path}")
        self._organizer_login(result, url)
        if result.team_username:
            write(
                f"Team login:      {url}team/  user '{result.team_username}'  password '{result.team_password}' "
                "(the baselines' team; manage.py add_team_member makes others)"
            )
        write(f"Demo finished in {time.monotonic() - started:.0f} s.")
        failed = "some baselines failed:\n" + "\n".join(result.failures) if result.failures else ""
        if "process" in server:
            if failed:
                self.stderr.write(failed)
            write(self.style.SUCCESS(f"Still serving the demo on {url} (Ctrl-C stops it)."))
            demo_server.serve_until_interrupted(server["process"])
        if failed:
            raise CommandError(failed)

    def _organizer_login(self, result, url: str) -> None:
        self.stdout.write(
            self.style.SUCCESS(
                f"Organizer login: {url}admin/  user '{result.username}'  "
                f"password '{result.password}' (new on every run)"
            )
        )
