"""Which reported results predate the files they describe (replaced masked or clear videos).

A result is *stale* for a source video when the video's masked file (in this submission)
or its clear file was replaced after the result was computed: replacing keeps the old
masked row (superseded, with the scores and ratings made on it) and stamps the clear
video with ``file_replaced_at``, so staleness is computed from the catalogue alone, for
any run model:

- an automated run shown in a summary section (``RUN_SECTIONS``, found by the section's
  ``run_id``) is stale for every video it planned whose masked video was superseded, or
  whose clear video was replaced, after the run was created (its inputs were fixed then);
- human ratings of a clear video are stale when responses to it predate its replacement
  (responses to a replaced masked video are not counted for the submission at all).
"""

from __future__ import annotations

from django.apps import apps
from django.db.models import F

from .models import MaskedVideo, SourceVideo

#: Summary section -> (app label, model) of the run whose results it shows.
RUN_SECTIONS = {
    "face_evaluation": ("automated", "AutomatedRun"),
    "attack": ("automated", "AttackRun"),
    "behaviour": ("automated", "AutomatedRun"),
}


def videos_changed_since(submission, since, planned=None) -> list[str]:
    """Names of source videos whose masked (in ``submission``) or clear file changed after ``since``.

    ``planned``: masked-video ids a run covers (its ``planned_videos``, any version); if
    given and not empty, only their source videos count (a face run does not cover
    attacker training material, so replacing it leaves the run current).
    """
    sources = SourceVideo.objects.filter(campaign=submission.campaign_id)
    if planned:
        sources = sources.filter(
            pk__in=MaskedVideo.all_versions.filter(pk__in=planned).values("source_video")
        )
    replaced_masked = MaskedVideo.all_versions.filter(
        submission=submission, current=False, superseded_at__gt=since
    ).values("source_video")
    names = sources.filter(pk__in=replaced_masked).values_list("name", flat=True)
    replaced_clear = sources.filter(file_replaced_at__gt=since)
    return sorted(set(names) | set(replaced_clear.values_list("name", flat=True)))


def _run_of(section_name: str, section) -> object | None:
    if not isinstance(section, dict) or section.get("run_id") is None:
        return None
    label, model_name = RUN_SECTIONS[section_name]
    try:
        model = apps.get_model(label, model_name)
    except LookupError:
        return None
    return model.objects.filter(pk=section["run_id"]).first()


def human_clear_stale_videos(submission) -> list[str]:
    """Clear videos of the campaign with responses given before the clear file was replaced."""
    if not apps.is_installed("trials"):
        return []
    videos = SourceVideo.objects.filter(
        campaign=submission.campaign_id,
        file_replaced_at__isnull=False,
        rating_items__masked_video__isnull=True,
        rating_items__trials__response__created_at__lt=F("file_replaced_at"),
    )
    return sorted(set(videos.values_list("name", flat=True)))


def stale_results(submission, sections: dict) -> dict[str, dict]:
    """``{section: {"run_id": id or None, "videos": [names]}}`` for every stale section.

    Parameters
    ----------
    submission : Submission
    sections : dict
        Summary sections by name (``reports.SUMMARY_PROVIDERS`` output); those in
        ``RUN_SECTIONS`` name their run by ``run_id``.
    """
    stale = {}
    for name in RUN_SECTIONS:
        run = _run_of(name, sections.get(name))
        if run is None:
            continue
        videos = videos_changed_since(submission, run.created_at, run.planned_videos)
        if videos:
            stale[name] = {"run_id": run.pk, "videos": videos}
    human = human_clear_stale_videos(submission)
    if human:
        stale["human"] = {"run_id": None, "videos": human}
    return stale


def stale_videos(stale: dict[str, dict]) -> list[str]:
    """Every video named in :func:`stale_results`' output, sorted."""
    return sorted({video for entry in stale.values() for video in entry["videos"]})
