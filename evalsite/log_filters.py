"""Logging filters of the site's ``LOGGING`` (evalsite/settings.py)."""

import logging


class WithoutTraceback(logging.Filter):
    """Keep a record's message and drop its traceback: one line per event.

    For ``django.security.DisallowedHost``: every request with a Host header outside
    ``DEID_ALLOWED_HOSTS`` (scanners, a wrong proxy name) is an expected, client-side
    event whose traceback says nothing; Django logs it as an error with the exception
    attached, a full traceback per request.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info = None
        record.exc_text = None
        return True
