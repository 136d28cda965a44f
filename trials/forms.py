"""Validation of what raters send: join codes and trial answers."""

from django import forms

from .browser import BadParticipantCode, normalise_participant_code


class JoinForm(forms.Form):
    participant_code = forms.CharField(
        label="Participant code",
        max_length=200,
        required=False,
        help_text="The ID your crowd-sourcing platform shows you (letters, digits, '-', '_', '.').",
    )

    def clean_participant_code(self):
        try:
            return normalise_participant_code(self.cleaned_data["participant_code"])
        except BadParticipantCode as error:
            raise forms.ValidationError(str(error), code="invalid_participant_code") from None


class ResponseForm(forms.Form):
    """One answer; ``choice`` is checked against the trial in ``assignment.record_response``."""

    choice = forms.CharField(max_length=100)
    response_time_ms = forms.IntegerField(min_value=0, max_value=24 * 3600 * 1000)
    replays = forms.IntegerField(min_value=0, max_value=10_000, required=False)
    watch_time_ms = forms.IntegerField(min_value=0, max_value=24 * 3600 * 1000, required=False)

    def clean(self):
        data = super().clean()
        data["replays"] = data.get("replays") or 0
        data["watch_time_ms"] = data.get("watch_time_ms") or 0
        return data


class TrialStateForm(forms.Form):
    """Replays and watch time of an unanswered trial so far (``views.trial_state``)."""

    replays = forms.IntegerField(min_value=0, max_value=10_000)
    watch_time_ms = forms.IntegerField(min_value=0, max_value=24 * 3600 * 1000)
