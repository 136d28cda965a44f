"""Staff-only media views: every file goes through a permission check (no public media URL).

A staff user may fetch a file only if its campaign is visible to them
(``evalsite.scoping.scope``); others get 404, so the view does not even confirm that
a token exists.
"""

from django.contrib.admin.views.decorators import staff_member_required
from django.http import FileResponse
from django.shortcuts import get_object_or_404

from .models import GalleryImage, MaskedVideo, SourceVideo
from .scoping import scope


def _file_response(field_file):
    # No original name in the response: the stored name is already an opaque token.
    return FileResponse(field_file.open("rb"), as_attachment=False)


@staff_member_required
def gallery_image(request, token):
    """The gallery still ``token`` (used by the admin thumbnails)."""
    image = get_object_or_404(scope(GalleryImage.objects.all(), request.user), token=token)
    return _file_response(image.image)


@staff_member_required
def source_video(request, token):
    """The clear video ``token``."""
    video = get_object_or_404(scope(SourceVideo.objects.all(), request.user), token=token)
    return _file_response(video.file)


@staff_member_required
def masked_video(request, token):
    """The masked video ``token``."""
    video = get_object_or_404(scope(MaskedVideo.objects.all(), request.user), token=token)
    return _file_response(video.file)
