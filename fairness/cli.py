"""Command line: every SQFR measure (with bootstrap CI) of one score column of a CSV file.

Usage::

    python -m fairness scores.csv --group gender --score quality [--json]

Exit status 0 on success, 2 on bad arguments or unusable data (message on stderr).
"""
from __future__ import annotations

import argparse
import json
import math
import sys

import pandas as pd

from fairness.measures import MEASURES, compute_measure
from fairness.stats import bootstrap_cis, describe_groups


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m fairness",
        description="Fairness of a score across demographic groups: Mean-/Median-GC-SQFR, "
        "Mean-GC-CSQFR, LWM-GC-SQFR/CSQFR and MDG-SQFR (seeds/003, eq. 1-8), each with a "
        "stratified bootstrap percentile confidence interval. 1 = all groups alike.",
    )
    parser.add_argument("file", help="CSV file with a header row")
    parser.add_argument("--group", required=True, help="column with each sample's group label")
    parser.add_argument("--score", required=True, help="numeric score column (higher = better)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument("--step", type=float, default=1.0,
                        help="MDG threshold step in score units (paper: 1; use 0.01 for fractions)")
    parser.add_argument("--n-resamples", type=int, default=1000,
                        help="bootstrap resamples (0 = no confidence intervals)")
    parser.add_argument("--confidence", type=float, default=0.95, help="confidence level in (0, 1)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap random seed")
    parser.add_argument("--nan-policy", choices=["raise", "omit"], default="raise",
                        help="empty or NaN scores: fail (default) or leave those rows out")
    return parser


def load_scores(path: str, group: str, score: str) -> tuple[pd.Series, pd.Series]:
    """Read ``path`` and return (numeric scores, group labels as text).

    Raises
    ------
    ValueError
        Unreadable file, a missing column, or scores that are not numbers (names the rows).
    """
    try:
        table = pd.read_csv(path, dtype={group: str})
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        raise ValueError(f"cannot read {path}: {error}") from None
    missing = [column for column in (group, score) if column not in table.columns]
    if missing:
        raise ValueError(f"column(s) {missing} not in {path}; columns are {list(table.columns)}")
    numeric = pd.to_numeric(table[score], errors="coerce")
    bad = numeric.isna() & table[score].notna()
    if bad.any():
        rows = [f"line {index + 2}: {table[score][index]!r}" for index in table.index[bad][:5]]
        raise ValueError(f"{int(bad.sum())} non-numeric value(s) in score column {score!r} ({'; '.join(rows)})")
    return numeric.astype(float), table[group]


def evaluate(scores, groups, *, step, n_resamples, confidence, seed, nan_policy) -> dict:
    """Descriptive table and every measure (or its error message) as a JSON-ready dict."""
    described = describe_groups(scores, groups=groups, nan_policy=nan_policy)
    measures, defined = {}, []
    for name in MEASURES:
        try:
            value = compute_measure(name, scores, groups=groups, step=step, nan_policy=nan_policy)
        except ValueError as error:
            measures[name] = {"estimate": None, "error": str(error)}
        else:
            measures[name] = {"estimate": value}
            defined.append(name)
    if n_resamples > 0 and defined:
        intervals = bootstrap_cis(scores, groups=groups, measures=defined, step=step,
                                  n_resamples=n_resamples, confidence_level=confidence,
                                  random_state=seed, nan_policy=nan_policy)
        for name, interval in intervals.items():
            measures[name] = interval.as_dict()
    groups_table = {
        str(label): {key: _plain(value) for key, value in row.items()}
        for label, row in described.to_dict(orient="index").items()
    }
    return {"groups": groups_table, "measures": measures}


def _plain(value):
    value = value.item() if hasattr(value, "item") else value
    return None if isinstance(value, float) and math.isnan(value) else value


def format_text(result: dict, *, header: str) -> str:
    lines = [header, "", "Per-group statistics"]
    table = pd.DataFrame.from_dict(result["groups"], orient="index")
    lines += [table.to_string(float_format=lambda x: f"{x:.4g}"), "", "Measures (1 = all groups alike)"]
    for name, measure in result["measures"].items():
        if measure.get("error"):
            lines.append(f"  {name:<15} undefined: {measure['error']}")
            continue
        line = f"  {name:<15} {measure['estimate']:.4f}"
        if "ci_low" in measure:
            level = round(100 * measure["confidence_level"])
            line += f"   {level}% CI [{measure['ci_low']:.4f}, {measure['ci_high']:.4f}]"
            if measure["n_undefined"]:
                line += f" ({measure['n_undefined']} of {measure['n_resamples']} resamples undefined)"
        lines.append(line)
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        scores, groups = load_scores(args.file, args.group, args.score)
        result = evaluate(scores, groups, step=args.step, n_resamples=args.n_resamples,
                          confidence=args.confidence, seed=args.seed, nan_policy=args.nan_policy)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    result = {"file": args.file, "score": args.score, "group": args.group, "n_samples": int(scores.size),
              "mdg_step": args.step, **result}
    if args.json:
        print(json.dumps(_nan_to_null(result), indent=2))
    else:
        header = (f"{args.file}: score {args.score!r} by group {args.group!r}, {scores.size} samples, "
                  f"{len(result['groups'])} groups")
        print(format_text(result, header=header))
    return 0


def _nan_to_null(value):
    if isinstance(value, dict):
        return {key: _nan_to_null(item) for key, item in value.items()}
    return _plain(value)
