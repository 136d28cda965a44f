"""The per-submission report as an HTML page, each figure beside the data dictionary's words (issue 21).

One page for organizers (``/organizer/report/<submission>/``) and one for the team's
members (``/team/submission/<pk>/report/``): the submission summary grouped by section
and the per-video table, every entry with its meaning, unit, range, ideal value and
source from ``evalsite.dictionary``. Sources name papers by title, not by the file names
of ``seeds/``, and the platform's code by what it computes, not by module path
(:func:`plain_words`); acronyms on the page are spelled out once
(:data:`ACRONYMS`). The team's page is built from the team's view of the report
(``team=True``: no identity code, no video role, no organizer-only caveat).
"""

from __future__ import annotations

import math


from evalsite import dictionary, reports
from evalsite.dictionary import SEED_TITLES, acronyms_in, plain_words


def format_value(value, decimals: int | None = None) -> str:
    """A report figure as the HTML pages show it: the one value formatter of the portal.

    Parameters
    ----------
    value : object
        A cell of a report (Python or numpy scalar, list, string).
    decimals : int, optional
        Floats with this many decimals (the report page: :func:`column_decimals`). None:
        a whole float as an integer, any other to 6 significant digits (the team's
        submission page, whose per-video report is already rounded to the data
        dictionary's precision).

    Returns
    -------
    str
        '' when missing (None, ``pd.NA``, ``pd.NaT``, NaN), yes/no for booleans, the items
        of a list or tuple joined by ", ", ``str(value)`` otherwise.
    """
    # imported here: pandas is slow to import, and Django start-up imports this module
    import pandas as pd

    if value is None or value is pd.NA or value is pd.NaT:
        return ""
    if hasattr(value, "item"):  # numpy scalar
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if decimals is not None:
            return f"{value:.{decimals}f}"
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else f"{value:.6g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)


def column_decimals(column: dictionary.Column | None) -> int:
    """Decimals of a figure on the report page: the data dictionary's precision, else 4."""
    return column.precision if column is not None and column.precision is not None else 4


def _words(name: str, level: str) -> dict:
    column = dictionary.find(name, level)
    if column is None:
        return {"name": name, "meaning": "", "unit": "", "range": "", "ideal": "", "source": ""}
    return {
        "name": name,
        "meaning": plain_words(column.meaning),
        "unit": column.unit,
        "range": column.range,
        "ideal": column.ideal,
        "source": plain_words(column.source),
        "column": column,
    }


def _summary_sections(row: dict) -> list[dict]:
    sections: dict[str, list] = {}
    for name, value in row.items():
        section = name.split(".", 1)[0] if "." in name else ""
        entry = _words(name, "summary")
        entry["value"] = format_value(value, column_decimals(entry.get("column")))
        sections.setdefault(section, []).append(entry)
    return [{"name": name or "submission", "entries": entries} for name, entries in sections.items()]


def baseline_note(submission, summary: dict) -> str:
    """Why a baseline's worst-case re-identification reads 1.00 (``""`` when it does not)."""
    attack = summary.get("attack") or {}
    value = attack.get("worst_case_chance_normalised")
    if not dictionary.baseline_at_ceiling(submission, value):
        return ""
    pair = f"{attack.get('worst_case_recognizer', '')} x {attack.get('worst_case_attacker', '')}".strip(" x")
    return (
        f"Re-identification 1.00 means the strongest recognizer x attacker pair ({pair}) named the person in "
        "every tested frame. Baselines are fixed, published maskings applied the same way to every video: an "
        "attacker who trains on masked videos of the same people (the parrot attacker of "
        f"{SEED_TITLES['000']}, section 4.2.2) learns what the masking leaves (head shape, hair, clothes, "
        "background, video format) and recognises that. This is the expected worst case for a reference "
        "masking, not a fault of the evaluation; a team's masking aims below it. The per-pair table of the "
        "attack run shows the other pairs."
    )


def report_context(submission, *, team: bool) -> dict:
    """Context of ``templates/evalsite/report.html`` for ``submission`` (``team``: the team's view)."""
    summary = reports.submission_summary(submission, team=team)
    row = reports.summary_row(submission, team=team)
    table = dictionary.rounded(reports.per_video_report(submission, team=team))
    columns = [_words(str(name), "video") for name in table.columns]
    rows = [
        [format_value(value, column_decimals(column.get("column"))) for value, column in zip(record, columns)]
        for record in table.itertuples(index=False)
    ]
    words = " ".join(
        [e["meaning"] for e in columns]
        + [e["meaning"] for s in _summary_sections(row) for e in s["entries"]]
        + list(row)
    )
    acronyms = acronyms_in(words)
    return {
        "submission": submission,
        "team_view": team,
        "sections": _summary_sections(row),
        "columns": columns,
        "rows": rows,
        "baseline_note": baseline_note(submission, summary),
        "acronyms": acronyms,
        "papers": [{"number": n, "title": t} for n, t in SEED_TITLES.items()],
    }
