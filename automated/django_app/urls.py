"""Organizer pages of the automated evaluation (mounted under /organizer/automated/)."""

from django.urls import path

from . import frontier_view

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
]
