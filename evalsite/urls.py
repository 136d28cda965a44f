"""URL routes. Each app owns its own ``urls.py``; this file only mounts them."""
from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("evalsite.api_urls")),
    path("staff/", include("evalsite.staff_urls")),
    path("organizer/fairness/", include("fairness.urls")),
    path("", include("trials.urls")),
]
