"""Organizer pages of the automated evaluation (mounted under /organizer/automated/)."""

from django.urls import path

from . import attack_views, frontier_view, progress_views

app_name = "automated"
urlpatterns = [
    path("attack-run/<int:run_id>/", attack_views.attack_run_report, name="attack_run_report"),
    path(
        "attack-run/<int:run_id>/verification.png",
        attack_views.attack_run_verification_png,
        name="attack_run_verification_png",
    ),
    path(
        "attack-run/<int:run_id>/linkability/<str:embedder>.png",
        attack_views.attack_run_linkability_png,
        name="attack_run_linkability_png",
    ),
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
