"""The catalogue: campaigns, identities, gallery faces, clear videos, teams, submissions.

Terms follow ``../shared/DESIGN.md`` (domain model). Stored file names are opaque
(random tokens), never identity codes or source-video names, so a file name can never
reveal the answer of a trial (DESIGN.md, security stance).
"""

import secrets
from pathlib import PurePosixPath

from django.apps import apps
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.db.models import Q
from django.db.models.signals import post_delete, post_save, pre_save
from django.dispatch import receiver


def opaque_token() -> str:
    """Return a random URL-safe token (22 characters, 128 bits)."""
    return secrets.token_urlsafe(16)


def _opaque_name(folder: str, filename: str) -> str:
    return f"{folder}/{opaque_token()}{PurePosixPath(filename).suffix.lower()}"


def gallery_upload_to(instance, filename: str) -> str:
    return _opaque_name("gallery", filename)


def source_video_upload_to(instance, filename: str) -> str:
    return _opaque_name("source", filename)


def _masked_folder(instance) -> str:
    # Files stored by an upload sit in its folder, so leftovers of a crashed upload are
    # found (and removed) by the upload that resumes it.
    upload_id = getattr(instance, "upload_id", None)
    return f"masked/u{upload_id}" if upload_id else "masked"


def masked_video_upload_to(instance, filename: str) -> str:
    return _opaque_name(_masked_folder(instance), filename)


def web_video_upload_to(instance, filename: str) -> str:
    if getattr(instance, "upload_id", None):  # a masked video from an upload: in its folder too
        return _opaque_name(_masked_folder(instance), filename)
    return _opaque_name("web", filename)


def description_pdf_upload_to(instance, filename: str) -> str:
    return _opaque_name("descriptions", filename)


def upload_zip_upload_to(instance, filename: str) -> str:
    return _opaque_name(f"uploads/u{instance.pk}", filename)


def default_demographic_attributes() -> list[str]:
    return ["gender", "race", "age_band"]


class CampaignQuerySet(models.QuerySet):
    def visible_to(self, user):
        """Campaigns an organizer may see: all for superusers, else their own."""
        if user.is_superuser:
            return self
        return self.filter(organizers=user)


class LeaderboardVisibility(models.TextChoices):
    """How much of a campaign's leaderboard its teams see (the organizer's choice)."""

    HIDDEN = "hidden", "hidden from teams"
    NAMED = "named", "published, teams named"
    ANONYMISED = "anonymised", "published, other teams anonymised"


class Campaign(models.Model):
    """One evaluation edition (MediaEval 2021 task overview, seeds/002, section 4)."""

    name = models.CharField("name", max_length=200, unique=True)
    slug = models.SlugField("slug", max_length=80, unique=True)
    description = models.TextField("description", blank=True)
    action_vocabulary = models.JSONField(
        "action vocabulary",
        default=list,
        blank=True,
        help_text='Actions raters choose from, e.g. ["talking", "coughing", "eating"].',
    )
    raters_per_video = models.PositiveSmallIntegerField(
        "raters per video",
        default=10,
        help_text="Completed responses wanted per (video, condition); the task used >= 10.",
    )
    foils_per_trial = models.PositiveSmallIntegerField(
        "foils per identity trial", default=4, help_text="4 foils + the target = 5 gallery faces."
    )
    demographic_attributes = models.JSONField(
        "demographic attributes",
        default=default_demographic_attributes,
        blank=True,
        help_text='Identity attributes foils are matched on, e.g. ["gender", "race", "age_band"].',
    )
    target_absent_share = models.FloatField(
        "target-absent share",
        default=0.2,
        help_text="Share of identity trials whose true identity is not among the faces, in [0, 1].",
    )
    attention_check_rate = models.FloatField(
        "attention-check rate", default=0.1, help_text="Catch trials per evaluated trial, in [0, 1]."
    )
    consent_text = models.TextField("consent text", blank=True)
    join_code = models.CharField(
        "join code",
        max_length=40,
        unique=True,
        default=opaque_token,
        help_text="Opaque code in the campaign's rater link.",
    )
    rating_open = models.BooleanField("rating open", default=False)
    completion_url = models.URLField(
        "completion redirect URL",
        max_length=500,
        blank=True,
        help_text="Where a rater goes after the last trial, e.g. the crowd platform's completion "
        "link; {completion_code} in it is replaced by the rater's code. Empty: the code is shown only.",
    )
    screen_out_url = models.URLField(
        "screen-out redirect URL",
        max_length=500,
        blank=True,
        help_text="Where a rater the device gate screens out goes (the crowd platform's screen-out link); "
        "{screen_out_code} in it is replaced by the campaign's screen-out code. Empty: the code is shown only.",
    )
    screen_out_code = models.CharField(
        "screen-out code",
        max_length=40,
        default=opaque_token,
        help_text="The code a screened-out rater gets (another than any completion code).",
    )
    desktop_only = models.BooleanField(
        "desktop browsers only",
        default=False,
        help_text="Screen out raters on a phone or tablet (their browser says so) before the first trial.",
    )
    min_screen_width = models.PositiveSmallIntegerField(
        "minimum screen width (CSS pixels)",
        null=True,
        blank=True,
        help_text="Smaller screens are screened out.",
    )
    min_screen_height = models.PositiveSmallIntegerField(
        "minimum screen height (CSS pixels)", null=True, blank=True
    )
    organizer_contact = models.CharField(
        "organizer contact",
        max_length=200,
        blank=True,
        help_text="How raters reach the organizer (e-mail address or platform message), shown on "
        "error pages such as a session opened in another browser.",
    )
    evaluation_options = models.JSONField(
        "automated evaluation settings",
        default=dict,
        blank=True,
        help_text='The settings every run is (re-)evaluated with, per part, e.g. {"face": {"stride": 5}, '
        '"attack": {"recognizers": ["lbph"]}}; results computed with other values of these are reported '
        "stale. Set by re-running the campaign (manage.py rerun_campaign, API).",
    )
    bonus_per_correct_check = models.DecimalField(
        "bonus per correct attention check",
        max_digits=6,
        decimal_places=2,
        default=0,
        help_text="The crowd bonus rule: this amount (platform currency) per attention check a rater "
        "answered correctly, paid to approved raters (trials.crowd); 0: no bonus.",
    )
    organizers = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="campaigns")
    leaderboard_visibility = models.CharField(
        "leaderboard for teams",
        max_length=16,
        choices=LeaderboardVisibility.choices,
        default=LeaderboardVisibility.HIDDEN,
        help_text="What team members see of the leaderboard on their team page: nothing (hidden), every "
        "row with team names (named), or the other teams' rows under neutral labels (anonymised); "
        "their own team is always named.",
    )
    teams_may_upload = models.BooleanField(
        "teams may upload",
        default=False,
        help_text="Team members may upload zips of masked videos to their own submissions on their team "
        "page (the same validation and per-file report as the admin).",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = CampaignQuerySet.as_manager()

    class Meta:
        verbose_name = "campaign"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self):
        for field in ("target_absent_share", "attention_check_rate"):
            value = getattr(self, field)
            if not 0.0 <= value <= 1.0:
                raise ValidationError({field: f"must be in [0, 1], got {value}"}, code="out_of_range")
        problem = digit_slug_problem(self.slug)
        if problem:
            raise ValidationError({"slug": problem}, code="digit_slug")


def digit_slug_problem(slug: str) -> str | None:
    """Why a campaign may not have ``slug``, or None: a slug made only of digits.

    The commands take a campaign by id or slug (``evalsite.management.campaigns``), so a
    slug such as ``"2021"`` would be hidden by the campaign whose id is 2021.
    """
    if slug and slug.isdigit():
        return (
            f"slug {slug!r} is made only of digits, which the commands read as a campaign id: "
            f"add a letter, e.g. 'campaign-{slug}'"
        )
    return None


class Identity(models.Model):
    """A person (subject), known only by a pseudonymous code and demographic attributes."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="identities")
    code = models.CharField("pseudonymous code", max_length=64, help_text="Never a real name, e.g. ID017.")
    attributes = models.JSONField(
        "demographic attributes",
        default=dict,
        blank=True,
        help_text='e.g. {"gender": "female", "race": "white", "age_band": "30-44"}',
    )
    practice = models.BooleanField(
        "practice identity",
        default=False,
        help_text="Shown only in practice trials (its faces and videos), never in evaluated ones, "
        "so practice feedback reveals no answer of the study.",
    )

    class Meta:
        verbose_name = "identity"
        verbose_name_plural = "identities"
        ordering = ["campaign", "code"]
        constraints = [models.UniqueConstraint(fields=["campaign", "code"], name="unique_identity_code")]

    def __str__(self) -> str:
        return self.code


class GalleryImage(models.Model):
    """A still of an identity, cropped to the internal face (seeds/002, section 4.2)."""

    identity = models.ForeignKey(Identity, on_delete=models.CASCADE, related_name="gallery_images")
    image = models.ImageField("image", upload_to=gallery_upload_to)
    original_name = models.CharField("original file name", max_length=255, blank=True)
    token = models.CharField(max_length=40, unique=True, default=opaque_token, editable=False)

    class Meta:
        verbose_name = "gallery image"
        ordering = ["identity", "id"]

    def __str__(self) -> str:
        return f"{self.identity.code}: {self.original_name or self.image.name}"


class ResolutionTier(models.TextChoices):
    HIGH = "high", "high"
    LOW = "low", "low"


class VideoMetadataMixin(models.Model):
    """Probed properties of a stored video file (filled by validation)."""

    frame_count = models.PositiveIntegerField("frames", null=True, blank=True)
    fps = models.FloatField("frames per second", null=True, blank=True)
    width = models.PositiveIntegerField("width (pixels)", null=True, blank=True)
    height = models.PositiveIntegerField("height (pixels)", null=True, blank=True)
    duration_s = models.FloatField("duration (s)", null=True, blank=True)
    web_file = models.FileField(
        "browser-playable copy",
        upload_to=web_video_upload_to,
        blank=True,
        help_text="H.264 MP4 transcoded once for raters' browsers.",
    )

    class Meta:
        abstract = True


def delete_stored(field_files) -> None:
    """Delete stored files (FieldFiles) from their storage, e.g. after a failed save."""
    for field_file in field_files:
        if field_file:
            field_file.storage.delete(field_file.name)


class SourceVideo(VideoMetadataMixin):
    """A clear (unmasked) video of one identity performing an action."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="source_videos")
    identity = models.ForeignKey(Identity, on_delete=models.PROTECT, related_name="source_videos")
    name = models.CharField(
        "video name",
        max_length=200,
        help_text="File stem that masked videos must be named after, e.g. 'clip_0042'.",
    )
    file = models.FileField("clear video", upload_to=source_video_upload_to)
    action = models.CharField("action label", max_length=100, blank=True)
    resolution_tier = models.CharField(
        "resolution tier", max_length=8, choices=ResolutionTier.choices, default=ResolutionTier.LOW
    )
    in_evaluated_subset = models.BooleanField(
        "in evaluated subset",
        default=True,
        help_text="Videos rated by humans; the same subset for every team (MediaEval 2021 task overview, "
        "section 4.2).",
    )
    practice = models.BooleanField(
        "practice material",
        default=False,
        help_text="Shown only in practice trials (with feedback); never in the evaluated subset.",
    )
    attacker_train = models.BooleanField(
        "attacker training material",
        default=False,
        help_text="The automated attacker's own labelled video of this identity: teams mask it too, the "
        "attack trains on it and never tests it, raters never see it (not evaluated, not practice).",
    )
    token = models.CharField(max_length=40, unique=True, default=opaque_token, editable=False)
    file_replaced_at = models.DateTimeField(
        "clear file replaced at",
        null=True,
        blank=True,
        editable=False,
        help_text="Last replacement of the clear file: results computed before it are stale.",
    )

    class Meta:
        verbose_name = "source video"
        ordering = ["campaign", "name"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "name"], name="unique_source_video_name"),
            models.CheckConstraint(
                condition=~models.Q(attacker_train=True)
                | models.Q(practice=False, in_evaluated_subset=False),
                name="attacker_video_neither_evaluated_nor_practice",
                violation_error_message="An attacker training video is neither in the evaluated subset "
                "nor practice material (raters never see it).",
            ),
        ]

    @property
    def role(self) -> str:
        """``"attacker_train"``, ``"practice"`` or ``"evaluated"`` (the ``role`` column of videos.csv)."""
        if self.attacker_train:
            return "attacker_train"
        return "practice" if self.practice else "evaluated"

    def __str__(self) -> str:
        return self.name

    def rater_responses(self) -> int:
        """Number of rater responses to trials that showed this video (any condition, practice too).

        0 when the trials app is not installed.
        """
        if not apps.is_installed("trials") or self.pk is None:
            return 0
        response = apps.get_model("trials", "Response")
        shown = Q(trial__source_video=self) | Q(trial__item__source_video=self)
        return response.objects.filter(shown).distinct().count()

    def clean(self) -> None:
        """Refuse making an evaluated or practice video that raters answered about attacker material.

        Raters have then seen the attacker's own training clip, and their responses to it
        would drop out of (or skew) the scores: the attacker's material must be unseen.
        The reverse (attacker material made evaluated) is allowed; the attack run planned
        before is then reported out of date (``evalsite.staleness``).

        Raises
        ------
        ValidationError
            On ``attacker_train``, naming the number of responses and the way out (a new
            clip of this identity as attacker material).
        """
        super().clean()
        if not self.attacker_train or self.pk is None:
            return
        before = SourceVideo.objects.filter(pk=self.pk).first()
        if before is None or before.attacker_train:
            return
        n = self.rater_responses()
        if n:
            raise ValidationError(
                {
                    "attacker_train": f"video {self.name!r} has {n} rater response{'s' if n != 1 else ''}: "
                    f"raters have seen it as {before.role} material, so it cannot become the attacker's "
                    "training material (those responses would drop out of the scores, and the attacker "
                    f"would train on what raters rated). Keep it {before.role}; to give the attacker "
                    f"material of identity {self.identity.code}, add a new clip of it with "
                    "'attacker training material' ticked (admin: Source videos > Add)."
                },
                code="rated_video",
            )


class ResultVisibility(models.TextChoices):
    """What a phase's teams see of its results (scores, reports, leaderboard rows)."""

    HIDDEN = "hidden", "hidden (organizer only)"
    TEAM = "team", "each team its own"
    PUBLIC = "public", "public (own results and the published leaderboard)"


class Phase(models.Model):
    """One phase of a campaign's life cycle, e.g. a development phase with open scores
    beside a blind test phase (MediaEval, VoicePrivacy, EvalAI/Codabench phases).

    A run (:class:`Submission`) belongs to at most one phase; the rules here (opening and
    closing time, quotas, result visibility) are applied by :mod:`evalsite.phases`.
    Results are released to teams once ``results_release_at`` has passed (at once when
    empty) and ``results_visibility`` is not hidden; the organizer always sees them.
    """

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="phases")
    name = models.CharField("name", max_length=100, help_text="e.g. development, test")
    order = models.PositiveSmallIntegerField("order", default=0)
    source_videos = models.ManyToManyField(
        SourceVideo,
        blank=True,
        related_name="phases",
        help_text="The phase's video subset; empty: every source video of the campaign.",
    )
    opens_at = models.DateTimeField(
        "opens at", null=True, blank=True, help_text="Empty: open from the start."
    )
    closes_at = models.DateTimeField(
        "closes at",
        null=True,
        blank=True,
        help_text="Submission deadline: later uploads are refused (an organizer may override, recorded).",
    )
    max_runs = models.PositiveIntegerField(
        "runs per team", null=True, blank=True, help_text="Most runs a team may enter; empty: no limit."
    )
    max_uploads = models.PositiveIntegerField(
        "uploads per team", null=True, blank=True, help_text="Most uploads a team may make in the phase."
    )
    max_uploads_per_day = models.PositiveIntegerField(
        "uploads per team per day",
        null=True,
        blank=True,
        help_text="Most uploads a team may make per UTC day; empty: no limit.",
    )
    failed_uploads_count = models.BooleanField(
        "failed uploads count",
        default=False,
        help_text="Whether an upload that failed as a whole (nothing stored) counts against the quotas.",
    )
    results_visibility = models.CharField(
        "result visibility",
        max_length=16,
        choices=ResultVisibility.choices,
        default=ResultVisibility.TEAM,
    )
    results_release_at = models.DateTimeField(
        "results released at",
        null=True,
        blank=True,
        help_text="Teams see nothing of the phase's results before this time; empty: as soon as computed.",
    )

    class Meta:
        verbose_name = "phase"
        ordering = ["campaign", "order", "name"]
        constraints = [models.UniqueConstraint(fields=["campaign", "name"], name="unique_phase_name")]

    def __str__(self) -> str:
        return f"{self.campaign.slug} / {self.name}"

    def clean(self) -> None:
        super().clean()
        if self.opens_at and self.closes_at and self.closes_at <= self.opens_at:
            raise ValidationError({"closes_at": "the phase must close after it opens"})

    def videos(self):
        """The phase's source videos (its subset, or every video of the campaign)."""
        if self.pk is not None and self.source_videos.exists():
            return self.source_videos.all()
        return self.campaign.source_videos.all()


#: Label of another team on an anonymised leaderboard ("Anonymised team A"); reserved, so
#: no real team's name can pass for an anonymised one.
ANONYMISED_TEAM_PREFIX = "Anonymised team"


def check_team_name(name: str) -> str:
    """The stripped team name; ValueError if empty or starting with the reserved
    ``ANONYMISED_TEAM_PREFIX`` (case-insensitive)."""
    name = name.strip()
    if not name:
        raise ValueError("a team name must not be empty")
    if name.casefold().startswith(ANONYMISED_TEAM_PREFIX.casefold()):
        raise ValueError(
            f"team names starting with {ANONYMISED_TEAM_PREFIX!r} are reserved for anonymised leaderboards"
        )
    return name


def find_team(campaign, name: str):
    """The team of ``campaign`` named ``name`` ignoring case and surrounding spaces, or None.

    The one team lookup of the commands, the API and the services: "team tester" finds
    "Team Tester" rather than making a second team beside it. An exact match wins when
    teams made before this rule differ only in case.
    """
    name = name.strip()
    matches = list(Team.objects.filter(campaign=campaign, name__iexact=name).order_by("pk"))
    return next((team for team in matches if team.name == name), matches[0] if matches else None)


def team_name_note(given: str, team_name: str) -> str | None:
    """Why the team ``team_name`` was used for the name ``given`` (:func:`find_team`), or None.

    None when ``given`` is exactly the team's name; otherwise e.g. ``"team 'team a' taken
    as the existing team 'Team A' (names are matched ignoring case)"``: the commands print
    it as a warning, the API returns it in ``warnings``.
    """
    if given == team_name:
        return None
    return f"team {given!r} taken as the existing team {team_name!r} (names are matched ignoring case)"


class Team(models.Model):
    """A team that submits masking methods to one campaign.

    A team belongs to exactly one campaign, and its name is unique within that campaign
    only: the same name in two campaigns is two teams with their own members, so no
    organizer can reach another campaign's team (its members, submissions, reports) by
    choosing its name. ``campaign`` is empty only for teams that had no submission when
    teams became per-campaign (migration ``0009``); those are shown to superusers only.
    """

    campaign = models.ForeignKey(
        Campaign,
        on_delete=models.CASCADE,
        null=True,
        related_name="teams",
        help_text="The campaign this team enters; the same name in another campaign is another team.",
    )
    name = models.CharField("name", max_length=200)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="teams")

    class Meta:
        verbose_name = "team"
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "name"], name="unique_team_name_per_campaign")
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        try:
            check_team_name(self.name)
        except ValueError as error:
            raise ValidationError({"name": str(error)}) from None


class Submission(models.Model):
    """One masking method of a team for one campaign."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="submissions")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="submissions")
    name = models.CharField("method name", max_length=200)
    description = models.TextField("description", blank=True)
    baseline_method = models.CharField(
        "baseline method",
        max_length=64,
        blank=True,
        help_text="Set for reference submissions generated by the platform, e.g. 'blur_face'.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    phase = models.ForeignKey(
        Phase,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="runs",
        help_text="The phase this run was entered in (empty: a campaign without phases).",
    )
    run_number = models.PositiveSmallIntegerField(
        "run number", null=True, blank=True, help_text="1, 2, ... per team and phase (given on creation)."
    )
    primary = models.BooleanField(
        "primary run", default=False, help_text="The team's primary run of the phase (exactly one)."
    )
    description_pdf = models.FileField(
        "system description (PDF)",
        upload_to=description_pdf_upload_to,
        blank=True,
        help_text="Optional working notes or system description, a PDF of at most DEID_DESCRIPTION_PDF_MAX_BYTES.",
    )

    class Meta:
        verbose_name = "submission"
        ordering = ["campaign", "team", "name"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "team", "name"], name="unique_submission"),
            models.UniqueConstraint(
                fields=["team", "phase", "run_number"],
                condition=Q(phase__isnull=False),
                name="unique_run_number_per_team_and_phase",
            ),
            models.UniqueConstraint(
                fields=["team", "phase"],
                condition=Q(primary=True, phase__isnull=False),
                name="one_primary_run_per_team_and_phase",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.team} / {self.name}"

    def clean(self):
        super().clean()
        if (
            self.team_id is not None
            and self.campaign_id is not None
            and self.team.campaign_id != self.campaign_id
        ):
            raise ValidationError(
                {"team": "This team belongs to another campaign: choose a team of this campaign."}
            )

    def save(self, *args, **kwargs):
        """Save; a submission's team must be a team of the submission's campaign.

        Raises
        ------
        ValueError
            If ``team.campaign`` is not ``campaign`` (teams are per campaign, see :class:`Team`),
            or ``phase`` is another campaign's.
        """
        if self.team.campaign_id != self.campaign_id:
            raise ValueError(
                f"team {self.team.name!r} (pk {self.team.pk}) belongs to campaign id {self.team.campaign_id}, "
                f"not to this submission's campaign id {self.campaign_id}"
            )
        if self.phase_id is not None and self.phase.campaign_id != self.campaign_id:
            raise ValueError(
                f"phase {self.phase.name!r} belongs to campaign id {self.phase.campaign_id}, "
                f"not to this submission's campaign id {self.campaign_id}"
            )
        super().save(*args, **kwargs)

    def missing_source_videos(self):
        """Source videos of the campaign without a current, valid masked video in this submission.

        A replaced (superseded) masked video does not count, nor one flagged because it no
        longer matches its clear video (``MaskedVideo.check_code``). Videos of practice
        identities need none.
        """
        valid = MaskedVideo.objects.filter(submission=self).valid()
        # Practice identities' videos are shown in practice only, never masked or evaluated.
        return (
            self.source_videos().exclude(identity__practice=True).exclude(pk__in=valid.values("source_video"))
        )

    def source_videos(self):
        """The source videos this run masks: its phase's subset, else every video of the campaign."""
        return self.phase.videos() if self.phase_id is not None else self.campaign.source_videos.all()

    @property
    def is_complete(self) -> bool:
        """True when every source video of the campaign has a valid masked video."""
        return not self.missing_source_videos().exists()


class MaskedVideoQuerySet(models.QuerySet):
    def valid(self):
        """Current masked videos that still match their clear video (no ``check_code``)."""
        return self.filter(current=True, check_code="")

    def without_attacker_training(self):
        """All but the masked versions of attacker training material (``SourceVideo.attacker_train``).

        What the automated face evaluation plans, scores and reports (and every aggregate
        of it: summaries, leaderboard, behaviour): those videos are masked so the attack
        can train on them, never scored or rated. Completeness (``Submission.is_complete``)
        still counts them.
        """
        return self.exclude(source_video__attacker_train=True)


class CurrentMaskedVideoManager(models.Manager.from_queryset(MaskedVideoQuerySet)):
    """Only current masked videos: what every report, run and rating item works on."""

    def get_queryset(self):
        return super().get_queryset().filter(current=True)


class MaskedVideo(VideoMetadataMixin):
    """A submission's masked version of one source video (validated on upload).

    Replacing it keeps this row and its file (raters' responses and automated scores
    stay attached to what was actually rated or scored): the row is marked superseded
    (``current`` False) and a new current row is created. ``MaskedVideo.objects`` and
    every reverse relation (``submission.masked_videos``) see current rows only;
    ``MaskedVideo.all_versions`` sees every version.
    """

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="masked_videos")
    source_video = models.ForeignKey(SourceVideo, on_delete=models.CASCADE, related_name="masked_videos")
    file = models.FileField("masked video", upload_to=masked_video_upload_to)
    uploaded_at = models.DateTimeField(auto_now_add=True)
    token = models.CharField(max_length=40, unique=True, default=opaque_token, editable=False)
    upload = models.ForeignKey(
        "SubmissionUpload",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="masked_videos",
        help_text="The upload that stored it (empty for platform-made baselines).",
    )
    current = models.BooleanField("current", default=True, help_text="False once a newer file replaced it.")
    superseded_at = models.DateTimeField("replaced at", null=True, blank=True)
    superseded_by = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="replaced_versions",
    )
    check_code = models.CharField(
        "check against the clear video",
        max_length=40,
        blank=True,
        help_text="Empty when it matches its clear video; else the validation code of the "
        "mismatch found after the clear video was replaced (e.g. frame_count_mismatch).",
    )
    check_message = models.TextField("check message", blank=True)

    objects = CurrentMaskedVideoManager()
    all_versions = MaskedVideoQuerySet.as_manager()

    class Meta:
        verbose_name = "masked video"
        ordering = ["submission", "source_video", "-uploaded_at"]
        base_manager_name = "all_versions"
        constraints = [
            models.UniqueConstraint(
                fields=["submission", "source_video"],
                condition=Q(current=True),
                name="one_current_masked_video_per_source",
            )
        ]

    def __str__(self) -> str:
        return f"{self.submission}: {self.source_video.name}"


class UploadStatus(models.TextChoices):
    QUEUED = "queued", "queued"
    PROCESSING = "processing", "processing"
    DONE = "done", "done"
    FAILED = "failed", "failed"


class SubmissionUpload(models.Model):
    """One zip of masked videos uploaded to a submission, with its per-file validation report.

    The row exists before anything else is stored (the zip is saved into it), then a
    background task validates the zip: ``status`` queued -> processing -> done, or
    failed with ``error_code``/``error`` (an unreadable zip, a crash). ``report`` is
    ``ValidationReport.to_dict()`` (evalsite/validation.py), saved after every member:
    one row per zip member with file, status (accepted/rejected/ignored), code, message,
    plus the source videos still missing. A row left ``processing`` means the worker
    stopped mid-upload; queueing it again resumes it.
    """

    Status = UploadStatus

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="uploads")
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    uploaded_at = models.DateTimeField(auto_now_add=True)
    original_name = models.CharField("zip file name", max_length=255, blank=True)
    replace = models.BooleanField(
        "replace existing",
        default=False,
        help_text="The organizer asked to replace masked videos already stored.",
    )
    accepted_count = models.PositiveIntegerField("accepted files", default=0)
    rejected_count = models.PositiveIntegerField("rejected files", default=0)
    report = models.JSONField("validation report", default=dict)
    file = models.FileField("uploaded zip", upload_to=upload_zip_upload_to, blank=True)
    status = models.CharField(
        "status", max_length=16, choices=UploadStatus.choices, default=UploadStatus.QUEUED
    )
    error_code = models.CharField("error code", max_length=40, blank=True)
    error = models.TextField("error", blank=True)
    started_at = models.DateTimeField("validation started", null=True, blank=True)
    finished_at = models.DateTimeField("validation finished", null=True, blank=True)
    late = models.BooleanField(
        "after the deadline",
        default=False,
        help_text="Received after its phase closed, accepted because an organizer overrode the deadline.",
    )
    deadline_overridden_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        verbose_name = "submission upload"
        ordering = ["-uploaded_at", "-id"]

    def __str__(self) -> str:
        return f"{self.submission}: {self.original_name or 'upload'} ({self.uploaded_at:%Y-%m-%d %H:%M})"


@receiver(post_delete, sender=GalleryImage)
@receiver(post_delete, sender=SourceVideo)
@receiver(post_delete, sender=MaskedVideo)
@receiver(post_delete, sender=SubmissionUpload)
@receiver(post_delete, sender=Submission)
def _delete_files_with_their_row(sender, instance, **kwargs) -> None:
    """A deleted row takes its files along (after the commit), so no stored file outlives its record."""
    files = [
        f
        for f in (getattr(instance, name, None) for name in ("file", "web_file", "image", "description_pdf"))
        if f
    ]
    if files:
        transaction.on_commit(lambda: delete_stored(files))


@receiver(pre_save, sender=GalleryImage)
def _note_a_replaced_still(sender, instance, raw=False, **kwargs) -> None:
    """Remember the stored file a save is about to replace (admin, inline or code alike)."""
    instance._replaced_still = None
    if instance.pk is None or raw:
        return
    stored = GalleryImage.objects.filter(pk=instance.pk).values_list("image", flat=True).first()
    if stored and stored != instance.image.name:
        instance._replaced_still = stored


@receiver(post_save, sender=GalleryImage)
def _announce_a_replaced_still(sender, instance, created, **kwargs) -> None:
    """A replaced still: ``signals.gallery_image_replaced`` in the saving transaction (the
    trials app makes the rater crop and probe again), the old file deleted after the commit."""
    old, instance._replaced_still = getattr(instance, "_replaced_still", None), None
    if created or not old:
        return
    from .signals import gallery_image_replaced

    gallery_image_replaced.send(sender=GalleryImage, image=instance)
    storage = instance.image.storage
    transaction.on_commit(lambda: storage.delete(old))
