"""Organizer forms. The zip itself is checked after it is stored with its upload record
(evalsite/validation.py: ``not_a_zip``, ``damaged_zip``, then every member)."""

from django import forms
from django.core.exceptions import ValidationError

from .booleans import ACCEPTED, NotABoolean, parse_boolean
from .phases import Refused
from .uploads import receive_upload


class _RawCheckboxInput(forms.CheckboxInput):
    """A checkbox that hands the field the text sent (``None`` when absent), not Django's
    early ``bool(text)`` (which reads ``"0"``, ``"no"`` and ``"off"`` as true)."""

    def value_from_datadict(self, data, files, name):
        return data.get(name)


class StrictBooleanField(forms.Field):
    """A yes/no form field read by :func:`evalsite.booleans.parse_boolean`.

    Absent (an unchecked checkbox) or blank: false unless ``required``; a checked checkbox
    (``on``) or true/1/yes: true; false/0/no/off: false; anything else: a form error naming
    the accepted words (the API answers it as a 400 under the field's name).
    """

    widget = _RawCheckboxInput

    def to_python(self, value):
        if value is None or (isinstance(value, str) and not value.strip()):
            return False
        try:
            return parse_boolean(value, self.label or "value")
        except NotABoolean:
            raise ValidationError(
                f"%(value)r is not a yes/no value; use {ACCEPTED}", code="invalid", params={"value": value}
            ) from None

    def validate(self, value):
        if not value and self.required:
            raise ValidationError(self.error_messages["required"], code="required")


class SubmissionZipForm(forms.Form):
    """A zip of masked videos named after the campaign's source videos.

    Any file is accepted here: even a file that is not a zip gets an upload record and a
    report saying so (``not_a_zip``), so nothing uploaded goes unrecorded.
    """

    file = forms.FileField(
        label="zip of masked videos",
        help_text="One video per source video, named after it (e.g. bbaf2n.mp4); folders are ignored.",
    )
    replace = StrictBooleanField(
        label="replace masked videos already stored",
        required=False,
        help_text="Without this, a file for a video that already has a masked video is rejected. With it, "
        "the new file becomes current; the earlier one is kept, superseded, with its ratings.",
    )

    def receive(self, submission, uploaded_by):
        """Store the valid form's zip as a new upload of ``submission`` and queue its validation.

        Returns
        -------
        SubmissionUpload or None
            As :func:`evalsite.uploads.receive_upload` (the uploaded file's name kept); None
            when the run's phase refuses the upload (deadline, quota:
            :class:`evalsite.phases.Refused`), with the reason as the form's ``file`` error.
        """
        zip_file = self.cleaned_data["file"]
        try:
            return receive_upload(
                submission,
                zip_file,
                original_name=zip_file.name,
                replace=self.cleaned_data["replace"],
                uploaded_by=uploaded_by,
                override_deadline=self.cleaned_data.get("override_deadline", False),
            )
        except Refused as refused:
            self.add_error("file", ValidationError(str(refused), code=refused.code))
            return None


class OrganizerSubmissionZipForm(SubmissionZipForm):
    """The organizer's upload form (admin, API): may accept an upload after the deadline."""

    override_deadline = StrictBooleanField(
        label="accept after the deadline",
        required=False,
        help_text="The run's phase has closed: accept this upload anyway (recorded on the upload as late, "
        "with your name).",
    )
