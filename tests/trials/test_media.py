"""Media for raters: range parsing, one-size metadata-free face crops, one-time transcoding."""

import subprocess
from pathlib import Path

import cv2
import numpy as np
import pytest

from automated.video import ffmpeg_executable
from evalsite.models import GalleryImage, MaskedVideo, SourceVideo
from trials.media import OVAL_GREY, ensure_gallery_crop, face_crop_png, parse_range, read_image_rgb
from trials.models import GalleryCrop
from trials.services import CannotOpenRating, open_rating
from tests.crowd.simulation import build_grid_campaign


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("bytes=0-99", (0, 99)),
        ("bytes=100-", (100, 999)),
        ("bytes=-10", (990, 999)),
        ("bytes=900-5000", (900, 999)),
        ("bytes=0-0", (0, 0)),
        ("bytes=0-9,20-29", None),
        ("items=0-9", None),
    ],
)
def test_parse_range_for_a_1000_byte_file(header, expected):
    assert parse_range(header, 1000) == expected


@pytest.mark.parametrize("header", ["bytes=1000-", "bytes=500-400", "bytes=-0"])
def test_unsatisfiable_ranges_raise(header):
    with pytest.raises(ValueError):
        parse_range(header, 1000)


def test_face_crop_refuses_what_the_frame_check_refuses():
    # automated.face_boxes.check_frame, the one frame check
    with pytest.raises(
        ValueError, match=r"^image_rgb must be uint8 of shape \(height, width, 3\), got uint8 \(8, 8, 4\)$"
    ):
        face_crop_png(np.zeros((8, 8, 4), np.uint8), size_px=16)
    with pytest.raises(ValueError, match=r"got float64 \(8, 8, 3\)$"):
        face_crop_png(np.zeros((8, 8, 3)), size_px=16)


def test_orl_face_becomes_a_160_px_png_without_metadata(data_dir):
    image_rgb = read_image_rgb(data_dir / "faces/orl_att_faces/s1/1.pgm")
    assert image_rgb.shape == (112, 92, 3)
    png = face_crop_png(image_rgb, size_px=160)
    decoded = cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_UNCHANGED)
    assert decoded.shape == (160, 160, 3)
    assert b"tEXt" not in png and b"eXIf" not in png and b"iTXt" not in png


def test_open_rating_transcodes_each_video_once_and_crops_each_face(
    db, media_root, data_dir, grid_cache, django_capture_on_commit_callbacks
):
    campaign = build_grid_campaign(data_dir, grid_cache, with_web_files=False)
    with django_capture_on_commit_callbacks(execute=True) as queued:
        result = open_rating(campaign)  # queued on commit; the Celery task runs in-process (eager)
    assert len(queued) == 1
    assert result.items_created == 32  # the 4 women's videos get no identity items (thin group)
    videos = list(SourceVideo.objects.filter(campaign=campaign)) + list(
        MaskedVideo.objects.filter(submission__campaign=campaign)
    )
    assert all(v.web_file for v in videos) and len(videos) == 20
    probe = subprocess.run(
        [ffmpeg_executable(), "-hide_banner", "-i", videos[-1].web_file.path], capture_output=True, text=True
    )
    assert (
        "Video: h264" in probe.stderr
        and "ffv1"
        in subprocess.run(
            [ffmpeg_executable(), "-hide_banner", "-i", videos[-1].file.path], capture_output=True, text=True
        ).stderr
    )
    names = {v.pk: v.web_file.name for v in SourceVideo.objects.filter(campaign=campaign)}
    with django_capture_on_commit_callbacks(execute=True):
        open_rating(campaign)  # reopening transcodes nothing
    assert names == {v.pk: v.web_file.name for v in SourceVideo.objects.filter(campaign=campaign)}
    crops = GalleryCrop.objects.filter(gallery_image__identity__campaign=campaign)
    assert crops.count() == 10 and set(crops.values_list("size_px", flat=True)) == {160}
    assert any(
        "female" in w and "its group has 4 identities with evaluated videos" in w for w in result.warnings
    )


def test_campaign_with_too_few_identities_cannot_open(grid_campaign):
    grid_campaign.foils_per_trial = 10
    with pytest.raises(
        CannotOpenRating, match="10 identities with a gallery face, an identity trial needs 11"
    ):
        open_rating(grid_campaign, prepare_media=False)


def test_face_crops_hide_hair_and_background_outside_one_oval(data_dir, grid_cache):
    # Square crops kept hair at the sides and the studio background in the corners (blue
    # for GRID, green for CREMA-D): cues outside the internal face (seeds/002, 4.2).
    stills = [grid_cache / name for name in sorted(p.name for p in grid_cache.glob("*.png"))[:2]]
    stills.append(data_dir / "faces/orl_att_faces/s1/1.pgm")
    for still in stills:
        png = face_crop_png(read_image_rgb(still), size_px=160)
        crop = cv2.cvtColor(cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
        # Corners and the side edges at eye height are the same flat grey in every crop.
        for y, x in [(0, 0), (0, 159), (159, 0), (159, 159), (60, 0), (60, 159), (100, 3), (100, 156)]:
            assert tuple(crop[y, x]) == (OVAL_GREY,) * 3, (still.name, y, x)
        assert crop[60:100, 60:100].std() > 5  # the internal face itself is kept


def test_an_older_square_crop_is_replaced_by_the_oval_one(grid_campaign, django_capture_on_commit_callbacks):
    image = GalleryImage.objects.filter(identity__campaign=grid_campaign).first()
    old = ensure_gallery_crop(image)
    GalleryCrop.objects.filter(pk=old.pk).update(version=1)  # as stored before the oval mask
    old_path = old.file.path
    with django_capture_on_commit_callbacks(execute=True):  # the old file goes after the commit
        new = ensure_gallery_crop(image)
    assert new.pk != old.pk and new.version == GalleryCrop.CURRENT_VERSION
    decoded = cv2.imdecode(np.fromfile(new.file.path, np.uint8), cv2.IMREAD_COLOR)
    assert tuple(decoded[0, 0]) == (OVAL_GREY,) * 3
    assert not Path(old_path).exists()  # the replaced file is deleted, not left behind
