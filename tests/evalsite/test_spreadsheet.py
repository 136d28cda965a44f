"""One CSV-injection rule for every CSV download (evalsite.spreadsheet; OWASP, "CSV Injection")."""

from __future__ import annotations

import csv
import io
from decimal import Decimal

import pandas as pd

from evalsite.spreadsheet import (
    FORMULA_STARTS,
    SafeDictWriter,
    SafeWriter,
    frame_csv,
    safe_frame,
    spreadsheet_safe,
)


def test_text_starting_with_a_formula_character_gets_a_quote_and_nothing_else_changes():
    assert [spreadsheet_safe(start + "1+1") for start in FORMULA_STARTS] == [
        "'=1+1",
        "'+1+1",
        "'-1+1",
        "'@1+1",
        "'\t1+1",
        "'\r1+1",
        "'\n1+1",
    ]
    assert spreadsheet_safe("Team A") == "Team A" and spreadsheet_safe("") == ""
    assert spreadsheet_safe(-1.5) == -1.5 and spreadsheet_safe(Decimal("-2.00")) == Decimal("-2.00")
    assert spreadsheet_safe(None) is None


def test_a_frame_keeps_its_numbers_and_quotes_its_text():
    frame = pd.DataFrame(
        {
            "team": ['=HYPERLINK("http://x","y")', "Team B"],
            "difference": [-0.5, 0.25],
            "n": [-3, 4],
            "run_id": pd.array([None, 7], dtype="Int64"),
            "kind": pd.Series(["@x", "y"], dtype="category"),
        }
    )
    safe = safe_frame(frame)
    assert safe["team"].tolist() == ['\'=HYPERLINK("http://x","y")', "Team B"]
    assert safe["kind"].tolist() == ["'@x", "y"]
    assert frame["team"].iloc[0].startswith("=")  # the input is not changed
    parsed = pd.read_csv(io.StringIO(frame_csv(frame)))
    assert parsed["difference"].dtype == float and parsed["difference"].tolist() == [-0.5, 0.25]
    assert parsed["n"].tolist() == [-3, 4] and parsed["run_id"].isna().tolist() == [True, False]
    assert parsed["team"].tolist() == ['\'=HYPERLINK("http://x","y")', "Team B"]


def test_the_writers_quote_every_text_cell():
    out = io.StringIO()
    SafeWriter(out, lineterminator="\n").writerows([["+a", -1.5, "b"]])
    writer = SafeDictWriter(out, fieldnames=["name", "value"], lineterminator="\n")
    writer.writeheader()
    writer.writerows([{"name": "@SUM(A1)", "value": -2}])
    assert list(csv.reader(io.StringIO(out.getvalue()))) == [
        ["'+a", "-1.5", "b"],
        ["name", "value"],
        ["'@SUM(A1)", "-2"],
    ]
