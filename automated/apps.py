from django.apps import AppConfig


class AutomatedConfig(AppConfig):
    name = "automated"
