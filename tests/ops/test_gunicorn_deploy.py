"""The site as docs/campaign.md ("Running a campaign") deploys it: gunicorn on PostgreSQL, DEBUG off.

gunicorn runs with the documented example ``.env`` (only the database, the folders and the
key replaced) and is reached the way a TLS-terminating proxy reaches it: ``Host`` of the
public name and ``X-Forwarded-Proto: https``. Static files come from WhiteNoise after
``collectstatic``; the admin login is a real CSRF-protected POST.
"""

import gzip
import http.client
import re
import sys
import time
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import urlencode, urlparse

import django.contrib.admin
import pytest

from tests.evalsite.test_deploy_settings import documented_production_env

from .servers import Server, free_port, gunicorn, manage, postgres_database, redis_broker, wait_for_port

HOST = "eval.example.org"  # the documented example host name
ORIGIN = f"https://{HOST}"
PASSWORD = "a-long-admin-password-1"
ADMIN_STATIC = Path(django.contrib.admin.__file__).parent / "static"


@pytest.fixture(scope="module")
def database_url():
    with postgres_database() as url:
        yield url


@pytest.fixture(scope="module")
def site(tmp_path_factory, database_url):
    """(base URL, gunicorn Server) for the documented environment on a fresh database."""
    tmp = tmp_path_factory.mktemp("deploy")
    env = {
        **documented_production_env(tmp),
        "DATABASE_URL": database_url,
        "DJANGO_SETTINGS_MODULE": "evalsite.settings",
        "CELERY_BROKER_URL": "",
    }
    manage("collectstatic", "--noinput", env=env)
    manage(
        "createsuperuser",
        "--noinput",
        "--username",
        "admin",
        "--email",
        "admin@example.org",
        env={**env, "DJANGO_SUPERUSER_PASSWORD": PASSWORD},
    )
    with gunicorn(env, tmp, workers=1, threads=2) as (base_url, server):
        yield base_url, server
        assert "Internal Server Error" not in server.output()  # Django's log line of a 500


def fetch(base_url, method, path, headers=None, body=None, proxied=True):
    """One request as the proxy forwards it; returns (status, headers, body bytes)."""
    url = urlparse(base_url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    sent = {"Host": HOST, **({"X-Forwarded-Proto": "https"} if proxied else {}), **(headers or {})}
    connection.request(method, path, body=body, headers=sent)
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, response.headers, data


def cookies(headers) -> SimpleCookie:
    jar = SimpleCookie()
    for line in headers.get_all("Set-Cookie") or []:
        jar.load(line)
    return jar


def login_form(base_url):
    """(csrftoken cookie, form token) from the admin login page."""
    status, headers, page = fetch(base_url, "GET", "/admin/login/")
    assert status == 200
    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1).decode()
    return cookies(headers)["csrftoken"], token


def test_admin_css_is_served_by_whitenoise(site):
    base_url, _ = site
    status, headers, page = fetch(base_url, "GET", "/admin/login/")
    assert status == 200 and b"<title>Log in | Django site admin</title>" in page
    stylesheets = re.findall(rb'<link rel="stylesheet" href="(/static/[^"]+\.css)"', page)
    assert b"/static/admin/css/base.css" in stylesheets
    for href in stylesheets:
        status, css_headers, css = fetch(base_url, "GET", href.decode())
        assert status == 200 and css_headers["Content-Type"].startswith("text/css")
        assert css == (ADMIN_STATIC / href.decode().removeprefix("/static/")).read_bytes()
    status, css_headers, packed = fetch(
        base_url, "GET", "/static/admin/css/base.css", headers={"Accept-Encoding": "gzip"}
    )
    assert status == 200 and css_headers["Content-Encoding"] == "gzip"
    assert gzip.decompress(packed) == (ADMIN_STATIC / "admin/css/base.css").read_bytes()


def test_https_headers_redirect_and_secure_cookies(site):
    base_url, _ = site
    status, headers, _ = fetch(base_url, "GET", "/admin/login/")
    assert headers["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"
    assert cookies(headers)["csrftoken"]["secure"] is True
    # Plain HTTP (no proxy header) is sent to HTTPS.
    status, headers, _ = fetch(base_url, "GET", "/admin/login/", proxied=False)
    assert status == 301 and headers["Location"] == f"{ORIGIN}/admin/login/"


def test_login_post_behind_the_proxy_passes_csrf_from_the_trusted_origin_only(site):
    base_url, _ = site
    cookie, token = login_form(base_url)
    form = urlencode(
        {"csrfmiddlewaretoken": token, "username": "admin", "password": PASSWORD, "next": "/admin/"}
    )
    headers = {"Cookie": f"csrftoken={cookie.value}", "Content-Type": "application/x-www-form-urlencoded"}

    status, _, page = fetch(
        base_url, "POST", "/admin/login/", {**headers, "Origin": "https://evil.example"}, form
    )
    assert status == 403
    assert b"Origin checking failed" not in page and b"CSRF_TRUSTED_ORIGINS" not in page  # no debug detail

    status, answer, _ = fetch(base_url, "POST", "/admin/login/", {**headers, "Origin": ORIGIN}, form)
    assert status == 302 and answer["Location"] == "/admin/"
    session = cookies(answer)["sessionid"]
    assert session["secure"] is True and session["httponly"] is True
    status, _, page = fetch(base_url, "GET", "/admin/", {"Cookie": f"sessionid={session.value}"})
    assert status == 200 and b"Site administration" in page


def test_errors_are_plain_under_gunicorn(site):
    base_url, _ = site
    status, _, page = fetch(base_url, "GET", "/no-such-page/")
    assert status == 404 and b"<h1>Not found</h1>" in page and b"URLconf" not in page
    status, _, page = fetch(base_url, "GET", "/admin/login/", {"Host": "attacker.example"})
    assert status == 400 and b"<h1>Bad request</h1>" in page and b"ALLOWED_HOSTS" not in page
    auth = {
        "Authorization": "Basic " + __import__("base64").b64encode(f"admin:{PASSWORD}".encode()).decode(),
        "Content-Type": "application/json",
    }
    status, _, body = fetch(base_url, "POST", "/api/submissions/", auth, b"[" * 100000)
    assert status == 400 and b"JSON nested deeper than 32 levels" in body


def test_make_serve_runs_web_and_worker_from_the_env_file(tmp_path, database_url):
    """`make serve ENV_FILE=...`: migrate, collectstatic, then the Procfile's gunicorn and Celery."""
    port = free_port()
    with redis_broker() as broker_url:
        values = {
            **documented_production_env(tmp_path),
            "DATABASE_URL": database_url,
            "CELERY_BROKER_URL": broker_url,
            "DEID_WEB_BIND": f"127.0.0.1:{port}",
            "DEID_WEB_WORKERS": "1",
            "DEID_WORKER_CONCURRENCY": "1",
            "DJANGO_SETTINGS_MODULE": "evalsite.settings",
        }
        env_file = tmp_path / "production.env"
        env_file.write_text("".join(f"{name}={value}\n" for name, value in values.items()))
        venv = Path(sys.executable).parent.parent
        # -o: the venv is current (make test installed it); never reinstall from a test.
        server = Server(
            [
                "make",
                "--no-print-directory",
                "-o",
                f"{venv}/.installed",
                f"VENV={venv}",
                "serve",
                f"ENV_FILE={env_file}",
            ],
            dict(__import__("os").environ),
            tmp_path / "serve.log",
        )
        try:
            wait_for_port(port, server, timeout=120)
            status, _, css = fetch(f"http://127.0.0.1:{port}", "GET", "/static/admin/css/base.css")
            assert status == 200 and css == (ADMIN_STATIC / "admin/css/base.css").read_bytes()
            deadline = time.monotonic() + 90
            while "celery@" not in server.output() or " ready." not in server.output():
                assert time.monotonic() < deadline, server.output()
                time.sleep(0.5)
            log = server.output()
            assert "web.1 started" in log and "worker.1 started" in log
            broker_db = broker_url.rsplit("/", 1)[-1]  # the worker's banner masks the URL but not the db
            assert re.search(rf"worker\.1 .*Connected to redis://.*127\.0\.0\.1:6379/{broker_db}\n", log)
            assert "concurrency: 1 (prefork)" in log  # DEID_WORKER_CONCURRENCY
            assert (tmp_path / "var" / "static" / "admin" / "css" / "base.css").is_file()
        finally:
            server.stop()
