"""Django start-up imports none of the heavy science libraries.

Every process that sets up Django (``manage.py`` commands, gunicorn and Celery workers, the
servers the tests start) paid ~1.4 CPU s to import scikit-learn, SciPy, pandas, scikit-image
and statsmodels it may never use (of ~3.2 s to start). They are imported where they are
used: the science's functions, the report builders, the run services. matplotlib, PyTorch
and MediaPipe were imported lazily already (``tests/fairness/test_plots.py``).
"""

from tests.fresh_process import run_fresh

#: Packages a fresh process must not have imported once Django is set up.
HEAVY = (
    "matplotlib",
    "mediapipe",
    "pandas",
    "scipy",  # scipy.stats, scipy.optimize, scipy.ndimage, scipy.spatial, scipy.fft
    "skimage",
    "sklearn",
    "statsmodels",
    "torch",
)

#: Start-up, the URLconf (every view module), the admin, then every other module of the
#: Django apps but their management commands (loaded only to run one) and migrations.
CODE = f"""
import importlib, pkgutil, sys
import django
django.setup()
from django.urls import get_resolver
get_resolver().url_patterns
from django.contrib import admin
admin.autodiscover()
print(sorted(p for p in {HEAVY!r} if p in sys.modules))
for package in ("evalsite", "automated.django_app", "trials", "fairness.django_app"):
    for module in pkgutil.walk_packages(importlib.import_module(package).__path__, package + "."):
        if ".migrations" not in module.name and ".management" not in module.name:
            importlib.import_module(module.name)
print(sorted(p for p in {HEAVY!r} if p in sys.modules))
from automated.intervals import student_t_interval
student_t_interval([1.0, 2.0, 4.0])
from trials.scoring import wilson_interval
wilson_interval(3, 4)
print(sorted(p for p in ("scipy", "statsmodels", "pandas") if p in sys.modules))
"""


def test_django_starts_without_the_heavy_science_libraries():
    """A fresh process sets up Django, loads the URLconf, the admin and every module of the
    apps without importing any of ``HEAVY``; calling the science then imports what it uses
    (the check sees imports: it is not blind)."""
    after_start, after_every_module, after_use = run_fresh(CODE).strip().splitlines()
    assert after_start == "[]"
    assert after_every_module == "[]"
    assert after_use == "['pandas', 'scipy', 'statsmodels']"
