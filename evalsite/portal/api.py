"""REST API (Django REST framework), staff only; organizers see only their campaigns.

Every queryset is restricted by ``evalsite.scoping`` (``CampaignScopedViewSetMixin``), so another
campaign's objects answer 404. Payloads hold no media URL except the staff-only,
permission-checked ``download`` endpoints. Reports answer JSON by default and CSV with
``?format=csv``. Routes: evalsite/portal/api_urls.py; list in docs/rest-api.md.
"""

from __future__ import annotations

import json

from django.http import FileResponse
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.reverse import reverse

from automated.django_app.api import campaign_rerun, submission_evaluate, submission_runs
from automated.django_app.frontier_view import automated_fields
from automated.video import VideoError
from evalsite import reports
from evalsite.bodies import BooleanField
from evalsite.forms import OrganizerSubmissionZipForm
from evalsite.models import (
    Campaign,
    GalleryImage,
    Identity,
    SourceVideo,
    Submission,
    SubmissionUpload,
    team_name_note,
)
from evalsite.phases import Refused
from evalsite.renderers import REPORT_RENDERERS, wants_csv
from evalsite.scoping import CampaignScopedViewSetMixin, visible_campaigns
from evalsite.services import create_submission, replace_source_video
from evalsite.validation import ValidationReport
from trials.services import CannotOpenRating, close_rating, open_rating


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
        fields = [
            "id",
            "name",
            "slug",
            "description",
            "action_vocabulary",
            "raters_per_video",
            "foils_per_trial",
            "demographic_attributes",
            "target_absent_share",
            "attention_check_rate",
            "rating_open",
            "created_at",
        ]


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
        fields = [
            "id",
            "campaign",
            "name",
            "identity",
            "identity_code",
            "action",
            "resolution_tier",
            "in_evaluated_subset",
            "frame_count",
            "fps",
            "width",
            "height",
            "duration_s",
            "download",
        ]

    def get_download(self, video):
        return reverse("source-video-download", args=[video.pk], request=self.context["request"])


class SubmissionSerializer(serializers.ModelSerializer):
    team = serializers.CharField(source="team.name")
    campaign = serializers.PrimaryKeyRelatedField(queryset=Campaign.objects.none())
    complete = serializers.BooleanField(source="is_complete", read_only=True)
    phase = serializers.CharField(
        source="phase.name",
        required=False,
        allow_null=True,
        default=None,
        help_text="phase name: the submission is a run of it (numbered; deadline and run quota checked)",
    )
    masked_videos = serializers.SerializerMethodField()
    source_videos = serializers.SerializerMethodField()
    missing_videos = serializers.SerializerMethodField()
    automated = serializers.SerializerMethodField(
        help_text="behaviour score, automated PU score, worst-case re-identification, gender leakage"
    )

    class Meta:
        model = Submission
        fields = [
            "id",
            "campaign",
            "team",
            "name",
            "description",
            "baseline_method",
            "complete",
            "masked_videos",
            "source_videos",
            "missing_videos",
            "automated",
            "created_at",
            "phase",
            "run_number",
            "primary",
        ]
        read_only_fields = ["baseline_method", "created_at", "run_number", "primary"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        request = self.context.get("request")
        if request is not None:
            self.fields["campaign"].queryset = visible_campaigns(request.user)

    def get_masked_videos(self, submission):
        return submission.masked_videos.valid().count()

    def get_source_videos(self, submission):
        return submission.source_videos().count()

    def get_automated(self, submission):
        return automated_fields(submission)

    def get_missing_videos(self, submission):
        return list(submission.missing_source_videos().order_by("name").values_list("name", flat=True))

    def create(self, validated_data):
        try:
            return create_submission(
                validated_data["campaign"],
                validated_data["team"]["name"],
                validated_data["name"],
                description=validated_data.get("description", ""),
                phase=(validated_data.get("phase") or {}).get("name"),
            )
        except Refused as refused:
            raise serializers.ValidationError({"phase": [str(refused)]}, code=refused.code) from refused
        except ValueError as error:
            raise serializers.ValidationError({"name": [str(error)]}, code="duplicate_submission") from error


class SubmissionUploadSerializer(serializers.ModelSerializer):
    class Meta:
        model = SubmissionUpload
        fields = [
            "id",
            "submission",
            "uploaded_at",
            "original_name",
            "replace",
            "status",
            "error_code",
            "error",
            "started_at",
            "finished_at",
            "accepted_count",
            "rejected_count",
            "report",
        ]


# --- views -----------------------------------------------------------------------------


class RatingSerializer(serializers.Serializer):
    open = BooleanField(help_text="true opens rating (after the checks), false closes it")
    submissions = serializers.ListField(
        child=serializers.IntegerField(),
        required=False,
        help_text="ids of the submissions humans rate (the others are not); omitted: earlier choices, "
        "plus every new complete submission. Sent again while open: a late submission is added "
        "(its items are created at once).",
    )


class CampaignViewSet(CampaignScopedViewSetMixin, viewsets.ReadOnlyModelViewSet):
    """Campaigns the user organizes; ``summary`` = one row per submission; ``rating`` opens/closes."""

    serializer_class = CampaignSerializer
    queryset = Campaign.objects.all()

    @action(detail=True, methods=["post"])
    def rating(self, request, pk=None):
        """``{"open": true}``: the checks and effects of the organizer page (``trials.services``)."""
        campaign = self.get_object()
        body = RatingSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        if not body.validated_data["open"]:
            close_rating(campaign)
            return Response({"rating_open": False})
        try:
            result = open_rating(campaign, submissions=body.validated_data.get("submissions"))
        except CannotOpenRating as error:
            return Response(
                {"open": [{"message": problem, "code": "cannot_open_rating"} for problem in error.problems]},
                status=status.HTTP_400_BAD_REQUEST,
            )
        return Response(
            {"rating_open": True, "items_created": result.items_created, "warnings": result.warnings}
        )

    @action(detail=True, methods=["post"], parser_classes=[JSONParser])
    def rerun(self, request, pk=None):
        """Re-run everything (``?phase=<name>``: one phase): ``{"face": {...}, "attack": {...}}`` changes
        the campaign's settings first (automated/django_app/rerun.py)."""
        campaign = self.get_object()
        phase = None
        if request.query_params.get("phase"):
            phase = campaign.phases.filter(name=request.query_params["phase"]).first()
            if phase is None:
                return Response(
                    {"phase": [f"campaign {campaign.slug!r} has no phase {request.query_params['phase']!r}"]},
                    status=400,
                )
        return campaign_rerun(request, campaign, phase)

    @action(detail=True, renderer_classes=REPORT_RENDERERS)
    def summary(self, request, pk=None):
        campaign = self.get_object()
        if wants_csv(request):
            return Response(reports.summary_table_as_csv(campaign))
        submissions = campaign.submissions.order_by("team__name", "name")
        return Response([reports.summary_as_dict(s) for s in submissions])


class IdentityViewSet(CampaignScopedViewSetMixin, _CampaignFilterMixin, viewsets.ReadOnlyModelViewSet):
    serializer_class = IdentitySerializer
    queryset = Identity.objects.prefetch_related("gallery_images")

    def get_queryset(self):
        return self.filter_campaign(super().get_queryset())


class GalleryImageViewSet(CampaignScopedViewSetMixin, viewsets.GenericViewSet):
    """Only ``download``: the still itself, for staff of its campaign."""

    queryset = GalleryImage.objects.all()

    @action(detail=True)
    def download(self, request, pk=None):
        return FileResponse(self.get_object().image.open("rb"))


class SourceVideoViewSet(CampaignScopedViewSetMixin, _CampaignFilterMixin, viewsets.ReadOnlyModelViewSet):
    serializer_class = SourceVideoSerializer
    queryset = SourceVideo.objects.select_related("identity")

    def get_queryset(self):
        return self.filter_campaign(super().get_queryset())

    @action(detail=True)
    def download(self, request, pk=None):
        return FileResponse(self.get_object().file.open("rb"))

    @action(detail=True, methods=["post"], parser_classes=[MultiPartParser, FormParser])
    def replace(self, request, pk=None):
        """Multipart ``file``: a new clear video (``services.replace_source_video``).

        Answers the updated video plus ``flagged``: masked videos that no longer match it
        (code and message each); 400 if the file is not a readable video.
        """
        video = self.get_object()
        new_file = request.FILES.get("file")
        if new_file is None:
            return Response(
                {"file": [{"message": "no file given", "code": "required"}]},
                status=status.HTTP_400_BAD_REQUEST,
            )
        try:
            outcome = replace_source_video(video, new_file, name=new_file.name)
        except VideoError as error:
            return Response(
                {"file": [{"message": str(error), "code": "unreadable_video"}]},
                status=status.HTTP_400_BAD_REQUEST,
            )
        data = dict(self.get_serializer(video).data)
        data["flagged"] = [
            {
                "submission": m.submission_id,
                "masked_video": m.pk,
                "code": m.check_code,
                "message": m.check_message,
            }
            for m in outcome.flagged
        ]
        return Response(data)


class SubmissionViewSet(
    CampaignScopedViewSetMixin, _CampaignFilterMixin, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet
):
    """Submissions with completeness; ``upload`` a zip, ``report``, ``summary``, ``uploads``."""

    serializer_class = SubmissionSerializer
    queryset = Submission.objects.select_related("team", "campaign")

    def get_queryset(self):
        return self.filter_campaign(super().get_queryset())

    def create(self, request, *args, **kwargs):
        """201 with the new submission and ``warnings``: a list of notes on how the request
        was read, as the commands print them (a team name matched ignoring case:
        :func:`evalsite.models.team_name_note`); empty when there is none."""
        response = super().create(request, *args, **kwargs)
        note = team_name_note(str(request.data.get("team", "")), response.data["team"])
        response.data["warnings"] = [note] if note else []
        return response

    @action(detail=True, methods=["post"], parser_classes=[MultiPartParser, FormParser])
    def upload(self, request, pk=None):
        """Multipart ``file`` (zip), optional ``replace`` and ``override_deadline`` (accept after
        the run's phase closed, recorded on the upload).

        The zip is stored with its upload record first, then validated in the background:
        201 with the validation report when done (the embedded setup), 202 with
        ``upload_id`` and ``status`` while a worker has it (poll ``uploads/<upload_id>/``),
        400 with the code when the upload failed as a whole (e.g. ``not_a_zip``).
        """
        submission = self.get_object()
        form = OrganizerSubmissionZipForm(request.data, request.FILES)
        upload = form.receive(submission, uploaded_by=request.user) if form.is_valid() else None
        if upload is None:  # a bad form, or refused by the run's phase (deadline, quota)
            return Response(form.errors.get_json_data(), status=status.HTTP_400_BAD_REQUEST)
        if upload.status == SubmissionUpload.Status.FAILED:
            return Response(
                {
                    **ValidationReport.from_upload(upload).to_dict(),  # every file's row (nothing_accepted)
                    "file": [{"message": upload.error, "code": upload.error_code}],
                    "upload_id": upload.pk,
                    "status": upload.status,
                },
                status=status.HTTP_400_BAD_REQUEST,
            )
        if upload.status != SubmissionUpload.Status.DONE:
            url = reverse("submission-upload-detail", args=[submission.pk, upload.pk], request=request)
            return Response(
                {"upload_id": upload.pk, "status": upload.status, "url": url}, status=status.HTTP_202_ACCEPTED
            )
        return Response(ValidationReport.from_upload(upload).to_dict(), status=status.HTTP_201_CREATED)

    @action(detail=True)
    def uploads(self, request, pk=None):
        uploads = self.get_object().uploads.all()
        return Response(SubmissionUploadSerializer(uploads, many=True).data)

    @action(detail=True, url_path=r"uploads/(?P<upload_id>\d+)", url_name="upload-detail")
    def upload_detail(self, request, pk=None, upload_id=None):
        """One upload with its status and report (poll it after a 202)."""
        upload = self.get_object().uploads.filter(pk=upload_id).first()
        if upload is None:
            return Response({"detail": "no such upload"}, status=status.HTTP_404_NOT_FOUND)
        return Response(SubmissionUploadSerializer(upload).data)

    @action(detail=True, renderer_classes=REPORT_RENDERERS)
    def report(self, request, pk=None):
        """The per-video score report (JSON: ``{"summary", "videos"}``; CSV: the rows)."""
        submission = self.get_object()
        if wants_csv(request):
            return Response(reports.report_as_csv(submission))
        return Response(json.loads(reports.report_as_json(submission)))

    @action(detail=True)
    def summary(self, request, pk=None):
        return Response(reports.summary_as_dict(self.get_object()))

    @action(detail=True, methods=["get", "post"], parser_classes=[JSONParser])
    def runs(self, request, pk=None):
        """Automated runs with progress; ``POST {"kind": "face"|"attack", ...}`` starts one (automated/django_app/api.py)."""
        return submission_runs(request, self.get_object())

    @action(detail=True, methods=["post"], parser_classes=[JSONParser])
    def evaluate(self, request, pk=None):
        """Evaluate everything: face evaluation with behaviour, then the attack (automated/django_app/api.py)."""
        return submission_evaluate(request, self.get_object())
