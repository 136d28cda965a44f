"""REST API (Django REST framework), staff only; organizers see only their campaigns.

Every queryset is restricted to ``Campaign.objects.visible_to(user)``, so another
campaign's objects answer 404. Payloads hold no media URL except the staff-only,
permission-checked ``download`` endpoints. Reports answer JSON by default and CSV with
``?format=csv``. Routes: evalsite/api_urls.py; list in README.md ("REST API").
"""
from __future__ import annotations

import json
import shutil
import tempfile

from django.http import FileResponse
from rest_framework import mixins, renderers, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.reverse import reverse

from . import reports
from .forms import SubmissionZipForm
from .models import Campaign, GalleryImage, Identity, SourceVideo, Submission, SubmissionUpload
from .services import create_submission
from .validation import UploadError, ingest_submission_zip


class CSVTextRenderer(renderers.BaseRenderer):
    """Pass CSV text through (``?format=csv``); other data (errors) as JSON text."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return data if isinstance(data, str) else json.dumps(data)


REPORT_RENDERERS = [renderers.JSONRenderer, CSVTextRenderer]


def _wants_csv(request) -> bool:
    return getattr(request.accepted_renderer, "format", "") == "csv"


def _visible_campaigns(request):
    return Campaign.objects.visible_to(request.user)


class _CampaignFilterMixin:
    """``?campaign=<id or slug>`` narrows a list to one campaign."""

    campaign_path = "campaign"

    def filter_campaign(self, queryset):
        wanted = self.request.query_params.get("campaign")
        if not wanted:
            return queryset
        key = "pk" if wanted.isdigit() else "slug"
        return queryset.filter(**{f"{self.campaign_path}__{key}": wanted})


# --- serializers -----------------------------------------------------------------------

class CampaignSerializer(serializers.ModelSerializer):
    class Meta:
        model = Campaign
        fields = ["id", "name", "slug", "description", "action_vocabulary", "raters_per_video",
                  "foils_per_trial", "demographic_attributes", "target_absent_share",
                  "attention_check_rate", "rating_open", "created_at"]


class IdentitySerializer(serializers.ModelSerializer):
    gallery_images = serializers.SerializerMethodField()

    class Meta:
        model = Identity
        fields = ["id", "campaign", "code", "attributes", "gallery_images"]

    def get_gallery_images(self, identity):
        request = self.context["request"]
        return [
            {"id": image.pk, "download": reverse("gallery-image-download", args=[image.pk], request=request)}
            for image in identity.gallery_images.all()
        ]


class SourceVideoSerializer(serializers.ModelSerializer):
    identity_code = serializers.CharField(source="identity.code", read_only=True)
    download = serializers.SerializerMethodField()

    class Meta:
        model = SourceVideo
        fields = ["id", "campaign", "name", "identity", "identity_code", "action", "resolution_tier",
                  "in_evaluated_subset", "frame_count", "fps", "width", "height", "duration_s", "download"]

    def get_download(self, video):
        return reverse("source-video-download", args=[video.pk], request=self.context["request"])


class SubmissionSerializer(serializers.ModelSerializer):
    team = serializers.CharField(source="team.name")
    campaign = serializers.PrimaryKeyRelatedField(queryset=Campaign.objects.none())
    complete = serializers.BooleanField(source="is_complete", read_only=True)
    masked_videos = serializers.SerializerMethodField()
    source_videos = serializers.SerializerMethodField()
    missing_videos = serializers.SerializerMethodField()

    class Meta:
        model = Submission
        fields = ["id", "campaign", "team", "name", "description", "baseline_method", "complete",
                  "masked_videos", "source_videos", "missing_videos", "created_at"]
        read_only_fields = ["baseline_method", "created_at"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        request = self.context.get("request")
        if request is not None:
            self.fields["campaign"].queryset = _visible_campaigns(request)

    def get_masked_videos(self, submission):
        return submission.masked_videos.count()

    def get_source_videos(self, submission):
        return submission.campaign.source_videos.count()

    def get_missing_videos(self, submission):
        return list(submission.missing_source_videos().order_by("name").values_list("name", flat=True))

    def create(self, validated_data):
        try:
            return create_submission(
                validated_data["campaign"], validated_data["team"]["name"], validated_data["name"],
                description=validated_data.get("description", ""),
            )
        except ValueError as error:
            raise serializers.ValidationError({"name": [str(error)]}, code="duplicate_submission") from error


class SubmissionUploadSerializer(serializers.ModelSerializer):
    class Meta:
        model = SubmissionUpload
        fields = ["id", "submission", "uploaded_at", "original_name", "replace", "accepted_count",
                  "rejected_count", "report"]


# --- views -----------------------------------------------------------------------------

class CampaignViewSet(viewsets.ReadOnlyModelViewSet):
    """Campaigns the user organizes; ``summary`` = one row per submission."""

    serializer_class = CampaignSerializer

    def get_queryset(self):
        return _visible_campaigns(self.request)

    @action(detail=True, renderer_classes=REPORT_RENDERERS)
    def summary(self, request, pk=None):
        campaign = self.get_object()
        if _wants_csv(request):
            return Response(reports.summary_table_as_csv(campaign))
        submissions = campaign.submissions.order_by("team__name", "name")
        return Response([reports.summary_as_dict(s) for s in submissions])


class IdentityViewSet(_CampaignFilterMixin, viewsets.ReadOnlyModelViewSet):
    serializer_class = IdentitySerializer

    def get_queryset(self):
        queryset = Identity.objects.filter(campaign__in=_visible_campaigns(self.request))
        return self.filter_campaign(queryset.prefetch_related("gallery_images"))


class GalleryImageViewSet(viewsets.GenericViewSet):
    """Only ``download``: the still itself, for staff of its campaign."""

    def get_queryset(self):
        return GalleryImage.objects.filter(identity__campaign__in=_visible_campaigns(self.request))

    @action(detail=True)
    def download(self, request, pk=None):
        return FileResponse(self.get_object().image.open("rb"))


class SourceVideoViewSet(_CampaignFilterMixin, viewsets.ReadOnlyModelViewSet):
    serializer_class = SourceVideoSerializer

    def get_queryset(self):
        queryset = SourceVideo.objects.filter(campaign__in=_visible_campaigns(self.request))
        return self.filter_campaign(queryset.select_related("identity"))

    @action(detail=True)
    def download(self, request, pk=None):
        return FileResponse(self.get_object().file.open("rb"))


class SubmissionViewSet(_CampaignFilterMixin, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Submissions with completeness; ``upload`` a zip, ``report``, ``summary``, ``uploads``."""

    serializer_class = SubmissionSerializer

    def get_queryset(self):
        queryset = Submission.objects.filter(campaign__in=_visible_campaigns(self.request))
        return self.filter_campaign(queryset.select_related("team", "campaign"))

    @action(detail=True, methods=["post"], parser_classes=[MultiPartParser, FormParser])
    def upload(self, request, pk=None):
        """Multipart ``file`` (zip) and optional ``replace``; answers the validation report."""
        submission = self.get_object()
        form = SubmissionZipForm(request.data, request.FILES)
        if not form.is_valid():
            return Response(form.errors.get_json_data(), status=status.HTTP_400_BAD_REQUEST)
        upload = form.cleaned_data["file"]
        with tempfile.NamedTemporaryFile(suffix=".zip") as local:
            shutil.copyfileobj(upload, local)
            local.flush()
            try:
                report = ingest_submission_zip(
                    submission, local.name, replace=form.cleaned_data["replace"],
                    uploaded_by=request.user, original_name=upload.name,
                )
            except UploadError as error:
                return Response({"file": [{"message": str(error), "code": error.code}]},
                                status=status.HTTP_400_BAD_REQUEST)
        return Response(report.to_dict(), status=status.HTTP_201_CREATED)

    @action(detail=True)
    def uploads(self, request, pk=None):
        uploads = self.get_object().uploads.all()
        return Response(SubmissionUploadSerializer(uploads, many=True).data)

    @action(detail=True, renderer_classes=REPORT_RENDERERS)
    def report(self, request, pk=None):
        """The per-video score report (JSON: ``{"summary", "videos"}``; CSV: the rows)."""
        submission = self.get_object()
        if _wants_csv(request):
            return Response(reports.report_as_csv(submission))
        return Response(json.loads(reports.report_as_json(submission)))

    @action(detail=True)
    def summary(self, request, pk=None):
        return Response(reports.summary_as_dict(self.get_object()))
