"""Admin for the catalogue. Organizers see only the campaigns they organize.

Extra pages on a submission (staff, change permission for uploads):
``<id>/upload/`` (zip of masked videos -> per-file validation report) and
``<id>/report/<csv|json>/`` (per-video score report). Stored validation reports download
from ``submissionupload/<id>/download/<csv|json>/``. Media is shown only through the
permission-checked views of ``evalsite/views.py``.
"""

from __future__ import annotations

import copy
import json
import shutil
import tempfile
from pathlib import Path

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db import models
from django.forms.models import construct_instance
from django.db.models import Count
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from automated.video import VideoError, VideoInfo

from . import phases, plugins, services
from .forms import OrganizerSubmissionZipForm
from .models import (
    Phase,
    Campaign,
    GalleryImage,
    Identity,
    MaskedVideo,
    SourceVideo,
    Submission,
    SubmissionUpload,
    Team,
)
from .reports import report_basename
from .scoping import CampaignScopedAdminMixin
from .storage import local_path
from .team_accounts import create_member_account, member_choices
from .validation import report_rows_as_csv

CONTENT_TYPES = {"csv": "text/csv; charset=utf-8", "json": "application/json"}


def download_response(text: str, filename: str, fmt: str) -> HttpResponse:
    """``text`` as an attachment download of type ``fmt`` (csv or json)."""
    response = HttpResponse(text, content_type=CONTENT_TYPES[fmt])
    response["Content-Disposition"] = f'attachment; filename="{filename}.{fmt}"'
    return response


# MEDIA_URL is None on purpose: the default file widgets link to ``file.url``, which
# does not exist. Files are shown through the permission-checked views instead.
PRIVATE_FILES = {
    models.FileField: {"widget": forms.FileInput},
    models.ImageField: {"widget": forms.FileInput},
}


class CampaignScopedAdmin(CampaignScopedAdminMixin, admin.ModelAdmin):
    """Rows, choices and filters of the user's campaigns only (``evalsite/scoping.py``)."""

    formfield_overrides = PRIVATE_FILES


def _thumbnail(image: GalleryImage) -> str:
    if not image.pk:
        return "-"
    url = reverse("evalsite_staff:gallery_image", args=[image.token])
    return format_html('<img src="{}" alt="gallery still" style="max-height:96px">', url)


class CampaignAdminForm(forms.ModelForm):
    """Ticking "Rating open" runs the rating app's checks (``evalsite.plugins.rating``) on the edited values."""

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("rating_open"):
            problems = plugins.rating().blockers(construct_instance(self, copy.copy(self.instance)))
            if problems:
                self.add_error("rating_open", problems)
        return cleaned


@admin.register(Campaign)
class CampaignAdmin(CampaignScopedAdmin):
    form = CampaignAdminForm
    list_display = [
        "name",
        "slug",
        "rating_open",
        "identity_count",
        "video_count",
        "submission_count",
        "leaderboard_visibility",
        "teams_may_upload",
        "created_at",
    ]
    list_filter = ["rating_open", "leaderboard_visibility", "teams_may_upload"]
    search_fields = ["name", "slug", "description"]
    prepopulated_fields = {"slug": ["name"]}
    filter_horizontal = ["organizers"]
    readonly_fields = ["join_code", "created_at"]
    actions = ["open_rating_action", "close_rating_action"]

    def get_actions(self, request):
        """The rating actions, then those the apps registered (``evalsite.plugins.CAMPAIGN_ACTIONS``)."""
        actions = super().get_actions(request)
        for action in plugins.CAMPAIGN_ACTIONS:
            actions[action.__name__] = self.get_action(action)
        return actions

    def save_model(self, request, obj, form, change):
        """Save the settings; rating opens and closes only through the rating app (``evalsite.plugins.rating``)."""
        wanted = obj.rating_open
        was_open = change and Campaign.objects.filter(pk=obj.pk, rating_open=True).exists()
        obj.rating_open = was_open
        super().save_model(request, obj, form, change)
        if wanted:
            self._open(request, obj)
        elif was_open:
            plugins.rating().close(obj)

    def formfield_for_manytomany(self, db_field, request, **kwargs):
        if db_field.name == "organizers":  # organizer pages are staff pages: team accounts are no choice
            kwargs["queryset"] = get_user_model().objects.filter(is_staff=True).order_by("username")
        return super().formfield_for_manytomany(db_field, request, **kwargs)

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        if not change and not request.user.is_superuser:
            form.instance.organizers.add(request.user)  # whoever creates a campaign organizes it

    def _open(self, request, campaign) -> bool:
        rating = plugins.rating()
        try:
            result = rating.open(campaign)
        except rating.refused as error:
            messages.error(request, f"Rating stays closed: {error}")
            return False
        n_warnings = len(result.warnings)
        messages.success(
            request,
            f"{campaign}: rating open ({result.items_created} new items"
            + (f", {n_warnings} warning(s) on the organizer page)." if n_warnings else ")."),
        )
        return True

    @admin.action(description="Open rating (checks the campaign first)", permissions=["change"])
    def open_rating_action(self, request, queryset):
        for campaign in queryset:
            self._open(request, campaign)

    @admin.action(description="Close rating", permissions=["change"])
    def close_rating_action(self, request, queryset):
        for campaign in queryset:
            plugins.rating().close(campaign)
        messages.success(request, f"Rating closed for {queryset.count()} campaign(s).")

    @admin.display(description="identities")
    def identity_count(self, campaign):
        return campaign.identities.count()

    @admin.display(description="source videos")
    def video_count(self, campaign):
        return campaign.source_videos.count()

    @admin.display(description="submissions")
    def submission_count(self, campaign):
        return campaign.submissions.count()


class GalleryImageInline(CampaignScopedAdminMixin, admin.TabularInline):
    model = GalleryImage
    extra = 0
    formfield_overrides = PRIVATE_FILES
    fields = ["thumbnail", "image", "original_name"]
    readonly_fields = ["thumbnail"]

    @admin.display(description="still")
    def thumbnail(self, image):
        return _thumbnail(image)


@admin.register(Identity)
class IdentityAdmin(CampaignScopedAdmin):
    list_display = ["code", "campaign", "attributes", "gallery_count", "video_count"]
    list_filter = ["campaign"]
    search_fields = ["code"]
    inlines = [GalleryImageInline]

    @admin.display(description="gallery images")
    def gallery_count(self, identity):
        return identity.gallery_images.count()

    @admin.display(description="source videos")
    def video_count(self, identity):
        return identity.source_videos.count()


@admin.register(GalleryImage)
class GalleryImageAdmin(CampaignScopedAdmin):
    list_display = ["thumbnail", "identity", "original_name"]
    list_filter = ["identity__campaign"]
    search_fields = ["identity__code", "original_name"]
    readonly_fields = ["thumbnail", "token"]

    @admin.display(description="still")
    def thumbnail(self, image):
        return _thumbnail(image)


def _probe_into(video, field_file) -> None:
    """Fill frame count, fps, size and duration from the stored file."""
    with local_path(field_file) as path:
        info = VideoInfo.from_video_path(path, timeout_s=settings.DEID_FFMPEG_TIMEOUT_S)
    video.frame_count, video.fps, video.duration_s = info.frame_count, info.fps, info.duration_s
    video.width, video.height = info.resolution_wh


class SourceVideoForm(forms.ModelForm):
    """A new clear file must be a readable video (probed before anything is stored)."""

    def clean_file(self):
        upload = self.cleaned_data.get("file")
        if upload is None or "file" not in self.changed_data:
            return upload
        with tempfile.TemporaryDirectory() as tmp:
            local = Path(tmp) / (Path(upload.name).name or "video")  # messages name the uploaded file
            with local.open("wb") as writer:
                shutil.copyfileobj(upload, writer)
            upload.seek(0)
            try:
                VideoInfo.from_video_path(local, timeout_s=settings.DEID_FFMPEG_TIMEOUT_S)
            except VideoError as error:
                raise forms.ValidationError(str(error), code="unreadable_video") from error
        return upload


@admin.register(SourceVideo)
class SourceVideoAdmin(CampaignScopedAdmin):
    """Replacing the clear file (``services.replace_source_video``) also makes a new browser
    copy, re-checks the masked videos of every submission and marks older results stale."""

    form = SourceVideoForm
    list_display = [
        "name",
        "campaign",
        "identity",
        "action",
        "resolution_tier",
        "in_evaluated_subset",
        "attacker_train",
        "frame_count",
        "width",
        "height",
        "duration_s",
    ]
    list_filter = ["campaign", "action", "resolution_tier", "in_evaluated_subset", "attacker_train"]
    search_fields = ["name", "identity__code", "action"]
    readonly_fields = [
        "token",
        "frame_count",
        "fps",
        "width",
        "height",
        "duration_s",
        "file_replaced_at",
        "download",
    ]

    @admin.display(description="file")
    def download(self, video):
        if not video.pk:
            return "-"
        return format_html(
            '<a href="{}">clear video</a>', reverse("evalsite_staff:source_video", args=[video.token])
        )

    def save_model(self, request, obj, form, change):
        if change and "file" in form.changed_data:
            new_file = form.cleaned_data["file"]
            obj.file = SourceVideo.objects.get(pk=obj.pk).file  # the service swaps the files itself
            super().save_model(request, obj, form, change)
            self._replace_file(request, obj, new_file)
            return
        super().save_model(request, obj, form, change)
        if change and "attacker_train" in form.changed_data:
            messages.info(
                request,
                f"{obj.name}: role now {obj.role}; attack and face runs planned before are reported out "
                "of date until re-run (Evaluate everything).",
            )
        if "file" in form.changed_data:
            try:
                _probe_into(obj, obj.file)
            except VideoError as error:
                messages.error(request, f"{obj.name}: {error}")
                return
            obj.save(update_fields=["frame_count", "fps", "width", "height", "duration_s"])

    def _replace_file(self, request, video, new_file) -> None:
        try:
            outcome = services.replace_source_video(video, new_file, name=new_file.name)
        except VideoError as error:
            messages.error(request, f"{video.name}: the clear file was kept: {error}")
            return
        messages.info(
            request,
            f"{video.name}: new clear file and browser copy stored; results computed "
            "before are reported stale until re-run.",
        )
        for masked in outcome.flagged:
            messages.warning(request, f"Masked video flagged ({masked.check_code}): {masked.check_message}")


class TeamAdminForm(forms.ModelForm):
    new_members = forms.CharField(
        label="new member accounts",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=(
            "One new login name per line: each gets a new plain account with a random password "
            "(shown once after saving) for the team pages at /team/. Existing accounts cannot be "
            "added by name; the list above offers the members of your campaigns' teams."
        ),
    )

    class Meta:
        model = Team
        fields = ["campaign", "name", "members"]

    def clean_new_members(self):
        names = list(
            dict.fromkeys(n.strip() for n in self.cleaned_data["new_members"].splitlines() if n.strip())
        )
        taken = set(get_user_model().objects.filter(username__in=names).values_list("username", flat=True))
        if taken:
            raise forms.ValidationError(
                f"These login names are taken, choose others: {', '.join(sorted(taken))}"
            )
        return names


@admin.register(Team)
class TeamAdmin(CampaignScopedAdmin):
    """Teams of the user's campaigns. A team belongs to one campaign (fixed once created).

    Member choices are plain accounts that are already members of a team of the user's
    campaigns (:func:`evalsite.team_accounts.member_choices`); new accounts come from the
    "new member accounts" field or ``manage.py add_team_member``.
    """

    form = TeamAdminForm
    list_display = ["name", "campaign", "submission_count", "member_count"]
    list_filter = ["campaign"]
    ordering = ["campaign", "name"]
    search_fields = ["name"]
    filter_horizontal = ["members"]

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .annotate(
                n_submissions=Count("submissions", distinct=True), n_members=Count("members", distinct=True)
            )
        )

    @admin.display(description="submissions", ordering="n_submissions")
    def submission_count(self, team):
        return team.n_submissions

    @admin.display(description="members", ordering="n_members")
    def member_count(self, team):
        return team.n_members

    def get_readonly_fields(self, request, obj=None):
        # Its submissions are in its campaign: moving the team would split them from it. A team
        # of no campaign (from before teams were per campaign; superusers only) may get one.
        return ["campaign"] if obj is not None and obj.campaign_id is not None else []

    def formfield_for_manytomany(self, db_field, request, **kwargs):
        if db_field.name == "members":
            kwargs["queryset"] = member_choices(request.user).order_by("username")
        return super().formfield_for_manytomany(db_field, request, **kwargs)

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        for username in form.cleaned_data.get("new_members", []):
            try:
                user, password = create_member_account(form.instance, username)
            except ValueError as error:
                messages.error(request, str(error))
                continue
            messages.success(
                request,
                f"New member account {user.username} (password: {password}, shown once; "
                "log in at /team/login/).",
            )


class MaskedVideoInline(CampaignScopedAdminMixin, admin.TabularInline):
    model = MaskedVideo
    extra = 0
    can_delete = False
    fields = ["source_video", "frame_count", "width", "height", "duration_s", "uploaded_at", "check_code"]
    readonly_fields = fields
    verbose_name_plural = "current masked videos"

    def has_add_permission(self, request, obj=None):
        return False  # masked videos arrive only through the validated upload


class SubmissionUploadInline(CampaignScopedAdminMixin, admin.TabularInline):
    model = SubmissionUpload
    extra = 0
    can_delete = False
    fields = ["link", "uploaded_at", "uploaded_by", "replace", "status", "accepted_count", "rejected_count"]
    readonly_fields = fields

    @admin.display(description="upload")
    def link(self, upload):
        return format_html(
            '<a href="{}">{}</a>',
            reverse("admin:evalsite_submissionupload_change", args=[upload.pk]),
            upload.original_name or upload.pk,
        )

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Submission)
class SubmissionAdmin(CampaignScopedAdmin):
    list_display = [
        "__str__",
        "campaign",
        "team",
        "phase",
        "run_number",
        "primary",
        "baseline_method",
        "completeness",
        "created_at",
    ]
    list_filter = ["campaign", "team", "phase", "primary", "baseline_method"]
    search_fields = ["name", "team__name", "description"]
    readonly_fields = ["completeness", "missing", "replaced", "tools", "created_at", "run_number", "primary"]
    inlines = [SubmissionUploadInline, MaskedVideoInline]
    # The apps' actions ("Run face evaluation", "Run attack suite": automated/django_app/admin_actions.py),
    # registered in their ready(): the registry's own list, so later registrations show.
    actions = plugins.SUBMISSION_ACTIONS

    def get_readonly_fields(self, request, obj=None):
        """On change, the phase is fixed, and so are the team and campaign of a run (a
        submission in a phase): a run is numbered, made primary and checked against the
        quota and deadline when it enters its phase (``evalsite.phases.create_run``);
        moving it would bypass those and clash with the other runs' numbers and primary
        flag (a 500). Enter a new run instead."""
        fields = list(super().get_readonly_fields(request, obj))
        if obj is not None:
            fields.append("phase")
            if obj.phase_id is not None:
                fields += ["campaign", "team"]
        return fields

    def save_model(self, request, obj, form, change):
        """A new submission in a phase is a run: numbered, primary if the team's first, quota and
        deadline checked (``evalsite.phases.create_run``); a refusal is shown as a form error."""
        if change or obj.phase_id is None:
            super().save_model(request, obj, form, change)
            return
        pdf = form.cleaned_data.get("description_pdf")
        run = phases.create_run(obj.phase, obj.team, obj.name, description=obj.description, pdf=pdf or None)
        obj.pk, obj.run_number, obj.primary, obj.created_at = (
            run.pk,
            run.run_number,
            run.primary,
            run.created_at,
        )
        obj._state.adding = False

    def get_form(self, request, obj=None, **kwargs):
        form = super().get_form(request, obj, **kwargs)

        class RunForm(form):
            def clean(self):
                cleaned = super().clean()
                pdf = cleaned.get("description_pdf")
                try:
                    if pdf and hasattr(pdf, "content_type"):  # a new upload (not the stored file)
                        phases.check_description_pdf(pdf)
                    phase, team = cleaned.get("phase"), cleaned.get("team")
                    if phase is not None and team is not None and self.instance.pk is None:
                        phases.check_new_run(phase, team)
                except phases.Refused as refused:
                    field = "description_pdf" if refused.code in ("not_a_pdf", "pdf_too_large") else "phase"
                    self.add_error(field, str(refused))
                return cleaned

        return RunForm

    @admin.action(description="Make primary run of its team and phase", permissions=["change"])
    def make_primary(self, request, queryset):
        for run in queryset.exclude(phase=None):
            phases.set_primary(run)
        messages.success(request, f"{queryset.exclude(phase=None).count()} run(s) made primary.")

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions["make_primary"] = self.get_action("make_primary")
        return actions

    @admin.display(description="complete")
    def completeness(self, submission):
        if not submission.pk:
            return "-"
        done = MaskedVideo.objects.filter(submission=submission).valid().count()
        total = submission.source_videos().count()
        state = "complete" if submission.is_complete else "incomplete"
        return f"{state}: {done}/{total} source videos have a valid masked video"

    @admin.display(description="missing source videos")
    def missing(self, submission):
        if not submission.pk:
            return "-"
        return ", ".join(submission.missing_source_videos().values_list("name", flat=True)) or "none"

    @admin.display(description="replaced masked videos (kept with their ratings and scores)")
    def replaced(self, submission):
        old = MaskedVideo.all_versions.filter(submission=submission, current=False).select_related(
            "source_video"
        )
        rows = [
            (m.source_video.name, f"{m.uploaded_at:%Y-%m-%d %H:%M}", f"{m.superseded_at:%Y-%m-%d %H:%M}")
            for m in old.order_by("source_video__name", "superseded_at")
        ]
        if not rows:
            return "none"
        return format_html_join(", ", "{} (uploaded {}, replaced {})", rows)

    @admin.display(description="upload and reports")
    def tools(self, submission):
        if not submission.pk:
            return "save the submission first"
        links = [
            (
                reverse("admin:evalsite_submission_upload", args=[submission.pk]),
                "Upload zip of masked videos",
            ),
            # The HTML report (the portal's page, each figure with its meaning) beside the downloads.
            (reverse("leaderboard:report", args=[submission.pk]), "Report page"),
            (reverse("admin:evalsite_submission_report", args=[submission.pk, "csv"]), "Report CSV"),
            (reverse("admin:evalsite_submission_report", args=[submission.pk, "json"]), "Report JSON"),
        ]
        return format_html_join(" | ", '<a href="{}">{}</a>', links)

    def get_urls(self):
        view = self.admin_site.admin_view
        return [
            path("<path:object_id>/upload/", view(self.upload_view), name="evalsite_submission_upload"),
            path(
                "<path:object_id>/report/<str:fmt>/",
                view(self.report_view),
                name="evalsite_submission_report",
            ),
            *super().get_urls(),
        ]

    def _submission_or_404(self, request, object_id) -> Submission:
        submission = self.get_object(request, object_id)
        if submission is None:
            raise Http404("no such submission")
        return submission

    def upload_view(self, request, object_id):
        """Form for a zip of masked videos; redirects to the stored validation report."""
        submission = self._submission_or_404(request, object_id)
        if not self.has_change_permission(request, submission):
            raise PermissionDenied
        form = OrganizerSubmissionZipForm(request.POST or None, request.FILES or None)
        upload = None
        if request.method == "POST" and form.is_valid():
            upload = form.receive(submission, uploaded_by=request.user)
        if upload is not None:
            if upload.status == SubmissionUpload.Status.FAILED:
                messages.error(request, f"{upload.error_code}: {upload.error}")
            elif upload.status == SubmissionUpload.Status.DONE:
                level = messages.SUCCESS if not upload.rejected_count else messages.WARNING
                messages.add_message(
                    request,
                    level,
                    f"{upload.accepted_count} file(s) accepted, "
                    f"{upload.rejected_count} rejected; see the report below.",
                )
            else:
                messages.info(
                    request,
                    f"Upload stored and {upload.status}: a worker validates it; "
                    "reload this page for the report.",
                )
            return HttpResponseRedirect(reverse("admin:evalsite_submissionupload_change", args=[upload.pk]))
        context = {
            **self.admin_site.each_context(request),
            "title": f"Upload masked videos: {submission}",
            "opts": self.model._meta,
            "original": submission,
            "form": form,
            "source_names": list(submission.source_videos().values_list("name", flat=True)),
        }
        return TemplateResponse(request, "admin/evalsite/submission/upload.html", context)

    def report_view(self, request, object_id, fmt):
        """Download the per-video score report as CSV or JSON."""
        submission = self._submission_or_404(request, object_id)
        if fmt not in services.REPORT_FORMATS or not self.has_view_permission(request, submission):
            raise Http404("unknown report format")
        return download_response(services.render_report(submission, fmt), report_basename(submission), fmt)


@admin.register(MaskedVideo)
class MaskedVideoAdmin(CampaignScopedAdmin):
    list_display = [
        "source_video",
        "submission",
        "frame_count",
        "width",
        "height",
        "duration_s",
        "uploaded_at",
        "check_code",
    ]
    fields = [
        "submission",
        "source_video",
        "download",
        "token",
        "frame_count",
        "fps",
        "width",
        "height",
        "duration_s",
        "uploaded_at",
        "upload",
        "check_code",
        "check_message",
    ]
    list_filter = ["submission__campaign", "submission"]
    search_fields = ["source_video__name", "submission__name", "submission__team__name"]
    readonly_fields = [
        "submission",
        "source_video",
        "token",
        "frame_count",
        "fps",
        "width",
        "height",
        "duration_s",
        "uploaded_at",
        "download",
        "upload",
        "check_code",
        "check_message",
    ]

    @admin.display(description="file")
    def download(self, video):
        return format_html(
            '<a href="{}">masked video</a>', reverse("evalsite_staff:masked_video", args=[video.token])
        )

    def has_add_permission(self, request):
        return False  # only through the validated upload


@admin.register(Phase)
class PhaseAdmin(CampaignScopedAdmin):
    """Phases of a campaign (``evalsite.phases``): video subset, times, quotas, result visibility."""

    list_display = [
        "name",
        "campaign",
        "opens_at",
        "closes_at",
        "max_runs",
        "max_uploads",
        "max_uploads_per_day",
        "results_visibility",
        "results_release_at",
    ]
    list_filter = ["campaign", "results_visibility"]
    filter_horizontal = ["source_videos"]


@admin.register(SubmissionUpload)
class SubmissionUploadAdmin(CampaignScopedAdmin):
    list_display = [
        "__str__",
        "submission",
        "uploaded_by",
        "status",
        "accepted_count",
        "rejected_count",
        "replace",
    ]
    list_filter = ["submission__campaign", "status", "replace", "late"]
    search_fields = ["submission__name", "submission__team__name", "original_name"]
    fields = [
        "submission",
        "original_name",
        "uploaded_by",
        "uploaded_at",
        "late",
        "deadline_overridden_by",
        "replace",
        "progress",
        "accepted_count",
        "rejected_count",
        "completeness",
        "file_table",
        "downloads",
    ]
    readonly_fields = fields

    @admin.display(description="status")
    def progress(self, upload):
        if upload.status == SubmissionUpload.Status.FAILED:
            return f"failed ({upload.error_code}): {upload.error}"
        if upload.status == SubmissionUpload.Status.PROCESSING:
            return (
                f"processing since {upload.started_at:%Y-%m-%d %H:%M:%S}: "
                f"{len(upload.report.get('files', []))} file(s) checked so far (if no worker is on it any "
                f"more, resume it: manage.py upload_submission --resume {upload.pk})"
            )
        if upload.status == SubmissionUpload.Status.QUEUED:
            return "queued: waiting for a worker"
        return f"done at {upload.finished_at:%Y-%m-%d %H:%M:%S}" if upload.finished_at else "done"

    @admin.display(description="submission now")
    def completeness(self, upload):
        if upload.status != SubmissionUpload.Status.DONE and not upload.report.get("files"):
            return "-"
        missing = upload.report.get("missing_videos", [])
        if not missing:
            return "complete: every source video has a valid masked video"
        return f"incomplete: {len(missing)} source video(s) missing: {', '.join(missing)}"

    @admin.display(description="per-file validation report")
    def file_table(self, upload):
        rows = [(r["file"], r["status"], r["code"], r["message"]) for r in upload.report.get("files", [])]
        body = format_html_join(
            "", "<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td></tr>", rows
        )
        return format_html(
            "<table><thead><tr><th>file</th><th>status</th><th>code</th><th>message</th></tr></thead>"
            "<tbody>{}</tbody></table>",
            body,
        )

    @admin.display(description="download report")
    def downloads(self, upload):
        links = [
            (reverse("admin:evalsite_submissionupload_download", args=[upload.pk, f]), f.upper())
            for f in ("csv", "json")
        ]
        return format_html_join(" | ", '<a href="{}">{}</a>', links)

    def get_urls(self):
        return [
            path(
                "<path:object_id>/download/<str:fmt>/",
                self.admin_site.admin_view(self.download_view),
                name="evalsite_submissionupload_download",
            ),
            *super().get_urls(),
        ]

    def download_view(self, request, object_id, fmt):
        upload = self.get_object(request, object_id)
        if upload is None or fmt not in CONTENT_TYPES or not self.has_view_permission(request, upload):
            raise Http404("no such upload report")
        text = report_rows_as_csv(upload.report) if fmt == "csv" else json.dumps(upload.report, indent=2)
        return download_response(text, f"upload-{upload.pk}-validation", fmt)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
