"""gunicorn configuration for deid-eval (``gunicorn -c python:evalsite.gunicorn_conf``).

Used by the Procfile (``make serve``) and ``make demo``. Threads (``gthread``) let a
worker keep serving while others wait on the database or stream a video; the numbers come
from the environment (README, "Configuration"):

- ``DEID_WEB_BIND``: address to listen on (default ``127.0.0.1:8000``: behind a proxy on
  the same machine, or the demo on loopback).
- ``DEID_WEB_WORKERS``: worker processes (default 2 x CPU cores + 1, at most 8).
- ``DEID_WEB_THREADS``: threads per worker (default 4).
- ``DEID_WEB_TIMEOUT``: seconds a silent worker lives before it is restarted (default 120:
  uploads of large zips arrive within one request).
"""

import os

from evalsite import env

bind = env.string("DEID_WEB_BIND", "127.0.0.1:8000")
workers = env.integer("DEID_WEB_WORKERS", min(2 * (os.cpu_count() or 1) + 1, 8), minimum=1)
threads = env.integer("DEID_WEB_THREADS", 4, minimum=1)
worker_class = "gthread"
timeout = env.integer("DEID_WEB_TIMEOUT", 120, minimum=1)
graceful_timeout = 30
keepalive = 5
# No gunicornc control socket: its default path is one per user, so a second site (or the
# demo beside a test server) would take over the first one's.
control_socket_disable = True
accesslog = "-"  # access log on stdout, errors on stderr (honcho/systemd collect both)
errorlog = "-"
