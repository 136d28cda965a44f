"""Stored files through the storage API: storing a probed video, reading any stored file locally.

- :func:`store_video`: the one place where a clear or masked video's bytes (and its
  browser copy) go into storage for a catalogue row: the importer, the clear-video
  replacement (``evalsite.services``), the submission upload (``evalsite.validation``)
  and the baseline maker (``automated.django_app.services``) call it. It runs ffmpeg (the
  browser copy), which is why it is a service, not a model method.
- :func:`local_path`: a local file to hand to ffmpeg, OpenCV or dlib, for any storage
  (a temporary copy when the storage has no local files, e.g. S3). Code outside this
  module never reads ``FieldFile.path``.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path

from django.conf import settings
from django.core.files import File

from automated.video import VideoInfo, transcode_for_web

from .models import delete_stored


def store_video(video, path: Path, info: VideoInfo, *, name: str, web_copy: bool) -> list:
    """Copy the probed video at ``path`` (and a browser copy) to storage; fill ``video``'s metadata.

    ``video``: a ``SourceVideo`` or ``MaskedVideo`` (``VideoMetadataMixin``); the row is
    not saved. ``name`` only gives the suffix: ``upload_to`` makes stored
    names opaque. ``web_copy`` also stores a silent H.264 MP4 for raters
    (``automated.video.transcode_for_web``).

    Returns
    -------
    list of FieldFile
        What was stored, so the caller can delete it if saving the row fails.

    Raises
    ------
    automated.video.VideoTimeout
        If the browser copy takes longer than ``DEID_TRANSCODE_TIMEOUT_S``.
    automated.video.VideoError
        If the browser copy cannot be made (nothing is left in storage then).
    """
    video.frame_count, video.fps, video.duration_s = info.frame_count, info.fps, info.duration_s
    video.width, video.height = info.resolution_wh
    stored = []
    try:
        with path.open("rb") as handle:
            video.file.save(name, File(handle), save=False)
        stored.append(video.file)
        if web_copy:
            with tempfile.TemporaryDirectory() as tmp:
                web_path = transcode_for_web(
                    path, Path(tmp) / "web.mp4", timeout_s=settings.DEID_TRANSCODE_TIMEOUT_S
                )
                with web_path.open("rb") as handle:
                    video.web_file.save("web.mp4", File(handle), save=False)
            stored.append(video.web_file)
    except Exception:
        delete_stored(stored)
        raise
    return stored


@contextlib.contextmanager
def local_path(field_file):
    """Yield a local filesystem path for a stored file (a temporary copy if the storage is remote)."""
    try:
        yield Path(field_file.path)
        return
    except NotImplementedError:  # remote storage (e.g. S3): no .path
        pass
    suffix = Path(field_file.name).suffix
    with tempfile.NamedTemporaryFile(suffix=suffix) as tmp:
        with field_file.open("rb") as handle:
            shutil.copyfileobj(handle, tmp)
        tmp.flush()
        yield Path(tmp.name)
