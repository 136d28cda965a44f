"""Re-run everything: one organizer action re-evaluates every current run of a campaign (issue 23).

:func:`rerun_campaign` takes the campaign's settings (``Campaign.evaluation_options``,
``{"face": {...}, "attack": {...}}``), optionally changed first, and starts "evaluate
everything" (``evaluate_all.evaluate_everything``, the run lifecycle of the commands, the
admin and the API) for every submission of the campaign or of one phase. A part whose
latest completed run already has these settings and is current is left alone, so a second
call starts nothing; a run computed with other settings is re-run. Each new run records
its provenance (code version, package versions, model files' SHA-256: ``RunBase.provenance``),
and until it completes the reports flag the old results as computed with other settings
(``evalsite.staleness``: ``register_settings_check``). Progress: each outcome's run
(``run.progress``, the progress pages and ``GET /api/submissions/<id>/runs/``).

Callers: ``manage.py rerun_campaign`` and ``POST /api/campaigns/<id>/rerun/``.
"""

from __future__ import annotations

from django.db import transaction
from evalsite.models import Campaign, Phase, Submission

from . import evaluate_all


def set_campaign_options(campaign: Campaign, options: dict) -> dict:
    """Merge ``options`` (``{"face": {...}, "attack": {...}}``) into the campaign's current settings.

    A part's options given replace that part's settings whole (``{}`` clears them: the
    runs' own defaults); parts not given keep theirs.

    Raises
    ------
    ValueError
        For a part other than ``evaluate_all.PARTS`` or options that are not a mapping.
    """
    unknown = sorted(set(options) - set(evaluate_all.PARTS))
    if unknown:
        raise ValueError(f"unknown part(s) {', '.join(unknown)}; parts are {', '.join(evaluate_all.PARTS)}")
    for part, given in options.items():
        if not isinstance(given, dict):
            raise ValueError(f"the options of part {part!r} must be a mapping, got {given!r}")
    with transaction.atomic():
        locked = Campaign.objects.select_for_update().get(pk=campaign.pk)
        locked.evaluation_options = {**(locked.evaluation_options or {}), **options}
        locked.save(update_fields=["evaluation_options"])
    campaign.evaluation_options = locked.evaluation_options
    return locked.evaluation_options


def rerun_campaign(
    campaign: Campaign,
    options: dict | None = None,
    *,
    phase: Phase | None = None,
    background: bool = False,
) -> list[tuple[Submission, list[evaluate_all.PartOutcome]]]:
    """Re-evaluate every submission of ``campaign`` (or of ``phase``) with the campaign's settings.

    Parameters
    ----------
    campaign : Campaign
    options : dict, optional
        New settings per part (:func:`set_campaign_options`), stored before anything starts.
    phase : Phase, optional
        Only this phase's runs (of ``campaign``).
    background : bool, default=False
        As ``evaluate_all.evaluate_everything`` (without a broker: a thread, so a page answers).

    Returns
    -------
    list of (Submission, list of PartOutcome)
        Per submission (by team, then name), what each part did: started, up to date,
        running or waiting (with the reason).

    Raises
    ------
    ValueError
        Bad ``options``, or a ``phase`` of another campaign.
    """
    if phase is not None and phase.campaign_id != campaign.pk:
        raise ValueError(f"phase {phase.name!r} is not a phase of campaign {campaign.slug!r}")
    if options:
        set_campaign_options(campaign, options)
    settings = {part: dict(given) for part, given in (campaign.evaluation_options or {}).items()}
    submissions = campaign.submissions.select_related("team", "campaign").order_by("team__name", "name")
    if phase is not None:
        submissions = submissions.filter(phase=phase)
    return [
        (submission, evaluate_all.evaluate_everything(submission, settings, background=background))
        for submission in submissions
    ]
