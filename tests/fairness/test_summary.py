"""Samples tables to fairness summaries (fairness/summary.py), without Django."""

import math

import pandas as pd
import pytest

from fairness.summary import ScoreSpec, summarize, summarize_table


@pytest.fixture
def samples():
    return pd.DataFrame(
        {
            "rate": [0.5, 0.5, 0.0, 0.0, 0.2, None],
            "empty": [None] * 6,
            "gender": ["female", "female", "male", "male", " Unknown ", "male"],
            "age": ["20-29", "N/A", "30-39", None, "20-29", "30-39"],
        }
    )


def test_lower_is_better_rates_are_measured_as_one_minus_rate(samples):
    result = summarize_table(
        samples, specs=[ScoreSpec("rate", "lower", 0.01)], attributes=["gender"], n_resamples=0
    )
    gender = result["1 - rate"]["by_attribute"]["gender"]
    # " Unknown " (any case, padded) names no group; the last row has no score
    assert (gender["n_samples"], gender["n_excluded"]) == (4, 2)
    assert gender["groups"]["female"]["mean"] == 0.5 and gender["groups"]["male"]["mean"] == 1.0
    assert gender["measures"]["Mean-GC-SQFR"]["estimate"] == pytest.approx(2 / 3)  # GC of [0.5, 1] = 1/3


def test_missing_attribute_values_are_left_out_and_counted(samples):
    age = summarize_table(samples, specs=[ScoreSpec("rate")], attributes=["age"], n_resamples=0)["rate"]
    # "N/A", None and the row without a score are excluded
    assert (age["by_attribute"]["age"]["n_samples"], age["by_attribute"]["age"]["n_excluded"]) == (3, 3)
    assert set(age["by_attribute"]["age"]["groups"]) == {"20-29", "30-39"}


def test_absent_and_empty_columns_and_attributes_are_skipped(samples):
    specs = [ScoreSpec("empty"), ScoreSpec("absent"), ScoreSpec("rate")]
    result = summarize_table(samples, specs=specs, attributes=["gender", "shoe_size"], n_resamples=0)
    assert list(result) == ["rate"] and list(result["rate"]["by_attribute"]) == ["gender"]


def test_a_lower_is_better_score_outside_0_1_is_reported_not_fatal(samples):
    samples.loc[0, "rate"] = 2.0
    entry = summarize_table(samples, specs=[ScoreSpec("rate", "lower")], attributes=["gender"])["1 - rate"]
    assert entry["error"] == "rate is 'lower is better' but not a fraction in [0, 1]: [2.0]"
    assert entry["by_attribute"] == {}


def test_bad_favourable_is_named():
    with pytest.raises(ValueError, match="favourable must be 'higher' or 'lower', got 'up'"):
        ScoreSpec("rate", "up").oriented(pd.Series([0.5]))


def test_summarize_without_intervals_and_nan_as_none():
    result = summarize([1.0, 3.0], groups=["a", "b"], n_resamples=0)
    assert result["groups"]["a"]["std"] is None  # one sample: NaN -> None for JSON
    assert result["measures"]["Mean-GC-SQFR"] == {"estimate": 0.5}
    assert not math.isnan(result["measures"]["MDG-SQFR"]["estimate"])


def test_nullable_missing_attribute_values_are_not_a_group():
    # convert_dtypes()/nullable "string" columns hold pd.NA, which str() would turn into "<NA>"
    samples = pd.DataFrame({"q": [1.0, 2.0, 3.0, 4.0], "g": ["a", None, "b", "b"]}).convert_dtypes()
    block = summarize_table(samples, specs=[ScoreSpec("q")], attributes=["g"], n_resamples=0)["q"][
        "by_attribute"
    ]["g"]
    assert set(block["groups"]) == {"a", "b"} and block["n_excluded"] == 1
