"""Staff-only media views: every file goes through a permission check (no public media URL).

A staff user may fetch a file only if its campaign is visible to them
(``Campaign.objects.visible_to``); others get 404, so the view does not even confirm that
a token exists.
"""
from django.contrib.admin.views.decorators import staff_member_required
from django.http import FileResponse
from django.shortcuts import get_object_or_404

from .models import Campaign, GalleryImage, MaskedVideo, SourceVideo


def _file_response(field_file):
    # No original name in the response: the stored name is already an opaque token.
    return FileResponse(field_file.open("rb"), as_attachment=False)


@staff_member_required
def gallery_image(request, token):
    """The gallery still ``token`` (used by the admin thumbnails)."""
    image = get_object_or_404(
        GalleryImage, token=token, identity__campaign__in=Campaign.objects.visible_to(request.user)
    )
    return _file_response(image.image)


@staff_member_required
def source_video(request, token):
    """The clear video ``token``."""
    video = get_object_or_404(SourceVideo, token=token, campaign__in=Campaign.objects.visible_to(request.user))
    return _file_response(video.file)


@staff_member_required
def masked_video(request, token):
    """The masked video ``token``."""
    video = get_object_or_404(
        MaskedVideo, token=token, submission__campaign__in=Campaign.objects.visible_to(request.user)
    )
    return _file_response(video.file)
