"""Django adapter of :mod:`trials.scoring`: responses from the database -> report columns.

Registered in :class:`trials.apps.TrialsConfig` as the ``human`` per-video columns and
summary section of ``evalsite.reports``. Responses of excluded raters are left out: a
rater who fails an attention check is flagged and excluded, and the organizer can include
them again (organizer page or admin), so scoring follows what the organizer sees. Every
human figure is also given with every rater counted, excluded ones too (``*_with_flagged``
columns, the ``with_flagged`` summary entry), and without any flagged rater
(``*_without_flagged``, ``without_flagged``: :func:`trials.integrity.flagged_rater_ids`,
i.e. also raters flagged for a shared browser or address or an outlying accuracy whom the
organizer has not excluded), so a reader sees how much the flags move it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db.models import Count, Q

from evalsite import dictionary, reports
from evalsite.dictionary import Column
from evalsite.report_cache import cached

from . import scoring
from .models import Response, TrialKind

# pandas is imported where it is used: slow to import, and Django start-up imports this module.
if TYPE_CHECKING:
    import pandas as pd

SEED = "seeds/002_68b18bfdbdb94491.txt"
CONDITIONS = {"clear": "the clear (unmasked) video", "masked": "the masked video"}


#: Responses that count: to items of the current files. Responses to a replaced clear or
#: masked file stay stored, on their superseded item (``trials.services.supersede_items``),
#: but describe the file the rater saw, not the current one.
COUNTED = Q(trial__item__superseded_at__isnull=True) & (
    Q(trial__item__masked_video__isnull=True) | Q(trial__item__masked_video__current=True)
)


def _responses(submission):
    """Evaluated responses on the campaign's clear items and on ``submission``'s masked items
    (every file version)."""
    return Response.objects.filter(
        trial__kind=TrialKind.ITEM,
        trial__item__campaign=submission.campaign_id,
    ).filter(Q(trial__item__masked_video__isnull=True) | Q(trial__item__masked_video__submission=submission))


def current_flags(submission):
    """The campaign's flags as of now (:func:`trials.integrity.current_flags`: computed from
    every answer so far, nothing written), once per campaign inside a request
    (``evalsite.report_cache``). Reading a report never writes; the flags are stored where
    they are acted on (the organizer page, the closing of rating)."""
    from . import integrity

    return cached(
        submission.campaign_id, ("human_flags",), lambda: integrity.current_flags(submission.campaign)
    )


def superseded_counts(submission, flags=None) -> pd.DataFrame:
    """Responses of usable raters kept on replaced files, per source video, task and condition.

    Returns
    -------
    pandas.DataFrame
        Index: source-video name; int columns ``human_id_n_superseded_{clear,masked}`` and
        ``human_action_n_superseded_{clear,masked}`` (videos without any: no row).
    """
    import pandas as pd

    rows = (
        _responses(submission)
        .exclude(COUNTED)
        .exclude(trial__session__rater_id__in=(flags or current_flags(submission)).excluded)
        .values_list("trial__item__source_video__name", "trial__item__task", "trial__item__masked_video_id")
    )
    frame = pd.DataFrame(
        [(v, "id" if t == "identity" else t, "clear" if m is None else "masked") for v, t, m in rows],
        columns=["video", "task", "condition"],
    )
    counts = frame.groupby(["video", "task", "condition"]).size()
    out = pd.DataFrame(index=pd.Index(sorted(set(frame["video"])), name="video"))
    for task in ("id", "action"):
        for condition in CONDITIONS:
            out[f"human_{task}_n_superseded_{condition}"] = [
                int(counts.get((video, task, condition), 0)) for video in out.index
            ]
    return out


def responses_frame(submission, *, include_excluded: bool = False, flags=None) -> pd.DataFrame:
    """Evaluated responses for one submission: the campaign's clear items + its masked items.

    Parameters
    ----------
    submission : evalsite.models.Submission
    include_excluded : bool, default=False
        Also keep responses of excluded raters (flagged, e.g. by a failed attention check,
        or excluded by the organizer; as of now: :func:`current_flags`), for a
        sensitivity analysis.
    flags : trials.integrity.FlagState, optional
        The flags to exclude by; default :func:`current_flags`.

    Returns
    -------
    pandas.DataFrame
        Columns of :data:`trials.scoring.REQUIRED_COLUMNS`, plus ``truth`` (the trial's
        correct answer) and ``n_faces`` (gallery faces shown; 0 for action trials).
    """
    import pandas as pd

    rows = _responses(submission).filter(COUNTED)
    if not include_excluded:
        rows = rows.exclude(trial__session__rater_id__in=(flags or current_flags(submission)).excluded)
    values = (
        rows.order_by()
        .annotate(n_faces=Count("trial__faces"))
        .values_list(
            "trial__session__rater_id",
            "trial__item__source_video__name",
            "trial__item__masked_video_id",
            "trial__item__task",
            "choice",
            "correct",
            "trial__target_present",
            "trial__correct_choice",
            "n_faces",
        )
    )
    frame = pd.DataFrame(
        [
            (r, v, "clear" if m is None else "masked", t, c, ok, p, x, f)
            for r, v, m, t, c, ok, p, x, f in values
        ],
        columns=[*scoring.REQUIRED_COLUMNS, "truth", "n_faces"],
    )
    return frame


def chance_levels(campaign) -> dict:
    """Accuracy of a rater who guesses uniformly: identity 1 / (faces + 1), action 1 / labels.

    An identity trial offers ``foils_per_trial + 1`` gallery faces and "not present"
    (seeds/002, section 4.2), so a uniform guess over the ``foils + 2`` choices is right
    with probability ``1 / (foils + 2)`` whether or not the target is shown. The action
    task offers the campaign's action vocabulary (NaN when it is empty).

    Returns
    -------
    dict
        ``lineup_size`` (int, faces shown), ``id_chance_level``, ``action_chance_level``
        (floats in (0, 1] or NaN).
    """
    faces = int(campaign.foils_per_trial) + 1
    labels = len(campaign.action_vocabulary or [])
    return {
        "lineup_size": faces,
        "id_chance_level": 1.0 / (faces + 1),
        "action_chance_level": 1.0 / labels if labels else float("nan"),
    }


def video_columns(submission) -> pd.DataFrame:
    """Per-video human columns for ``evalsite.reports`` (index: source-video name; every
    video of the campaign), with the chance levels ``human_id_chance_level`` and
    ``human_action_chance_level`` (also for videos not rated yet). Flags as of now
    (:func:`current_flags`)."""
    import pandas as pd

    flags = current_flags(submission)
    frame = responses_frame(submission, flags=flags)
    videos = pd.Index(
        submission.campaign.source_videos.order_by("name").values_list("name", flat=True), name="video"
    )
    out = scoring.per_video_scores(frame) if not frame.empty else pd.DataFrame(index=videos)
    out = out.reindex(videos.union(out.index))  # the chance levels hold for unrated videos too
    out = out.join(superseded_counts(submission, flags))  # responses kept on replaced files, not counted
    for name in [c for c in _video_entries() if c.startswith(("human_id_n_", "human_action_n_"))]:
        out[name] = out[name].fillna(0).astype(int) if name in out else 0  # no response: 0, not empty
    for condition in CONDITIONS:
        if f"human_id_chance_as_served_{condition}" not in out:
            out[f"human_id_chance_as_served_{condition}"] = float("nan")  # no identity trial served yet
    chance = chance_levels(submission.campaign)
    out["human_id_chance_level"] = chance["id_chance_level"]
    out["human_action_chance_level"] = chance["action_chance_level"]
    for variant, rows in flag_variants(submission, frame, flags).items():
        scores = scoring.per_video_scores(rows) if not rows.empty else pd.DataFrame(index=videos)
        for name in WITH_FLAGGED:
            out[f"{name}_{variant}"] = scores[name].reindex(out.index) if name in scores else float("nan")
    return out


def flag_variants(submission, usable: pd.DataFrame, flags=None) -> dict[str, pd.DataFrame]:
    """The responses behind the ``with_flagged`` and ``without_flagged`` figures.

    ``with_flagged``: every rater's responses, excluded raters' too; ``without_flagged``:
    the usable responses (``usable``) minus those of flagged raters
    (:func:`trials.integrity.flagged_rater_ids`, as of now: :func:`current_flags`).
    """
    flags = flags or current_flags(submission)
    flagged = flags.flagged
    return {
        "with_flagged": responses_frame(submission, include_excluded=True, flags=flags),
        "without_flagged": usable[~usable["rater"].isin(flagged)],
    }


#: Per-video figures also given with every rater counted and without flagged raters (:func:`flag_variants`).
WITH_FLAGGED = [
    *(f"human_{task}_{k}_{c}" for task in ("id", "action") for k in ("n", "accuracy") for c in CONDITIONS),
    "human_masking_success",
    "human_action_loss",
]


def summary(submission) -> dict:
    """The ``human`` summary section for ``evalsite.reports``: scores of usable responses,
    plus ``n_excluded_responses`` / ``n_excluded_raters`` (left out, not counted), the
    chance levels (:func:`chance_levels`), ``raters_per_video`` (the campaign's target)
    and ``status``: "not rated" (no usable response to this submission's masked videos;
    clear-video responses are shared by the campaign), "rating open", "rating closed".
    Flags as of now (:func:`current_flags`)."""
    flags = current_flags(submission)
    usable = responses_frame(submission, flags=flags)
    every = responses_frame(submission, include_excluded=True, flags=flags)
    campaign = submission.campaign
    out = {
        "status": "not rated"
        if not (usable["condition"] == "masked").any()
        else ("rating open" if campaign.rating_open else "rating closed"),
        **scoring.summary_scores(usable),
    }
    out["n_excluded_responses"] = len(every) - len(usable)
    out["n_superseded_responses"] = int(superseded_counts(submission, flags).to_numpy().sum())
    out["n_excluded_raters"] = len(set(every["rater"]) - set(usable["rater"]))
    out["raters_per_video"] = int(campaign.raters_per_video)
    out.update(chance_levels(campaign))
    for variant, rows in flag_variants(submission, usable, flags).items():
        out[variant] = {
            **scoring.summary_scores(rows),
            "n_raters_left_out": len(set(every["rater"]) - set(rows["rater"])),
        }
    return out


def human_caveats(submission) -> dict[str, list[str]]:
    """Videos rated by fewer raters than the campaign's target in some task and condition
    (once the submission's masked videos have responses)."""
    frame = responses_frame(submission)
    if not (frame["condition"] == "masked").any():
        return {}  # this submission is not rated yet (clear-video ratings are the campaign's)
    target = int(submission.campaign.raters_per_video)
    counts = frame.groupby(["video", "task", "condition"]).size()
    out: dict[str, list[str]] = {}
    for video, per_video in counts.groupby(level="video"):
        short = [
            f"{task} {condition} {per_video.get((video, task, condition), 0)}"
            for task in ("identity", "action")
            for condition in scoring.CONDITIONS
            if per_video.get((video, task, condition), 0) < target
        ]
        if short:
            out[video] = [f"human: fewer ratings than the target of {target} ({', '.join(short)})"]
    return out


def superseded_caveats(submission) -> dict[str, list[str]]:
    """Videos with responses kept on a replaced clear or masked file, per condition:
    "human: clear video replaced; 6 responses to the earlier file kept, not counted"."""
    counts = superseded_counts(submission)
    out: dict[str, list[str]] = {}
    for video, row in counts.iterrows():
        for condition in CONDITIONS:
            n = int(row[f"human_id_n_superseded_{condition}"] + row[f"human_action_n_superseded_{condition}"])
            if n:
                out.setdefault(video, []).append(
                    f"human: {condition} video replaced; {n} responses to the earlier file kept, not counted"
                )
    return out


GALLERY_FROM_THIS_CLIP = "gallery still is a frame of this clip (identification by pixel matching is easier)"


def gallery_caveats(submission) -> dict[str, list[str]]:
    """Videos whose identity's gallery still looks like a frame of an evaluated clip.

    Reads the stored still checks (:func:`trials.stills.stills_from_evaluated_clips`,
    made when rating media are prepared; unchecked stills give no caveat). The clip the
    still matches gets :data:`GALLERY_FROM_THIS_CLIP`; the identity's other videos get a
    note naming that clip (their recognition is against the same still).
    """
    from .stills import stills_from_evaluated_clips

    matched = stills_from_evaluated_clips(submission.campaign)
    out: dict[str, list[str]] = {}
    videos = submission.campaign.source_videos.filter(identity_id__in=matched).values_list(
        "name", "identity_id"
    )
    for name, identity in videos:
        clips = matched[identity]
        if name in clips:
            out[name] = [GALLERY_FROM_THIS_CLIP]
        else:
            out[name] = [
                f"gallery still of this identity is a frame of its evaluated clip {', '.join(clips)}"
            ]
    return out


def _video_entries() -> dict[str, Column]:
    entries: dict[str, Column] = {}
    for condition, shown in CONDITIONS.items():
        entries |= {
            f"human_id_n_{condition}": Column(
                f"identity-matching responses for {shown} (usable raters)",
                "int",
                unit="responses",
                range=">= 0",
            ),
            f"human_id_accuracy_{condition}": Column(
                f"share of identity-matching responses for {shown} that picked the right face, or 'not "
                "present' when the person was not among the faces",
                "float",
                unit="fraction",
                range="[0, 1]",
                ideal="human_id_chance_level" if condition == "masked" else "",
                precision=4,
                source=f"{SEED}, section 4.2",
            ),
            f"human_id_ci_low_{condition}": Column(
                f"lower end of the 95 % Wilson interval of human_id_accuracy_{condition}",
                "float",
                unit="fraction",
                range="[0, 1]",
                precision=4,
                source="Wilson 1927; statsmodels proportion_confint",
            ),
            f"human_id_ci_high_{condition}": Column(
                f"upper end of the 95 % Wilson interval of human_id_accuracy_{condition}",
                "float",
                unit="fraction",
                range="[0, 1]",
                precision=4,
                source="Wilson 1927; statsmodels proportion_confint",
            ),
            f"human_id_hit_rate_{condition}": Column(
                f"share of target-present identity trials for {shown} answered with the target's face",
                "float",
                unit="fraction",
                range="[0, 1]",
                precision=4,
                source="trials/scoring.py, identification_scores",
            ),
            f"human_id_false_alarm_rate_{condition}": Column(
                f"share of target-absent identity trials for {shown} answered with a face instead of "
                "'not present' (empty without target-absent trials)",
                "float",
                unit="fraction",
                range="[0, 1]",
                ideal="0",
                precision=4,
                source="trials/scoring.py, identification_scores",
            ),
            f"human_action_n_{condition}": Column(
                f"action-labelling responses for {shown}", "int", unit="responses", range=">= 0"
            ),
            f"human_id_n_superseded_{condition}": Column(
                f"identity-matching responses (usable raters) kept on an earlier, replaced file of {shown}: "
                f"not counted in human_id_n_{condition} or the accuracy",
                "int",
                unit="responses",
                range=">= 0",
                ideal="0",
                source="trials/services.py, supersede_items",
            ),
            f"human_action_n_superseded_{condition}": Column(
                f"action-labelling responses (usable raters) kept on an earlier, replaced file of {shown}: "
                f"not counted in human_action_n_{condition} or the accuracy",
                "int",
                unit="responses",
                range=">= 0",
                ideal="0",
                source="trials/services.py, supersede_items",
            ),
            f"human_action_accuracy_{condition}": Column(
                f"share of action-labelling responses for {shown} naming the video's action",
                "float",
                unit="fraction",
                range="[0, 1]",
                ideal="as on the clear video" if condition == "masked" else "",
                precision=4,
                source=f"{SEED}, section 5",
            ),
            f"human_action_ci_low_{condition}": Column(
                f"lower end of the 95 % Wilson interval of human_action_accuracy_{condition}",
                "float",
                unit="fraction",
                range="[0, 1]",
                precision=4,
            ),
            f"human_action_ci_high_{condition}": Column(
                f"upper end of the 95 % Wilson interval of human_action_accuracy_{condition}",
                "float",
                unit="fraction",
                range="[0, 1]",
                precision=4,
            ),
        }
    order = [
        f"human_id_{k}_{c}"
        for k in ("n", "accuracy", "ci_low", "ci_high", "hit_rate", "false_alarm_rate")
        for c in CONDITIONS
    ]
    order += ["human_masking_success", "human_id_chance_level"]
    order += [f"human_id_n_superseded_{c}" for c in CONDITIONS]
    order += [f"human_action_{k}_{c}" for k in ("n", "accuracy", "ci_low", "ci_high") for c in CONDITIONS]
    order += ["human_action_loss", "human_action_chance_level"]
    order += [f"human_action_n_superseded_{c}" for c in CONDITIONS]
    order += [f"human_id_chance_as_served_{c}" for c in CONDITIONS]
    for condition, shown in CONDITIONS.items():
        entries[f"human_id_chance_as_served_{condition}"] = Column(
            f"chance level of the identity lineups of {shown} as served: mean over its trials of "
            "1 / (faces shown + 1), the accuracy of a uniform guess (the lineup design makes it the "
            "best accuracy without recognition: trials/design.py, balanced exposure)",
            "float",
            unit="fraction",
            range="(0, 1]",
            precision=4,
            source="trials/scoring.py, served_chance",
        )
    order += [f"{name}_{variant}" for name in WITH_FLAGGED for variant in ("with_flagged", "without_flagged")]
    entries |= {
        "human_masking_success": Column(
            "human_id_accuracy_clear - human_id_accuracy_masked: how much masking lowered human identification",
            "float",
            unit="fraction",
            range="[-1, 1]",
            ideal="human_id_accuracy_clear - human_id_chance_level (masked at chance)",
            precision=4,
            source=f"{SEED}, section 4.3",
        ),
        "human_id_chance_level": Column(
            "identification accuracy of a uniform guess over the lineup's faces and 'not present': "
            "1 / (lineup_size + 1)",
            "float",
            unit="fraction",
            range="(0, 1]",
            precision=4,
            source=f"{SEED}, section 4.2 (5 faces + not present: 1/6)",
        ),
        "human_action_loss": Column(
            "human_action_accuracy_clear - human_action_accuracy_masked: action recognisability lost by masking",
            "float",
            unit="fraction",
            range="[-1, 1]",
            ideal="0",
            precision=4,
            source=f"{SEED}, section 5",
        ),
        "human_action_chance_level": Column(
            "action accuracy of a uniform guess over the campaign's action vocabulary: 1 / labels",
            "float",
            unit="fraction",
            range="(0, 1]",
            precision=4,
        ),
    }
    for name in WITH_FLAGGED:
        base = entries[name]
        entries[f"{name}_with_flagged"] = Column(
            **{
                **base.__dict__,
                "meaning": f"{name} with every rater's responses counted, excluded raters' too: {base.meaning}",
                "ideal": "",
            }
        )
        entries[f"{name}_without_flagged"] = Column(
            **{
                **base.__dict__,
                "meaning": f"{name} without the responses of any flagged rater (attention or plausibility "
                "checks, shared browser or address, outlying accuracy: trials.integrity.flagged_rater_ids), "
                f"even one the organizer included: {base.meaning}",
                "ideal": "",
            }
        )
    return {name: entries[name] for name in order}


def _summary_entries() -> dict[str, Column]:
    video = _video_entries()
    entries = {
        "status": Column(
            "not rated (no usable response to this submission's masked videos), rating open, rating closed",
            "str",
            range="not rated | rating open | rating closed",
        ),
        "n_responses": Column(
            "usable evaluated responses (both tasks and conditions)", "int", unit="responses"
        ),
        "n_raters": Column("raters with a usable response", "int", unit="raters"),
    }
    for key, task in (("id", "identity-matching"), ("action", "action-labelling")):
        for condition, shown in CONDITIONS.items():
            base = video[f"human_{key}_accuracy_{condition}"]
            entries[f"{key}_accuracy_{condition}"] = Column(
                **{**base.__dict__, "meaning": f"pooled over videos: {base.meaning}"}
            )
            entries[f"{key}_ci_{condition}"] = Column(
                f"[low, high] 95 % Wilson interval of {key}_accuracy_{condition}", "list", unit="fraction"
            )
            entries[f"{key}_n_{condition}"] = Column(f"{task} responses for {shown}", "int", unit="responses")
    entries["masking_success"] = Column(
        **{
            **video["human_masking_success"].__dict__,
            "meaning": "mean over videos rated in both conditions of "
            "human_masking_success (clear - masked identification accuracy)",
        }
    )
    entries["action_loss"] = Column(
        **{
            **video["human_action_loss"].__dict__,
            "meaning": "mean over videos rated in both conditions of "
            "human_action_loss (clear - masked action accuracy)",
        }
    )
    entries["n_videos_both_conditions"] = Column(
        "videos with identity responses in both conditions (the masking_success mean is over these)",
        "int",
        unit="videos",
    )
    for condition, shown in CONDITIONS.items():
        entries[f"action_agreement_{condition}"] = Column(
            f"Fleiss' kappa of the action labels for {shown}: {{fleiss_kappa, n_videos, raters_per_video}} "
            "(videos with the most common number of ratings)",
            "object",
            source="Fleiss 1971; statsmodels fleiss_kappa",
        )
        entries[f"action_alpha_{condition}"] = Column(
            f"Krippendorff's alpha (nominal) of the action labels for {shown}, every video with at least 2 "
            "responses (missing ratings allowed), with a 95 % bootstrap interval over videos: "
            "{krippendorff_alpha, ci_low, ci_high, n_videos, n_responses}",
            "object",
            source="Krippendorff 2011, Computing Krippendorff's alpha-reliability; krippendorff package",
        )
    entries |= {
        "n_excluded_responses": Column(
            "responses of excluded raters (failed attention checks), left out",
            "int",
            unit="responses",
            ideal="0",
        ),
        "n_excluded_raters": Column("raters excluded and left out", "int", unit="raters", ideal="0"),
        "n_superseded_responses": Column(
            "responses of usable raters kept on replaced clear or masked files (both tasks), not counted",
            "int",
            unit="responses",
            ideal="0",
            source="trials/services.py, supersede_items",
        ),
        "raters_per_video": Column(
            "the campaign's target of responses per video and condition", "int", unit="raters"
        ),
        "lineup_size": Column(
            "gallery faces shown in an identity trial (foils + target)", "int", unit="faces"
        ),
        "id_chance_level": video["human_id_chance_level"],
        "action_chance_level": video["human_action_chance_level"],
    }
    for condition, shown in CONDITIONS.items():
        entries[f"id_chance_as_served_{condition}"] = Column(
            **{
                **video[f"human_id_chance_as_served_{condition}"].__dict__,
                "meaning": "pooled over videos: " + video[f"human_id_chance_as_served_{condition}"].meaning,
            }
        )
        entries[f"action_majority_rate_{condition}"] = Column(
            f"share of action responses for {shown} whose correct action is the most common one: the "
            "accuracy of always naming that action without looking (the honest chance level of the "
            "action task, above 1 / labels when actions are unevenly common)",
            "float",
            unit="fraction",
            range="(0, 1]",
            precision=4,
            source="trials/scoring.py, majority_rate",
        )
        entries[f"action_chance_corrected_{condition}"] = Column(
            f"(action_accuracy_{condition} - action_majority_rate_{condition}) / "
            f"(1 - action_majority_rate_{condition}): action accuracy above always naming the most "
            "common action; 0 = no better, 1 = always right, negative = worse",
            "float",
            unit="fraction",
            range="<= 1",
            ideal="as on the clear video" if condition == "masked" else "",
            precision=4,
            source="Cohen 1960 (form (p_o - p_e) / (1 - p_e)), p_e = the majority-class rate; "
            "trials/scoring.py, chance_corrected",
        )
    entries["with_flagged"] = Column(
        "every figure of this section recomputed with every "
        "rater's responses counted, excluded raters' too, plus n_raters_left_out (0)",
        "object",
        source="trials/scoring.py, summary_scores",
    )
    entries["without_flagged"] = Column(
        "every figure of this section recomputed without any "
        "flagged rater (trials.integrity.flagged_rater_ids: attention or plausibility checks, shared "
        "browser or address, outlying accuracy), plus n_raters_left_out",
        "object",
        source="trials/scoring.py, summary_scores; trials/integrity.py, flagged_rater_ids",
    )
    return entries


def register() -> None:
    """Register the ``human`` columns, summary section, caveats and their dictionary entries."""
    dictionary.register("human", _video_entries())
    dictionary.register("human", _summary_entries(), level="summary")
    reports.register_video_columns("human", video_columns)
    reports.register_summary_section("human", summary)
    reports.register_video_caveats("gallery", gallery_caveats)
    reports.register_video_caveats("human", human_caveats)
    reports.register_video_caveats("superseded", superseded_caveats)
