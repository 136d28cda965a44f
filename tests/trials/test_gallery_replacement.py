"""Replacing a gallery still (the organizer uploads a better photo of a person) reaches raters.

Before: the rater-facing crop (``trials.models.GalleryCrop``, made once per still) was kept,
so lineups went on showing the old photo while the automated gallery matching used the new
one; the old still, its crop and its attention-check probe stayed in storage. Now the
crop and its probe are made again from the new still, and every old file is deleted once
the change is committed.
"""

import io

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from evalsite.models import GalleryImage
from trials import media
from trials.models import GalleryCrop


def _crop_pixels(crop: GalleryCrop) -> np.ndarray:
    return media.read_image_rgb(crop.file)


@pytest.fixture
def two_stills(grid_campaign):
    """The first still of the campaign (crop and probe made) and another person's still's bytes."""
    first, other = list(GalleryImage.objects.filter(identity__campaign=grid_campaign).order_by("id")[:2])
    crop = media.ensure_gallery_crop(first)
    media.ensure_catch_video(crop)
    crop.refresh_from_db()
    with other.image.open("rb") as handle:
        new_bytes = handle.read()
    return first, crop, new_bytes


def test_a_still_replaced_in_the_admin_gets_a_new_crop_and_probe_and_its_old_files_go(
    two_stills, admin_client, django_capture_on_commit_callbacks
):
    image, old_crop, new_bytes = two_stills
    storage = image.image.storage
    old_files = [image.image.name, old_crop.file.name, old_crop.catch_video.name]
    assert all(storage.exists(name) for name in old_files)
    old_pixels = _crop_pixels(old_crop)
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            reverse("admin:evalsite_galleryimage_change", args=[image.pk]),
            {
                "identity": image.identity_id,
                "original_name": "better photo.png",
                "image": SimpleUploadedFile("better photo.png", new_bytes, content_type="image/png"),
            },
        )
    assert response.status_code == 302, response.content.decode()[:2000]
    image.refresh_from_db()
    assert image.image.name not in old_files and storage.exists(image.image.name)
    assert not any(storage.exists(name) for name in old_files)  # old still, crop and probe
    assert not GalleryCrop.objects.filter(pk=old_crop.pk).exists()
    # Rating is open: the media preparation queued after the commit made the new crop and
    # its probe already, so no rater's request makes them (a check's would take longer).
    new_crop = GalleryCrop.objects.get(gallery_image=image)
    assert new_crop.catch_video and storage.exists(new_crop.catch_video.name)
    assert media.ensure_gallery_crop(image).pk == new_crop.pk
    # The new crop is the other person's face: the lineup shows the new photo.
    assert np.abs(_crop_pixels(new_crop).astype(int) - old_pixels.astype(int)).mean() > 10


def test_saving_a_still_without_a_new_file_keeps_its_crop_and_files(
    two_stills, admin_client, django_capture_on_commit_callbacks
):
    image, crop, _ = two_stills
    storage = image.image.storage
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            reverse("admin:evalsite_galleryimage_change", args=[image.pk]),
            {"identity": image.identity_id, "original_name": "renamed.png"},
        )
    assert response.status_code == 302
    assert GalleryCrop.objects.filter(pk=crop.pk).exists()
    assert all(storage.exists(name) for name in (image.image.name, crop.file.name, crop.catch_video.name))


def test_a_deleted_still_takes_its_crop_and_probe_files_along(two_stills, django_capture_on_commit_callbacks):
    image, crop, _ = two_stills
    storage = image.image.storage
    names = [image.image.name, crop.file.name, crop.catch_video.name]
    with django_capture_on_commit_callbacks(execute=True):
        image.delete()
    assert not any(storage.exists(name) for name in names)


def test_an_upload_that_is_not_an_image_changes_nothing(two_stills, admin_client):
    image, crop, _ = two_stills
    name = image.image.name
    response = admin_client.post(
        reverse("admin:evalsite_galleryimage_change", args=[image.pk]),
        {
            "identity": image.identity_id,
            "original_name": "x",
            "image": SimpleUploadedFile(
                "notes.png", io.BytesIO(b"not a picture").read(), content_type="image/png"
            ),
        },
    )
    assert response.status_code == 200 and b"Upload a valid image" in response.content
    image.refresh_from_db()
    assert image.image.name == name and GalleryCrop.objects.filter(pk=crop.pk).exists()
