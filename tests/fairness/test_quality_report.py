"""Face quality fairness of real gallery stills (ORL) and a real clear video (GRID)."""

import io

import cv2
import numpy as np
import pytest
from django.core.files.base import ContentFile
from django.core.management import call_command
from PIL import Image

from evalsite.models import GalleryImage, SourceVideo
from fairness.django_app.models import FaceQualityScore
from fairness.django_app.report import quality_fairness
from fairness.django_app.services import compute_face_quality


def _png(rgb) -> ContentFile:
    buffer = io.BytesIO()
    Image.fromarray(rgb).save(buffer, format="PNG")
    return ContentFile(buffer.getvalue(), name="still.png")


@pytest.fixture
def stills(campaign, media_root, data_dir):
    """ORL stills: female identities' stills sharp, male identities' stills blurred."""
    subjects = {"ID01": (1, 2), "ID02": (3, 4), "ID03": (5, 6), "ID04": (7, 8)}
    for identity in campaign.identities.all():
        for subject in subjects[identity.code]:
            grey = np.array(Image.open(data_dir / "faces" / "orl_att_faces" / f"s{subject}" / "1.pgm"))
            rgb = np.repeat(grey[..., None], 3, axis=2)
            if identity.attributes["gender"] == "male":
                rgb = cv2.GaussianBlur(rgb, (0, 0), 2.0)
            GalleryImage.objects.create(identity=identity, image=_png(rgb))
    video = SourceVideo.objects.get(campaign=campaign, name="v1")
    video.file.save("clip.mpg", ContentFile((data_dir / "videos/grid_talking_heads/bbaf2n.mpg").read_bytes()))
    SourceVideo.objects.filter(campaign=campaign).exclude(pk=video.pk).delete()
    return campaign


def test_blurred_group_has_lower_quality_fairness(stills, settings):
    settings.FAIRNESS_BOOTSTRAP_RESAMPLES = 50
    assert compute_face_quality(stills) == 9  # 8 stills + 1 clear video
    assert compute_face_quality(stills) == 0  # stored: nothing recomputed
    assert FaceQualityScore.objects.filter(face_found=True).count() == 9
    gallery = quality_fairness(stills)["gallery"]
    sharpness = gallery["sharpness"]["by_attribute"]["gender"]
    groups = sharpness["groups"]
    assert groups["male"]["mean"] < 0.2 * groups["female"]["mean"]
    assert sharpness["measures"]["Mean-GC-SQFR"]["estimate"] < 0.5
    # blur keeps the mean grey level: luminance differs only between the people
    luminance = gallery["luminance"]["by_attribute"]["gender"]["measures"]["Mean-GC-SQFR"]["estimate"]
    assert luminance > sharpness["measures"]["Mean-GC-SQFR"]["estimate"] + 0.3
    clear = quality_fairness(stills)["clear_video"]["sharpness"]["by_attribute"]["gender"]
    assert clear["n_samples"] == 1 and "at least two groups" in clear["measures"]["Mean-GC-SQFR"]["error"]


def test_a_still_without_a_face_is_stored_with_its_reason(campaign, media_root):
    GalleryImage.objects.create(
        identity=campaign.identities.first(), image=_png(np.zeros((60, 80, 3), np.uint8))
    )
    SourceVideo.objects.filter(campaign=campaign).delete()
    assert compute_face_quality(campaign) == 1
    score = FaceQualityScore.objects.get()
    assert not score.face_found and "no face found in the 80x60 image" in score.error


def test_command_computes_quality(stills):
    call_command("compute_face_quality", "--campaign", stills.slug)
    assert FaceQualityScore.objects.count() == 9


def test_command_rejects_unknown_campaign(db):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="no campaign with id or slug 'nope'"):
        call_command("compute_face_quality", "--campaign", "nope")


def test_quality_page_and_plot_for_the_organizer(stills, organizer, client, settings):
    from django.urls import reverse

    settings.FAIRNESS_BOOTSTRAP_RESAMPLES = 20
    client.force_login(organizer)
    page = client.get(reverse("fairness:quality", args=[stills.pk]))
    assert page.status_code == 200 and "sharpness" in page.content.decode()
    plot = client.get(
        reverse("fairness:quality_plot", args=[stills.pk]),
        {"kind": "gallery", "score": "sharpness", "attribute": "gender"},
    )
    assert plot.status_code == 200 and plot.content.startswith(b"\x89PNG")
    bad = client.get(
        reverse("fairness:quality_plot", args=[stills.pk]),
        {"kind": "masked", "score": "sharpness", "attribute": "gender"},
    )
    assert bad.status_code == 404
