"""Rater-facing pages."""
app_name = "trials"
urlpatterns: list = []
