from django.apps import AppConfig


class FairnessConfig(AppConfig):
    name = "fairness.django_app"
    label = "fairness"
    verbose_name = "Fairness across demographic groups"

    def ready(self):
        # The fairness section of every submission summary (evalsite/reports.py).
        from . import report

        report.register()
