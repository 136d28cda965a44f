"""Which reported results predate the files they describe (replaced masked or clear videos).

A result is *stale* for a source video when the video's masked file (in this submission)
or its clear file was replaced after the result was computed: replacing keeps the old
masked row (superseded, with the scores and ratings made on it) and stamps the clear
video with ``file_replaced_at``, so staleness is computed from the catalogue alone, for
any run model:

- an automated run shown in a summary section (``RUN_SECTIONS``, found by the section's
  ``run_id``) is stale for every video it planned whose masked video was superseded, or
  whose clear video was replaced, after the run was created (its inputs were fixed then);
- an automated run is also stale for every video its stored plan treats differently from
  a fresh plan of its kind (a source video's role changed in the admin, e.g. an evaluated
  clip made attacker training material: the attack's folds and the face evaluation's
  videos change): the check each run's app registers (``register_plan_check``);
- an automated run is stale for every video it covers when it was computed with other
  settings than its campaign's current ones (``Campaign.evaluation_options``, set by a
  re-run of the campaign): the check each run's app registers (``register_settings_check``);
- human ratings of a clear video are stale when counted responses to it predate its
  replacement: only ratings made before the trials app set aside the items of replaced
  files (``trials.services.supersede_items``); since then, responses to a replaced clear
  or masked file stay on superseded items and are not counted at all.
"""

from __future__ import annotations

from collections.abc import Callable

from django.apps import apps
from django.db.models import F

from .models import MaskedVideo, SourceVideo
from .report_cache import cached

#: Summary section -> (app label, model) of the run whose results it shows.
RUN_SECTIONS = {
    "face_evaluation": ("automated", "AutomatedRun"),
    "attack": ("automated", "AttackRun"),
    "behaviour": ("automated", "AutomatedRun"),
}

#: Run model label (``"automated.AttackRun"``) -> ``check(run, submission)``: names of the
#: source videos a fresh plan of the run's kind treats differently from its stored plan.
PLAN_CHECKS: dict[str, Callable] = {}


#: Run model label -> ``check(run, submission)``: the settings in which the run differs from
#: its campaign's current ones (``Campaign.evaluation_options``), as lines for people.
SETTINGS_CHECKS: dict[str, Callable] = {}


def register_settings_check(model_label: str, check: Callable) -> None:
    """Register ``check(run, submission) -> list of str`` (e.g. ``["stride: 5 (now 10)"]``) for runs
    of ``model_label``; called from the run's app's ``ready()``."""
    SETTINGS_CHECKS[model_label] = check


def register_plan_check(model_label: str, check: Callable) -> None:
    """Register ``check(run, submission) -> list of video names`` for runs of ``model_label``.

    Called from the run's app's ``ready()`` (``automated``: ``evaluate_all.plan_changes``),
    so this module imports no app.
    """
    PLAN_CHECKS[model_label] = check


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
    """Clear videos of the campaign with counted (not superseded) responses given before the
    clear file was replaced."""
    if not apps.is_installed("trials"):
        return []
    videos = SourceVideo.objects.filter(
        campaign=submission.campaign_id,
        file_replaced_at__isnull=False,
        rating_items__masked_video__isnull=True,
        rating_items__superseded_at__isnull=True,
        rating_items__trials__response__created_at__lt=F("file_replaced_at"),
    )
    return sorted(set(videos.values_list("name", flat=True)))


def run_staleness(submission, run) -> dict:
    """:func:`compute_run_staleness`, computed once per request (``evalsite.report_cache``)."""
    key = ("run_staleness", submission.pk, run._meta.label, run.pk)
    return cached(submission.campaign_id, key, lambda: compute_run_staleness(submission, run))


def compute_run_staleness(submission, run) -> dict:
    """Why ``run`` no longer describes ``submission``: ``{}`` if it still does.

    Returns
    -------
    dict
        ``{"run_id", "videos", "replaced", "plan_changed", "reason"}`` when stale, plus
        ``settings_changed`` when that is why:
        ``replaced`` names the videos whose masked or clear file changed after the run
        was created (``videos_changed_since``), ``plan_changed`` those (not already
        replaced) its stored plan treats differently from a fresh plan of its kind (the
        check registered for its model: a video role changed, a masked video added),
        ``settings_changed`` the settings in which
        the run differs from its campaign's current ones (``Campaign.evaluation_options``,
        the check registered for its model), ``videos`` the videos of all three (every video
        the run covers when its settings changed), sorted, and ``reason``
        says it in one line for people.
    """
    replaced = videos_changed_since(submission, run.created_at, run.planned_videos)
    check = PLAN_CHECKS.get(run._meta.label)
    plan_changed = [] if check is None else [v for v in check(run, submission) if v not in replaced]
    settings_check = SETTINGS_CHECKS.get(run._meta.label)
    settings_changed = [] if settings_check is None else settings_check(run, submission)
    if not replaced and not plan_changed and not settings_changed:
        return {}
    reasons = []
    if settings_changed:
        reasons.append(
            "computed with other settings than the campaign's current ones: " + ", ".join(settings_changed)
        )
    # With other settings, every video the run covers was computed with them.
    covered = (
        MaskedVideo.all_versions.filter(pk__in=run.planned_videos).values_list(
            "source_video__name", flat=True
        )
        if settings_changed
        else []
    )
    if plan_changed:
        reasons.append(
            "video roles (or the masked videos) changed since the run was planned: " + ", ".join(plan_changed)
        )
    if replaced:
        reasons.append("video files replaced since the run was created: " + ", ".join(replaced))
    entry = {
        "run_id": run.pk,
        "videos": sorted(set(replaced) | set(plan_changed) | set(covered)),
        "replaced": replaced,
        "plan_changed": plan_changed,
        "reason": f"run {run.pk} is out of date: " + "; ".join(reasons),
    }
    if settings_changed:
        entry["settings_changed"] = settings_changed
    return entry


def stale_results(submission, sections: dict) -> dict[str, dict]:
    """``{section: run_staleness(...)}`` for every stale section (``{"run_id": None, "videos"}`` for humans).

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
        entry = run_staleness(submission, run)
        if entry:
            stale[name] = entry
    human = human_clear_stale_videos(submission)
    if human:
        stale["human"] = {"run_id": None, "videos": human}
    return stale


def stale_videos(stale: dict[str, dict]) -> list[str]:
    """Every video named in :func:`stale_results`' output, sorted."""
    return sorted({video for entry in stale.values() for video in entry["videos"]})
