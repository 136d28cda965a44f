"""Staff-only, permission-checked media URLs (mounted under /staff/)."""

from django.urls import path

from . import views

app_name = "evalsite_staff"
urlpatterns = [
    path("gallery/<str:token>/", views.gallery_image, name="gallery_image"),
    path("source/<str:token>/", views.source_video, name="source_video"),
    path("masked/<str:token>/", views.masked_video, name="masked_video"),
]
