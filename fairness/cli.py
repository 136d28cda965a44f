"""Command line: every SQFR measure (with bootstrap CI) of one score column of a CSV file.

Usage::

    python -m fairness scores.csv --group gender --score quality [--json]

Exit status 0 on success, 2 on bad arguments or unusable data (message on stderr).
"""
from __future__ import annotations

import argparse
import json
import sys

import pandas as pd

from fairness.summary import summarize


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


def _number(value) -> str:
    return "n/a" if value is None else f"{value:.4f}"


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
            line += f"   {level}% CI [{_number(measure['ci_low'])}, {_number(measure['ci_high'])}]"
            if measure["n_undefined"]:
                line += f" ({measure['n_undefined']} of {measure['n_resamples']} resamples undefined)"
        lines.append(line)
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        scores, groups = load_scores(args.file, args.group, args.score)
        result = summarize(scores, groups=groups, step=args.step, n_resamples=args.n_resamples,
                           confidence_level=args.confidence, random_state=args.seed,
                           nan_policy=args.nan_policy)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    result = {"file": args.file, "score": args.score, "group": args.group, "n_samples": int(scores.size),
              "mdg_step": args.step, **result}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        header = (f"{args.file}: score {args.score!r} by group {args.group!r}, {scores.size} samples, "
                  f"{len(result['groups'])} groups")
        print(format_text(result, header=header))
    return 0
