"""REST API (staff only): catalogue, reports and summaries. Views: evalsite/portal/api.py."""

from django.urls import include, path
from rest_framework.routers import DefaultRouter

from evalsite.dictionary_api import DataDictionaryView

from . import api
from .leaderboard_views import ComparisonsAPIView, LeaderboardAPIView

# No '.json' suffix routes: formats are chosen with ?format= (custom actions take no format argument).
router = DefaultRouter()
router.include_format_suffixes = False
router.register("campaigns", api.CampaignViewSet, basename="campaign")
router.register("identities", api.IdentityViewSet, basename="identity")
router.register("gallery-images", api.GalleryImageViewSet, basename="gallery-image")
router.register("source-videos", api.SourceVideoViewSet, basename="source-video")
router.register("submissions", api.SubmissionViewSet, basename="submission")

urlpatterns: list = [
    path("dictionary/", DataDictionaryView.as_view(), name="data-dictionary"),
    path("campaigns/<int:pk>/leaderboard/", LeaderboardAPIView.as_view(), name="campaign-leaderboard"),
    path(
        "campaigns/<int:pk>/leaderboard/comparisons/",
        ComparisonsAPIView.as_view(),
        name="campaign-leaderboard-comparisons",
    ),
    path("", include(router.urls)),
]
