"""``evalsite.plugins``: the apps' registrations reach the catalogue without an import of theirs."""

from types import SimpleNamespace

import pytest
from django.contrib import admin
from django.core.exceptions import ImproperlyConfigured

from evalsite import plugins
from evalsite.models import Submission


def test_the_installed_apps_registered_rating_actions_and_a_panel():
    from automated.django_app import admin_actions, evaluate_all
    from trials import services

    control = plugins.rating()
    assert (control.open, control.close, control.blockers, control.refused) == (
        services.open_rating,
        services.close_rating,
        services.rating_blockers,
        services.CannotOpenRating,
    )
    assert plugins.SUBMISSION_ACTIONS == admin_actions.SUBMISSION_ACTIONS
    # the catalogue's Submission admin lists the registry's own list
    assert admin.site._registry[Submission].actions is plugins.SUBMISSION_ACTIONS
    panel = plugins.SUBMISSION_PANELS["automated"]
    assert (panel.lines, panel.may_start) == (evaluate_all.part_states, evaluate_all.may_evaluate)


def test_without_a_rating_app_the_error_names_the_app_to_install(monkeypatch):
    monkeypatch.setattr(plugins, "_rating", None)
    with pytest.raises(ImproperlyConfigured, match="add 'trials' to INSTALLED_APPS"):
        plugins.rating()


def test_an_action_registered_twice_is_listed_once(monkeypatch):
    monkeypatch.setattr(plugins, "SUBMISSION_ACTIONS", [])

    def first(modeladmin, request, queryset): ...

    def second(modeladmin, request, queryset): ...

    plugins.register_submission_actions(first, second)
    plugins.register_submission_actions(first)
    assert plugins.SUBMISSION_ACTIONS == [first, second]


def test_panels_lines_come_panel_by_panel_and_any_panel_lets_a_user_start(monkeypatch):
    monkeypatch.setattr(plugins, "SUBMISSION_PANELS", {})
    assert plugins.submission_lines("s") == [] and plugins.may_start("u") is False
    plugins.register_submission_panel(
        "a", plugins.SubmissionPanel(lines=lambda s: [{"text": f"a {s}"}], may_start=lambda u: False)
    )
    plugins.register_submission_panel(
        "b",
        plugins.SubmissionPanel(
            lines=lambda s: [{"text": f"b1 {s}"}, {"text": f"b2 {s}"}], may_start=lambda u: u == "staff"
        ),
    )
    assert [line["text"] for line in plugins.submission_lines(7)] == ["a 7", "b1 7", "b2 7"]
    assert (plugins.may_start("staff"), plugins.may_start("team")) == (True, False)


def test_the_reports_registry_gives_a_registered_provider_or_nothing(monkeypatch):
    from evalsite import reports

    monkeypatch.setattr(reports, "VIDEO_COLUMN_PROVIDERS", [("face", lambda s: f"face of {s.pk}")])
    monkeypatch.setattr(reports, "SUMMARY_PROVIDERS", [("attack", lambda s: {"of": s.pk})])
    submission = SimpleNamespace(pk=3, campaign_id=1)  # what the providers and the report cache read
    assert reports.video_columns("face", submission) == "face of 3"
    assert reports.video_columns("gait", submission).empty
    assert reports.summary_section("attack", submission) == {"of": 3}
    assert reports.summary_section("human", submission) is None
