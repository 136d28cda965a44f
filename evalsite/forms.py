"""Organizer forms. The zip itself is checked after it is stored with its upload record
(evalsite/validation.py: ``not_a_zip``, ``damaged_zip``, then every member)."""

from django import forms

from .uploads import receive_upload


class SubmissionZipForm(forms.Form):
    """A zip of masked videos named after the campaign's source videos.

    Any file is accepted here: even a file that is not a zip gets an upload record and a
    report saying so (``not_a_zip``), so nothing uploaded goes unrecorded.
    """

    file = forms.FileField(
        label="zip of masked videos",
        help_text="One video per source video, named after it (e.g. bbaf2n.mp4); folders are ignored.",
    )
    replace = forms.BooleanField(
        label="replace masked videos already stored",
        required=False,
        help_text="Without this, a file for a video that already has a masked video is rejected. With it, "
        "the new file becomes current; the earlier one is kept, superseded, with its ratings.",
    )

    def receive(self, submission, uploaded_by):
        """Store the valid form's zip as a new upload of ``submission`` and queue its validation.

        Returns
        -------
        SubmissionUpload
            As :func:`evalsite.uploads.receive_upload` (the uploaded file's name kept).
        """
        zip_file = self.cleaned_data["file"]
        return receive_upload(
            submission,
            zip_file,
            original_name=zip_file.name,
            replace=self.cleaned_data["replace"],
            uploaded_by=uploaded_by,
        )
