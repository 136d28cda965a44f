"""The organizer's leaderboard pages (mounted under /organizer/). Views: evalsite/portal/leaderboard_views.py."""

from django.urls import path

from . import leaderboard_views

app_name = "leaderboard"
urlpatterns = [
    path("<int:campaign_id>/leaderboard/", leaderboard_views.leaderboard_page, name="page"),
    path("report/<int:submission_id>/", leaderboard_views.submission_report_page, name="report"),
    path("<int:campaign_id>/leaderboard.csv", leaderboard_views.leaderboard_csv, name="csv"),
    path("<int:campaign_id>/package.zip", leaderboard_views.results_package, name="package"),
    path(
        "<int:campaign_id>/leaderboard/submission/<int:submission_id>/bars.png",
        leaderboard_views.video_bars,
        name="video_bars",
    ),
]
