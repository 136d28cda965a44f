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
        # A run whose plan a video role change altered is reported stale (evalsite.staleness).
        from evalsite.staleness import register_plan_check, register_settings_check

        from .evaluate_all import campaign_settings_changes, plan_changes

        for model in ("AutomatedRun", "AttackRun"):
            register_plan_check(f"{self.label}.{model}", plan_changes)
            register_settings_check(f"{self.label}.{model}", campaign_settings_changes)
        # The Submission admin's actions and the organizer page's run states (evalsite.plugins).
        from evalsite import plugins

        from . import admin_actions, evaluate_all

        # Without a broker: runs left by a stopped server process are resumed at the first
        # request of each new one (no database access here, in ready()).
        from django.core.signals import request_started

        from .dispatch import resume_on_first_request

        request_started.connect(resume_on_first_request, dispatch_uid="automated-resume-runs")
        plugins.register_submission_actions(*admin_actions.SUBMISSION_ACTIONS)
        plugins.register_campaign_actions(admin_actions.rerun_campaigns)
        plugins.register_submission_panel(
            "automated",
            plugins.SubmissionPanel(lines=evaluate_all.part_states, may_start=evaluate_all.may_evaluate),
        )
        # The organizer page's run states and the frontier figures, computed into the report
        # cache when a campaign's runs finish (evalsite.report_cache.warm).
        from evalsite.report_cache import register_warmer

        from .frontier_view import warm_frontiers

        register_warmer(evaluate_all.warm_part_states)
        register_warmer(warm_frontiers)
