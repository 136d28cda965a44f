"""Rater pages, media, and the organizer page."""

from django.contrib.auth import views as auth_views
from django.urls import path

from . import organizer, views

app_name = "trials"
urlpatterns = [
    path("join/<str:join_code>/", views.join, name="join"),
    path("rater/login/", auth_views.LoginView.as_view(template_name="trials/login.html"), name="login"),
    path("session/", views.session_page, name="session"),
    path("session/consent/", views.consent, name="consent"),
    path("session/start/", views.start, name="start"),
    path("t/<str:token>/respond/", views.respond, name="respond"),
    path("t/<str:token>/state/", views.trial_state, name="trial_state"),
    path("t/<str:token>/heartbeat/", views.heartbeat, name="heartbeat"),
    path("m/<str:token>", views.media, name="media"),
    path("organizer/", organizer.campaign_list, name="organizer"),
    path("organizer/<int:pk>/", organizer.campaign_progress, name="organizer_campaign"),
    path("organizer/<int:pk>/crowd/<str:fmt>.csv", organizer.crowd_export, name="organizer_crowd_export"),
    path("organizer/<int:pk>/rating/", organizer.set_rating_open, name="organizer_rating"),
    path("organizer/<int:pk>/stills/check/", organizer.check_stills_now, name="organizer_check_stills"),
    path(
        "organizer/<int:pk>/submissions/<int:submission_pk>/rated/",
        organizer.set_submission_in_rating,
        name="organizer_submission_rated",
    ),
    path(
        "organizer/<int:pk>/raters/<int:rater_pk>/excluded/",
        organizer.set_rater_excluded,
        name="organizer_rater_excluded",
    ),
]
