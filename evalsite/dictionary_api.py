"""``GET /api/dictionary/``: the reports' data dictionary (JSON records, or ``?format=csv``).

The dictionary holds no campaign data (column meanings only), so any signed-in user
(organizer or team member) may read it.
"""

from rest_framework import permissions, renderers
from rest_framework.response import Response
from rest_framework.views import APIView

from . import dictionary
from .renderers import CSVTextRenderer


class DataDictionaryView(APIView):
    """Every report column: meaning, unit, range, ideal value, dtype, precision, model, source."""

    permission_classes = [permissions.IsAuthenticated]
    renderer_classes = [renderers.JSONRenderer, CSVTextRenderer]

    def get(self, request):
        if getattr(request.accepted_renderer, "format", "") == "csv":
            return Response(dictionary.as_csv())
        return Response(dictionary.as_records())
