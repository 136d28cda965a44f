"""Python code run in a fresh process of the project with the test settings (what a new
``manage.py`` command, gunicorn or Celery worker imports when it starts)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_fresh(code: str, timeout: float = 120) -> str:
    """Standard output of ``python -c code`` in a new process (cwd: the repository); fails the
    test with the end of its standard error if it exits with an error."""
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout
