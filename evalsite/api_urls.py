"""REST API (staff only): catalogue, reports and summaries."""
from django.urls import path

urlpatterns: list = []
