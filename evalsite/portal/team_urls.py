"""The team view (mounted under /team/): pages for team members. Views: evalsite/portal/team_views.py."""

from django.contrib.auth import views as auth_views
from django.urls import path

from automated.django_app import frontier_view

from . import team_views

app_name = "team"
urlpatterns = [
    path("", team_views.home, name="home"),
    path("login/", team_views.TeamLoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(next_page="team:login"), name="logout"),
    path("submission/<int:pk>/", team_views.submission_page, name="submission"),
    path("submission/<int:pk>/report/", team_views.submission_report_page, name="submission_report_page"),
    path("submission/<int:pk>/report/<str:fmt>/", team_views.submission_report, name="submission_report"),
    path(
        "submission/<int:pk>/frontier.<str:fmt>",
        frontier_view.team_submission_frontier,
        name="submission_frontier",
    ),
    path("submission/<int:pk>/upload/", team_views.upload, name="upload"),
    path("upload/<int:pk>/", team_views.upload_detail, name="upload_detail"),
    path("upload/<int:pk>/report/<str:fmt>/", team_views.upload_report, name="upload_report"),
    path("campaign/<int:pk>/leaderboard/", team_views.leaderboard_page, name="leaderboard"),
    path("campaign/<int:pk>/leaderboard.csv", team_views.leaderboard_csv, name="leaderboard_csv"),
]
