"""CSV cells a spreadsheet opens as text, never as a formula (OWASP, "CSV Injection").

Every CSV the site hands out carries text someone else chose: file names of a team's zip,
team and run names, system descriptions, crowd IDs from a join link. A cell such as
``=HYPERLINK("http://x","y")`` becomes a live formula when an organizer opens the file in a
spreadsheet. The one rule (OWASP, "CSV Injection"): a text cell starting with one of
:data:`FORMULA_STARTS` gets a leading ``'``, which a spreadsheet shows as text and never
evaluates. Numbers are left alone (a negative figure stays a number), and so is text
starting with anything else, so ordinary files are byte for byte unchanged. The lone
placeholder ``-`` (:data:`PLACEHOLDER`, "none" in the commands' listings) is left alone too:
an operator with nothing after it is no formula.

- :func:`spreadsheet_safe`: one value;
- :func:`safe_frame` / :func:`frame_csv`: a pandas frame (its text cells);
- :class:`SafeWriter` / :class:`SafeDictWriter`: ``csv.writer`` / ``csv.DictWriter`` that
  pass every cell through :func:`spreadsheet_safe`.

Django-free: the crowd exports (``trials.crowd``) use it as well.
"""

from __future__ import annotations

import csv
from typing import TYPE_CHECKING


# pandas is imported where it is used: slow to import, and Django start-up imports this module.
if TYPE_CHECKING:
    import pandas as pd

#: First characters that make a spreadsheet read a cell as a formula (OWASP, "CSV Injection").
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n")
#: The one cell starting with a formula character that stays as it is: "none" in the listings
#: of the ``list_*`` commands (an operator alone is no formula; a spreadsheet shows it as text).
PLACEHOLDER = "-"


def spreadsheet_safe(value):
    """``value`` for a CSV cell a spreadsheet opens: a text (``str``) starting with one of
    :data:`FORMULA_STARTS` gets a leading ``'`` (shown as text, never evaluated; OWASP,
    "CSV Injection"); anything else (numbers, amounts, None, other text, the lone
    :data:`PLACEHOLDER` ``-``) is returned unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and value != PLACEHOLDER:
        return "'" + value
    return value


def safe_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells went through :func:`spreadsheet_safe`.

    Only columns of object, string or categorical dtype are touched, and in them only ``str``
    cells: numeric columns (int, float, nullable Int64, bool) keep their dtype and values,
    so a negative figure stays a negative number. Column labels and the index are unchanged
    (they are the site's own names).
    """
    import pandas as pd

    out = frame.copy()
    for position, dtype in enumerate(out.dtypes):
        if pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype):
            out.isetitem(position, out.iloc[:, position].map(spreadsheet_safe))
        elif isinstance(dtype, pd.CategoricalDtype):
            out.isetitem(position, out.iloc[:, position].astype(object).map(spreadsheet_safe))
    return out


def frame_csv(frame: pd.DataFrame) -> str:
    """``frame`` as CSV text (no index column) with its text cells made safe (:func:`safe_frame`)."""
    return safe_frame(frame).to_csv(index=False)


class SafeWriter:
    """``csv.writer(out, **options)`` whose every cell goes through :func:`spreadsheet_safe`."""

    def __init__(self, out, **options):
        self._writer = csv.writer(out, **options)

    def writerow(self, row):
        """Write one row (an iterable of cells)."""
        return self._writer.writerow([spreadsheet_safe(cell) for cell in row])

    def writerows(self, rows):
        """Write every row of ``rows``."""
        for row in rows:
            self.writerow(row)


class SafeDictWriter(csv.DictWriter):
    """``csv.DictWriter`` whose every value goes through :func:`spreadsheet_safe` (the header too)."""

    def writerow(self, rowdict):
        return super().writerow({key: spreadsheet_safe(value) for key, value in rowdict.items()})

    def writerows(self, rowdicts):
        for row in rowdicts:
            self.writerow(row)
