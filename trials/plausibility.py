"""Server-side checks that a rater could have looked before answering.

A bot answers in milliseconds and never loads the video; an honest rater's browser
fetches the faces and the video (Range requests the media view counts) and the answer
arrives after the page was served. The server records, per trial, when the page was
served (``shown_at``), when its video was first requested (``media_fetched_at``), how
many video bytes were sent, and when each face was requested; an answer that
contradicts them flags and excludes the rater with the reason (the organizer sees it and
may include the rater again). Attention checks exclude after
``TRIALS_MAX_ATTENTION_FAILURES`` failures (default 2), so one slip does not exclude an
honest rater.

Settings: ``TRIALS_MIN_VIEW_MS`` (default 1000: a floor; an answer sooner after the video
was first requested cannot follow watching it), ``TRIALS_MIN_WATCH_PERCENT`` (default 80:
the answer must also come at least this share of the clip's duration after the video's
first request, so a bot waiting a fixed second fails on a 3 s clip),
``TRIALS_MIN_VIDEO_PERCENT`` (default 50: the share of the video's bytes that must have
been sent before the answer; distinct bytes, so fetching one range again and again adds
nothing: :func:`trials.variants.mark_blocks`),
``TRIALS_PLAUSIBILITY_CHECKS`` (default on; off only for scripted load tests whose raters
fetch no media).

Watch times and replays the page reports (``t/<token>/state/``, the answer body) are the
client's word: they are capped by the server-side time since the video's first request
(:func:`capped_watch_ms`) and no check is ever satisfied by them.
"""

from __future__ import annotations

from django.conf import settings


def min_view_ms(trial=None) -> int:
    """Milliseconds from the video's first request to an answer below which it is implausible.

    ``max(TRIALS_MIN_VIEW_MS, TRIALS_MIN_WATCH_PERCENT % of the clip's duration)``; without
    a trial (or a clip of unknown duration) only the floor ``TRIALS_MIN_VIEW_MS``.
    """
    floor = settings.TRIALS_MIN_VIEW_MS
    if trial is None:
        return floor
    share = settings.TRIALS_MIN_WATCH_PERCENT / 100
    return max(floor, int(round(share * clip_duration_ms(trial))))


def clip_duration_ms(trial) -> int:
    """Playing time in ms of the video ``trial`` shows (0 if unknown).

    A catch trial's probe video has the length its face crop recorded when it was made
    (``GalleryCrop.catch_frames`` over ``catch_fps``, :func:`trials.media.ensure_catch_video`),
    not the length a probe drawn now would take (:func:`trials.media.catch_video_spec`,
    only for a probe not made yet): that draw moves when items change (finding B of the
    review: flagging one masked copy of GRID moved 4-5 of 10 probes' drawn length away from
    the encoded one). Other trials the probed ``duration_s`` of the video raters see (the
    masked video of a masked item, else the source video), or frames over frame rate.
    """
    if trial.probe_image_id is not None:
        from .models import GalleryCrop

        made = (
            GalleryCrop.objects.filter(gallery_image_id=trial.probe_image_id)
            .exclude(catch_frames=None)
            .exclude(catch_fps=None)
            .values_list("catch_frames", "catch_fps")
            .first()
        )
        if made is None:
            from .media import catch_video_spec

            made = catch_video_spec(trial.session.campaign, trial.probe_image_id)[:2]
        n_frames, fps = made
        return int(round(1000 * n_frames / fps))
    video = trial.item.video_for_raters() if trial.item_id else trial.source_video
    for candidate in (video, trial.source_video):
        if candidate is None:
            continue
        if candidate.duration_s:
            return int(round(1000 * candidate.duration_s))
        if candidate.frame_count and candidate.fps:
            return int(round(1000 * candidate.frame_count / candidate.fps))
    return 0


def capped_watch_ms(trial, reported_ms: int, now) -> int:
    """The client-reported watch time, capped by the server-side time since the video's
    first request (0 if the video was never requested): a page cannot have played more."""
    if trial.media_fetched_at is None:
        return 0
    elapsed = max(0, int((now - trial.media_fetched_at).total_seconds() * 1000))
    return max(0, min(int(reported_ms), elapsed))


def min_video_share() -> float:
    return settings.TRIALS_MIN_VIDEO_PERCENT / 100


def max_attention_failures() -> int:
    return settings.TRIALS_MAX_ATTENTION_FAILURES


def implausible_answer(trial, now) -> str:
    """Why an answer to ``trial`` arriving at ``now`` cannot follow looking at it, or "".

    Parameters
    ----------
    trial : trials.models.Trial
        With its recorded fetches (``media_fetched_at``, ``video_bytes_served``,
        ``video_size``, faces' ``fetched_at``).
    now : datetime

    Returns
    -------
    str
        One sentence naming the trial position and what was missing; "" if plausible.
    """
    if not settings.TRIALS_PLAUSIBILITY_CHECKS:
        return ""
    where = f"trial {trial.position + 1}"
    if trial.task == "identity" and trial.faces.filter(fetched_at=None).exists():
        return f"{where}: answered without loading every face of the lineup"
    if trial.media_fetched_at is None:
        return f"{where}: answered without fetching the video"
    elapsed_ms = (now - trial.media_fetched_at).total_seconds() * 1000
    needed_ms = min_view_ms(trial)
    if elapsed_ms < needed_ms:
        return (
            f"{where}: answered {elapsed_ms:.0f} ms after the video was first requested "
            f"(at least {needed_ms} ms needed to have seen it)"
        )
    if trial.video_size and trial.video_bytes_served < min_video_share() * trial.video_size:
        share = trial.video_bytes_served / trial.video_size
        return f"{where}: answered after only {share:.0%} of the video was sent"
    return ""
