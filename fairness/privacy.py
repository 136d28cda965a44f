"""Privacy fairness: does a masking protect some demographic groups less than others?

ISO/IEC 19795-10 asks for the differential performance of a biometric system across
demographic groups; here the "performance" is the attacker's: the per-identity
re-identification success under a masking (share of an identity's masked probes the
attacker identifies). For one demographic attribute this gives

- per group: the number of identities, the mean success and its 95 % bootstrap interval
  over the group's identities (``fairness.stats.stratified_resamples``);
- the *spread*: the largest minus the smallest group mean, with a permutation p-value
  (group labels shuffled over identities, which keeps the group sizes): a spread beyond
  what random groups of those sizes give means the masking's privacy differs between
  groups. The spread of observed groups is always >= 0, so a bootstrap interval of it
  cannot say "no difference"; the permutation reference can;
- the SQFR family of seeds/003 (``fairness.summary.summarize``) on the favourable
  orientation, privacy = 1 - success (higher = better for the person), with stratified
  bootstrap intervals;
- warnings for groups too small for an interval to mean much (fewer than
  ``MIN_GROUP_IDENTITIES`` identities) and for groups left out (a single identity cannot
  be resampled), and the identities without a label (``summary.MISSING_LABELS``).

Pure numpy/pandas, no Django.
"""

from __future__ import annotations

import numpy as np

from fairness.stats import stratified_resamples
from automated.serialize import jsonable
from fairness.summary import MISSING_LABELS, summarize

#: Below this many identities a group's interval is too wide to mean much (a warning).
MIN_GROUP_IDENTITIES = 10


def privacy_fairness(
    success,
    groups,
    *,
    n_resamples: int = 1000,
    n_permutations: int = 1000,
    confidence_level: float = 0.95,
    random_state: int = 0,
    min_group: int = MIN_GROUP_IDENTITIES,
) -> dict:
    """Per-group attack success, its spread across groups and the SQFR measures.

    Parameters
    ----------
    success : array-like of float in [0, 1], shape (n_identities,)
        Re-identification success of each identity (e.g. ``CrossVideoResult.per_identity``
        accuracy of the headline attacker).
    groups : array-like of shape (n_identities,)
        Demographic group of each identity (e.g. self-reported gender); labels in
        ``MISSING_LABELS`` (e.g. "unknown", "") leave the identity out.
    n_resamples : int, default=1000
        Bootstrap resamples (within each group) for the intervals.
    n_permutations : int, default=1000
        Shuffles of the group labels for the spread's p-value.
    confidence_level : float, default=0.95
    random_state : int, default=0
    min_group : int, default=10
        Groups with fewer identities get a warning.

    Returns
    -------
    dict
        ``groups``: label -> ``{"n", "success", "ci_low", "ci_high"}``;
        ``spread``: ``{"estimate", "p_value", "high_group", "low_group", "differs"}``
        (``differs``: p < 1 - confidence_level); ``measures``: as
        ``fairness.summary.summarize`` on privacy = 1 - success; ``warnings``: list of
        str; ``n_identities`` used; ``excluded``: label -> n of groups left out.

    Raises
    ------
    ValueError
        If the lengths differ, a success is outside [0, 1] or not finite, or fewer than
        two groups of at least two identities remain.
    """
    success = np.asarray(success, dtype=np.float64)
    labels = np.asarray(groups).astype(str)
    if success.ndim != 1 or success.shape != labels.shape:
        raise ValueError(
            f"success and groups must be 1-D of one length, got {success.shape} and {labels.shape}"
        )
    if not np.isfinite(success).all() or (success < 0).any() or (success > 1).any():
        raise ValueError("success must be finite shares in [0, 1] (one per identity)")
    warnings = []
    known = np.array([label.strip().lower() not in MISSING_LABELS for label in labels], bool)
    if (~known).any():
        warnings.append(f"{int((~known).sum())} identities without a group label left out")
    names, counts = np.unique(labels[known], return_counts=True)
    excluded = {str(name): int(n) for name, n in zip(names, counts) if n < 2}
    for name, n in excluded.items():
        warnings.append(f"group {name!r} has {n} identity: left out (no interval from one identity)")
    kept = known & ~np.isin(labels, list(excluded))
    per_group = {str(name): success[kept & (labels == name)] for name in names if str(name) not in excluded}
    if len(per_group) < 2:
        raise ValueError(f"need two groups of at least two identities, got {sorted(per_group)}")
    for name, values in per_group.items():
        if len(values) < min_group:
            warnings.append(
                f"group {name!r} has {len(values)} identities (< {min_group}): its interval is too wide to mean much"
            )
    tail = 50.0 * (1.0 - confidence_level)
    draws = {name: [] for name in per_group}
    for resample in stratified_resamples(per_group, n_resamples=int(n_resamples), random_state=random_state):
        for name, values in resample.items():
            draws[name].append(values.mean())
    table = {}
    for name, values in per_group.items():
        low, high = np.percentile(draws[name], [tail, 100.0 - tail])
        table[name] = {
            "n": len(values),
            "success": float(values.mean()),
            "ci_low": float(low),
            "ci_high": float(high),
        }
    means = {name: row["success"] for name, row in table.items()}
    high_group, low_group = max(means, key=means.get), min(means, key=means.get)
    spread = means[high_group] - means[low_group]
    pooled = np.concatenate(list(per_group.values()))
    codes = np.concatenate([[i] * len(v) for i, v in enumerate(per_group.values())])
    rng = np.random.default_rng(random_state)
    null = np.empty(int(n_permutations))
    for k in range(len(null)):
        shuffled = rng.permutation(codes)
        group_means = [pooled[shuffled == i].mean() for i in range(len(per_group))]
        null[k] = max(group_means) - min(group_means)
    p_value = float((1 + (null >= spread - 1e-12).sum()) / (1 + len(null)))
    privacy = summarize(
        1.0 - pooled,
        groups=np.array(list(per_group))[codes],
        step=0.01,
        n_resamples=n_resamples,
        confidence_level=confidence_level,
        random_state=random_state,
    )
    return {
        "groups": table,
        "spread": {
            "estimate": float(spread),
            "p_value": p_value,
            "high_group": high_group,
            "low_group": low_group,
            "differs": bool(p_value < 1.0 - confidence_level),
        },
        "measures": privacy["measures"],
        "warnings": warnings,
        "n_identities": int(kept.sum()),
        "excluded": excluded,
        "confidence_level": jsonable(confidence_level),
    }


def privacy_fairness_by_attribute(success_by_identity, metadata, attributes=None, **options) -> dict:
    """``privacy_fairness`` for each demographic attribute of the identities.

    Parameters
    ----------
    success_by_identity : pandas.Series
        Re-identification success in [0, 1] indexed by identity (e.g. the ``accuracy`` of
        ``CrossVideoResult.per_identity()`` for one recognizer x attacker, indexed by
        ``identity``).
    metadata : pandas.DataFrame
        One row per identity (index: identity), one column per attribute
        (``AttackData.identity_metadata``, ``attack.photos.PhotoSet.metadata``).
    attributes : sequence of str, optional
        Columns to compare; default every non-numeric column.
    **options
        Passed to ``privacy_fairness`` (``n_resamples``, ``n_permutations``, ...).

    Returns
    -------
    dict
        attribute -> the ``privacy_fairness`` report, or ``{"error": message}`` when the
        attribute has fewer than two usable groups (the others still computed).

    Raises
    ------
    ValueError
        If an identity has no metadata row or an attribute is not a column.
    """
    # imported here: pandas is slow to import, and Django start-up imports this module
    import pandas as pd

    missing = sorted(set(map(str, success_by_identity.index)) - set(map(str, metadata.index)))
    if missing:
        raise ValueError(f"identities without metadata: {missing[:5]}")
    if attributes is None:
        attributes = [c for c in metadata.columns if not pd.api.types.is_numeric_dtype(metadata[c])]
    unknown = [a for a in attributes if a not in metadata.columns]
    if unknown:
        raise ValueError(f"unknown attribute(s) {unknown}; columns: {list(metadata.columns)}")
    rows = metadata.set_axis(metadata.index.map(str)).loc[success_by_identity.index.map(str)]
    reports = {}
    for attribute in attributes:
        try:
            reports[attribute] = privacy_fairness(
                success_by_identity.to_numpy(), rows[attribute].fillna("").to_numpy(), **options
            )
        except ValueError as error:
            reports[attribute] = {"error": str(error)}
    return reports
