"""``python -m fairness`` on CSV files with hand-known answers."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fairness.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def scores_csv(tmp_path):
    # a: 1, 2, 3 (mean 2, median 2); b: 2, 3, 3 (mean 8/3, median 3), group ids as text
    path = tmp_path / "scores.csv"
    path.write_text("subject,gender,quality\n1,01,1\n2,01,2\n3,01,3\n4,02,2\n5,02,3\n6,02,3\n")
    return path


def test_json_output_has_every_measure_with_hand_known_values(scores_csv, capsys):
    assert (
        main([str(scores_csv), "--group", "gender", "--score", "quality", "--json", "--n-resamples", "200"])
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    assert set(result["groups"]) == {"01", "02"}  # labels kept as text
    assert result["groups"]["02"]["mean"] == pytest.approx(8 / 3)
    measures = result["measures"]
    assert measures["Mean-GC-SQFR"]["estimate"] == pytest.approx(6 / 7)
    assert measures["Median-GC-SQFR"]["estimate"] == pytest.approx(0.8)
    assert measures["Mean-GC-CSQFR"]["estimate"] == pytest.approx((6 / 7) ** 3)
    assert measures["MDG-SQFR"]["estimate"] == pytest.approx(2 / 3)
    for measure in measures.values():
        assert measure["ci_low"] <= measure["estimate"] <= measure["ci_high"]
        assert measure["n_resamples"] == 200


def test_text_output_runs_as_a_module(scores_csv):
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "fairness",
            str(scores_csv),
            "--group",
            "gender",
            "--score",
            "quality",
            "--n-resamples",
            "0",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    assert "Mean-GC-SQFR    0.8571" in completed.stdout
    assert "MDG-SQFR        0.6667" in completed.stdout
    assert "CI" not in completed.stdout


def test_an_undefined_measure_is_reported_not_fatal(tmp_path, capsys):
    path = tmp_path / "rates.csv"
    path.write_text("g,rate\na,0.1\na,0.3\nb,0.2\n")
    assert main([str(path), "--group", "g", "--score", "rate", "--json", "--n-resamples", "0"]) == 0
    measures = json.loads(capsys.readouterr().out)["measures"]
    assert "smaller than step=1.0" in measures["MDG-SQFR"]["error"]
    # means 0.2 and 0.2: fair
    assert measures["Mean-GC-SQFR"]["estimate"] == pytest.approx(1.0)
    assert (
        main([str(path), "--group", "g", "--score", "rate", "--json", "--n-resamples", "0", "--step", "0.1"])
        == 0
    )
    # thresholds 0.2, 0.3: a discards 1/2, 1/2; b 0, 1 -> gaps 1/2, 1/2
    assert json.loads(capsys.readouterr().out)["measures"]["MDG-SQFR"]["estimate"] == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("content", "arguments", "message"),
    [
        ("g,s\na,1\n", ["--group", "gender", "--score", "s"], "column(s) ['gender'] not in"),
        (
            "g,s\na,1\nb,high\nb,2\n",
            ["--group", "g", "--score", "s"],
            "1 non-numeric value(s) in score column 's' (line 3: 'high')",
        ),
    ],
)
def test_bad_files_give_a_clear_error(tmp_path, capsys, content, arguments, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    assert main([str(path), *arguments]) == 2
    assert message in capsys.readouterr().err


def test_missing_file_gives_a_clear_error(tmp_path, capsys):
    assert main([str(tmp_path / "absent.csv"), "--group", "g", "--score", "s"]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_nan_policy_omit_drops_empty_scores(tmp_path, capsys):
    path = tmp_path / "gaps.csv"
    path.write_text("g,s\na,1\na,\nb,3\n")
    assert (
        main(
            [
                str(path),
                "--group",
                "g",
                "--score",
                "s",
                "--json",
                "--n-resamples",
                "0",
                "--nan-policy",
                "omit",
            ]
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    assert result["groups"]["a"]["n"] == 1
    assert result["measures"]["Mean-GC-SQFR"]["estimate"] == pytest.approx(0.5)  # GC of [1, 3]


def _run(tmp_path, capsys, content, *arguments, name="bad.csv"):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    status = main([str(path), "--n-resamples", "0", *arguments])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        # blank label cells, reported by CSV line like non-numeric scores
        ("g,s\na,1\n,2\nb,3\n  ,4\n", "2 row(s) have no label in group column 'g' (line 3; line 5)"),
        # empty score cells under the default nan_policy, with the command-line option to pass
        (
            "g,s\na,1\nb,\nb,2\nb,NA\n",
            "2 empty score(s) in column 's' (line 3; line 5); fill them or pass --nan-policy omit",
        ),
        ("g,s\n", "has a header but no data rows"),
    ],
)
def test_missing_cells_are_named_by_line(tmp_path, capsys, content, message):
    status, out, err = _run(tmp_path, capsys, content, "--group", "g", "--score", "s")
    assert status == 2 and out == ""
    assert message in err


def test_group_labels_that_pandas_reads_as_missing_are_kept(tmp_path, capsys):
    # "NA" (e.g. North America) and "None" are real labels, not missing cells.
    status, out, _ = _run(
        tmp_path, capsys, "g,s\nNA,1\nNA,3\nNone,2\nNone,2\n", "--group", "g", "--score", "s", "--json"
    )
    assert status == 0
    assert json.loads(out)["groups"]["NA"]["mean"] == 2.0 and json.loads(out)["groups"]["None"]["n"] == 2


def test_semicolon_separated_file_gets_a_hint_and_can_be_read(tmp_path, capsys):
    content = "g;s\na;1\na;3\nb;2\nb;2\n"
    status, _, err = _run(tmp_path, capsys, content, "--group", "g", "--score", "s")
    assert status == 2 and "columns are ['g;s']; the header contains ';': pass --sep ';'" in err
    status, out, _ = _run(tmp_path, capsys, content, "--group", "g", "--score", "s", "--sep", ";", "--json")
    assert status == 0 and json.loads(out)["measures"]["Mean-GC-SQFR"]["estimate"] == 1.0


def test_excel_file_renamed_csv_is_named_as_such(tmp_path, capsys):
    import zipfile

    path = tmp_path / "scores.csv"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("xl/workbook.xml", "<workbook/>" * 50)
    assert main([str(path), "--group", "g", "--score", "s"]) == 2
    err = capsys.readouterr().err
    assert f"cannot read {path}: it is a ZIP archive (an Excel .xlsx or .ods file?), not CSV text" in err


def test_non_utf8_file_names_the_byte_and_the_option(tmp_path, capsys):
    content = "g,s\nM\u00e4nnlich,1\nWeiblich,2\n".encode("latin-1")
    status, _, err = _run(tmp_path, capsys, content, "--group", "g", "--score", "s")
    assert status == 2 and "is not utf-8 text (byte 0xe4); pass --encoding (e.g. latin-1)" in err
    status, out, _ = _run(
        tmp_path, capsys, content, "--group", "g", "--score", "s", "--encoding", "latin-1", "--json"
    )
    assert status == 0 and set(json.loads(out)["groups"]) == {"M\u00e4nnlich", "Weiblich"}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--n-resamples", "-1"], "n_resamples must be >= 0 (0 = no confidence intervals), got -1"),
        (["--step", "0"], "step must be a positive, finite number, got 0.0"),
        (["--step", "nan"], "step must be a positive, finite number, got nan"),
    ],
)
def test_bad_options_are_errors_not_undefined_measures(scores_csv, capsys, arguments, message):
    assert main([str(scores_csv), "--group", "gender", "--score", "quality", *arguments]) == 2
    assert message in capsys.readouterr().err


def test_undefined_measures_do_not_suggest_python_keywords(tmp_path, capsys):
    status, out, _ = _run(tmp_path, capsys, "g,s\na,1\na,2\n", "--group", "g", "--score", "s")
    assert status == 0
    assert "at least two groups are needed to compare, got 1: ['a']" in out
    assert "undefined='nan'" not in out


def test_single_sample_groups_print_without_python_none(tmp_path, capsys):
    status, out, _ = _run(tmp_path, capsys, "g,s\na,1\nb,2\n", "--group", "g", "--score", "s")
    assert status == 0 and "None" not in out and "n/a" in out


def test_huge_scores_give_one_clear_error(tmp_path, capsys):
    status, _, err = _run(tmp_path, capsys, "g,s\na,1e300\nb,1.7e308\n", "--group", "g", "--score", "s")
    assert status == 2
    assert err.strip() == "error: scores contain values beyond +-1e+150: [1e+300, 1.7e+308]; rescale them"


def test_import_fairness_works_without_django():
    code = (
        "import sys, fairness\n"
        "print(fairness.mean_gc_sqfr({'a': [1, 2, 3], 'b': [2, 3, 3]}), fairness.summarize is not None,\n"
        "      any(name.split('.')[0] == 'django' for name in sys.modules))"
    )
    env = {key: value for key, value in __import__("os").environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, check=True
    )
    assert completed.stdout.split() == ["0.8571428571428572", "True", "False"]


def test_a_closed_pipe_ends_quietly(scores_csv):
    # e.g. `python -m fairness scores.csv ... --json | head -3`
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fairness",
            str(scores_csv),
            "--group",
            "gender",
            "--score",
            "quality",
            "--json",
            "--n-resamples",
            "50",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    process.stdout.close()  # the reader is gone before anything is printed
    stderr = process.stderr.read().decode()
    process.wait(timeout=60)
    assert "Traceback" not in stderr and stderr == ""
