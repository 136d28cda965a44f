"""Organizer forms: validation of the upload itself (per-file checks are in validation.py)."""
import zipfile

from django import forms
from django.core.exceptions import ValidationError


class SubmissionZipForm(forms.Form):
    """A zip of masked videos named after the campaign's source videos."""

    file = forms.FileField(
        label="zip of masked videos",
        help_text="One video per source video, named after it (e.g. bbaf2n.mp4); folders are ignored.",
    )
    replace = forms.BooleanField(
        label="replace masked videos already stored", required=False,
        help_text="Without this, a file for a video that already has a masked video is rejected.",
    )

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if not upload.name.lower().endswith(".zip"):
            raise ValidationError(
                "%(name)s is not a .zip file", code="not_a_zip", params={"name": upload.name}
            )
        position = upload.tell()
        is_zip = zipfile.is_zipfile(upload)
        upload.seek(position)
        if not is_zip:
            raise ValidationError(
                "%(name)s is named .zip but is not a readable zip archive",
                code="corrupt_zip", params={"name": upload.name},
            )
        return upload
