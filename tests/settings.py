"""Settings for the test run: the project's own settings plus a throwaway secret key.

With ``DEID_DEBUG`` off (the default) the site refuses to start without a secret key;
the test run makes one up. It goes into ``os.environ`` so the servers and commands the
tests start as child processes (gunicorn, Celery workers, ``manage.py``) share it.
"""

import os
import secrets

os.environ.setdefault("DEID_SECRET_KEY", "tests-only-" + secrets.token_urlsafe(40))

from evalsite.settings import *  # noqa: E402,F403

# Tests run without `collectstatic`; an existing (empty) STATIC_ROOT keeps WhiteNoise from
# warning "No directory at" on every test request. The served files are tested against
# a collected folder under gunicorn (tests/evalsite/test_deploy_settings.py).
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # noqa: F405

# The real-worker test of the redelivery limit (tests/ops/test_celery_runs.py) starts one
# worker with this set: that worker dies (SIGKILL) in every face unit of the masked video.
if os.environ.get("DEID_TEST_KILL_ON_VIDEO"):
    import tests.ops.poison  # noqa: E402,F401
