"""Human evaluation records: raters, sessions, items, trials and responses.

The protocol follows the MediaEval 2021 Driving Road Safety Forward task overview
(``../shared/seeds/002_68b18bfdbdb94491.txt``, sections 4.1-4.3 and 5): each trial shows
a (clear or masked) video with 5 internally cropped gallery faces plus "not present"
(identity matching) or the campaign's action list ("most obvious" action), and every
(video, condition, task) item collects the campaign's raters-per-video responses.

Nothing here is ever sent to a rater's browser except the opaque ``token`` fields.
"""

from __future__ import annotations

import secrets
from datetime import timedelta

from django.conf import settings
from django.db import models, transaction
from django.db.models import Count, Q
from django.db.models.signals import post_delete
from django.dispatch import receiver
from django.utils import timezone

from evalsite.models import (
    Campaign,
    GalleryImage,
    Identity,
    MaskedVideo,
    SourceVideo,
    Submission,
    delete_stored,
    opaque_token,
)


def claim_timeout() -> timedelta:
    """How long a claimed, unanswered trial keeps its item reserved (``TRIALS_CLAIM_TIMEOUT_S``)."""
    return timedelta(seconds=settings.TRIALS_CLAIM_TIMEOUT_S)


def completion_code() -> str:
    """A short code a crowd-sourcing platform asks the participant to paste back."""
    return secrets.token_hex(5).upper()


def crop_upload_to(instance, filename: str) -> str:
    return f"crops/{opaque_token()}.png"


#: Ending of catch-probe video names of the current probe style (trials.media): a probe
#: stored under another ending (an older style: probe2 had the median format of the
#: campaign, probe3 the format of an evaluated clip drawn at random, probe4 a still face on
#: a real clip's wall; probe5 the real clip with the face pasted on, issue 19, hostile
#: pass 3; probe6 stands on clear or masked footage in the proportions evaluated trials
#: show them; probe7 stands only on footage of identity trials, of the probe's lineup block
#: where it has any, and records its footage and length on its crop; probe8 is written at
#: the footage's exact frame rate: probe7 went through an MJPG AVI that rounded 30000/1001
#: to 29.97, another MP4 timescale than the clips') is made again on its next use.
CATCH_VIDEO_SUFFIX = ".probe8.mp4"


def catch_video_upload_to(instance, filename: str) -> str:
    return f"crops/{opaque_token()}{CATCH_VIDEO_SUFFIX}"


class Task(models.TextChoices):
    IDENTITY = "identity", "identity matching"
    ACTION = "action", "action labelling"


class Rater(models.Model):
    """A participant of one campaign, known by a platform participant code or an account."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="raters")
    participant_code = models.CharField(
        "participant code",
        max_length=64,
        blank=True,
        help_text="Code from the crowd-sourcing platform, e.g. a Prolific ID.",
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="rater_profiles",
    )
    flagged = models.BooleanField(
        "flagged", default=False, help_text="Failed attention checks or answered implausibly."
    )
    flag_reason = models.TextField("why flagged", blank=True)
    excluded = models.BooleanField(
        "excluded from scoring",
        default=False,
        help_text="Responses do not count toward targets or scores; items reopen for others.",
    )
    platform_params = models.JSONField(
        "crowd-platform parameters",
        default=dict,
        blank=True,
        help_text="PROLIFIC_PID, STUDY_ID, SESSION_ID ... from the join link, as received.",
    )
    platform_id = models.CharField(
        "crowd-platform ID",
        max_length=250,
        blank=True,
        help_text="e.g. 'PROLIFIC_PID:5f1a...' from the join link; one participant code per platform ID.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "rater"
        ordering = ["campaign", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "platform_id"],
                condition=~Q(platform_id=""),
                name="one_code_per_platform_id",
            ),
            models.UniqueConstraint(
                fields=["campaign", "participant_code"],
                condition=~Q(participant_code=""),
                name="unique_participant_code",
            ),
            models.UniqueConstraint(
                fields=["campaign", "user"], condition=Q(user__isnull=False), name="unique_rater_user"
            ),
            models.CheckConstraint(
                condition=~Q(participant_code="") | Q(user__isnull=False), name="rater_has_identity"
            ),
        ]

    def __str__(self) -> str:
        return f"rater {self.pk}"


class FlagKind(models.TextChoices):
    SHARED_BROWSER = "shared_browser", "shares a browser with other codes"
    SHARED_ADDRESS = "shared_address", "shares a network address with other codes"
    SHARED_NETWORK = "shared_network", "shares an IPv6 /48 network with other codes"
    ACCURACY_OUTLIER = "accuracy_outlier", "accuracy far from the crowd's"


class RaterFlag(models.Model):
    """Why a rater's answers are suspect (``trials.integrity``): one row per kind, with the reason.

    A new flag also excludes the rater from scoring (their items reopen; the organizer may
    include them again); the report gives every human figure with and without flagged
    raters (:func:`trials.integrity.flagged_rater_ids`).
    """

    rater = models.ForeignKey(Rater, on_delete=models.CASCADE, related_name="flags")
    kind = models.CharField(max_length=32, choices=FlagKind.choices)
    reason = models.TextField(help_text="e.g. 'joined from the same browser as raters 12, 13'.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "rater flag"
        ordering = ["rater", "kind"]
        constraints = [models.UniqueConstraint(fields=["rater", "kind"], name="one_flag_per_kind")]

    def __str__(self) -> str:
        return f"{self.rater}: {self.get_kind_display()}"


class SessionState(models.TextChoices):
    CONSENT = "consent", "consent"
    INSTRUCTIONS = "instructions", "instructions"
    RUNNING = "running", "running"
    COMPLETE = "complete", "complete"
    DECLINED = "declined", "declined consent"
    SCREENED_OUT = "screened_out", "screened out (device gate)"


class RatingSessionQuerySet(models.QuerySet):
    def complete(self):
        return self.filter(state=SessionState.COMPLETE)


class RatingSession(models.Model):
    """One rater's pass through a campaign: consent, instructions, the planned trials.

    ``plan`` lists the trial kind at each position (``"practice"``, ``"item"``,
    ``"catch"``); ``position`` is the index of the current trial, so a reload resumes
    exactly there.
    """

    rater = models.OneToOneField(Rater, on_delete=models.CASCADE, related_name="session")
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="rating_sessions")
    state = models.CharField(max_length=16, choices=SessionState.choices, default=SessionState.CONSENT)
    consented_at = models.DateTimeField(null=True, blank=True)
    plan = models.JSONField(default=list)
    position = models.PositiveIntegerField(default=0)
    seed = models.BigIntegerField(default=0)
    completion_code = models.CharField(max_length=16, default=completion_code)
    screen_out_reason = models.CharField(
        "why screened out",
        max_length=200,
        blank=True,
        help_text="e.g. 'screen 390x844 smaller than 1024x700'.",
    )
    browser_key_hash = models.CharField(
        max_length=64,
        blank=True,
        db_index=True,
        help_text="SHA-256 of the secret cookie of the browser that joined; other browsers are refused.",
    )
    address_hash = models.CharField(
        "network address (keyed hash)",
        max_length=64,
        blank=True,
        db_index=True,
        help_text="HMAC-SHA-256 of the network address that joined (IPv6: its /64), keyed by the "
        "site's secret and the campaign; the address itself is never stored (trials.integrity).",
    )
    network_hash = models.CharField(
        "network (keyed hash)",
        max_length=64,
        blank=True,
        db_index=True,
        help_text="HMAC-SHA-256 of the network of the address that joined, keyed like the address: "
        "the /48 of an IPv6 address, the /24 of an IPv4 one (marked 'v4'); empty without an "
        "address (trials.integrity.network_hash).",
    )
    started_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    objects = RatingSessionQuerySet.as_manager()

    class Meta:
        verbose_name = "rating session"
        ordering = ["campaign", "id"]

    def __str__(self) -> str:
        return f"session {self.pk} ({self.state})"

    @property
    def progress(self) -> float:
        """Share of planned trials answered, in [0, 1]."""
        return min(self.position / len(self.plan), 1.0) if self.plan else 0.0


class ItemQuerySet(models.QuerySet):
    def evaluated(self, campaign):
        """Items of ``campaign`` whose source video is in the evaluated subset.

        Superseded items (their clear or masked file was replaced: ``superseded_at``),
        items of a replaced masked video, of one flagged as no longer matching its clear
        video, or of a submission taken out of rating (:class:`RatedSubmission`) are
        left out: they take no new trials.
        """
        return self.filter(
            campaign=campaign,
            source_video__in_evaluated_subset=True,
            source_video__practice=False,
            superseded_at__isnull=True,
        ).filter(
            Q(masked_video__isnull=True)
            | Q(
                masked_video__current=True,
                masked_video__check_code="",
                masked_video__submission__rating_choice__included=True,
            )
        )

    def with_counts(self, now=None):
        """Annotate ``n_completed`` (usable responses), ``n_live`` (those + live unexpired
        claims) and ``n_excluded`` (responses of excluded raters, which count for nothing)."""
        cutoff = (now or timezone.now()) - claim_timeout()
        usable = Q(trials__session__rater__excluded=False)  # excluded raters never fill targets
        live = usable & (
            Q(trials__completed=True) | Q(trials__released=False, trials__claimed_at__gte=cutoff)
        )
        return self.annotate(
            n_completed=Count("trials", filter=usable & Q(trials__completed=True), distinct=True),
            n_live=Count("trials", filter=live, distinct=True),
            n_excluded=Count(
                "trials",
                filter=Q(trials__completed=True, trials__session__rater__excluded=True),
                distinct=True,
            ),
        )

    def missing_responses(self, campaign, now=None):
        """Evaluated items with fewer usable completed responses than their target (open
        claims not counted: a study is never "full" while responses are missing)."""
        return self.evaluated(campaign).with_counts(now).filter(n_completed__lt=models.F("target_count"))

    def least_completed_first(self, campaign, *, exclude_video_ids=(), now=None):
        """Evaluated items with room left (live count < target), fewest completed first.

        Counts only completed responses for the order, and completed responses plus live
        claims for the room, so concurrent raters never overshoot the target.
        """
        return (
            self.evaluated(campaign)
            .exclude(source_video_id__in=list(exclude_video_ids))
            .with_counts(now)
            .filter(n_live__lt=models.F("target_count"))
            .order_by("n_completed", "n_live", "id")
        )


class Item(models.Model):
    """One thing to rate: (source video, condition, task); condition = clear or a masked video."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="rating_items")
    source_video = models.ForeignKey(SourceVideo, on_delete=models.CASCADE, related_name="rating_items")
    masked_video = models.ForeignKey(
        MaskedVideo,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="rating_items",
        help_text="Empty for the clear-video baseline.",
    )
    task = models.CharField(max_length=16, choices=Task.choices)
    target_count = models.PositiveSmallIntegerField("target responses")
    superseded_at = models.DateTimeField(
        "file replaced at",
        null=True,
        blank=True,
        help_text="Set when the clear or masked file this item showed was replaced: its responses are "
        "kept but no longer counted, and an item of the new file takes the ratings.",
    )

    objects = ItemQuerySet.as_manager()

    class Meta:
        verbose_name = "rating item"
        ordering = ["campaign", "source_video", "task", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["source_video", "task"],
                condition=Q(masked_video__isnull=True, superseded_at__isnull=True),
                name="unique_clear_item",
            ),
            models.UniqueConstraint(
                fields=["masked_video", "task"],
                condition=Q(masked_video__isnull=False),
                name="unique_masked_item",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.source_video.name} / {self.condition} / {self.task}"

    @property
    def condition(self) -> str:
        return "clear" if self.masked_video_id is None else "masked"

    @property
    def superseded(self) -> bool:
        """True when the file this item showed was replaced (its responses no longer count)."""
        return self.superseded_at is not None

    def video_for_raters(self):
        """The SourceVideo or MaskedVideo whose ``web_file`` raters watch."""
        return self.masked_video if self.masked_video_id else self.source_video


class TrialKind(models.TextChoices):
    PRACTICE = "practice", "practice (feedback, not evaluated)"
    ITEM = "item", "evaluated"
    CATCH = "catch", "attention check"


class TrialQuerySet(models.QuerySet):
    def active(self):
        return self.filter(released=False)

    def answered(self):
        """Completed trials of raters not excluded (what fills an item's target)."""
        return self.filter(completed=True, session__rater__excluded=False)

    def live(self, now=None):
        """Completed trials plus unexpired claims of raters not excluded (what counts
        against an item's target: an excluded rater's responses stop counting and the
        item reopens)."""
        cutoff = (now or timezone.now()) - claim_timeout()
        return self.filter(session__rater__excluded=False).filter(
            Q(completed=True) | Q(released=False, claimed_at__gte=cutoff)
        )


class Trial(models.Model):
    """One trial shown to one rater at one position of the session.

    The answer (``target_identity``, ``correct_choice``) stays on the server; the browser
    only sees ``token`` and the per-face tokens of :class:`TrialFace`.
    """

    session = models.ForeignKey(RatingSession, on_delete=models.CASCADE, related_name="trials")
    position = models.PositiveIntegerField()
    kind = models.CharField(max_length=16, choices=TrialKind.choices)
    task = models.CharField(max_length=16, choices=Task.choices)
    item = models.ForeignKey(Item, null=True, blank=True, on_delete=models.PROTECT, related_name="trials")
    source_video = models.ForeignKey(
        SourceVideo,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="The source video seen (any condition); empty for still-image catch trials.",
    )
    probe_image = models.ForeignKey(
        GalleryImage,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="Catch trials show a still instead of a video.",
    )
    target_identity = models.ForeignKey(
        Identity, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    target_present = models.BooleanField(default=True)
    correct_choice = models.CharField(max_length=100, help_text="'1'-'5', '0' (not present) or an action.")
    token = models.CharField(max_length=40, unique=True, default=opaque_token)
    media_token = models.CharField(max_length=40, unique=True, default=opaque_token)
    claimed_at = models.DateTimeField(default=timezone.now)
    shown_at = models.DateTimeField(null=True, blank=True, help_text="First time the trial page was served.")
    media_fetched_at = models.DateTimeField(null=True, blank=True, help_text="First request of the video.")
    video_bytes_served = models.BigIntegerField(
        default=0, help_text="Distinct bytes of the video sent (repeated ranges count once)."
    )
    video_size = models.BigIntegerField(
        default=0, help_text="Bytes of the served video variant before its padding (what a player reads)."
    )
    video_blocks_served = models.BinaryField(
        default=b"",
        help_text="One bit per 4 kB block of the video sent whole (trials.variants.mark_blocks): the "
        "distinct bytes, so repeating a range adds nothing.",
    )
    page_views = models.PositiveIntegerField(default=0, help_text="Times the trial page was served.")
    replays = models.PositiveIntegerField(
        default=0, help_text="Replays so far (the rater's clicks, plus one per reload: the video restarts)."
    )
    watch_time_ms = models.PositiveIntegerField(
        "watch time so far (ms)", default=0, help_text="Video playing time reported by the page so far."
    )
    completed = models.BooleanField(default=False)
    released = models.BooleanField(
        default=False, help_text="Claim expired and the item went to someone else."
    )

    objects = TrialQuerySet.as_manager()

    class Meta:
        verbose_name = "trial"
        ordering = ["session", "position", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["session", "position"],
                condition=Q(released=False),
                name="one_active_trial_per_position",
            ),
        ]
        indexes = [models.Index(fields=["item", "completed", "released", "claimed_at"])]

    def __str__(self) -> str:
        return f"trial {self.pk} ({self.kind}, {self.task})"

    def claim_expired(self, now=None) -> bool:
        return (now or timezone.now()) - self.claimed_at > claim_timeout()


class TrialFace(models.Model):
    """A gallery face shown at ``position`` (1-5) of an identity trial, behind an opaque token."""

    trial = models.ForeignKey(Trial, on_delete=models.CASCADE, related_name="faces")
    position = models.PositiveSmallIntegerField()
    gallery_image = models.ForeignKey(GalleryImage, on_delete=models.PROTECT, related_name="+")
    token = models.CharField(max_length=40, unique=True, default=opaque_token)
    fetched_at = models.DateTimeField(null=True, blank=True, help_text="First request of the face.")

    class Meta:
        ordering = ["trial", "position"]
        constraints = [models.UniqueConstraint(fields=["trial", "position"], name="unique_face_position")]


class Response(models.Model):
    """A rater's answer to one trial; one per trial, so a resent request stores one row."""

    trial = models.OneToOneField(Trial, on_delete=models.CASCADE, related_name="response")
    choice = models.CharField(max_length=100, help_text="'1'-'5', '0' (not present) or an action.")
    correct = models.BooleanField()
    response_time_ms = models.PositiveIntegerField("response time (ms)")
    replays = models.PositiveIntegerField(default=0)
    watch_time_ms = models.PositiveIntegerField("watch time (ms)", default=0)
    server_time_ms = models.PositiveIntegerField(
        "server-side response time (ms)",
        null=True,
        blank=True,
        help_text="From the trial page being served to the answer arriving.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "response"
        ordering = ["trial"]

    def __str__(self) -> str:
        return f"response to {self.trial_id}: {self.choice}"


class GalleryCrop(models.Model):
    """The internally cropped, fixed-size, metadata-free PNG of a gallery image shown to raters.

    Cropping to the internal face at one size and greying everything outside a face oval
    removes hair, framing, background and image-size cues (seeds/002, section 4.2);
    re-encoding drops any EXIF/text chunks of the upload.
    """

    #: 1 = square detector crop; 2 = square crop greyed outside the face oval; 3 = aligned
    #: on the eyes (similarity transform), Lab colour normalised, greyed outside the oval.
    CURRENT_VERSION = 3

    gallery_image = models.OneToOneField(GalleryImage, on_delete=models.CASCADE, related_name="rater_crop")
    file = models.ImageField(upload_to=crop_upload_to)
    size_px = models.PositiveSmallIntegerField()
    version = models.PositiveSmallIntegerField(
        default=CURRENT_VERSION, help_text="Crop style (see CURRENT_VERSION)."
    )
    catch_video = models.FileField(
        upload_to=catch_video_upload_to,
        blank=True,
        help_text="A short MP4 of this face, the probe of attention-check trials.",
    )
    # What the probe was made of (trials.media.ensure_catch_video), read instead of drawing
    # it again: the draw moves when items change. Plain ids, not foreign keys: a deleted
    # video leaves an id that matches nothing, and the probe is made again.
    catch_source_pk = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Source video whose footage the probe is (empty: no clip, a composite).",
    )
    catch_masked_pk = models.PositiveIntegerField(
        null=True, blank=True, help_text="Masked video whose footage the probe is (empty: the clear clip's)."
    )
    catch_frames = models.PositiveIntegerField(
        null=True, blank=True, help_text="Frames of the probe as encoded."
    )
    catch_fps = models.FloatField(null=True, blank=True, help_text="Frame rate of the probe as encoded.")
    created_at = models.DateTimeField(auto_now_add=True)


@receiver(post_delete, sender=GalleryCrop)
def _delete_crop_files(sender, instance, **kwargs) -> None:
    """A deleted crop (its still replaced or deleted, a new crop style) takes its PNG and its
    probe video along, after the commit."""
    files = [f for f in (instance.file, instance.catch_video) if f]
    if files:
        transaction.on_commit(lambda: delete_stored(files))


class RatedSubmission(models.Model):
    """The organizer's choice whether a submission's masked videos enter human rating.

    A submission without a row is undecided: the first opening of rating includes it when
    it is complete (every source video has a valid masked video); a submission added
    later waits until the organizer adds it (:func:`trials.services.set_submission_rated`),
    which creates its items at once if rating is open.
    """

    submission = models.OneToOneField(Submission, on_delete=models.CASCADE, related_name="rating_choice")
    included = models.BooleanField("rated by humans", default=True)
    decided_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "submission in rating"

    def __str__(self) -> str:
        return f"{self.submission}: {'rated' if self.included else 'not rated'}"


class StillCheck(models.Model):
    """Whether a gallery still looks like a frame of its identity's evaluated videos.

    Filled by :func:`trials.stills.check_stills` (perceptual hash of the still's face crop
    against sampled frames). ``fingerprint`` names the files compared, so a replaced still
    or video makes the check stale and it runs again.
    """

    gallery_image = models.OneToOneField(GalleryImage, on_delete=models.CASCADE, related_name="still_check")
    matched_video = models.ForeignKey(
        SourceVideo,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The evaluated clip the still looks like a frame of; empty if none.",
    )
    distance_bits = models.PositiveSmallIntegerField(
        "closest pHash distance (bits of 64)", null=True, blank=True
    )
    fingerprint = models.CharField(max_length=64)
    checked_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "gallery still check"

    @property
    def from_evaluated_clip(self) -> bool:
        """True when the still looks like a frame of one of its identity's evaluated clips."""
        return self.matched_video_id is not None
