"""Human evaluation: raters, sessions, trials, responses, assignment, scoring."""
from django.apps import AppConfig


class TrialsConfig(AppConfig):
    name = "trials"
    verbose_name = "human evaluation"

    def ready(self):
        from evalsite.reports import register_summary_section, register_video_columns

        from . import human_report

        register_video_columns("human", human_report.video_columns)
        register_summary_section("human", human_report.summary)
