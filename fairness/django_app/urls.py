"""Organizer pages of the fairness app (mounted under /organizer/fairness/)."""

from django.urls import path

from . import views

app_name = "fairness"
urlpatterns = [
    path("", views.index, name="index"),
    path("submission/<int:submission_id>/", views.submission_fairness, name="submission"),
    path("submission/<int:submission_id>/plot.png", views.submission_plot, name="submission_plot"),
    path("campaign/<int:campaign_id>/quality/", views.campaign_quality, name="quality"),
    path("campaign/<int:campaign_id>/quality/plot.png", views.quality_plot, name="quality_plot"),
]
