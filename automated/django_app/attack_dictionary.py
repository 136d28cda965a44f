"""Data-dictionary entries of the attack report columns (``evalsite.dictionary``).

Per-video columns ``attack_*`` and the summary section ``attack``
(``attack_service.attack_summary``). Definitions: ``automated.attack.crossvideo`` (the
headline cross-video protocol), ``automated.attack.suite`` (the within-video table) and
``automated.attack.verification``.
"""

from __future__ import annotations

from evalsite import dictionary
from evalsite.dictionary import Column

CROSS = "automated.attack.crossvideo; seeds/000 sections 4.2.2 and 5.2 (worst case), seeds/002 section 3"
VERIFY = "automated.attack.verification; ISO/IEC 19795-1 terms; seeds/000 section 2 (ROC and CMC)"
PAIR = "the recognizer x attacker pair with the highest mean accuracy over cross-video folds"
DECLARED = (
    "automated.attack.declared.declared_from_predictions; VoicePrivacy Challenge 2024 evaluation plan "
    "(systems ranked by one declared semi-informed attacker, the others for context; EERs with "
    "confidence intervals); issue 22"
)
LINKABILITY = (
    "Gomez-Barrero, Galbally, Rathgeb, Busch, IEEE TIFS 13(6) 2018, section III, eq. 6 (D<->(s)) and "
    "eq. 7 (D<->sys), reference code dasec/unlinkability-metric (automated.attack.linkability); "
    "intervals: bootstrap over probe identities (automated.attack.verification.identity_bootstrap)"
)
TEMPORAL = (
    "automated.temporal (issue 22: temporal identity consistency, 1 - mean cosine distance of "
    "consecutive frames' embeddings, as video face anonymization work measures it; flicker)"
)
LINKING = (
    "automated.temporal.linking_attack: masked-vs-masked same-person verification across recordings; "
    "EER (ISO/IEC 19795-1) and D<->sys (Gomez-Barrero et al. 2018, eq. 7); chance: identities "
    "permuted over the recordings"
)


def _fraction(meaning, ideal="chance level", source=CROSS) -> Column:
    return Column(meaning, "float", unit="fraction", range="[0, 1]", ideal=ideal, precision=3, source=source)


def _count(meaning, unit) -> Column:
    return Column(meaning, "int", unit=unit, range=">= 0", source=CROSS)


VIDEO = {
    "attack_worst_case_accuracy": _fraction(
        f"share of this masked video's tested frames re-identified by {PAIR}, in the fold that tested "
        "it (the attacker trained on other videos only); empty for the attacker's own videos and "
        "identities with a single video"
    ),
    "attack_worst_case_test_frames": _count("tested frames of this video in its cross-video fold", "frames"),
    "attack_temporal_consistency": Column(
        "temporal identity consistency of the masked face: 1 - mean cosine distance of the pretrained "
        "embeddings (dlib ResNet) of consecutive analysed frames; near 1 for a stable (pseudo-)identity, "
        "but a pretrained embedder maps even noise into a narrow cone, so read it with the linking attacker",
        "float",
        range="[-1, 1]",
        ideal="attack_temporal_consistency_clear or lower",
        precision=4,
        source=TEMPORAL,
    ),
    "attack_temporal_consistency_clear": Column(
        "the same of the clear video (the reference)", "float", range="[-1, 1]", precision=4, source=TEMPORAL
    ),
    "attack_flicker": Column(
        "flicker: mean absolute frame-to-frame difference of the masked face crop (the clear frame's box), "
        "consecutive analysed frames",
        "float",
        unit="grey levels (0-255)",
        range=">= 0",
        ideal="attack_flicker_clear",
        precision=2,
        source=TEMPORAL,
    ),
    "attack_flicker_clear": Column(
        "the same of the clear video (the reference)",
        "float",
        unit="grey levels (0-255)",
        range=">= 0",
        precision=2,
        source=TEMPORAL,
    ),
}

SUMMARY = {
    "protocol": Column("protocol of the headline: cross_video (folds over videos)", "str", source=CROSS),
    "attackers": Column(
        "attackers run (clear, naive, parrot_25/50/75, parrot, reversal)", "list", source=CROSS
    ),
    "recognizers": Column("recognizers run", "list", source=CROSS),
    "selection": Column("identity selections of the within-video table", "list", source=CROSS),
    "stride": Column("every n-th frame used", "int", unit="frames", range=">= 1", source=CROSS),
    "n_folds": Column(
        "cross-video folds that tested frames (configured: empty = leave one video out)",
        "int",
        unit="folds",
        range=">= 0",
        source=CROSS,
    ),
    "worst_case_accuracy": _fraction(f"mean over folds of rank-1 identification accuracy of {PAIR}"),
    "no_worst_case": Column(
        "why there is no cross-video worst case (empty when there is)", "str", source=CROSS
    ),
    "worst_case_chance_normalised": Column(
        "(worst_case_accuracy - chance) / (1 - chance)",
        "float",
        range="[-1/(n-1), 1]",
        ideal="0",
        precision=3,
        source=CROSS,
    ),
    "worst_case_recognizer": Column("recognizer of the worst-case pair", "str", source=CROSS),
    "worst_case_attacker": Column("attacker knowledge of the worst-case pair", "str", source=CROSS),
    "worst_case_sd": Column(
        "sample standard deviation (ddof 1) of the worst-case pair's per-fold accuracy",
        "float",
        unit="fraction",
        range=">= 0",
        precision=3,
        source=CROSS,
    ),
    "worst_case_min": _fraction("lowest per-fold accuracy of the worst-case pair"),
    "worst_case_max": _fraction("highest per-fold accuracy of the worst-case pair"),
    "worst_case_ci_low": _fraction(
        "95 % Student-t interval of the mean over folds, low end (folds share data)"
    ),
    "worst_case_ci_high": _fraction("95 % Student-t interval of the mean over folds, high end"),
    "chance_level": _fraction("1 / identities trained on (classes of the closed set)", ideal=""),
    "clear_bound": _fraction("best mean clear-on-clear accuracy over recognizers (the worst-case bound)", ""),
    "clear_bound_recognizer": Column("recognizer of the clear bound", "str", source=CROSS),
    "n_identities": _count(
        "identities of the closed set (single-video identities are extra classes)", "identities"
    ),
    "n_evaluated_identities": _count("identities with a tested video", "identities"),
    "n_videos": _count("videos with a face crop", "videos"),
    "n_tested_videos": _count("videos tested in some fold", "videos"),
    "n_attacker_videos": _count(
        "the attacker's own videos (role attacker_train): trained on, never tested", "videos"
    ),
    "n_frames": _count("face crops used", "frames"),
    "n_tested_frames": _count("face crops tested over all folds", "frames"),
    "table": Column(
        "per recognizer x attacker: mean accuracy over folds, sd, 95 % interval, folds", "list", source=CROSS
    ),
    "per_identity": Column(
        "per tested identity: tested videos, frames and accuracy of the worst-case pair (organizers only)",
        "list",
        source=CROSS,
        organizers_only=True,
    ),
    "format_confounded_identities": Column(
        "tested identities alone in a video format among the run's videos (frame size, frame rate, "
        "container): identity, format and its videos in that format; an attacker can name them by "
        "format, not face, so read their per-identity accuracy apart (empty: none)",
        "list",
        source="evalsite.video_formats.alone_in_format (issue 11)",
        organizers_only=True,
    ),
    "verification": Column(
        "per pretrained embedder, masked probes of each fold vs the clear gallery of the others: eer, "
        "fnmr_at_fmr_0_01, fnmr_at_fmr_0_001 (with fmr_*_resolved), cmc_rank_1..5, comparison counts; "
        "linkability (D<->sys of the genuine vs impostor scores, 0 unlinkable .. 1 fully linkable), "
        "linkability_chance (its median over 200 random relabellings: the level of scores that carry no "
        "identity) and linkability_curve (D<->(s) and both densities over 100 score bins); eer_ci_low/high "
        "and linkability_ci_low/high: 95 % bootstrap intervals over probe identities (n_probe_identities)",
        "object",
        source=VERIFY + "; linkability: Gomez-Barrero et al., IEEE TIFS 13(6) 2018, eq. 6-7, reference "
        "code dasec/unlinkability-metric (automated.attack.linkability)",
    ),
    "scene_memorisation": Column(
        "the within-video table (every video split in time: the attacker trains on other frames of the "
        "tested recording); its highest accuracy, pair and table (or ``skipped``: why the split could not "
        "be made, e.g. clips too short for the gap); shown apart, never the worst case",
        "object",
        source="automated.attack.suite, each attacker trained and tested on frames of the same videos",
    ),
    "declared_attacker": Column(
        "the campaign's declared (headline) attacker knowledge: parrot = trained on masked data "
        "(VoicePrivacy's semi-informed attacker)",
        "str",
        source=DECLARED,
    ),
    "declared_recognizer": Column(
        "the recognizer of the declared attacker, chosen as the strongest on the development identities' "
        "probes only (a seeded 30 % of the tested identities, never reported)",
        "str",
        source=DECLARED,
    ),
    "declared_accuracy": _fraction(
        "the headline: rank-1 accuracy of the declared pair on the tested identities' probes (pooled frames)",
        source=DECLARED,
    ),
    "declared_ci_low": _fraction(
        "95 % percentile bootstrap interval over tested identities of declared_accuracy, low end",
        source=DECLARED,
    ),
    "declared_ci_high": _fraction("the same interval, high end", source=DECLARED),
    "declared_development_accuracy": _fraction(
        "the declared pair's accuracy on the development identities, where it was chosen (optimistic)",
        source=DECLARED,
    ),
    "declared_n_development_identities": Column(
        "identities the declared recognizer was chosen on", "int", unit="identities", source=DECLARED
    ),
    "declared_n_tested_identities": Column(
        "identities the declared figures are computed on", "int", unit="identities", source=DECLARED
    ),
    "declared_worst_case_accuracy": _fraction(
        "secondary figure: the highest pooled accuracy over every recognizer x attacker pair on the same "
        "tested probes; a maximum over worst_case_n_pairs pairs, so it drifts upwards with their number",
        source=DECLARED,
    ),
    "declared_worst_case_pair": Column(
        "the pair of declared_worst_case_accuracy (recognizer x attacker)", "str", source=DECLARED
    ),
    "worst_case_n_pairs": Column(
        "recognizer x attacker pairs the worst case is the maximum of (clear bound excluded)",
        "int",
        unit="pairs",
        range=">= 1",
        source=DECLARED,
    ),
    "declared_unavailable": Column(
        "why there is no declared figure (e.g. fewer than 4 tested identities to split)",
        "str",
        source=DECLARED,
    ),
    "declared_per_identity": Column(
        "the declared pair's share of each tested identity's probes identified (organizers only; the input "
        "of privacy fairness)",
        "object",
        source=DECLARED,
        organizers_only=True,
    ),
    "linkability_by_group": Column(
        "per demographic attribute and group: EER and linkability D<->sys of the group's masked probes vs "
        "the clear gallery (default pretrained embedder), each with its 95 % bootstrap interval over the "
        "group's identities, linkability_chance (median of 100 relabellings) and counts; groups only, no "
        "identity",
        "object",
        source=LINKABILITY + "; ISO/IEC 19795-10 (differential performance across groups)",
    ),
    "temporal_consistency": Column(
        "mean over masked videos of attack_temporal_consistency",
        "float",
        range="[-1, 1]",
        precision=4,
        source=TEMPORAL,
    ),
    "temporal_consistency_clear": Column(
        "mean over the clear videos of the same", "float", range="[-1, 1]", precision=4, source=TEMPORAL
    ),
    "flicker": Column(
        "mean over masked videos of attack_flicker",
        "float",
        unit="grey levels (0-255)",
        range=">= 0",
        precision=2,
        source=TEMPORAL,
    ),
    "flicker_clear": Column(
        "mean over the clear videos of the same",
        "float",
        unit="grey levels (0-255)",
        range=">= 0",
        precision=2,
        source=TEMPORAL,
    ),
    "linking_eer": _fraction(
        "the linking attacker's EER: same person or not, for pairs of masked samples of two different "
        "recordings, by embedding distance (up to 10 samples per recording); 0.5 = chance",
        ideal="linking_eer_chance (0.5)",
        source=LINKING,
    ),
    "linking_eer_chance": _fraction(
        "median EER with the identities permuted over the recordings", ideal="", source=LINKING
    ),
    "linking_linkability": _fraction(
        "the linking attacker's D<->sys over the same pairs (0 unlinkable .. 1 fully linkable)",
        ideal="linking_linkability_chance",
        source=LINKING,
    ),
    "linking_linkability_chance": _fraction(
        "median D<->sys with the identities permuted over the recordings (the histogram estimate's level "
        "without identity)",
        ideal="",
        source=LINKING,
    ),
    "linking_p_value": Column(
        "permutation p-value of linking_linkability (1 + permutations at least as high) / (1 + 100)",
        "float",
        range="(0, 1]",
        ideal="high",
        precision=3,
        source=LINKING,
    ),
    "linking_above_chance": Column(
        "EER and D<->sys both beat the permutation chance at level 0.05: recordings of one person can be "
        "linked through the masking",
        "bool",
        ideal="false",
        source=LINKING,
    ),
    "linking_n_mated": Column("same-person pairs across recordings", "int", unit="pairs", source=LINKING),
    "linking_n_non_mated": Column("different-person pairs", "int", unit="pairs", source=LINKING),
    "linking_unavailable": Column(
        "why the linking attacker did not run (no person with two recordings, or one person only)",
        "str",
        source=LINKING,
    ),
    "extraction_s": Column(
        "wall seconds cropping faces (all videos)",
        "float",
        unit="s",
        precision=1,
        source=CROSS,
        internal=True,
    ),
    "training_s": Column(
        "wall seconds training and testing (folds, verification, within-video table)",
        "float",
        unit="s",
        precision=1,
        source=CROSS,
        internal=True,
    ),
    "timing": Column(
        "wall seconds: extraction, per recognizer per protocol, verification",
        "object",
        source=CROSS,
        internal=True,
    ),
}


def register() -> None:
    """Register every column and summary key the attack report emits."""
    dictionary.register("attack", VIDEO)
    dictionary.register("attack", SUMMARY, level="summary")
