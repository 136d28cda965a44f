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
    parser.add_argument(
        "--step",
        type=float,
        default=1.0,
        help="MDG threshold step in score units (paper: 1; use 0.01 for fractions)",
    )
    parser.add_argument(
        "--n-resamples", type=int, default=1000, help="bootstrap resamples (0 = no confidence intervals)"
    )
    parser.add_argument("--confidence", type=float, default=0.95, help="confidence level in (0, 1)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap random seed")
    parser.add_argument(
        "--nan-policy",
        choices=["raise", "omit"],
        default="raise",
        help="empty or NaN scores: fail (default) or leave those rows out",
    )
    parser.add_argument("--sep", default=",", help="field separator (default ','; e.g. ';')")
    parser.add_argument("--encoding", default="utf-8", help="text encoding (default utf-8; e.g. latin-1)")
    return parser


def load_scores(
    path: str, group: str, score: str, *, sep: str = ",", encoding: str = "utf-8", nan_policy: str = "raise"
) -> tuple[pd.Series, pd.Series]:
    """Read ``path`` and return (numeric scores, group labels as text).

    Group labels are kept exactly as written ("NA" and "None" are labels); a blank label
    cell is an error. Empty or NA score cells are an error unless ``nan_policy="omit"``
    (then they stay NaN for :func:`fairness.summary.summarize` to drop).

    Raises
    ------
    ValueError
        Unreadable or non-CSV file, no data rows, a missing column, blank labels, or
        empty or non-numeric scores (naming the CSV lines).
    """
    spreadsheet = _spreadsheet_kind(path)
    if spreadsheet:
        raise ValueError(f"cannot read {path}: it is {spreadsheet}, not CSV text; save it as CSV")
    try:
        # converters=str: no NA parsing of labels (a "NA" group is real, not missing)
        table = pd.read_csv(path, sep=sep, encoding=encoding, converters={group: str})
    except UnicodeDecodeError as error:
        raise ValueError(
            f"cannot read {path}: it is not {encoding} text (byte "
            f"{error.object[error.start]:#04x}); pass --encoding (e.g. latin-1)"
        ) from None
    except (OSError, LookupError, pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        raise ValueError(f"cannot read {path}: {error}") from None
    missing = [column for column in (group, score) if column not in table.columns]
    if missing:
        hint = next(
            (
                f"; the header contains {mark!r}: pass --sep {mark!r}"
                for mark in (";", "\t", "|")
                if len(table.columns) == 1 and mark in table.columns[0]
            ),
            "",
        )
        raise ValueError(f"column(s) {missing} not in {path}; columns are {list(table.columns)}{hint}")
    if table.empty:
        raise ValueError(f"{path} has a header but no data rows")
    labels = table[group].str.strip()
    _refuse(labels == "", f"row(s) have no label in group column {group!r}", table, group, show=False)
    numeric = pd.to_numeric(table[score], errors="coerce")
    _refuse(
        numeric.isna() & table[score].notna(), f"non-numeric value(s) in score column {score!r}", table, score
    )
    if nan_policy == "raise":
        _refuse(
            numeric.isna(),
            f"empty score(s) in column {score!r}",
            table,
            score,
            show=False,
            advice="fill them or pass --nan-policy omit",
        )
    return numeric.astype(float), labels


def _refuse(
    bad: pd.Series, what: str, table: pd.DataFrame, column: str, *, show: bool = True, advice: str = ""
) -> None:
    """Raise ValueError naming the first CSV lines (header = line 1) where ``bad`` holds."""
    if not bad.any():
        return
    rows = [
        f"line {index + 2}" + (f": {table[column][index]!r}" if show else "")
        for index in table.index[bad][:5]
    ]
    raise ValueError(f"{int(bad.sum())} {what} ({'; '.join(rows)})" + (f"; {advice}" if advice else ""))


#: File signatures of spreadsheets saved under a .csv name.
SPREADSHEET_SIGNATURES = {
    b"PK\x03\x04": "a ZIP archive (an Excel .xlsx or .ods file?)",
    b"\xd0\xcf\x11\xe0": "an OLE2 file (an Excel .xls file?)",
}


def _spreadsheet_kind(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            start = handle.read(4)
    except OSError:
        return None  # read_csv reports it
    return SPREADSHEET_SIGNATURES.get(start)


def _number(value) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def format_text(result: dict, *, header: str) -> str:
    lines = [header, "", "Per-group statistics"]
    table = pd.DataFrame.from_dict(result["groups"], orient="index")
    table = table.astype({column: float for column in table.columns if column != "n"})  # None -> NaN
    lines += [
        table.to_string(float_format=lambda x: f"{x:.4g}", na_rep="n/a"),
        "",
        "Measures (1 = all groups alike)",
    ]
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
        scores, groups = load_scores(
            args.file,
            args.group,
            args.score,
            sep=args.sep,
            encoding=args.encoding,
            nan_policy=args.nan_policy,
        )
        result = summarize(
            scores,
            groups=groups,
            step=args.step,
            n_resamples=args.n_resamples,
            confidence_level=args.confidence,
            random_state=args.seed,
            nan_policy=args.nan_policy,
        )
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    result = {
        "file": args.file,
        "score": args.score,
        "group": args.group,
        "n_samples": int(scores.size),
        "mdg_step": args.step,
        **result,
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        header = (
            f"{args.file}: score {args.score!r} by group {args.group!r}, {scores.size} samples, "
            f"{len(result['groups'])} groups"
        )
        print(format_text(result, header=header))
    return 0
