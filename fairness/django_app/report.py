"""The "fairness" section of each submission's summary (evalsite/reports.py registry).

For every per-video score in the report (automated match rate, rank-1 rate, detection
failure rate, human masking success, ...; see :func:`score_specs`) and every demographic
attribute of the campaign, it gives per-group statistics and the SQFR measures of
seeds/003_f24e77013896bd33.txt with stratified bootstrap intervals; and the same for the
face quality (sharpness, luminance) of the campaign's gallery stills and clear videos,
the paper's original use.

Settings (declared in evalsite/settings.py, each also an environment variable):

- ``FAIRNESS_SCORE_COLUMNS``: list of dicts ``{"column", "favourable": "higher"|"lower",
  "mdg_step", "description"}`` (JSON in the environment) replacing
  :data:`DEFAULT_SCORE_COLUMNS` (None: the default). Absent columns
  are skipped, so apps may add or rename columns freely.
- ``FAIRNESS_BOOTSTRAP_RESAMPLES`` (default 200), ``FAIRNESS_BOOTSTRAP_SEED`` (0).
- ``FAIRNESS_COMPUTE_QUALITY_ON_DEMAND`` (default True): measure missing face quality
  scores when a report is built (once per file; ``manage.py compute_face_quality`` does
  it ahead of time).
"""

from __future__ import annotations

from django.conf import settings

from evalsite import dictionary, reports
from evalsite.dictionary import Column

from .services import compute_face_quality, quality_samples, video_samples
from fairness.groups import split_by_group
from fairness.privacy import MIN_GROUP_IDENTITIES, privacy_fairness_by_attribute
from fairness.summary import ScoreSpec, comparable_samples, summarize_table
from evalsite.report_cache import cached, register_warmer

SOURCE = "seeds/003_f24e77013896bd33.txt, eq. 1-8"

# Privacy scores are oriented so that higher = better protected (the paper's SQFR
# assumes higher = better): a lower re-identification rate protects more.
DEFAULT_SCORE_COLUMNS = [
    {
        "column": "face_match_rate",
        "favourable": "lower",
        "mdg_step": 0.01,
        "description": "automated: share of masked frames verified as the true identity",
    },
    {
        "column": "face_rank1_rate",
        "favourable": "lower",
        "mdg_step": 0.01,
        "description": "automated: share of masked frames identified at rank 1",
    },
    {
        "column": "face_detection_failure_rate",
        "favourable": "higher",
        "mdg_step": 0.01,
        "description": "automated: share of clear-frame faces not detected after masking",
    },
    {
        "column": "human_id_accuracy_masked",
        "favourable": "lower",
        "mdg_step": 0.01,
        "description": "human: share of raters who picked the right identity for the masked video",
    },
    {
        "column": "human_masking_success",
        "favourable": "higher",
        "mdg_step": 0.01,
        "description": "human: identification accuracy clear - masked (can be negative)",
    },
    {
        "column": "human_action_accuracy_masked",
        "favourable": "higher",
        "mdg_step": 0.01,
        "description": "human: share of raters who labelled the action of the masked video right",
    },
]

QUALITY_SPECS = [
    ScoreSpec(
        "sharpness", "higher", 1.0, "variance of the Laplacian of the 160 px face crop (grey levels^2)"
    ),
    ScoreSpec("luminance", "higher", 0.01, "mean grey level of the face crop / 255"),
]


def score_specs() -> list[ScoreSpec]:
    """The per-video score columns to evaluate (``settings.FAIRNESS_SCORE_COLUMNS``)."""
    entries = settings.FAIRNESS_SCORE_COLUMNS or DEFAULT_SCORE_COLUMNS
    return [ScoreSpec(**entry) for entry in entries]


def _options() -> dict:
    return {
        "n_resamples": settings.FAIRNESS_BOOTSTRAP_RESAMPLES,
        "random_state": settings.FAIRNESS_BOOTSTRAP_SEED,
    }


def video_fairness(submission, samples=None) -> dict:
    """:func:`_video_fairness`, cached by the campaign's inputs inside a request (``evalsite.report_cache``)."""
    return cached(
        submission.campaign_id,
        ("video_fairness", submission.pk),
        lambda: _video_fairness(submission, samples),
    )


def _video_fairness(submission, samples=None) -> dict:
    """Per-video scores of ``submission`` across the campaign's demographic attributes
    (``samples``: :func:`services.video_samples` if already read)."""
    samples = video_samples(submission) if samples is None else samples
    return summarize_table(
        samples, specs=score_specs(), attributes=submission.campaign.demographic_attributes, **_options()
    )


def quality_fairness(campaign) -> dict:
    """:func:`_quality_fairness`, cached by the campaign's inputs inside a request (``evalsite.report_cache``)."""
    return cached(campaign, ("quality_fairness",), lambda: _quality_fairness(campaign))


def _quality_fairness(campaign) -> dict:
    """Face quality of the campaign's gallery stills and clear videos across attributes.

    Returns
    -------
    dict
        ``{"gallery": {...}, "clear_video": {...}}`` as :func:`fairness.summary.summarize_table`.
    """
    measure_missing_quality(campaign)
    samples = quality_samples(campaign)
    return {
        kind: summarize_table(
            samples[samples["kind"] == kind],
            specs=QUALITY_SPECS,
            attributes=campaign.demographic_attributes,
            **_options(),
        )
        for kind in ("gallery", "clear_video")
    }


# Shown on the fairness page and in the data dictionary: readers' words (the computation is
# fairness/privacy.py's; seeds/003 becomes its title by plain_words).
PRIVACY_SOURCE = (
    "ISO/IEC 19795-10 differential performance, here of the attacker; group means with bootstrap "
    "intervals over identities, spread with a permutation p-value, SQFR measures of seeds/003 on "
    "privacy = 1 - success"
)


def _identity_shares(samples, numerator, denominator=None):
    """Per identity: sum(numerator) / sum(denominator), or the mean of ``numerator`` (NaN rows dropped)."""
    # imported here: pandas is slow to import, and Django start-up imports this module
    import pandas as pd

    if numerator not in samples.columns or (denominator and denominator not in samples.columns):
        return pd.Series(dtype=float)
    frame = pd.DataFrame({"identity": samples["identity_code"].astype(str)})
    frame["top"] = pd.to_numeric(samples[numerator], errors="coerce")
    frame["bottom"] = pd.to_numeric(samples[denominator], errors="coerce") if denominator else 1.0
    frame = frame.dropna()
    frame = frame[frame["bottom"] > 0]
    grouped = frame.groupby("identity")[["top", "bottom"]].sum()
    return (grouped["top"] / grouped["bottom"]).clip(0.0, 1.0)


def privacy_success(submission, samples=None) -> dict[str, dict]:
    """Per-identity attacker success of each privacy measure of ``submission``.

    Returns
    -------
    dict
        name -> ``{"description", "success": pandas.Series (index: identity code, values in
        [0, 1])}`` for: the attack's re-identification (the declared attacker's share of each
        tested identity's probes identified; the worst-case pair's for runs without a declared
        attacker), the face evaluation's faces leaked (share of an identity's face tracks
        still detected or recognisable) and face detection (share of clear-frame faces still
        detected after masking = 1 - detection failure rate). Measures without data are left out.
    """
    import pandas as pd

    samples = video_samples(submission) if samples is None else samples
    out = {}
    attack = reports.summary_section("attack", submission) or {}
    if attack.get("declared_per_identity"):
        success = pd.Series(attack["declared_per_identity"], dtype=float)
        out["reidentification"] = {
            "description": "attack: share of the identity's probes the declared attacker "
            f"({attack['declared_recognizer']} x {attack['declared_attacker']}) identified (tested identities)",
            "success": success,
        }
    elif attack.get("per_identity"):
        success = pd.Series({r["identity"]: r["accuracy"] for r in attack["per_identity"]}, dtype=float)
        out["reidentification"] = {
            "description": "attack: share of the identity's frames the worst-case pair "
            f"({attack.get('worst_case_recognizer')} x {attack.get('worst_case_attacker')}) identified",
            "success": success,
        }
    leaked = _identity_shares(samples, "face_faces_leaked", "face_n_face_tracks")
    if len(leaked):
        out["faces_leaked"] = {
            "description": "face evaluation: share of the identity's face tracks still detected or "
            "recognisable in at least half of their masked frames",
            "success": leaked,
        }
    failure = _identity_shares(samples, "face_detection_failure_rate")
    if len(failure):
        out["face_detected"] = {
            "description": "face evaluation: share of the identity's clear-frame faces still detected "
            "after masking (1 - detection failure rate, mean over its videos)",
            "success": 1.0 - failure,
        }
    return out


def privacy_fairness_section(submission, samples=None) -> dict:
    """:func:`_privacy_fairness_section`, cached by the campaign's inputs inside a request
    (``evalsite.report_cache``; the fairness page computed it on every request, 1-3 s)."""
    return cached(
        submission.campaign_id,
        ("privacy_fairness", submission.pk),
        lambda: _privacy_fairness_section(submission, samples),
    )


def _privacy_fairness_section(submission, samples=None) -> dict:
    """Privacy fairness of ``submission`` across the campaign's demographic attributes.

    For each measure of :func:`privacy_success`, ``fairness.privacy.privacy_fairness_by_attribute``
    over the identities' attributes: per group n, mean success and its 95 % bootstrap
    interval over identities, the spread (largest - smallest group mean) with its
    permutation p-value, the SQFR measures on privacy = 1 - success, and warnings (groups
    under ``MIN_GROUP_IDENTITIES`` identities, groups of one left out). Groups only: no
    identity is named.

    Returns
    -------
    dict
        measure -> ``{"description", "n_identities", "attributes": {attribute: report or
        {"error": why}}}``.
    """
    import pandas as pd

    campaign = submission.campaign
    metadata = pd.DataFrame.from_dict(
        {i.code: i.attributes or {} for i in campaign.identities.all()}, orient="index"
    )
    attributes = [a for a in campaign.demographic_attributes if a in metadata.columns]
    options = {
        "n_resamples": settings.FAIRNESS_BOOTSTRAP_RESAMPLES,
        "n_permutations": settings.FAIRNESS_BOOTSTRAP_RESAMPLES,
        "random_state": settings.FAIRNESS_BOOTSTRAP_SEED,
    }
    out = {}
    for name, measure in privacy_success(submission, samples).items():
        success = measure["success"]
        success = success[success.index.isin(metadata.index)]
        reports_by_attribute = (
            privacy_fairness_by_attribute(success, metadata.fillna("").astype(str), attributes, **options)
            if len(success) and attributes
            else {}
        )
        out[name] = {
            "description": measure["description"],
            "n_identities": int(len(success)),
            "attributes": reports_by_attribute,
        }
    return out


def fairness_section(submission) -> dict:
    """The summary section: ``{"source", "attributes", "scores", "face_quality", "privacy"}``."""
    campaign = submission.campaign
    samples = video_samples(submission)
    return {
        "source": SOURCE,
        "attributes": list(campaign.demographic_attributes),
        "ideal": "1 = every group alike (all SQFR measures, higher is better)",
        "scores": video_fairness(submission, samples),
        "face_quality": quality_fairness(campaign),
        "privacy": privacy_fairness_section(submission, samples),
    }


SUMMARY_ENTRIES = {
    "source": Column("paper the measures come from", "str", source=SOURCE, internal=True),
    "attributes": Column("demographic attributes the videos are grouped by (campaign setting)", "list"),
    "ideal": Column("how to read the SQFR measures", "str"),
    "scores": Column(
        "per score column and attribute: per-group statistics (n, mean, ...) and the SQFR measures "
        "(Gini-based GC-SQFR, CSQFR, LWM, MDG-SQFR) with stratified bootstrap 95 % intervals; "
        "1 = every group alike",
        "object",
        range="[0, 1] (SQFR measures)",
        ideal="1",
        source=SOURCE,
    ),
    "privacy": Column(
        "privacy fairness: per measure (reidentification by the declared attacker, faces_leaked, "
        "face_detected) and attribute, the attacker's per-identity success by group (n, mean, 95 % "
        f"bootstrap interval over identities), the spread between groups with its permutation p-value "
        f"(differs: p < 0.05), SQFR measures on privacy = 1 - success, and warnings for groups under "
        f"{MIN_GROUP_IDENTITIES} identities; groups only",
        "object",
        range="[0, 1]",
        ideal="spread 0, differs false",
        source=PRIVACY_SOURCE,
    ),
    "face_quality": Column(
        "the same measures of face quality (sharpness, luminance) of the gallery stills and clear videos",
        "object",
        range="[0, 1] (SQFR measures)",
        ideal="1",
        source=SOURCE,
    ),
}


def register() -> None:
    """Register the section and its data-dictionary entries (called from ``FairnessConfig.ready``),
    and the measuring of missing face quality before a campaign's reports are warmed."""
    dictionary.register("fairness", SUMMARY_ENTRIES, level="summary")
    reports.register_summary_section("fairness", fairness_section)
    register_warmer(measure_missing_quality, prepares=True)


def measure_missing_quality(campaign) -> None:
    """Store the face quality of the campaign's items that have none yet, when
    ``FAIRNESS_COMPUTE_QUALITY_ON_DEMAND`` is on (``evalsite.report_cache.warm`` runs it
    before warming: the report would otherwise store it on its first read)."""
    if settings.FAIRNESS_COMPUTE_QUALITY_ON_DEMAND:
        compute_face_quality(campaign)


def _spec(specs, name: str) -> ScoreSpec:
    for spec in specs:
        if spec.name == name or spec.column == name:
            return spec
    raise KeyError(name)


def _per_group(samples, spec: ScoreSpec, attribute: str) -> dict:
    """The samples :func:`summarize_table` compares, grouped in the same (table) order."""
    if spec.column not in samples.columns or attribute not in samples.columns:
        return {}
    scores, labels, _ = comparable_samples(spec.oriented(samples[spec.column]), samples[attribute])
    return split_by_group(scores.to_numpy(), groups=labels.to_numpy())


def video_score_groups(submission, score: str, attribute: str) -> tuple[ScoreSpec, dict]:
    """(spec, {group label: oriented per-video scores}) for one score and attribute.

    Raises
    ------
    KeyError
        ``score`` is not a configured score column.
    """
    spec = _spec(score_specs(), score)
    return spec, _per_group(video_samples(submission), spec, attribute)


def quality_groups(campaign, kind: str, component: str, attribute: str) -> tuple[ScoreSpec, dict]:
    """(spec, {group label: quality values}) of ``kind`` ("gallery"/"clear_video") items."""
    spec = _spec(QUALITY_SPECS, component)
    samples = quality_samples(campaign)
    return spec, _per_group(samples[samples["kind"] == kind], spec, attribute)
