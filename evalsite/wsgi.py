"""WSGI entry point (refuses to start without a secret key: evalsite.secret_key)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
application = get_wsgi_application()

from evalsite.secret_key import require_secret_key  # noqa: E402 (the settings are loaded now)

require_secret_key()
