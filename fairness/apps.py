from django.apps import AppConfig


class FairnessConfig(AppConfig):
    name = "fairness"
