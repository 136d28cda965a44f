"""REST renderers shared by the catalogue's and the portal's API views: JSON, or CSV text with ``?format=csv``."""

from __future__ import annotations

import json

from rest_framework import renderers


class CSVTextRenderer(renderers.BaseRenderer):
    """Pass CSV text through (``?format=csv``); other data (errors) as JSON text."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return data if isinstance(data, str) else json.dumps(data)


#: Renderers of every report endpoint: JSON by default, CSV text with ``?format=csv``.
REPORT_RENDERERS = [renderers.JSONRenderer, CSVTextRenderer]


def wants_csv(request) -> bool:
    """True if the request's chosen renderer is CSV (``?format=csv`` or ``Accept: text/csv``)."""
    return getattr(request.accepted_renderer, "format", "") == "csv"
