"""The data dictionary of the reports: one entry per column that a report emits.

Every per-video column (``evalsite.reports.per_video_report``: CSV, JSON ``videos``,
API) and every submission-summary entry (JSON ``summary``, the campaign summary table
``<section>.<key>``, API) has an entry saying what it means, its unit, range, ideal
value, type, the decimals it is rounded to in CSV exports, and where relevant the
recognition model, threshold and distance behind it and its source (paper, section).

Apps register the entries of their own columns, next to the provider that emits them
(usually in ``AppConfig.ready()`` via the provider module's ``register()``)::

    from evalsite import dictionary
    from evalsite.dictionary import Column

    dictionary.register("face", {
        "face_match_rate": Column("share of masked frames verified as the true identity",
                                  "float", unit="fraction", range="[0, 1]", ideal="0", precision=3),
    })
    dictionary.register("face_evaluation", {"match_rate": Column(...)}, level="summary")

Names
-----
- ``level="video"``: the names are the per-video column names as emitted (they start
  with the section prefix, e.g. ``face_``, ``attack_``, ``behaviour_``, ``human_``).
- ``level="summary"``: the names are keys of the summary section ``section``; the entry's
  full name is ``<section>.<key>`` (the campaign-summary-table column). ``section=""``
  registers top-level summary facts (``team``, ``complete``, ...) under their bare names.
- A name containing ``*`` is a pattern (``fnmatch`` rules, case-sensitive), e.g.
  ``behaviour_pck_*``; an exact entry wins over a pattern.
- An entry of dtype ``"object"`` or ``"list"`` covers everything nested below it (a JSON
  table such as ``attack.table`` or ``fairness.scores`` is documented as a whole); a
  ``"section"`` entry (registered by ``evalsite.reports.register_summary_section``)
  does not: each key of a section needs its own entry.

Lookup: :func:`lookup` (one name; KeyError if undocumented), :func:`missing` (names
without an entry). Publication: :func:`as_frame`, :func:`as_csv`, :func:`as_records`
(the ``GET /api/dictionary/`` payload), :func:`write` (``manage.py export_dictionary``;
``export_report`` and ``export_summary`` write ``dictionary.csv`` beside their output).
"""

from __future__ import annotations

import fnmatch
import json
import math
import re
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING


from . import spreadsheet

# pandas is imported where it is used: slow to import, and Django start-up imports this module.
if TYPE_CHECKING:
    import pandas as pd

#: Column types: scalars in CSV cells, containers nested in the JSON summary, and
#: ``section`` (a summary section: a dict whose keys have entries of their own).
DTYPES = ("int", "float", "bool", "str", "list", "object", "section")
LEVELS = ("video", "summary")
CONTAINER_DTYPES = ("list", "object")


#: The source documents (``seeds/README.md``) by their number.
SEED_TITLES = {
    "000": "\u201cA False Sense of Privacy: Towards a Reliable Evaluation Methodology for the Anonymization "
    "of Biometric Data\u201d",
    "002": "the MediaEval 2021 task overview \u201cDriving Road Safety Forward: Video Data Privacy\u201d",
    "003": "\u201cFairness measures for biometric quality assessment\u201d",
    "004": "\u201cPrivHAR-Bench: A Graduated Privacy Benchmark Dataset for Video-Based Action Recognition\u201d",
}
_SEED = re.compile(r"(?:\.\./shared/)?seeds/(\d{3})(?:_[0-9a-f]+)?(?:\.txt)?(?:\s*\([^)]*\))?")


#: Re-identification (chance-normalised) from here on shows as 1.00 at two decimals.
BASELINE_CEILING = 0.995

#: Why a baseline's re-identification reads 1.00, in short: where baselines' figures sit side by
#: side (the leaderboards, the attack run page). The report page gives the long form with the
#: run's pair (``evalsite.portal.report_page.baseline_note``).
BASELINE_NOTE = (
    "Why baselines read 1.00: a baseline is a fixed, published masking applied the same way to every "
    "video, so an attacker who trains on masked videos of the same people (the parrot attacker of "
    f"{SEED_TITLES['000']}, section 4.2.2) learns what it leaves (head shape, hair, clothes, background) "
    "and names the person in every tested frame. This is the expected worst case for a reference masking, "
    "not a fault of the evaluation; a team's masking aims below it."
)


def baseline_at_ceiling(submission, value) -> bool:
    """True when ``submission`` is a baseline and its re-identification ``value`` reads 1.00 (:data:`BASELINE_NOTE`)."""
    return bool(submission.baseline_method) and value is not None and value >= BASELINE_CEILING


#: Acronyms the report's words use, spelled out (seeds/003 for the fairness measures).
ACRONYMS = {
    "SQFR": "Sample Quality Fairness Rate: 1 minus the Gini coefficient of the groups' scores (1 = all groups alike)",
    "GC": "Gini coefficient (inequality of the groups' mean scores, with the n/(n-1) correction)",
    "Mean-GC-SQFR": "SQFR from the Gini coefficient of the groups' mean scores",
    "Median-GC-SQFR": "SQFR from the Gini coefficient of the groups' median scores",
    "CSQFR": "Cubed Sample Quality Fairness Rate: SQFR that falls faster when one group lags",
    "LWM": "Low-Weighted-Mean: a mean that weighs each group's low scores more",
    "MDG": "Mean-Discard-Gap: the gap between the groups' means after discarding the lowest scores",
    "SSIM": "structural similarity of the masked frame to the clear one (1 = identical)",
    "PSNR": "peak signal-to-noise ratio of the masked frame against the clear one, in dB",
    "PU": "privacy-utility: (masked / clear human action accuracy) x (1 - SSIM)",
    "IoU": "intersection over union of the face boxes found in the clear and the masked frame",
    "LBPH": "local binary pattern histograms (a classic face recognizer)",
    "CNN": "convolutional neural network",
    "CI": "confidence interval",
}


#: The platform's code that entries cite as a source, in words (the longest matching module
#: prefix wins): a reader of a report or a download gets what was computed, not where.
CODE_WORDS = {
    "automated": "the platform's automated evaluation",
    "automated.attack": "the platform's re-identification attacks",
    "automated.attack.declared": "the platform's declared attacker",
    "automated.attack.linkability": "the platform's linkability measure",
    "automated.behaviour": "the platform's behaviour measures",
    "automated.behaviour.leakage": "the platform's attribute-inference attack",
    "automated.detection": "the platform's face detector",
    "automated.face_eval": "the platform's face evaluation",
    "automated.privacy_utility": "the platform's privacy-utility score",
    "automated.recognition": "the platform's face recognizers",
    "automated.temporal": "the platform's measures across frames and recordings",
    "automated.temporal.linking_attack": "the platform's linking attack across recordings",
    "evalsite": "the platform's reports",
    "evalsite.staleness": "the platform's check for out-of-date results",
    "evalsite.video_formats": "the platform's check of video formats",
    "fairness": "the platform's fairness measures",
    "trials": "the platform's human trials",
    "trials.design": "the platform's lineup design",
    "trials.integrity": "the platform's rater checks",
    "trials.scoring": "the platform's scoring of the human trials",
    "trials.services": "the platform's bookkeeping of the human trials",
}
# A file (``trials/scoring.py``) or a dotted path (``automated.attack.crossvideo``, one dot at
# least; ``fairness.`` two, as ``fairness.privacy`` also names a summary entry), with the
# function named after it (``, summary_scores``) or the protocol it states.
_CODE = re.compile(
    r"\b(?P<path>(?:automated|evalsite|fairness|trials)(?:/\w+)+\.py|(?:automated|evalsite|trials)(?:\.\w+)+"
    r"|fairness(?:\.\w+){2,})(?:, (?:[a-z]+(?:_[a-z]+)+|module protocol)\b)?"
)
# Issue numbers of the project's tracker: nothing a reader can look up.
_ISSUE = re.compile(r"\s*\(issue \d+\)|\bissue \d+[;:] |;? ?\bissue \d+\b")


def _code_words(match: re.Match) -> str:
    parts = match.group("path").removesuffix(".py").replace("/", ".").split(".")
    for stop in range(len(parts), 0, -1):
        if ".".join(parts[:stop]) in CODE_WORDS:
            return CODE_WORDS[".".join(parts[:stop])]
    return "the platform's code"


def plain_words(text: str) -> str:
    """``text`` in a reader's words: paper titles for ``seeds/NNN_...txt``, what the code computes
    for module and file paths (:data:`CODE_WORDS`), no tracker issue numbers.

    >>> plain_words("seeds/004 (PrivHAR-Bench) composite score")
    '“PrivHAR-Bench: A Graduated Privacy Benchmark Dataset for Video-Based Action Recognition” composite score'
    >>> plain_words("trials/scoring.py, summary_scores; automated.attack.crossvideo (issue 22)")
    "the platform's scoring of the human trials; the platform's re-identification attacks"
    """
    text = _SEED.sub(lambda m: SEED_TITLES.get(m.group(1), "one of the source papers"), text or "")
    return _ISSUE.sub("", _CODE.sub(_code_words, text))


def acronyms_in(text: str) -> list[dict]:
    """``[{"acronym", "meaning"}]`` for every :data:`ACRONYMS` entry that ``text`` uses."""
    return [
        {"acronym": acronym, "meaning": meaning}
        for acronym, meaning in ACRONYMS.items()
        if re.search(rf"(?<![\w-]){re.escape(acronym)}(?![\w-])", text)
    ]


@dataclass(frozen=True)
class Column:
    """What one report column means.

    Attributes
    ----------
    meaning : str
        One or two sentences: what is measured, on what, and how.
    dtype : str
        One of :data:`DTYPES`. ``int`` columns are written as whole numbers (empty when
        missing, never ``15.0``); ``float`` ones rounded to ``precision`` decimals in CSV.
    unit : str
        e.g. "fraction", "dB", "degrees", "identities", "frames", "" when dimensionless.
    range : str
        Possible values, e.g. "[0, 1]", "[-1, 1]", ">= 0", "1 .. n_identities".
    ideal : str
        The value a good de-identification aims at (privacy or utility), or "" if none.
    precision : int or None
        Decimals of ``float`` values in CSV exports (JSON keeps full precision). None for
        non-float columns.
    model, threshold, distance : str
        The recognition model, decision threshold and distance behind the value, where
        relevant (e.g. dlib ResNet, 0.6, Euclidean L2).
    source : str
        Paper and section (``seeds/...`` file, section or equation) or the module defining it.
    internal : bool
        Bookkeeping (timings, internal references): kept out of report summaries.
    organizers_only : bool
        Names an identity or tells a video's role (attacker training material): kept out of
        every team-facing channel (team pages, their CSV and JSON downloads), so a team
        cannot mask those clips or people differently (issue 21).
    """

    meaning: str
    dtype: str
    unit: str = ""
    range: str = ""
    ideal: str = ""
    precision: int | None = None
    model: str = ""
    threshold: str = ""
    distance: str = ""
    source: str = ""
    internal: bool = False
    organizers_only: bool = False

    def __post_init__(self):
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, got {self.dtype!r}")
        if not self.meaning.strip():
            raise ValueError("meaning must not be empty")
        if self.dtype == "float":
            if not isinstance(self.precision, int) or isinstance(self.precision, bool) or self.precision < 0:
                raise ValueError(f"a float column needs precision >= 0 (decimals), got {self.precision!r}")
        elif self.precision is not None:
            raise ValueError(f"precision is for float columns only, got {self.precision!r} for {self.dtype}")


@dataclass(frozen=True)
class Entry:
    """A registered column: full ``name``, report ``level``, ``section`` and its :class:`Column`."""

    name: str
    level: str
    section: str
    column: Column

    @property
    def is_pattern(self) -> bool:
        return "*" in self.name


_ENTRIES: dict[tuple[str, str], Entry] = {}


def register(section: str, columns: dict[str, Column], *, level: str = "video") -> None:
    """Register the entries of ``section``'s columns (idempotent; a later entry replaces one of the same name).

    Parameters
    ----------
    section : str
        Report section (``"face"``, ``"face_evaluation"``, ``"human"``, ...; ``""`` for
        top-level summary facts and base per-video columns).
    columns : dict of str -> Column
        Column name (``level="video"``) or section key (``level="summary"``) -> entry.
    level : {"video", "summary"}

    Raises
    ------
    ValueError
        On an unknown level, or a value that is not a :class:`Column`.
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    for key, column in columns.items():
        if not isinstance(column, Column):
            raise ValueError(f"entry {key!r} of section {section!r} is not a Column: {column!r}")
        name = f"{section}.{key}" if level == "summary" and section else key
        _ENTRIES[(level, name)] = Entry(name, level, section, column)


def entries(level: str | None = None) -> list[Entry]:
    """Registered entries in registration order (of one ``level``, or all)."""
    return [e for (lvl, _), e in _ENTRIES.items() if level is None or lvl == level]


def video_columns() -> list[str]:
    """Non-pattern per-video column names in registration order: the report's stable column set."""
    return [e.name for e in entries("video") if not e.is_pattern]


def lookup(name: str, level: str = "video") -> Entry:
    """The entry documenting ``name`` (exact, then pattern, then a container above it).

    Parameters
    ----------
    name : str
        A per-video column (``level="video"``), or a summary path ``section.key[.sub...]``
        / a top-level summary key (``level="summary"``).

    Raises
    ------
    KeyError
        If no entry documents ``name``.
    """
    exact = _ENTRIES.get((level, name))
    if exact is not None:
        return exact
    patterns = [e for e in entries(level) if e.is_pattern and fnmatch.fnmatchcase(name, e.name)]
    if patterns:
        return patterns[0]
    parts = name.split(".")
    for stop in range(len(parts) - 1, 0, -1):
        try:
            parent = lookup(".".join(parts[:stop]), level)
        except KeyError:
            continue
        if parent.column.dtype in CONTAINER_DTYPES:
            return parent
    raise KeyError(f"no data-dictionary entry for {level} column {name!r}")


def find(name: str, level: str = "video") -> Column | None:
    """``lookup(name, level).column``, or None when undocumented."""
    try:
        return lookup(name, level).column
    except KeyError:
        return None


#: Decimals of a float that no dictionary entry documents, where one is shown.
DEFAULT_PRECISION = 4


def shown(name: str, value, level: str = "video") -> str:
    """``value`` as text for people (command output): floats rounded to ``name``'s precision.

    Parameters
    ----------
    name : str
        The column or summary path documenting ``value`` (:func:`lookup`); undocumented
        floats get :data:`DEFAULT_PRECISION` decimals.
    value : object
        A number, None (``"-"``), or a list / dict of them (each float rounded the same way).
    level : {"video", "summary"}

    Returns
    -------
    str
        E.g. ``shown("attack.extraction_s", 2.2355666666666667, "summary") == "2.24"`` when
        its entry has precision 2 (no ``2.2355666666666667`` in a terminal).
    """
    column = find(name, level)
    decimals = column.precision if column is not None and column.precision is not None else DEFAULT_PRECISION

    def text(item) -> str:
        if item is None:
            return "-"
        if isinstance(item, bool) or not isinstance(item, float):
            if isinstance(item, list | tuple):
                return "[" + ", ".join(text(i) for i in item) + "]"
            if isinstance(item, dict):
                return "{" + ", ".join(f"{k}: {text(v)}" for k, v in item.items()) + "}"
            return str(item)
        return f"{item:.{decimals}f}" if math.isfinite(item) else str(item)

    return text(value)


def missing(names, level: str = "video") -> list[str]:
    """The names (in input order) that have no entry."""
    return [name for name in names if find(name, level) is None]


def is_internal(name: str, level: str = "summary") -> bool:
    """True if ``name``'s entry marks it internal (kept out of summaries)."""
    column = find(name, level)
    return column is not None and column.internal


def is_organizers_only(name: str, level: str = "summary") -> bool:
    """True if ``name``'s entry is kept out of team-facing channels (``Column.organizers_only``)."""
    column = find(name, level)
    return column is not None and column.organizers_only


FIELDS = ["level", "section", "name"] + [f.name for f in fields(Column)]


#: The fields holding prose, published in plain words (:func:`plain_words`): paper titles, not
#: ``seeds/`` file names; what the code computes, not its module paths (issue 21).
WORDS_FIELDS = ("meaning", "unit", "range", "ideal", "model", "threshold", "distance", "source")


def _record(entry: Entry) -> dict:
    record = {"level": entry.level, "section": entry.section, "name": entry.name, **asdict(entry.column)}
    return record | {name: plain_words(record[name]) for name in WORDS_FIELDS}


def as_frame() -> pd.DataFrame:
    """The dictionary as a table: one row per entry, columns :data:`FIELDS`, prose in plain words."""
    import pandas as pd

    frame = pd.DataFrame([_record(e) for e in entries()], columns=FIELDS)
    frame["precision"] = frame["precision"].astype("Int64")
    return frame


def as_records() -> list[dict]:
    """The dictionary as JSON-ready records (``precision`` None where not a float), prose in plain words."""
    return [_record(e) for e in entries()]


def as_csv() -> str:
    """:func:`as_frame` as CSV text."""
    return spreadsheet.frame_csv(as_frame())


def as_json() -> str:
    """:func:`as_records` as indented JSON text."""
    return json.dumps(as_records(), indent=2)


FORMATS = ("csv", "json")


def render(fmt: str) -> str:
    """The dictionary as ``csv`` or ``json`` text.

    Raises
    ------
    ValueError
        If ``fmt`` is not one of :data:`FORMATS`.
    """
    if fmt == "csv":
        return as_csv()
    if fmt == "json":
        return as_json()
    raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")


def write(path, fmt: str | None = None) -> Path:
    """Write the dictionary to ``path`` (format from ``fmt`` or the suffix, default csv); return the path."""
    path = Path(path)
    fmt = fmt or (path.suffix.lstrip(".").lower() if path.suffix.lower() in (".csv", ".json") else "csv")
    text = render(fmt)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def beside(report_path, fmt: str = "csv") -> Path:
    """Where the dictionary goes next to an exported report: ``<folder>/dictionary.<fmt>``."""
    return Path(report_path).parent / f"dictionary.{fmt}"


def typed(frame: pd.DataFrame, level: str = "video") -> pd.DataFrame:
    """Cast ``frame``'s documented ``int`` columns to nullable ``Int64`` and ``bool`` ones to ``boolean``.

    A column of whole numbers with missing cells (NaN made it float) becomes whole
    again; a documented int column holding a non-whole number raises, naming it.

    Raises
    ------
    ValueError
        If an ``int`` column holds a fractional value.
    """
    import pandas as pd

    frame = frame.copy()
    for name in frame.columns:
        column = find(str(name), level)
        if column is None:
            continue
        values = frame[name]
        if column.dtype == "int" and values.dtype != "Int64":
            numeric = pd.to_numeric(values, errors="coerce")
            whole = numeric.dropna()
            if ((whole % 1) != 0).any():
                raise ValueError(
                    f"column {name!r} is documented as int but holds {whole[(whole % 1) != 0].iloc[0]}"
                )
            frame[name] = numeric.round().astype("Int64")
        elif column.dtype == "bool" and values.dtype != "boolean":
            frame[name] = values.astype("boolean")
    return frame


def rounded(frame: pd.DataFrame, level: str = "video") -> pd.DataFrame:
    """``frame`` with each documented ``float`` column rounded to its ``precision`` (for CSV exports)."""
    import pandas as pd

    frame = frame.copy()
    for name in frame.columns:
        column = find(str(name), level)
        if column is not None and column.dtype == "float":
            frame[name] = (
                pd.to_numeric(frame[name], errors="coerce").astype("float64").round(column.precision)
            )
    return frame
