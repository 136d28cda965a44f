"""Django's development server (what ``manage.py runserver`` serves with) logging server times.

``python -m benchmarks.timed_devserver PORT`` serves ``settings.WSGI_APPLICATION`` on
loopback with runserver's own threaded ``WSGIServer`` and request handler
(``django.core.servers.basehttp.run``), and prints one line per request in the format
of the gunicorn access log the benchmark reads (``access STATUS METHOD PATH
MICROSECONDS``): from the start of the Django call to the last byte handed to the
server, like gunicorn's ``%(D)s``. runserver itself logs no times.
"""

import os
import sys
import threading
import time

_print_lock = threading.Lock()


class _Timed:
    """WSGI middleware: time each request until its response iterable is closed."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        started = time.perf_counter()
        status = []

        def record_status(value, headers, exc_info=None):
            status.append(value.split()[0])
            return start_response(value, headers, exc_info)

        result = self.app(environ, record_status)
        return _Closing(result, lambda: self._log(environ, status, started))

    @staticmethod
    def _log(environ, status, started):
        micros = int((time.perf_counter() - started) * 1e6)
        with _print_lock:
            print(
                f"access {status[0] if status else '000'} {environ['REQUEST_METHOD']} "
                f"{environ.get('PATH_INFO', '')} {micros}",
                flush=True,
            )


class _Closing:
    def __init__(self, result, on_close):
        self.result, self.on_close = result, on_close

    def __iter__(self):
        return iter(self.result)

    def close(self):
        try:
            if hasattr(self.result, "close"):
                self.result.close()
        finally:
            self.on_close()


def main(port: int) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
    import django

    django.setup()
    from django.core.servers.basehttp import get_internal_wsgi_application, run

    run("127.0.0.1", port, _Timed(get_internal_wsgi_application()), threading=True)


if __name__ == "__main__":
    main(int(sys.argv[1]))
