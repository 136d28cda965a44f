"""Report providers of behaviour preservation (see evalsite/reports.py; issue 12).

Both read the submission's latest completed face run that measured behaviour (a run
started with ``behaviour: false`` is passed over, so it never hides an earlier
measurement): per-video columns ``behaviour_<metric>`` (``automated.behaviour.compare``
metrics and ``score.behaviour_score`` components; the score itself is
``behaviour_score``) with ``pu_score_automated``, and the ``behaviour`` summary section
(``score.summarize_behaviour``).

``pu_score_automated`` (``score.automated_pu_score``) is the PU score with the
automated behaviour score as the utility kept instead of human action ratings; it is
labelled automated, and ``evalsite.reports`` blanks it where the human ``pu_score``
exists (human ratings take precedence).

Attribute leakage (``automated.behaviour.leakage``, seeds/000 section 3.1): the same run
stores the gender attacker's samples per video (``VideoScore.attribute_samples``);
videos whose identity has a known gender (``GENDER_ATTRIBUTES``) get the per-video columns
``behaviour_gender_clear_accuracy`` / ``behaviour_gender_masked_accuracy`` (pretrained
attacker), and the ``attribute_leakage`` summary section scores the submission:
pretrained and parrot attackers, leakage above the majority-class rate.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING


from evalsite import reports

from . import behaviour_dictionary

from .face_models import AutomatedRun, VideoScore

# pandas and automated.behaviour (its package imports the face evaluation, scikit-image, the
# models) are imported where they are used: Django start-up imports this module.
if TYPE_CHECKING:
    import pandas as pd

    from automated.behaviour.leakage import AttributeVideo

PU_AUTOMATED = "pu_score_automated"
PU_AUTOMATED_LABEL = "automated: behaviour-preservation score as the utility kept, x (1 - SSIM)"


def behaviour_run(submission) -> AutomatedRun | None:
    """The latest completed face run of ``submission`` that measured behaviour, or None."""
    runs = AutomatedRun.objects.completed().filter(submission=submission).exclude(config__behaviour=False)
    return runs.order_by("-finished_at", "-id").first()


def _scores(run):
    # Not of a replaced (superseded) masked video, nor of attacker training material.
    return (
        VideoScore.objects.filter(run=run, behaviour_metrics__isnull=False)
        .reported()
        .select_related("masked_video__source_video__identity")
    )


#: Identity attributes read as the gender label, in order: the dataset's official label,
#: then a by-eye label (the demo's ``gender_unofficial`` for GRID); counted apart in the section.
GENDER_ATTRIBUTES = ("gender", "gender_unofficial")


def _gender_and_source(score) -> tuple[str | None, str | None]:
    """(gender label, attribute it came from) of the video's person, or (None, None) if unknown."""
    from automated.behaviour.leakage import gender_index

    attributes = score.masked_video.source_video.identity.attributes or {}
    for key in GENDER_ATTRIBUTES:
        try:
            gender_index(attributes.get(key))
        except ValueError:  # missing, "unknown" or a label the attacker has no class for
            continue
        return attributes[key], key
    return None, None


def _known_gender(score):
    """The video's person's gender label if the campaign records a known one (``GENDER_ATTRIBUTES``), else None."""
    return _gender_and_source(score)[0]


def _attribute_video(score) -> AttributeVideo | None:
    """The gender attacker's evidence of one scored video; None without samples or a known gender."""
    from automated.behaviour.leakage import AttributeVideo

    gender = _known_gender(score)
    if score.attribute_samples is None or gender is None:
        return None
    identity = score.masked_video.source_video.identity
    return AttributeVideo.from_samples(score.attribute_samples, identity.code, gender)


def _nan(value) -> float:
    return math.nan if value is None else float(value)


def automated_pu(behaviour, ssim) -> float:
    """``score.automated_pu_score`` of stored values (None -> NaN)."""
    from automated.behaviour.score import automated_pu_score

    return automated_pu_score(_nan(behaviour), _nan(ssim))


def behaviour_video_columns(submission) -> pd.DataFrame:
    """Index: source-video name; ``behaviour_score``, ``behaviour_<metric>`` and ``pu_score_automated``.

    Units as ``automated.behaviour.compare``: angles in degrees, rates, correlations,
    F1 and PCK as fractions, counts of tested frames; empty (NaN) where undefined.
    """
    import pandas as pd

    from automated.behaviour.leakage import pretrained_accuracy

    run = behaviour_run(submission)
    rows = []
    for score in _scores(run) if run is not None else []:
        metrics = score.behaviour_metrics
        row = {"video": score.masked_video.source_video.name, "behaviour_score": _nan(score.behaviour_score)}
        row.update(
            {f"behaviour_{key}": _nan(value) for key, value in metrics.items() if key != "behaviour_score"}
        )
        row[PU_AUTOMATED] = automated_pu(score.behaviour_score, score.ssim)
        video = _attribute_video(score)
        if video is not None:
            row["behaviour_gender_clear_accuracy"] = pretrained_accuracy([video], side="clear")
            row["behaviour_gender_masked_accuracy"] = pretrained_accuracy([video], side="masked")
        rows.append(row)
    if not rows:
        return pd.DataFrame(columns=["behaviour_score", PU_AUTOMATED])
    return pd.DataFrame(rows).set_index("video")


def behaviour_summary(submission) -> dict | None:
    """``summarize_behaviour`` over the current videos of the behaviour run, or None.

    Adds ``run_id``, the submission-level ``pu_score_automated`` (from the mean
    behaviour score and the mean SSIM over the same videos) and its label.
    """
    from automated.behaviour.score import summarize_behaviour

    run = behaviour_run(submission)
    scores = list(_scores(run)) if run is not None else []
    if not scores:
        return None
    summary = summarize_behaviour({k: _nan(v) for k, v in s.behaviour_metrics.items()} for s in scores)
    ssim = [s.ssim for s in scores if s.ssim is not None and s.behaviour_score is not None]
    pu = automated_pu(summary.get("behaviour_score"), sum(ssim) / len(ssim) if ssim else None)
    summary = {"run_id": run.pk, **summary, PU_AUTOMATED: pu, "pu_score_automated_kind": PU_AUTOMATED_LABEL}
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in summary.items()}


_LEAKAGE_CACHE: dict = {}  # (run, scores, genders) -> section: the parrot refits per identity
_LEAKAGE_CACHE_MAX = 64


def leakage_summary(submission) -> dict | None:
    """``attribute_leakage`` of the behaviour run's videos with a known gender, or None.

    Adds ``run_id``, ``attribute`` ("gender") and ``n_videos_unknown_gender`` (videos
    whose person has no known gender: left out). None when no video has both samples
    and a known gender (e.g. a campaign without a gender attribute).
    """
    from automated.behaviour.leakage import attribute_leakage

    run = behaviour_run(submission)
    scores = list(_scores(run)) if run is not None else []
    videos = [_attribute_video(s) for s in scores]
    known = [v for v in videos if v is not None]
    if not known:
        return None
    key = (run.pk, tuple((s.pk, _known_gender(s)) for s in scores))
    if key not in _LEAKAGE_CACHE:
        if len(_LEAKAGE_CACHE) >= _LEAKAGE_CACHE_MAX:
            _LEAKAGE_CACHE.clear()
        result = {
            "run_id": run.pk,
            "attribute": "gender",
            **attribute_leakage(known),
            "n_videos_unknown_gender": len(videos) - len(known),
            "n_videos_unofficial_gender": sum(
                1 for s, v in zip(scores, videos) if v is not None and _gender_and_source(s)[1] != "gender"
            ),
        }
        _LEAKAGE_CACHE[key] = {
            k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in result.items()
        }
    return dict(_LEAKAGE_CACHE[key])


def register() -> None:
    """Register this module's video columns, summary sections and their dictionary entries."""
    reports.register_video_columns("behaviour", behaviour_video_columns)
    reports.register_summary_section("behaviour", behaviour_summary)
    reports.register_summary_section("attribute_leakage", leakage_summary)
    behaviour_dictionary.register()
