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

Settings: ``TRIALS_MIN_VIEW_MS`` (default 1000: an answer sooner after the video was
first requested cannot follow watching it), ``TRIALS_MIN_VIDEO_PERCENT`` (default 50: the
share of the video's bytes that must have been sent before the answer),
``TRIALS_PLAUSIBILITY_CHECKS`` (default on; off only for scripted load tests whose raters
fetch no media).
"""

from __future__ import annotations

from django.conf import settings


def min_view_ms() -> int:
    return int(getattr(settings, "TRIALS_MIN_VIEW_MS", 1000))


def min_video_share() -> float:
    return int(getattr(settings, "TRIALS_MIN_VIDEO_PERCENT", 50)) / 100


def max_attention_failures() -> int:
    return int(getattr(settings, "TRIALS_MAX_ATTENTION_FAILURES", 2))


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
    if not getattr(settings, "TRIALS_PLAUSIBILITY_CHECKS", True):
        return ""
    where = f"trial {trial.position + 1}"
    if trial.task == "identity" and trial.faces.filter(fetched_at=None).exists():
        return f"{where}: answered without loading every face of the lineup"
    if trial.media_fetched_at is None:
        return f"{where}: answered without fetching the video"
    elapsed_ms = (now - trial.media_fetched_at).total_seconds() * 1000
    if elapsed_ms < min_view_ms():
        return (
            f"{where}: answered {elapsed_ms:.0f} ms after the video was first requested "
            f"(at least {min_view_ms()} ms needed to have seen it)"
        )
    if trial.video_size and trial.video_bytes_served < min_video_share() * trial.video_size:
        share = trial.video_bytes_served / trial.video_size
        return f"{where}: answered after only {share:.0%} of the video was sent"
    return ""
