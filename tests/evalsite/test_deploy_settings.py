"""Settings from the environment, the documented production environment, and plain errors.

The production environment is read from the example ``.env`` block of docs/campaign.md
("Running a campaign") exactly as
``make serve`` reads it (honcho's parser), so the documented variables are what is tested.
Settings are loaded in child processes: each deployment variant is a fresh interpreter.
"""

import json
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import RequestFactory
from honcho.environ import parse as parse_env_file

from evalsite.errors import server_error

ROOT = Path(__file__).resolve().parents[2]
CAMPAIGN_PAGE = (ROOT / "docs" / "campaign.md").read_text(encoding="utf-8")
SETTING_NAME = re.compile(r"\b(?:DEID|TRIALS|FAIRNESS)_[A-Z0-9_]+\b")
KEY = "k3y-" + "x1y2z3" * 10  # 64 characters, 10+ distinct: a strong key for check --deploy


def documented_production_env(tmp_path: Path) -> dict[str, str]:
    """The documented example ``.env``, with a key pasted in and the folders under ``tmp_path``."""
    block = re.search(r"```sh\n\s*# \.env: production environment.*?```", CAMPAIGN_PAGE, re.S)
    assert block, "docs/campaign.md lost its example .env block"
    lines = [line.strip() for line in block.group(0).splitlines()[1:-1]]
    values = parse_env_file("\n".join(lines))
    assert "DEID_SECRET_KEY" not in values  # left blank: each site makes its own
    return {**values, "DEID_SECRET_KEY": KEY, "DEID_VAR_DIR": str(tmp_path / "var")}


def run_python(code: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    """``python -c code`` (or ``manage.py args``) with only ``env`` on top of a clean environment."""
    base = {
        k: v
        for k, v in __import__("os").environ.items()
        if not k.startswith(("DEID_", "TRIALS_", "FAIRNESS_", "CELERY_", "DATABASE_URL", "DJANGO_"))
    }
    command = [sys.executable, str(ROOT / "manage.py"), *args] if args else [sys.executable, "-c", code]
    return subprocess.run(
        command,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**base, "DJANGO_SETTINGS_MODULE": "evalsite.settings", **env},
    )


SHOW = """
import json
from django.conf import settings
names = ["DEBUG", "ALLOWED_HOSTS", "CSRF_TRUSTED_ORIGINS", "SECURE_PROXY_SSL_HEADER", "SECURE_SSL_REDIRECT",
         "SECURE_HSTS_SECONDS", "SECURE_HSTS_INCLUDE_SUBDOMAINS", "SECURE_HSTS_PRELOAD",
         "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "MEDIA_ROOT", "STATIC_ROOT", "TRIALS_PER_SESSION",
         "FAIRNESS_SCORE_COLUMNS"]
values = {name: getattr(settings, name) for name in names}
values["DATABASE"] = {k: settings.DATABASES["default"].get(k) for k in ("ENGINE", "NAME", "HOST", "CONN_MAX_AGE")}
print(json.dumps(values, default=str))
"""


def test_documented_production_environment_passes_check_deploy(tmp_path):
    done = run_python("", documented_production_env(tmp_path), "check", "--deploy", "--fail-level", "WARNING")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "System check identified no issues (0 silenced)."
    assert "WARNING" not in done.stderr


def test_without_the_https_variables_check_deploy_names_each_missing_one(tmp_path):
    env = {"DEID_SECRET_KEY": KEY, "DEID_VAR_DIR": str(tmp_path / "var")}
    done = run_python("", env, "check", "--deploy")
    found = set(re.findall(r"\(security\.(W\d+)\)", done.stderr + done.stdout))
    # HSTS, SSL redirect, session cookie, CSRF cookie: what the documented variables set.
    assert found == {"W004", "W008", "W012", "W016"}


def test_documented_environment_becomes_these_settings(tmp_path):
    env = documented_production_env(tmp_path)
    values = json.loads(run_python(SHOW, env).stdout)
    assert values["DEBUG"] is False
    assert values["ALLOWED_HOSTS"] == ["eval.example.org"]
    assert values["CSRF_TRUSTED_ORIGINS"] == ["https://eval.example.org"]
    assert values["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert values["SECURE_SSL_REDIRECT"] is True
    assert (
        values["SECURE_HSTS_SECONDS"],
        values["SECURE_HSTS_INCLUDE_SUBDOMAINS"],
        values["SECURE_HSTS_PRELOAD"],
    ) == (31536000, True, True)
    assert values["SESSION_COOKIE_SECURE"] is values["CSRF_COOKIE_SECURE"] is True  # follow the redirect
    assert values["DATABASE"] == {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "deid",
        "HOST": "127.0.0.1",
        "CONN_MAX_AGE": 60,
    }
    assert values["MEDIA_ROOT"] == str(tmp_path / "var" / "media")
    assert values["STATIC_ROOT"] == str(tmp_path / "var" / "static")


def test_defaults_are_debug_off_loopback_http_sqlite(tmp_path):
    values = json.loads(run_python(SHOW, {"DEID_SECRET_KEY": KEY, "DEID_VAR_DIR": str(tmp_path)}).stdout)
    assert values["DEBUG"] is False
    assert values["ALLOWED_HOSTS"] == ["127.0.0.1", "localhost", "testserver"]
    assert values["SECURE_PROXY_SSL_HEADER"] is None and values["SESSION_COOKIE_SECURE"] is False
    assert values["DATABASE"]["ENGINE"] == "django.db.backends.sqlite3"
    assert values["DATABASE"]["NAME"] == str(tmp_path / "db.sqlite3")
    assert values["TRIALS_PER_SESSION"] == 20 and values["FAIRNESS_SCORE_COLUMNS"] is None


def test_app_settings_and_a_custom_proxy_header_come_from_the_environment(tmp_path):
    columns = [{"column": "face_match_rate", "favourable": "lower", "mdg_step": 0.05, "description": "d"}]
    env = {
        "DEID_SECRET_KEY": KEY,
        "DEID_VAR_DIR": str(tmp_path),
        "TRIALS_PER_SESSION": "12",
        "FAIRNESS_SCORE_COLUMNS": json.dumps(columns),
        "DEID_SECURE_PROXY_SSL_HEADER": "X-Forwarded-Ssl=on",
        "DEID_SECURE_SSL_REDIRECT": "1",
        "DEID_SESSION_COOKIE_SECURE": "0",
    }
    values = json.loads(run_python(SHOW, env).stdout)
    assert values["TRIALS_PER_SESSION"] == 12 and values["FAIRNESS_SCORE_COLUMNS"] == columns
    assert values["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_SSL", "on"]
    assert values["SESSION_COOKIE_SECURE"] is False and values["CSRF_COOKIE_SECURE"] is True


@pytest.mark.parametrize(
    "name, value, message",
    [
        (
            "DEID_SECURE_HSTS_SECONDS",
            "one year",
            "DEID_SECURE_HSTS_SECONDS='one year': must be a whole number",
        ),
        ("DEID_SECURE_SSL_REDIRECT", "maybe", "DEID_SECURE_SSL_REDIRECT='maybe': use 1 or 0"),
        ("TRIALS_PER_SESSION", "0", "TRIALS_PER_SESSION=0: must be at least 1"),
        ("FAIRNESS_SCORE_COLUMNS", "[{", "FAIRNESS_SCORE_COLUMNS: not valid JSON"),
        ("DATABASE_URL", "mysql://db/x", "DATABASE_URL scheme must be sqlite or postgres, got 'mysql'"),
    ],
)
def test_a_value_that_does_not_parse_stops_start_up_naming_the_variable(tmp_path, name, value, message):
    done = run_python("", {"DEID_SECRET_KEY": KEY, "DEID_VAR_DIR": str(tmp_path), name: value}, "check")
    assert done.returncode == 1 and message in done.stderr


def test_without_a_secret_key_the_site_refuses_until_one_is_stored(tmp_path):
    env = {"DEID_VAR_DIR": str(tmp_path / "var")}
    refused = run_python("", env, "check")
    assert refused.returncode == 1
    assert "No secret key. Production: set DEID_SECRET_KEY" in refused.stderr
    key_file = tmp_path / "var" / "secret_key"
    assert f"python -m evalsite.secret_key {key_file}" in refused.stderr

    # What make demo does first; a second run keeps the key (sessions survive restarts).
    for expected in ("new secret key written", "secret key kept"):
        made = subprocess.run(
            [sys.executable, "-m", "evalsite.secret_key", str(key_file)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert made.stdout.strip() == f"{key_file}: {expected}"
        if expected.startswith("new"):
            first_key = key_file.read_text()
    assert key_file.read_text() == first_key and len(first_key.strip()) == 50
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert run_python("", env, "check").returncode == 0
    # DEID_DEBUG=1 alone also starts (development), with a key check --deploy rejects.
    debug = run_python("", {"DEID_VAR_DIR": str(tmp_path / "other"), "DEID_DEBUG": "1"}, "check", "--deploy")
    assert "(security.W009)" in debug.stderr and "(security.W018)" in debug.stderr


def test_every_setting_read_anywhere_is_declared_and_documented():
    """Every variable named anywhere is declared in evalsite/conf.py, whose declarations the
    docs' configuration page is generated from; settings.py reads none of them directly."""
    from evalsite import conf

    settings_text = (ROOT / "evalsite" / "settings.py").read_text()
    assert "os.environ" not in settings_text and "env." not in settings_text  # only through conf
    read = set(re.findall(r'value\("([A-Z0-9_]+)"\)', settings_text))
    assert {
        "DEID_SECRET_KEY",
        "DEID_SECURE_PROXY_SSL_HEADER",
        "TRIALS_PER_SESSION",
        "FAIRNESS_SCORE_COLUMNS",
        "DATABASE_URL",
    } <= read  # the pattern still finds them
    used = set()
    packages = ("evalsite", "trials", "automated", "fairness", "benchmarks", "tests")
    paths = [path for package in packages for path in (ROOT / package).rglob("*.py")]
    for path in [*paths, ROOT / "Makefile", ROOT / "Procfile", ROOT / ".ci" / "run"]:
        used |= set(SETTING_NAME.findall(path.read_text(errors="replace")))
    page = conf.markdown()
    documented = set(re.findall(r"^\| `([A-Z0-9_]+)` \|", page, re.M))
    assert documented == set(conf.DECLARED)
    missing = sorted((read | used) - documented)
    assert not missing, f"declare these in evalsite/conf.py SETTINGS: {missing}"
    # Each declared Django setting is what settings.py made of it.
    from django.conf import settings

    for setting in conf.SETTINGS:
        if setting.setting and setting.env in read and setting.env != "DEID_SECRET_KEY":
            assert hasattr(settings, setting.setting), setting


def test_declared_defaults_are_the_settings_without_environment(tmp_path):
    """The defaults of evalsite/conf.py, as the generated page shows them, are what a
    site without any of the variables runs with."""
    code = (
        "import json; from django.conf import settings; print(json.dumps({n: getattr(settings, n) for n in "
        "['TRIALS_PER_SESSION', 'TRIALS_CLAIM_TIMEOUT_S', 'DEID_UPLOAD_MAX_ZIP_ENTRIES', "
        "'CELERY_TASK_SOFT_TIME_LIMIT', 'SESSION_COOKIE_SECURE', 'CELERY_BROKER_TRANSPORT_OPTIONS']}))"
    )
    values = json.loads(run_python(code, {"DEID_SECRET_KEY": KEY, "DEID_VAR_DIR": str(tmp_path)}).stdout)
    assert values["TRIALS_PER_SESSION"] == 20 and values["TRIALS_CLAIM_TIMEOUT_S"] == 180
    assert values["DEID_UPLOAD_MAX_ZIP_ENTRIES"] == 2000 and values["CELERY_TASK_SOFT_TIME_LIMIT"] == 3600
    assert values["SESSION_COOKIE_SECURE"] is False
    assert values["CELERY_BROKER_TRANSPORT_OPTIONS"]["visibility_timeout"] == 3600 + 60 + 300
    # A computed default follows the variable it is computed from.
    env = {"DEID_SECRET_KEY": KEY, "DEID_VAR_DIR": str(tmp_path), "DEID_TASK_TIME_LIMIT_S": "100"}
    values = json.loads(run_python(code, env).stdout)
    assert values["CELERY_BROKER_TRANSPORT_OPTIONS"]["visibility_timeout"] == 460


# --- with DEBUG off (the test settings, like production): plain errors ---------------


def test_unknown_url_is_a_plain_404_without_url_patterns(client, db):
    response = client.get("/no-such-page/")
    page = response.content.decode()
    assert response.status_code == 404 and "<h1>Not found</h1>" in page
    for leak in ("URLconf", "admin/", "organizer", "api/", "DEBUG", "Traceback", "/work"):
        assert leak not in page


def test_unknown_api_url_is_a_json_404(client, db):
    response = client.get("/api/no-such-endpoint/")
    assert response.status_code == 404 and response.json() == {"detail": "not found"}


def test_server_error_page_shows_nothing_of_the_server():
    response = server_error(RequestFactory().get("/organizer/"))
    page = response.content.decode()
    assert response.status_code == 500 and "<h1>Server error</h1>" in page
    assert "Traceback" not in page and "settings" not in page.lower()
    json_response = server_error(
        RequestFactory().post("/t/x/respond/", "{}", content_type="application/json")
    )
    assert json_response.status_code == 500 and json.loads(json_response.content) == {"error": "server error"}


def test_disallowed_host_is_a_plain_400(client, db):
    response = client.get("/admin/login/", HTTP_HOST="attacker.example")
    assert response.status_code == 400 and "<h1>Bad request</h1>" in response.content.decode()
    assert "ALLOWED_HOSTS" not in response.content.decode()


def test_a_disallowed_host_is_logged_in_one_line_without_a_traceback(client, db, caplog):
    # before: Django's error record carried the exception, a full traceback per request
    import logging

    with caplog.at_level(logging.ERROR, logger="django.security.DisallowedHost"):
        assert client.get("/", HTTP_HOST="scanner.example").status_code == 400
    (record,) = [r for r in caplog.records if r.name == "django.security.DisallowedHost"]
    assert record.exc_info is None
    assert logging.Formatter("%(levelname)s %(name)s %(message)s").format(record) == (
        "ERROR django.security.DisallowedHost Invalid HTTP_HOST header: 'scanner.example'. "
        "You may need to add 'scanner.example' to ALLOWED_HOSTS."
    )


@pytest.fixture
def staff_client(client, db):
    user = get_user_model().objects.create_user("api-staff", password="pw-12345", is_staff=True)
    client.force_login(user)
    return client


@pytest.mark.parametrize(
    "body, content_type, detail",
    [
        ("[" * 100000, "application/json", "JSON nested deeper than 32 levels"),
        ('{"team": ' + "[" * 500 + "]" * 500 + "}", "application/json", "JSON nested deeper than 32 levels"),
        (b'{"team": "\xff\xfe"}', "application/json", "body is not utf-8 text"),
        ('{"team": NaN}', "application/json", "NaN is not valid JSON"),
        ("{}", "application/json; charset=bz2_codec", 'Unsupported charset "bz2_codec"'),
    ],
)
def test_api_bodies_that_do_not_decode_are_400(staff_client, body, content_type, detail):
    # generic(): the body goes out as these bytes, whatever charset the header names.
    response = staff_client.generic("POST", "/api/submissions/", body, content_type=content_type)
    assert response.status_code == 400, response.content[:300]
    assert detail in response.json()["detail"]


def test_api_body_of_an_unsupported_type_is_415(staff_client):
    response = staff_client.post("/api/submissions/", "team=A", content_type="text/plain")
    assert response.status_code == 415


HELP_EVERY_COMMAND = """
import contextlib, io, sys
from django.core.management import ManagementUtility
for name in sys.argv[1:]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        ManagementUtility(["manage.py", name, "--help"]).execute()
    print(name, out.getvalue().startswith(f"usage: manage.py {name} "))
"""


def test_every_command_prints_its_help_without_a_secret_key_or_configuration(tmp_path):
    # before: settings raised "No secret key" on import, so `manage.py demo --help` on a
    # fresh checkout failed and only Django's own commands were known
    from django.core.management import get_commands

    ours = sorted(
        name
        for name, app in get_commands().items()
        if app.split(".")[0] in ("evalsite", "automated", "fairness", "trials")
    )
    assert {"demo", "import_dataset", "export_report", "evaluate", "compute_face_quality"} <= set(ours)
    var_dir = tmp_path / "var"  # empty: no key file, no database
    done = subprocess.run(
        [sys.executable, "-c", HELP_EVERY_COMMAND, *ours],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={
            **{k: v for k, v in __import__("os").environ.items() if not k.startswith(("DEID_", "DJANGO_"))},
            "DJANGO_SETTINGS_MODULE": "evalsite.settings",
            "DEID_VAR_DIR": str(var_dir),
        },
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [word for name in ours for word in (name, "True")]
    assert not (var_dir / "secret_key").exists() and not (var_dir / "db.sqlite3").exists()
    # every command that runs its checks still refuses without a key, naming the fix
    # (the subprocess of test_without_a_secret_key_the_site_refuses_until_one_is_stored)
    from django.test import override_settings

    from evalsite.secret_key import check_secret_key

    with override_settings(SECRET_KEY_MISSING="No secret key. (the fix)"):
        assert [(e.id, e.msg) for e in check_secret_key()] == [("evalsite.E001", "No secret key. (the fix)")]
    assert check_secret_key() == []  # the tests' settings have a key


def test_running_a_campaign_names_the_models_folder_the_organizer_login_and_keeps_env_private(tmp_path):
    # before: the first face run failed with "classifier weights not found" (no step named
    # the models folder), and nothing said how to make an organizer who is not a superuser
    from django.core.management import get_commands

    assert documented_production_env(tmp_path)["DEID_MODELS_DIR"] == "/srv/shared/models"
    assert "classifier weights not found" in CAMPAIGN_PAGE and "face_classification/" in CAMPAIGN_PAGE
    command = re.search(r"manage\.py (add_organizer) --campaign SLUG alice", CAMPAIGN_PAGE)
    assert command and get_commands()[command.group(1)] == "evalsite"
    ignored = (ROOT / ".gitignore").read_text().splitlines()
    assert ".env" in ignored
