"""Real servers for the operations tests: PostgreSQL, Redis, gunicorn and Celery workers.

PostgreSQL and Redis are the machine's own servers on loopback (`.ci/run` installs and
starts them; see docs/campaign.md). gunicorn and Celery are started here as
child processes of the test, with the environment a real deployment uses
(``DATABASE_URL``, ``CELERY_BROKER_URL``, ``DEID_VAR_DIR``...). Each helper skips the
calling test with a printed reason when its server is absent; nothing here is a mock.

Environment:

- ``DEID_TEST_POSTGRES_URL``: an account that may create databases
  (default ``postgres://deid:deid@127.0.0.1:5432/postgres``).
- ``DEID_TEST_REDIS_URL``: a Redis server (default ``redis://127.0.0.1:6379``); each
  use claims a database number of its own (1-15, claims kept in database 0) and flushes it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import urlparse, urlunparse

import pytest

ROOT = Path(__file__).resolve().parents[2]
POSTGRES_URL = os.environ.get("DEID_TEST_POSTGRES_URL", "postgres://deid:deid@127.0.0.1:5432/postgres")
REDIS_URL = os.environ.get("DEID_TEST_REDIS_URL", "redis://127.0.0.1:6379")


def _skip(reason: str):
    """Skip a test whose server is missing; fail instead where the run promised them
    (``DEID_REQUIRE_SERVICES=1``, set by ``.ci/run``), so CI never passes without them."""
    if os.environ.get("DEID_REQUIRE_SERVICES") == "1":
        pytest.fail(f"{reason} (DEID_REQUIRE_SERVICES=1: .ci/run starts it)")
    print(f"SKIP: {reason}", file=sys.stderr)
    pytest.skip(reason)


def free_port() -> int:
    """An unused TCP port on loopback."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _with_db(url: str, name: str) -> str:
    parsed = urlparse(url)
    return urlunparse(parsed._replace(path="/" + name))


def postgres_available() -> str | None:
    """None when PostgreSQL answers at ``DEID_TEST_POSTGRES_URL``, else the reason."""
    try:
        import psycopg
    except ImportError as exc:  # pragma: no cover - psycopg is a dependency
        return f"psycopg not installed: {exc}"
    try:
        psycopg.connect(POSTGRES_URL, connect_timeout=3).close()
    except Exception as exc:
        return f"no PostgreSQL at {POSTGRES_URL} ({exc.__class__.__name__}: {str(exc).strip()[:120]})"
    return None


def _migrations_digest() -> str:
    """A digest of every migration file: a template made from other migrations is stale."""
    digest = hashlib.sha256()
    for path in sorted(ROOT.glob("*/migrations/*.py")):
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _migrated_template() -> str:
    """The name of a PostgreSQL database migrated once for all tests of these migrations.

    ``CREATE DATABASE ... TEMPLATE`` copies it in about a second instead of running every
    migration again (17 s wall, 8 CPU s on the 2-core machine). Made under an advisory lock,
    so parallel test workers make it once. Templates of other migrations stay (other
    checkouts may use them): ``DROP DATABASE`` them by hand when unwanted.
    """
    import psycopg

    name = f"deid_template_{_migrations_digest()}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(774201)")
        try:
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
                building = f"{name}_building"
                conn.execute(f'DROP DATABASE IF EXISTS "{building}"')  # a killed run's half
                conn.execute(f'CREATE DATABASE "{building}"')
                manage(
                    "migrate",
                    "--noinput",
                    env={"DATABASE_URL": _with_db(POSTGRES_URL, building)},
                    timeout=600,
                )
                conn.execute(f'ALTER DATABASE "{building}" RENAME TO "{name}"')
        finally:
            conn.execute("SELECT pg_advisory_unlock(774201)")
    return name


@contextlib.contextmanager
def postgres_database(migrate: bool = True):
    """A fresh, migrated PostgreSQL database for one test; yields its ``DATABASE_URL``.

    Dropped afterwards (connections terminated first). Skips when no server answers.
    """
    reason = postgres_available()
    if reason:
        _skip(reason)
    import psycopg

    name = f"deid_test_{uuid.uuid4().hex[:10]}"
    template = f' TEMPLATE "{_migrated_template()}"' if migrate else ""
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"{template}')
    url = _with_db(POSTGRES_URL, name)
    try:
        yield url
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')


def redis_available() -> str | None:
    """None when Redis answers at ``DEID_TEST_REDIS_URL``, else the reason."""
    import redis

    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3).ping()
    except Exception as exc:
        return f"no Redis at {REDIS_URL} ({exc.__class__.__name__}: {exc})"
    return None


#: Redis database numbers the tests' brokers use; database 0 holds the claims on them.
REDIS_TEST_DATABASES = range(1, 16)
#: Seconds a claim lasts if its test process dies without releasing it.
REDIS_CLAIM_TTL_S = 3600


def _claim_redis_database(client, token: str, wait_s: float = 300) -> int:
    """Claim a free Redis database number for this test (``SET NX`` of a key in database 0).

    The claim is atomic on the server, so two pytest-xdist workers, or two test runs of
    different checkouts on one machine, never share a broker database. Waits up to
    ``wait_s`` seconds when all are taken, then raises ``RuntimeError``.
    """
    deadline = time.monotonic() + wait_s
    while True:
        for number in REDIS_TEST_DATABASES:
            if client.set(f"deid-tests:broker-db:{number}", token, nx=True, ex=REDIS_CLAIM_TTL_S):
                return number
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"all Redis test databases {REDIS_TEST_DATABASES.start}-{REDIS_TEST_DATABASES.stop - 1} "
                f"at {REDIS_URL} stayed claimed for {wait_s} s (keys deid-tests:broker-db:* in database 0)"
            )
        time.sleep(1)


@contextlib.contextmanager
def redis_broker():
    """A flushed Redis database of its own (one of 1-15, claimed); yields its URL.

    The number is claimed in database 0 for the duration (see ``_claim_redis_database``)
    and released afterwards.
    """
    reason = redis_available()
    if reason:
        _skip(reason)
    import redis

    base = REDIS_URL.rstrip("/")
    claims = redis.Redis.from_url(f"{base}/0")
    token = f"{os.getpid()}-{uuid.uuid4().hex}"
    number = _claim_redis_database(claims, token)
    url = f"{base}/{number}"
    client = redis.Redis.from_url(url)
    client.flushdb()
    try:
        yield url
    finally:
        client.flushdb()
        key = f"deid-tests:broker-db:{number}"
        if claims.get(key) == token.encode():
            claims.delete(key)


def base_env(**extra: str) -> dict[str, str]:
    """The environment of a server child process: this one's, plus ``extra``."""
    env = dict(os.environ)
    env.setdefault("DEID_SECRET_KEY", "ops-test-" + uuid.uuid4().hex)
    env.update({k: str(v) for k, v in extra.items()})
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def manage(*args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``manage.py ARGS`` in a child process with ``env`` added; raise on failure."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        cwd=ROOT,
        env=base_env(**(env or {})),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if proc.returncode:
        raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


_COMMANDS = (
    "import io, json; from django.core.management import call_command; outputs = []\n"
    "for args in json.loads({commands!r}):\n"
    "    out = io.StringIO(); call_command(*args, stdout=out); outputs.append(out.getvalue())\n"
    "print('\\nOUTPUTS', json.dumps(outputs))"
)


def manage_commands(*commands: list[str], env: dict | None = None, timeout: float = 600) -> list[str]:
    """Run management ``commands`` (each a list of ``manage.py`` arguments) one after the other
    in a single child process (``call_command``, which parses the arguments as the command
    line does); return what each wrote to its stdout. Raise on the first failure.

    For commands that follow one another (set-up steps, or commands a test runs in a row):
    every ``manage.py`` process costs 3-4 CPU s to start Django before it does anything
    (``django.setup`` alone 2.6-3.0 CPU s, measured on the 2-core machine), so three
    commands in one process save two of those. The commands' own code is the same; what
    is not run is ``manage.py``'s ``execute_from_command_line`` per command.
    """
    proc = manage("shell", "-c", _COMMANDS.format(commands=json.dumps(commands)), env=env, timeout=timeout)
    return json.loads(proc.stdout.rsplit("\nOUTPUTS ", 1)[1])


class Server:
    """A child server process; ``stop()`` ends its whole process group."""

    def __init__(self, args: list[str], env: dict, log: Path):
        self.log = log
        self._log_file = open(log, "wb")
        self.proc = subprocess.Popen(
            args,
            cwd=ROOT,
            env=env,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to the whole process group (a SIGKILL leaves no cleanup)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, sig)

    def stop(self, timeout: float = 20) -> None:
        if self.proc.poll() is None:
            self.kill(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill(signal.SIGKILL)
                self.proc.wait(10)
        self._log_file.close()


def wait_for_port(port: int, server: Server, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            raise RuntimeError(f"server exited ({server.proc.returncode}):\n{server.output()}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.2)
    raise RuntimeError(f"nothing listened on port {port} within {timeout} s:\n{server.output()}")


@contextlib.contextmanager
def gunicorn(env: dict, tmp_path: Path, workers: int = 4, threads: int = 4, extra_args: tuple = ()):
    """gunicorn serving ``evalsite.wsgi`` on a free loopback port; yields its base URL.

    ``env`` is added to the child's environment (``DATABASE_URL``, ``DEID_VAR_DIR``...).
    ``extra_args`` go before the fixed ones, e.g. ``("-c", "python:evalsite.gunicorn_conf")``
    for the production configuration (the port, workers and threads here still win).
    """
    port = free_port()
    args = [
        sys.executable,
        "-m",
        "gunicorn",
        *extra_args,
        "evalsite.wsgi:application",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        "--threads",
        str(threads),
        "--worker-class",
        "gthread",
        "--timeout",
        "120",
        "--graceful-timeout",
        "5",
    ]
    server = Server(args, base_env(**env), tmp_path / f"gunicorn-{port}.log")
    try:
        wait_for_port(port, server)
        yield f"http://127.0.0.1:{port}", server
    finally:
        server.stop()


@contextlib.contextmanager
def celery_worker(
    env: dict, tmp_path: Path, name: str = "w1", concurrency: int = 1, queues: str | None = None
):
    """A real Celery worker process (``celery -A evalsite worker``); yields the ``Server``.

    ``env`` must carry ``CELERY_BROKER_URL`` and ``DATABASE_URL``. Returns once the
    worker reports ready on the broker (``celery inspect ping``).
    """
    args = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "evalsite",
        "worker",
        "--loglevel",
        "INFO",
        "--hostname",
        f"{name}@%h",
        "--concurrency",
        str(concurrency),
        "--pool",
        "prefork",
        "--without-gossip",
        "--without-mingle",
    ]
    if queues:
        args += ["--queues", queues]
    full_env = base_env(**env)
    server = Server(args, full_env, tmp_path / f"celery-{name}.log")
    try:
        deadline = time.monotonic() + 90
        while "ready." not in server.output():
            if server.proc.poll() is not None:
                raise RuntimeError(f"celery worker exited:\n{server.output()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"celery worker not ready in 90 s:\n{server.output()}")
            time.sleep(0.3)
        yield server
    finally:
        server.stop()
