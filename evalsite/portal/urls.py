"""URL routes. Each app owns its own ``urls.py``; this file only mounts them."""

from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("evalsite.portal.api_urls")),
    path("staff/", include("evalsite.staff_urls")),
    path("team/", include("evalsite.portal.team_urls")),
    path("organizer/fairness/", include("fairness.django_app.urls")),
    path("organizer/automated/", include("automated.django_app.urls")),
    path("organizer/", include("evalsite.portal.leaderboard_urls")),
    # The site root (and the admin's "View site") lands on the organizer pages.
    path("", RedirectView.as_view(pattern_name="trials:organizer"), name="home"),
    path("", include("trials.urls")),
]

# With DEBUG off: plain pages (or JSON for API/JSON clients), never settings or patterns.
handler400 = "evalsite.errors.bad_request"
handler403 = "evalsite.errors.permission_denied"
handler404 = "evalsite.errors.page_not_found"
handler500 = "evalsite.errors.server_error"
