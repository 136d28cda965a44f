from django.apps import AppConfig


class EvalsiteConfig(AppConfig):
    name = "evalsite"
    verbose_name = "Catalogue"

    def ready(self):
        from django.core import checks

        from evalsite.secret_key import check_secret_key

        checks.register(check_secret_key)
