"""A pool worker's libraries run ``threads`` threads each, also those loaded after its start.

``pool_worker.init_worker`` bounds OpenBLAS and OpenMP with ``threadpool_limits``, which
reaches only the libraries loaded at that moment. Django's start-up no longer loads SciPy or
scikit-learn (``tests/evalsite/test_startup_imports.py``): an attack fold loads them later,
and without a bound each worker of the pool ran SciPy's OpenBLAS and scikit-learn's OpenMP
on every core.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

CODE = """
import json
from automated.django_app.pool_worker import init_worker
init_worker({}, 1)
import scipy.linalg, sklearn.decomposition, sklearn.neighbors, sklearn.svm  # an attack fold's
from threadpoolctl import threadpool_info
print(json.dumps(sorted({(i["internal_api"], i["num_threads"]) for i in threadpool_info()})))
"""


def test_libraries_loaded_after_a_pool_worker_started_are_bounded_too():
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    result = subprocess.run(
        [sys.executable, "-c", CODE],
        cwd=Path(__file__).resolve().parents[3],
        env={**env, "DJANGO_SETTINGS_MODULE": "tests.settings", "PYTEST_XDIST_WORKER": ""},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    libraries = json.loads(result.stdout.strip().splitlines()[-1])
    assert {api for api, _ in libraries} >= {"openblas", "openmp"}
    assert {threads for _, threads in libraries} == {1}
