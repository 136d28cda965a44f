"""The data dictionary's registry, lookup and formatting (hand-made entries and frames)."""

import math

import pandas as pd
import pytest

from evalsite import dictionary
from evalsite.dictionary import Column


@pytest.fixture
def registry(monkeypatch):
    """An empty registry for the test (the real entries come back afterwards)."""
    monkeypatch.setattr(dictionary, "_ENTRIES", {})
    dictionary.register(
        "demo",
        {
            "demo_rate": Column("a rate", "float", unit="fraction", range="[0, 1]", precision=2),
            "demo_count": Column("a count", "int", unit="frames"),
            "demo_flag": Column("a flag", "bool"),
            "demo_pck_*": Column("PCK of one body part", "float", precision=3),
        },
    )
    dictionary.register(
        "demo",
        {
            "score": Column("a summary score", "float", precision=1),
            "table": Column("a nested table", "list"),
            "groups": Column("per-group statistics", "object"),
            "timing_s": Column("seconds spent", "float", precision=1, internal=True),
        },
        level="summary",
    )
    dictionary.register("", {"demo": Column("the demo section", "section")}, level="summary")
    return dictionary


def test_lookup_exact_pattern_and_container(registry):
    assert registry.lookup("demo_rate").column.unit == "fraction"
    assert registry.lookup("demo_pck_torso").name == "demo_pck_*"  # pattern
    assert registry.lookup("demo.score", "summary").column.precision == 1
    # A documented container covers what is nested below it; a section does not.
    assert registry.lookup("demo.groups.gender.female.n", "summary").name == "demo.groups"
    assert registry.missing(["demo.unknown", "demo", "demo.table"], "summary") == ["demo.unknown"]
    with pytest.raises(KeyError, match="no data-dictionary entry for video column 'face_x'"):
        registry.lookup("face_x")
    assert registry.missing(["demo_rate", "face_x", "demo_count"]) == ["face_x"]
    assert registry.is_internal("demo.timing_s") and not registry.is_internal("demo.score")


def test_registration_order_is_the_column_order(registry):
    assert registry.video_columns() == ["demo_rate", "demo_count", "demo_flag"]  # patterns are not columns


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"meaning": "x", "dtype": "float"}, "a float column needs precision >= 0"),
        ({"meaning": "x", "dtype": "float", "precision": -1}, "precision >= 0"),
        ({"meaning": "x", "dtype": "int", "precision": 2}, "precision is for float columns only"),
        ({"meaning": "x", "dtype": "number"}, "dtype must be one of"),
        ({"meaning": " ", "dtype": "str"}, "meaning must not be empty"),
    ],
)
def test_bad_entries_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Column(**kwargs)


def test_register_refuses_non_columns_and_bad_levels(registry):
    with pytest.raises(ValueError, match="entry 'demo_x' of section 'demo' is not a Column"):
        registry.register("demo", {"demo_x": {"meaning": "x"}})
    with pytest.raises(ValueError, match="level must be one of"):
        registry.register("demo", {}, level="table")


def test_typed_keeps_counts_whole_and_refuses_fractions(registry):
    # A join with a missing video turns counts into floats (15.0, NaN): typed() makes them whole again.
    frame = pd.DataFrame({"demo_count": [15.0, math.nan], "demo_flag": [True, None], "other": [1.5, 2.5]})
    typed = registry.typed(frame)
    assert str(typed["demo_count"].dtype) == "Int64" and typed["demo_count"].tolist()[0] == 15
    assert typed["demo_count"].isna().tolist() == [False, True]
    assert str(typed["demo_flag"].dtype) == "boolean"
    assert typed["other"].tolist() == [1.5, 2.5]  # undocumented: untouched
    assert typed.to_csv(index=False).splitlines()[1:] == ["15,True,1.5", ",,2.5"]
    with pytest.raises(ValueError, match="column 'demo_count' is documented as int but holds 2.5"):
        registry.typed(pd.DataFrame({"demo_count": [1.0, 2.5]}))


def test_rounded_uses_each_columns_precision(registry):
    frame = pd.DataFrame(
        {"demo_rate": [0.123456, math.nan], "demo_pck_arms": [0.98765, 1.0], "other": [0.1234567, 1]}
    )
    out = registry.rounded(frame)
    assert out["demo_rate"].tolist()[0] == 0.12 and math.isnan(out["demo_rate"].tolist()[1])
    assert out["demo_pck_arms"].tolist() == [0.988, 1.0]
    assert out["other"].tolist() == [0.1234567, 1]
    assert out.to_csv(index=False).splitlines()[1] == "0.12,0.988,0.1234567"


def test_publication_lists_every_entry_with_every_field(registry):
    frame = registry.as_frame()
    assert list(frame.columns) == dictionary.FIELDS
    assert frame["name"].tolist()[:3] == ["demo_rate", "demo_count", "demo_flag"]
    row = frame.set_index("name").loc["demo.score"]
    assert (row["level"], row["section"], row["precision"]) == ("summary", "demo", 1)
    assert pd.isna(frame.set_index("name").loc["demo_count", "precision"])
    records = {r["name"]: r for r in registry.as_records()}
    assert records["demo_rate"]["precision"] == 2 and records["demo_count"]["precision"] is None
    assert registry.as_csv().splitlines()[0] == ",".join(dictionary.FIELDS)


def test_command_output_shows_numbers_at_the_dictionarys_precision():
    # before: the attack's durations printed as 2.2355666666666667
    from evalsite import dictionary

    assert dictionary.find("attack.extraction_s", "summary").precision == 1
    assert dictionary.shown("attack.extraction_s", 2.2355666666666667, "summary") == "2.2"
    assert dictionary.shown("face_evaluation.rank1_rate", 0.123456, "summary") == "0.1235"
    assert dictionary.shown("face_evaluation.n_videos", 3, "summary") == "3"
    assert dictionary.shown("face_evaluation.psnr_db", float("inf"), "summary") == "inf"
    assert (
        dictionary.shown("not.documented", [1 / 3, None, {"a": 2 / 3}], "summary")
        == "[0.3333, -, {a: 0.6667}]"
    )


def test_published_sources_name_what_was_computed_in_words():
    """The real registry as published: no code argument (``within_video=True``) survives, the
    attribute-leakage entries cite the attribute-inference attack (they fell back to the
    behaviour measures' words), and the human section's with/without-flagged entries say what
    they hold without the scoring function's name."""
    import re

    records = {(r["level"], r["name"]): r for r in dictionary.as_records()}
    for record in records.values():
        for field in ("meaning", "source"):
            assert not re.search(r"\b\w+=(True|False)\b", record[field] or ""), record
    leakage = [r for r in records.values() if "(attribute inference)" in (r["source"] or "")]
    assert len(leakage) == 17  # the per-video gender accuracies and the attribute_leakage section
    assert all(r["source"].startswith("the platform's attribute-inference attack") for r in leakage)
    flagged = [
        r for (level, name), r in records.items() if name in ("human.with_flagged", "human.without_flagged")
    ]
    assert len(flagged) == 2 and all(
        r["meaning"].startswith("every figure of this section recomputed") for r in flagged
    )
