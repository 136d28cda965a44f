from django.apps import AppConfig


class AutomatedConfig(AppConfig):
    name = "automated.django_app"
    label = "automated"
    verbose_name = "Automated evaluation"

    def ready(self):
        # Report columns/sections of the face evaluation and the attack suite.
        from . import attack_report, behaviour_report, face_report

        face_report.register()
        behaviour_report.register()
        attack_report.register()
