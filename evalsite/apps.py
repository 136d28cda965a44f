from django.apps import AppConfig


class EvalsiteConfig(AppConfig):
    name = "evalsite"
    verbose_name = "Catalogue"

    def ready(self):
        from django.core import checks

        from evalsite.secret_key import check_secret_key

        checks.register(check_secret_key)
        # What the report pages read first, computed when a campaign's runs finish.
        from evalsite.report_cache import register_warmer
        from evalsite.reports import warm_reports

        register_warmer(warm_reports)
