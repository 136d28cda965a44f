"""The attack run's privacy figures beyond the worst case (issue 22): the thin Django adapter.

Computed in the run's summary step (``attack_service.AttackRunKind.compute_final``) from
what the run already has, stored on ``AttackRun.privacy`` and read back for reports:

- **the declared attacker** (``attack.declared.declared_from_predictions``): the campaign's
  tested identities are split once (seeded by the run's ``seed``) into development and
  tested parts; the declared knowledge level (``config["declared_attacker"]``, default
  parrot, VoicePrivacy 2024's semi-informed attacker) takes the recognizer strongest on
  the development identities' probes, and is reported on the tested identities' probes
  with a 95 % bootstrap interval over identities; the worst case over all pairs on those
  probes stays beside it with the number of pairs tried;
- **verification by demographic group** (``attack.verification.verification_by_group``):
  EER and linkability D<->sys of each group's probes (Gomez-Barrero et al. 2018, eq. 7),
  with intervals over the group's identities, per campaign attribute; groups, never
  identities;
- **identity over time** (``automated.temporal.identity_over_time_by_recording``): per
  masked video the temporal identity consistency and flicker beside the clear video's,
  and the linking attacker (masked-vs-masked same-person verification across
  recordings: EER, D<->sys, permutation chance).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from automated.attack.names import DECLARED_ATTACKER
from automated.attack.verification import verification_by_group
from automated.serialize import jsonable
from automated.temporal import identity_over_time_by_recording

# pandas and automated.attack.declared are imported where they are used: slow to import, and
# Django start-up imports this module.
if TYPE_CHECKING:
    import pandas as pd


def declared_figures(predictions: pd.DataFrame, config: dict) -> dict:
    """``declared_from_predictions`` over the identities the run tested, or ``{"unavailable": why}``."""
    from automated.attack.declared import declared_from_predictions, split_development

    attacker = config.get("declared_attacker") or DECLARED_ATTACKER
    try:
        split = split_development(predictions["identity"].astype(str), seed=int(config.get("seed", 0)))
        return jsonable(declared_from_predictions(predictions, split, attacker=attacker))
    except ValueError as error:
        return {"declared_attacker": attacker, "unavailable": str(error)}


def group_figures(result, identity_attributes: dict, attributes) -> dict:
    """Per attribute, ``verification_by_group`` of the default embedder's verification result."""
    out = {}
    for attribute in attributes:
        group_of = {code: (values or {}).get(attribute, "") for code, values in identity_attributes.items()}
        groups = verification_by_group(result, group_of)
        if groups:
            out[attribute] = jsonable(groups)
    return out


def temporal_figures(data, embed, masked_videos, seed: int = 0) -> dict:
    """Per masked video (by source-video name) consistency and flicker; the linking attacker."""
    figures = identity_over_time_by_recording(
        data.clear,
        data.masked,
        data.groups,
        data.identities,
        embed,
        time_index=data.time_index,
        random_state=seed,
    )
    names = {i: m.source_video.name for i, m in enumerate(masked_videos)}
    return jsonable(
        {
            "per_video": {names[int(g)]: values for g, values in figures["recordings"].items()},
            "linking": figures["linking"],
        }
    )


def _mean(values) -> float | None:
    values = [v for v in values if v is not None and np.isfinite(v)]
    return float(np.mean(values)) if values else None


def privacy_summary(run) -> dict:
    """The ``attack`` summary keys of ``run.privacy`` (empty for runs stored before it).

    Returns
    -------
    dict
        ``declared_*`` (pair, accuracy and interval on tested identities, development
        accuracy, counts) or ``declared_unavailable``; ``worst_case_n_pairs``;
        ``linkability_by_group`` (attribute -> group -> figures); ``temporal_consistency``,
        ``temporal_consistency_clear``, ``flicker``, ``flicker_clear`` (means over masked
        videos); ``linking_*`` (the linking attacker) or ``linking_unavailable``.
    """
    privacy = run.privacy or {}
    out: dict = {}
    declared = privacy.get("declared")
    if declared:
        if "unavailable" in declared:
            out["declared_attacker"] = declared.get("declared_attacker")
            out["declared_unavailable"] = declared["unavailable"]
        else:
            out.update(
                {
                    "declared_recognizer": declared["declared_recognizer"],
                    "declared_attacker": declared["declared_attacker"],
                    "declared_accuracy": declared["accuracy"],
                    "declared_ci_low": declared["ci_low"],
                    "declared_ci_high": declared["ci_high"],
                    "declared_development_accuracy": declared["development_accuracy"],
                    "declared_n_development_identities": declared["n_development_identities"],
                    "declared_n_tested_identities": declared["n_tested_identities"],
                    "declared_worst_case_accuracy": declared["worst_case_accuracy"],
                    "declared_worst_case_pair": declared["worst_case_pair"],
                    "worst_case_n_pairs": declared["n_pairs"],
                    "declared_per_identity": declared.get("per_identity", {}),
                }
            )
    if privacy.get("linkability_by_group"):
        out["linkability_by_group"] = privacy["linkability_by_group"]
    temporal = privacy.get("temporal")
    if temporal:
        videos = temporal.get("per_video", {}).values()
        out.update(
            {
                "temporal_consistency": _mean(v["consistency_masked"] for v in videos),
                "temporal_consistency_clear": _mean(v["consistency_clear"] for v in videos),
                "flicker": _mean(v["flicker_masked"] for v in videos),
                "flicker_clear": _mean(v["flicker_clear"] for v in videos),
            }
        )
        linking = temporal.get("linking", {})
        if "unavailable" in linking:
            out["linking_unavailable"] = linking["unavailable"]
        elif linking:
            out.update(
                {
                    "linking_eer": linking["eer"],
                    "linking_linkability": linking["d_sys"],
                    "linking_linkability_chance": linking.get("chance_d_sys_median"),
                    "linking_eer_chance": linking.get("chance_eer_median"),
                    "linking_p_value": linking.get("p_d_sys"),
                    "linking_above_chance": linking.get("above_chance"),
                    "linking_n_mated": linking["n_mated"],
                    "linking_n_non_mated": linking["n_non_mated"],
                }
            )
    return out


#: Per-video columns of identity over time (``attack_temporal_*``, ``attack_flicker_*``).
TEMPORAL_COLUMNS = {
    "attack_temporal_consistency": "consistency_masked",
    "attack_temporal_consistency_clear": "consistency_clear",
    "attack_flicker": "flicker_masked",
    "attack_flicker_clear": "flicker_clear",
}


def temporal_video_columns(run) -> pd.DataFrame:
    """Index: source-video name; the ``TEMPORAL_COLUMNS`` of ``run`` (empty before it stored them)."""
    import pandas as pd

    per_video = ((run.privacy or {}).get("temporal") or {}).get("per_video", {}) if run else {}
    frame = pd.DataFrame(
        [{"video": name, **{c: v[k] for c, k in TEMPORAL_COLUMNS.items()}} for name, v in per_video.items()],
        columns=["video", *TEMPORAL_COLUMNS],
    )
    return frame.set_index("video")
