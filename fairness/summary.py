"""JSON-ready fairness summaries: per-group statistics plus every measure with its CI.

Used by the command line (:mod:`fairness.cli`) and the platform's reports
(:mod:`fairness.django_app.report`). Plain pandas, no Django.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from automated.serialize import jsonable
from fairness.measures import MEASURES, UndefinedMeasureError, check_step, compute_measure
from fairness.stats import bootstrap_cis, describe_groups

# pandas is imported where it is used: slow to import, and Django start-up imports this module.
if TYPE_CHECKING:
    import pandas as pd

#: Attribute values that name no demographic group (the sample is left out).
MISSING_LABELS = frozenset({"", "unknown", "n/a", "na", "none"})


def summarize(
    scores,
    *,
    groups,
    step: float = 1.0,
    n_resamples: int = 1000,
    confidence_level: float = 0.95,
    random_state=0,
    nan_policy="raise",
) -> dict:
    """Per-group statistics and every measure of :data:`fairness.measures.MEASURES`.

    Parameters
    ----------
    scores : array-like of shape (n_samples,)
        Per-sample scores, higher = better.
    groups : array-like of shape (n_samples,)
        Group label per sample.
    step : float, default=1.0
        MDG threshold step (score units).
    n_resamples : int, default=1000
        Stratified bootstrap resamples, >= 0; 0 gives no confidence intervals.
    confidence_level : float, default=0.95
    random_state : int, default=0
        Bootstrap seed.
    nan_policy : {"raise", "omit"}, default="raise"

    Returns
    -------
    dict
        ``{"groups": {label: {"n", "mean", "std", "min", "q1", "median", "q3", "max"}},
        "measures": {name: {"estimate", "ci_low", "ci_high", "confidence_level",
        "n_resamples", "n_undefined"} or {"estimate": None, "error": message}}}``; NaN
        becomes None. A measure that is undefined for these groups (one group, negative
        means, ...) carries its error message instead of stopping the others.

    Raises
    ------
    ValueError
        Malformed input (see :func:`fairness.groups.split_by_group`), a bad ``step`` or
        ``n_resamples`` (and ``confidence_level`` when intervals are computed).
    """
    check_step(step)
    if int(n_resamples) != n_resamples or n_resamples < 0:
        raise ValueError(f"n_resamples must be >= 0 (0 = no confidence intervals), got {n_resamples}")
    described = describe_groups(scores, groups=groups, nan_policy=nan_policy)
    measures, defined = {}, []
    for name in MEASURES:
        try:
            value = compute_measure(name, scores, groups=groups, step=step, nan_policy=nan_policy)
        except UndefinedMeasureError as error:
            measures[name] = {"estimate": None, "error": error.reason}
        except ValueError as error:  # e.g. too many MDG thresholds for this step
            measures[name] = {"estimate": None, "error": str(error)}
        else:
            measures[name] = {"estimate": value}
            defined.append(name)
    if n_resamples > 0 and defined:
        intervals = bootstrap_cis(
            scores,
            groups=groups,
            measures=defined,
            step=step,
            n_resamples=n_resamples,
            confidence_level=confidence_level,
            random_state=random_state,
            nan_policy=nan_policy,
        )
        for name, interval in intervals.items():
            measures[name] = interval.as_dict()
    groups_table = {str(label): jsonable(row) for label, row in described.to_dict(orient="index").items()}
    return {"groups": groups_table, "measures": jsonable(measures)}


@dataclass(frozen=True)
class ScoreSpec:
    """A per-sample score column and the direction that is favourable to the person.

    Attributes
    ----------
    column : str
        Column name in the samples table.
    favourable : {"higher", "lower"}
        The SQFR measures assume higher = better (seeds/003, section 3). A "lower is
        better" fraction (e.g. a re-identification rate) is measured as ``1 - value``.
    mdg_step : float
        MDG threshold step in the (oriented) score's units: 0.01 for fractions.
    description : str
        One line for readers.
    """

    column: str
    favourable: Literal["higher", "lower"] = "higher"
    mdg_step: float = 1.0
    description: str = ""

    @property
    def name(self) -> str:
        """Name of the measured quantity, e.g. ``1 - face_match_rate``."""
        return self.column if self.favourable == "higher" else f"1 - {self.column}"

    def oriented(self, values: pd.Series) -> pd.Series:
        """The values with higher = better.

        Raises
        ------
        ValueError
            A "lower" score with values outside [0, 1].
        """
        import pandas as pd

        values = pd.to_numeric(values, errors="raise").astype(float)
        if self.favourable == "higher":
            return values
        if self.favourable != "lower":
            raise ValueError(f"favourable must be 'higher' or 'lower', got {self.favourable!r}")
        outside = values[(values < 0) | (values > 1)]
        if len(outside):
            raise ValueError(
                f"{self.column} is 'lower is better' but not a fraction in [0, 1]: {outside.tolist()[:5]}"
            )
        return 1.0 - values


def summarize_table(
    samples: pd.DataFrame, *, specs, attributes, missing_labels=MISSING_LABELS, **options
) -> dict:
    """Fairness of every score column across every demographic attribute of a samples table.

    Parameters
    ----------
    samples : pandas.DataFrame of shape (n_samples, n_columns)
        One row per sample (e.g. per video), with score columns and attribute columns.
    specs : iterable of ScoreSpec
        Score columns to evaluate; absent or entirely empty columns are skipped.
    attributes : iterable of str
        Attribute columns (e.g. ``gender``); absent ones are skipped.
    missing_labels : set of str
        Attribute values that name no group (compared case-insensitively); those samples,
        and samples without a score, are left out and counted in ``n_excluded``.
    **options
        Passed to :func:`summarize` (``n_resamples``, ``random_state``, ...).

    Returns
    -------
    dict
        ``{spec.name: {"column", "favourable", "description", "mdg_step", "by_attribute":
        {attribute: {"n_samples", "n_excluded", "groups", "measures"} or {"error"}}}}``.
    """
    result = {}
    for spec in specs:
        if spec.column not in samples.columns or samples[spec.column].isna().all():
            continue
        entry = {
            "column": spec.column,
            "favourable": spec.favourable,
            "description": spec.description,
            "mdg_step": spec.mdg_step,
            "by_attribute": {},
        }
        try:
            scores = spec.oriented(samples[spec.column])
        except (ValueError, TypeError) as error:
            entry["error"] = str(error)
            result[spec.name] = entry
            continue
        for attribute in attributes:
            if attribute not in samples.columns:
                continue
            kept_scores, labels, n_excluded = comparable_samples(scores, samples[attribute], missing_labels)
            block = {"n_samples": len(kept_scores), "n_excluded": n_excluded}
            try:
                block.update(summarize(kept_scores, groups=labels, step=spec.mdg_step, **options))
            except ValueError as error:
                block["error"] = str(error)
            entry["by_attribute"][attribute] = block
        result[spec.name] = entry
    return result


def comparable_samples(
    scores: pd.Series, attribute_values: pd.Series, missing_labels=MISSING_LABELS
) -> tuple[pd.Series, pd.Series, int]:
    """The samples with a score and a real group: (scores, text labels, number left out).

    Parameters
    ----------
    scores : pandas.Series of shape (n_samples,)
        Oriented scores; NaN = no score.
    attribute_values : pandas.Series of shape (n_samples,)
        The attribute's value per sample (any type; compared as stripped text).
    missing_labels : set of str
        Values that name no group, compared case-insensitively.
    """
    import pandas as pd

    labels = attribute_values.map(
        lambda value: "" if pd.api.types.is_scalar(value) and pd.isna(value) else str(value).strip()
    )  # None, NaN and pd.NA name no group
    missing = {label.lower() for label in missing_labels}
    keep = ~labels.str.lower().isin(missing) & scores.notna()
    return scores[keep], labels[keep], int((~keep).sum())
