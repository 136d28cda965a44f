from django.apps import AppConfig


class EvalsiteConfig(AppConfig):
    name = "evalsite"
    verbose_name = "Catalogue"
