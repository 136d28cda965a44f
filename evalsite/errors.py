"""Error responses (``handler400`` ... ``handler500`` in evalsite/portal/urls.py, CSRF_FAILURE_VIEW).

Browsers get the plain pages ``templates/400.html`` ... ``500.html``; the REST API and
the rater pages' JSON requests get a short JSON body the client can show. Neither names a
setting, a path, a URL pattern or the exception (DEBUG is off outside development).
"""

from django.http import JsonResponse
from django.views import csrf, defaults

API_PREFIX = "/api/"  # where evalsite/portal/urls.py mounts the REST API

MESSAGES = {400: "bad request", 403: "forbidden", 404: "not found", 500: "server error"}


def _json_error(request, status: int) -> JsonResponse | None:
    """The JSON answer for a JSON client (DRF's ``detail`` key under the API), else None."""
    if request.path.startswith(API_PREFIX):
        return JsonResponse({"detail": MESSAGES[status]}, status=status)
    wants_json = request.content_type == "application/json" or "application/json" in request.headers.get(
        "Accept", ""
    )
    return JsonResponse({"error": MESSAGES[status]}, status=status) if wants_json else None


def bad_request(request, exception):
    return _json_error(request, 400) or defaults.bad_request(request, exception)


def permission_denied(request, exception):
    return _json_error(request, 403) or defaults.permission_denied(request, exception)


def page_not_found(request, exception):
    return _json_error(request, 404) or defaults.page_not_found(request, exception)


def server_error(request):
    return _json_error(request, 500) or defaults.server_error(request)


def csrf_failure(request, reason=""):
    """A failed CSRF check: JSON for the rater page's answer POST (it shows the message)."""
    if _json_error(request, 403) is None:
        return csrf.csrf_failure(request, reason)  # plain page; the reason only with DEBUG on
    return JsonResponse({"error": "security check failed: reload the page and answer again"}, status=403)
