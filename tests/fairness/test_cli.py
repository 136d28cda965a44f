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
    assert main([str(scores_csv), "--group", "gender", "--score", "quality", "--json",
                 "--n-resamples", "200"]) == 0
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
        [sys.executable, "-m", "fairness", str(scores_csv), "--group", "gender", "--score", "quality",
         "--n-resamples", "0"],
        capture_output=True, text=True, cwd=ROOT, check=True,
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
    assert main([str(path), "--group", "g", "--score", "rate", "--json", "--n-resamples", "0",
                 "--step", "0.1"]) == 0
    # thresholds 0.2, 0.3: a discards 1/2, 1/2; b 0, 1 -> gaps 1/2, 1/2
    assert json.loads(capsys.readouterr().out)["measures"]["MDG-SQFR"]["estimate"] == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("content", "arguments", "message"),
    [
        ("g,s\na,1\n", ["--group", "gender", "--score", "s"], "column(s) ['gender'] not in"),
        ("g,s\na,1\nb,high\nb,2\n", ["--group", "g", "--score", "s"],
         "1 non-numeric value(s) in score column 's' (line 3: 'high')"),
        ("g,s\na,1\nb,\nb,2\n", ["--group", "g", "--score", "s"], "group 'b' has 1 NaN score"),
        ("g,s\na,1\n,2\n", ["--group", "g", "--score", "s"], "have no group label"),
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
    assert main([str(path), "--group", "g", "--score", "s", "--json", "--n-resamples", "0",
                 "--nan-policy", "omit"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["groups"]["a"]["n"] == 1
    assert result["measures"]["Mean-GC-SQFR"]["estimate"] == pytest.approx(0.5)  # GC of [1, 3]
