"""Formats whose videos all show one identity (``evalsite.video_formats``), hand-made rows.

Rows use the frame sizes and rates of the data folder's clips.csv files: GRID 360x288 and
720x576 at 25 fps (MPEG-1), CREMA-D 480x360 at 29.97 fps (FLV).
"""

from types import SimpleNamespace

from evalsite.video_formats import alone_in_format, video_format

GRID, GRID_HQ, CREMAD = "360x288, 25 fps, mpg", "720x576, 25 fps, mpg", "480x360, 29.97 fps, flv"


def _video(width, height, fps, name):
    return SimpleNamespace(width=width, height=height, fps=fps, file=SimpleNamespace(name=name))


def test_video_format_reads_size_rate_and_container():
    assert video_format(_video(720, 576, 25.0, "clear/sgac2a.mpg")) == GRID_HQ
    assert video_format(_video(480, 360, 29.97002997, "clear/1001_DFA_ANG_XX.FLV")) == CREMAD
    assert video_format(_video(None, None, None, "clear/noext")) == "?x?, ? fps, ?"


def test_an_identity_alone_in_one_of_its_formats_is_named_with_its_videos():
    # The demo's case: ID07 has one clip in the shared GRID format (lwbsza) and three that
    # nobody else has; ID11 has only CREMA-D clips; ID01 shares everything.
    rows = [
        ("ID01", "bbal6n", GRID),
        ("ID01", "brif5s", GRID),
        ("ID07", "lwbsza", GRID),
        ("ID07", "sgbc3n", GRID_HQ),
        ("ID07", "lgbf6s", GRID_HQ),
        ("ID07", "sgac2a", GRID_HQ),
        ("ID11", "1001_DFA_DIS_XX", CREMAD),
        ("ID11", "1001_DFA_ANG_XX", CREMAD),
    ]
    assert alone_in_format(rows) == [
        {"identity": "ID07", "format": GRID_HQ, "videos": ["lgbf6s", "sgac2a", "sgbc3n"]},
        {"identity": "ID11", "format": CREMAD, "videos": ["1001_DFA_ANG_XX", "1001_DFA_DIS_XX"]},
    ]
    # A second identity recorded in 720x576 takes the finding away from ID07.
    assert [f["identity"] for f in alone_in_format([*rows, ("ID02", "x", GRID_HQ)])] == ["ID11"]


def test_one_format_or_one_identity_names_nobody():
    assert alone_in_format([("A", "a1", GRID), ("B", "b1", GRID), ("B", "b2", GRID)]) == []
    assert alone_in_format([("A", "a1", GRID), ("A", "a2", CREMAD)]) == []  # nothing to tell apart
    assert alone_in_format([]) == []
