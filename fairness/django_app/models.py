"""Stored face quality components of a campaign's gallery stills and clear videos.

Computing them needs face detection over images and frames (automated/quality.py), so
they are computed once per file and kept here; the fairness reports read them.
"""

from django.db import models
from django.db.models import Q

from evalsite.models import GalleryImage, SourceVideo


class FaceQualityScore(models.Model):
    """Quality components of one gallery still or one clear video (median over frames)."""

    gallery_image = models.OneToOneField(
        GalleryImage, on_delete=models.CASCADE, null=True, blank=True, related_name="face_quality"
    )
    source_video = models.OneToOneField(
        SourceVideo, on_delete=models.CASCADE, null=True, blank=True, related_name="face_quality"
    )
    face_found = models.BooleanField("face found", default=False)
    sharpness = models.FloatField(
        "sharpness (squared grey levels)",
        null=True,
        blank=True,
        help_text="Variance of the Laplacian of the 160 px internal-face crop; higher = sharper.",
    )
    luminance = models.FloatField(
        "luminance mean [0, 1]", null=True, blank=True, help_text="Mean grey level of the crop / 255."
    )
    face_height_px = models.FloatField("face height (pixels)", null=True, blank=True)
    error = models.CharField("error", max_length=300, blank=True, help_text="Why no face was measured.")
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "face quality score"
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(gallery_image__isnull=True) ^ Q(source_video__isnull=True),
                name="face_quality_of_exactly_one_item",
            )
        ]

    def __str__(self) -> str:
        item = self.gallery_image or self.source_video
        return f"quality of {item}"
