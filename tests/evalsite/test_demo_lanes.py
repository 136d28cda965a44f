"""The demo's baselines two at a time after the first, and its reports warmed once (issue 20).

The baselines themselves run in tests/evalsite/test_commands.py (one baseline, in the
test's transaction: one lane) and in ``make demo``; here the scheduling alone, with a
recorded stand-in for the per-baseline work.
"""

import threading
import time

import pytest

from evalsite.portal import demo


def _recording_work(log: list, delay_s: float = 0.2):
    """A stand-in for ``demo._baseline``: notes (method, start, end, thread name)."""

    def work(method):
        start = time.monotonic()
        time.sleep(delay_s)
        log.append((method, start, time.monotonic(), threading.current_thread().name))
        return demo._BaselineOutcome(report_paths=[method])

    return work


def test_the_first_baseline_runs_alone_then_two_at_a_time_in_order(monkeypatch):
    monkeypatch.setattr(demo.embedded, "pool_possible", lambda: True)
    log: list = []
    methods = ["identity", "blur_face", "pixelate_face", "eye_mask", "canny"]
    outcomes = demo._in_lanes(_recording_work(log), methods)
    assert [o.report_paths for o in outcomes] == [[m] for m in methods]  # in the methods' order
    spans = {method: (start, end, thread) for method, start, end, thread in log}
    first_end = spans["identity"][1]
    assert spans["identity"][2] == threading.current_thread().name  # the first: here, alone
    assert all(spans[m][0] >= first_end for m in methods[1:])  # the others start after it
    assert all(spans[m][2].startswith("demo-lane") for m in methods[1:])
    # two in flight at once: blur_face and pixelate_face overlap, and no three ever do
    assert spans["pixelate_face"][0] < spans["blur_face"][1]
    in_flight = [sum(s <= start < e for s, e, _ in spans.values()) for start, _, _ in spans.values()]
    assert max(in_flight) == demo.DEMO_LANES


@pytest.mark.parametrize("why", ["no pool", "two methods"])
def test_one_at_a_time_here_when_the_pool_cannot_serve_or_one_lane_is_left(monkeypatch, why):
    monkeypatch.setattr(demo.embedded, "pool_possible", lambda: why != "no pool")
    log: list = []
    methods = ["identity", "blur_face", "pixelate_face"] if why == "no pool" else ["identity", "blur_face"]
    outcomes = demo._in_lanes(_recording_work(log, delay_s=0.05), methods)
    assert [o.report_paths for o in outcomes] == [[m] for m in methods]
    assert {thread for *_, thread in log} == {threading.current_thread().name}
    assert all(log[i][1] >= log[i - 1][2] for i in range(1, len(log)))  # one after the other


def test_reports_are_not_warmed_after_each_run_but_once_after_the_baselines(monkeypatch, settings):
    warmed, shut_down = [], []
    monkeypatch.setattr(demo.report_cache, "warm", warmed.append)
    monkeypatch.setattr(demo.embedded, "shutdown_pool", lambda: shut_down.append(settings.DEID_WARM_REPORTS))
    settings.DEID_WARM_REPORTS = True
    with demo._reports_warmed_once("the campaign"):
        assert settings.DEID_WARM_REPORTS is False  # what the pool's workers start with
        assert warmed == []
    assert settings.DEID_WARM_REPORTS is True and warmed == ["the campaign"]
    assert len(shut_down) == 2  # the pool restarted around the loop: its workers take the setting

    settings.DEID_WARM_REPORTS = False  # off in the settings: off during, nothing warmed after
    with demo._reports_warmed_once("the campaign"):
        pass
    assert warmed == ["the campaign"] and settings.DEID_WARM_REPORTS is False


def _london_stand_in(started: threading.Event, release: threading.Event, fail: bool = False):
    """A stand-in for the London example: logs two lines, waits to be released, returns its files."""

    def work(log):
        log(f"London line 1 ({threading.current_thread().name})")
        started.set()
        assert release.wait(5)
        log("London line 2")
        if fail:
            raise RuntimeError("no photos")
        return ["london_privacy_fairness.csv", "london_privacy_fairness.json"]

    return work


def test_the_london_example_runs_beside_the_baselines_and_logs_where_it_did(monkeypatch):
    monkeypatch.setattr(demo.embedded, "pool_possible", lambda: True)
    started, release, printed = threading.Event(), threading.Event(), []
    files = demo._beside_the_baselines(_london_stand_in(started, release), printed.append)
    assert started.wait(5)  # it runs while the baselines would: before its files are asked for
    assert printed == []  # its lines are held, not mixed into the baselines' lines
    # a daemon: a demo stopped during the baselines does not wait for it at exit
    assert [thread.daemon for thread in threading.enumerate() if thread.name == "demo-beside"] == [True]
    printed.append("baselines done")
    release.set()
    assert files() == ["london_privacy_fairness.csv", "london_privacy_fairness.json"]
    assert printed == ["baselines done", "London line 1 (demo-beside)", "London line 2"]


def test_the_london_example_runs_in_place_without_a_pool_and_its_error_is_raised(monkeypatch):
    monkeypatch.setattr(demo.embedded, "pool_possible", lambda: False)
    started, release, printed = threading.Event(), threading.Event(), []
    release.set()
    files = demo._beside_the_baselines(_london_stand_in(started, release), printed.append)
    assert not started.is_set()  # nothing runs until the files are asked for
    assert files() == ["london_privacy_fairness.csv", "london_privacy_fairness.json"]
    here = threading.current_thread().name
    assert printed == [f"London line 1 ({here})", "London line 2"]

    monkeypatch.setattr(demo.embedded, "pool_possible", lambda: True)
    printed.clear()
    files = demo._beside_the_baselines(
        _london_stand_in(threading.Event(), release, fail=True), printed.append
    )
    with pytest.raises(RuntimeError, match="no photos"):
        files()
    assert printed[1:] == ["London line 2"]  # the lines before the error are still printed


def test_the_london_files_are_written_whole_or_not_at_all(tmp_path, monkeypatch):
    """``demo_london.write_files``: the CSV (a header and a row per method and attribute) and
    the JSON, with the file mode of a report written the ordinary way. Figures that cannot be
    written change neither file; a write that fails on the disk leaves that file as it was
    and no partial file."""
    import csv
    import json
    import os

    from evalsite.portal import demo_london

    row = {column: "" for column in demo_london.COLUMNS}
    row.update(method="blur_face", attribute="gender")
    reports = {"blur_face": {"gender": {"spread": 0.04}}}
    csv_path, json_path = demo_london.write_files(tmp_path, [row], reports)
    with csv_path.open(newline="") as handle:
        assert list(csv.DictReader(handle)) == [row]
    assert csv_path.read_bytes().startswith(",".join(demo_london.COLUMNS).encode() + b"\r\n")
    assert json.loads(json_path.read_text())["methods"] == reports
    ordinary = tmp_path / "ordinary.csv"
    ordinary.write_text("x")  # as the per-submission reports are written
    assert csv_path.stat().st_mode == json_path.stat().st_mode == ordinary.stat().st_mode
    ordinary.unlink()
    before = {path: path.read_bytes() for path in (csv_path, json_path)}

    changed = dict(row, attribute="ethnicity")
    with pytest.raises(TypeError):  # json cannot write this figure: nothing is written
        demo_london.write_files(tmp_path, [changed], {"blur_face": object()})
    assert {path: path.read_bytes() for path in before} == before

    real_replace = os.replace

    def disk_full_for_json(source, target):
        if str(target).endswith(".json"):
            raise OSError(28, "No space left on device")
        return real_replace(source, target)

    monkeypatch.setattr(os, "replace", disk_full_for_json)
    with pytest.raises(OSError, match="No space left"):
        demo_london.write_files(tmp_path, [changed], {"blur_face": {"ethnicity": {"spread": 0.12}}})
    assert json_path.read_bytes() == before[json_path]  # the last whole file stays
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(path.name for path in before)
