"""gunicorn configuration for deid-eval (``gunicorn -c python:evalsite.gunicorn_conf``).

Used by the Procfile (``make serve``) and ``make demo``. Threads (``gthread``) let a
worker keep serving while others wait on the database or stream a video; the numbers come
from the environment, ``DEID_WEB_BIND``, ``DEID_WEB_WORKERS``, ``DEID_WEB_THREADS``,
``DEID_WEB_CONNECTIONS`` and ``DEID_WEB_TIMEOUT`` (declared with their defaults in evalsite/conf.py; the docs'
configuration page lists them).
"""

from evalsite.conf import value

bind = value("DEID_WEB_BIND")
workers = value("DEID_WEB_WORKERS")
threads = value("DEID_WEB_THREADS")
# Above its threads (else no keep-alive connection is kept); see DEID_WEB_CONNECTIONS.
worker_connections = max(value("DEID_WEB_CONNECTIONS"), threads + 1)
worker_class = "gthread"
timeout = value("DEID_WEB_TIMEOUT")
graceful_timeout = 30
keepalive = 5
# No gunicornc control socket: its default path is one per user, so a second site (or the
# demo beside a test server) would take over the first one's.
control_socket_disable = True
accesslog = "-"  # access log on stdout, errors on stderr (honcho/systemd collect both)
errorlog = "-"
