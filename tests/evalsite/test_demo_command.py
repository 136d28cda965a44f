"""``manage.py demo`` on a new checkout whose database was never migrated (README's quick look)."""

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

MANAGE = Path(__file__).resolve().parents[2] / "manage.py"


def test_demo_sets_up_an_unmigrated_database_before_anything_else(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env.update(DEID_VAR_DIR=str(tmp_path / "var"), DEID_DATA_DIR=str(tmp_path / "no-data"))
    done = subprocess.run(
        [sys.executable, str(MANAGE), "demo", "--method", "identity"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    # It migrates, then stops on the missing data with the clear error (not "no such table").
    assert "Setting up the database (manage.py migrate)" in done.stdout
    assert done.returncode == 1
    assert "real data not found at" in done.stderr and "no such table" not in done.stderr
    with sqlite3.connect(tmp_path / "var" / "db.sqlite3") as db:
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"evalsite_campaign", "trials_rater", "auth_user"} <= tables


def test_a_bad_argument_stops_the_demo_before_the_organizers_password_or_the_database_changes(db):
    import pytest
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.core.management.base import CommandError

    from evalsite.models import Campaign

    user = User.objects.create_user("organizer", password="kept-password-1", is_staff=True)
    bad = [
        (["--method", "blurr_face"], r"unknown baseline method\(s\) 'blurr_face'; choose from .*blur_face"),
        (["--method", "identity", "--method", "nope"], r"unknown baseline method\(s\) 'nope'"),
        (["--stride", "0"], r"stride must be a whole number >= 1, got 0"),
        (["--url", "127.0.0.1:8001"], r"--url must be an http:// or https:// address"),
    ]
    for arguments, message in bad:
        with pytest.raises(CommandError, match=message):
            call_command("demo", *arguments)
    user.refresh_from_db()
    assert user.check_password("kept-password-1")
    assert not Campaign.objects.exists()


def test_the_printed_address_is_where_gunicorn_serves(monkeypatch):
    import pytest

    from evalsite.portal.demo import site_url

    assert site_url("127.0.0.1:8000") == "http://127.0.0.1:8000/"
    assert site_url("127.0.0.1:8123") == "http://127.0.0.1:8123/"
    assert site_url("0.0.0.0:9000") == "http://127.0.0.1:9000/"  # a wildcard bind: open it here
    assert site_url("[::1]:8001") == "http://[::1]:8001/"
    for wrong in ("unix:/run/deid.sock", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:http"):
        with pytest.raises(ValueError, match="expected host:port"):
            site_url(wrong)


def test_the_demo_prints_the_address_of_deid_web_bind_without_url(tmp_path):
    # The same process as `make demo`'s server reads DEID_WEB_BIND; with no data the demo stops
    # after its arguments were checked, so only the address check is exercised here.
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env.update(
        DEID_VAR_DIR=str(tmp_path / "var"), DEID_DATA_DIR=str(tmp_path / "no-data"), DEID_WEB_BIND="unix:/x"
    )
    done = subprocess.run(
        [sys.executable, str(MANAGE), "demo", "--method", "identity"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1
    assert "cannot make a browser address of the bind 'unix:/x'" in done.stderr
    assert "Setting up the database" not in done.stdout  # stopped before touching anything


def test_the_login_lines_name_the_served_address(db, monkeypatch, tmp_path):
    import io

    from django.core.management import call_command

    from evalsite.portal.demo import DemoResult
    from evalsite.portal.management.commands import demo as command
    from evalsite.models import Campaign

    campaign = Campaign.objects.create(name="Printed", slug="printed")
    calls = []

    def finished_demo(**options):  # the demo's work is tested elsewhere; this is about what it prints
        calls.append(options)
        return DemoResult(
            campaign,
            "organizer",
            "pw-new",
            [],
            tmp_path / "reports" / "summary.csv",
            team_username="team-baselines",
            team_password="pw-team",
        )

    monkeypatch.setattr(command, "run_demo", finished_demo)
    monkeypatch.setenv("DEID_WEB_BIND", "127.0.0.1:8123")
    out = io.StringIO()
    call_command("demo", "--method", "identity", "--stride", "3", stdout=out)
    text = out.getvalue()
    assert "Organizer login: http://127.0.0.1:8123/admin/  user 'organizer'  password 'pw-new'" in text
    assert "Team login:      http://127.0.0.1:8123/team/  user 'team-baselines'  password 'pw-team'" in text
    assert calls[0]["methods"] == ["identity"] and calls[0]["stride"] == 3
    out = io.StringIO()
    call_command("demo", "--url", "https://demo.example.org", stdout=out)  # --url wins, one slash added
    assert "Organizer login: https://demo.example.org/admin/" in out.getvalue()


def test_serve_starts_the_site_before_the_baselines_and_serves_it_after(db, monkeypatch, settings, tmp_path):
    """``make demo`` (``--serve``): gunicorn answers while the baselines would be evaluated
    (the stand-in for ``run_demo`` fetches a page from inside it), the organizer login is
    printed before, the site still answers after the demo, and Ctrl-C (here: the wait's
    stand-in) stops it. The demo's own work is tested in test_commands.py."""
    import io
    import socket
    import urllib.request

    from django.core.management import call_command

    from evalsite.models import Campaign
    from evalsite.portal import demo_server
    from evalsite.portal.demo import DemoResult
    from evalsite.portal.management.commands import demo as command

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/"
    monkeypatch.setenv("DEID_VAR_DIR", str(tmp_path / "var"))  # the server's own (empty) var folder
    settings.VAR_DIR = tmp_path / "var"  # where the command puts the server's log
    monkeypatch.setenv("DEID_SECRET_KEY", "a-test-key-" + "x" * 40)
    monkeypatch.delenv("DATABASE_URL", raising=False)
    campaign = Campaign.objects.create(name="Served", slug="served")
    out = io.StringIO()
    seen = {}

    def status(path):
        with urllib.request.urlopen(url + path, timeout=30) as response:
            return response.status

    def demo_behind_the_site(**options):
        options["on_ready"](DemoResult(campaign, "organizer", "pw-new"))
        seen["printed before the baselines"] = out.getvalue()
        seen["during"] = status("admin/login/")
        return DemoResult(campaign, "organizer", "pw-new", [], tmp_path / "reports" / "summary.csv")

    def interrupted(process):
        seen["after"] = status("admin/login/")
        demo_server.stop_site(process)
        seen["process"] = process
        return 0

    monkeypatch.setattr(command, "run_demo", demo_behind_the_site)
    monkeypatch.setattr(demo_server, "serve_until_interrupted", interrupted)
    call_command("demo", "--serve", f"127.0.0.1:{port}", stdout=out)
    assert seen["during"] == 200 and seen["after"] == 200
    before = seen["printed before the baselines"]
    assert f"Organizer login: {url}admin/  user 'organizer'  password 'pw-new'" in before
    assert f"Serving the demo on {url}" in before and "Campaign:" not in before
    assert f"Still serving the demo on {url}" in out.getvalue()
    assert seen["process"].poll() is not None  # stopped
    log = (tmp_path / "var" / "demo-server.log").read_text()
    assert "GET /admin/login/" in log  # gunicorn's access log went to the file, not the terminal
