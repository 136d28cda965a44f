"""Report providers of the attack evaluation (see evalsite/reports.py).

Both read the submission's *strongest* completed ``AttackRun`` (the one whose best
non-baseline pair reached the highest mean accuracy over cross-video folds; a later,
lighter run never hides a stronger attack: seeds/000, section 4.2.2, the worst case is
what a masking must survive): the ``attack`` summary section
(worst-case accuracy and the recognizer x attacker pair that reached it, chance level, the
clear-on-clear bound and the accuracy table) and per-video columns ``attack_worst_case_*``
(the worst-case pair's share of re-identified frames of each masked video in the fold that
tested it; the attacker's own videos and single-video identities have none). The
within-video (scene-memorisation) table is in the section under ``scene_memorisation``,
apart from the worst case. The report page with the verification plot is
``attack_views.attack_run_report``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING


from evalsite import reports
from evalsite.report_cache import cached
from evalsite.staleness import run_staleness

from automated.attack.names import ALL
from .attack_models import AttackResult, AttackRun, AttackVideoResult
from .attack_privacy import TEMPORAL_COLUMNS, temporal_video_columns
from .attack_service import attack_summary, format_confounded_identities

# pandas is imported where it is used: slow to import, and Django start-up imports this module.
if TYPE_CHECKING:
    import pandas as pd

VIDEO_COLUMNS = ["attack_worst_case_accuracy", "attack_worst_case_test_frames"]


def strongest_completed_run(submission) -> AttackRun | None:
    """:func:`find_strongest_completed_run`, found once per request (``evalsite.report_cache``)."""
    return cached(
        submission.campaign_id,
        ("strongest_attack", submission.pk),
        lambda: find_strongest_completed_run(submission),
    )


def find_strongest_completed_run(submission) -> AttackRun | None:
    """The completed run with the highest non-baseline accuracy on all identities, or None.

    Among runs on the submission's current files and plan first: a run whose masked or clear
    videos were replaced after it was created, or whose folds a video role change altered
    (``staleness.run_staleness``), is chosen only when no current run has results, so a
    strong attack on a replaced file or an outdated plan never hides the attack that
    replaced it (the stale one is then flagged in the report).
    Ties go to the most recent run.
    """
    ranked = (
        AttackResult.objects.filter(
            run__submission=submission, run__status=AttackRun.Status.COMPLETED, selection=ALL
        )
        .exclude(attacker="clear")
        .order_by("-accuracy", "-run__finished_at", "-run_id")
        .select_related("run")
    )
    strongest, seen = None, set()
    for result in ranked:
        run = result.run
        if run.pk in seen:
            continue
        seen.add(run.pk)
        if not run_staleness(submission, run):
            return run
        strongest = strongest or run
    return strongest if strongest is not None else AttackRun.objects.latest_completed_for(submission)


def attack_video_columns(submission) -> pd.DataFrame:
    """Index: source-video name; the worst-case pair's accuracy and test frames per video, and
    each masked video's temporal identity consistency and flicker beside its clear video's."""
    import pandas as pd

    run = strongest_completed_run(submission)
    if run is None:
        return pd.DataFrame(columns=[*VIDEO_COLUMNS, *TEMPORAL_COLUMNS])
    rows = AttackVideoResult.objects.filter(run=run).select_related("source_video")
    frame = pd.DataFrame(
        [
            {"video": r.source_video.name, VIDEO_COLUMNS[0]: r.accuracy, VIDEO_COLUMNS[1]: r.n_test}
            for r in rows
        ],
        columns=["video", *VIDEO_COLUMNS],
    )
    return frame.set_index("video").join(temporal_video_columns(run), how="outer")


def attack_caveats(submission) -> dict[str, list[str]]:
    """Per-video caveats: every video of a tested identity alone in its video format.

    ``attack_service.format_confounded_identities`` of the strongest completed run: the
    attacker can name such an identity by the format, so its rows' ``attack_*`` figures
    measure the format as much as the masking.
    """
    run = strongest_completed_run(submission)
    if run is None:
        return {}
    caveats = {}
    for found in format_confounded_identities(run):
        text = (
            f"attack: {found['identity']} is alone in its video format ({found['format']}): "
            "an attacker can name it by format, not face"
        )
        for video in found["videos"]:
            caveats.setdefault(video, []).append(text)
    return caveats


def attack_section(submission) -> dict | None:
    """``attack_service.attack_summary`` of the strongest completed run, or None."""
    run = strongest_completed_run(submission)
    return None if run is None else attack_summary(run)


def register() -> None:
    """Register this module's video columns, summary section and their dictionary entries."""
    from . import attack_dictionary

    attack_dictionary.register()
    reports.register_video_columns("attack", attack_video_columns)
    reports.register_summary_section("attack", attack_section)
    # Its texts name the identity alone in its format: organizers only.
    reports.register_video_caveats("attack", attack_caveats, organizers_only=True)
