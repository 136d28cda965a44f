"""Organizer pages of the automated evaluation (mounted under /organizer/automated/)."""

from django.urls import path

from . import frontier_view, progress_views

app_name = "automated"
urlpatterns = [
    path(
        "campaign/<int:campaign_id>/frontier.png",
        frontier_view.campaign_frontier,
        {"fmt": "png"},
        name="frontier_png",
    ),
    path(
        "campaign/<int:campaign_id>/frontier.svg",
        frontier_view.campaign_frontier,
        {"fmt": "svg"},
        name="frontier_svg",
    ),
    path("submission/<int:submission_id>/evaluate/", progress_views.evaluate, name="submission_evaluate"),
    path("submission/<int:submission_id>/progress/", progress_views.progress, name="submission_progress"),
    path(
        "submission/<int:submission_id>/progress.json",
        progress_views.progress_json,
        name="submission_progress_json",
    ),
]
