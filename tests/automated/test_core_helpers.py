"""The one-of-each helpers of the science core: frame check, box clipping, stride check,
Student-t interval, JSON conversion, models folder (hand-computed cases)."""

import json
import math
import sys
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import automated
from automated.checks import check_stride
from automated.face_boxes import check_frame, clip_boxes
from automated.intervals import student_t_interval
from automated.models_dir import default_models_dir
from automated.serialize import jsonable


def test_check_frame_accepts_uint8_rgb_and_names_what_it_refuses():
    check_frame(np.zeros((2, 3, 3), np.uint8))
    with pytest.raises(
        ValueError, match=r"^frame_rgb must be uint8 of shape \(height, width, 3\), got float64 \(2, 3, 3\)$"
    ):
        check_frame(np.zeros((2, 3, 3)))
    with pytest.raises(ValueError, match=r"got uint8 \(2, 3\)$"):
        check_frame(np.zeros((2, 3), np.uint8))
    with pytest.raises(ValueError, match=r"got uint8 \(2, 3, 4\)$"):
        check_frame(np.zeros((2, 3, 4), np.uint8))
    with pytest.raises(ValueError, match=r"^image_rgb must be uint8 .*got list $"):
        check_frame([[1, 2, 3]], "image_rgb")


def test_face_quality_uses_the_frame_check():
    from automated.quality import face_quality

    # a 4-channel image passed before (no channel-count check there)
    with pytest.raises(
        ValueError, match=r"^image_rgb must be uint8 of shape \(height, width, 3\), got uint8 \(8, 8, 4\)$"
    ):
        face_quality(np.zeros((8, 8, 4), np.uint8))
    with pytest.raises(ValueError, match=r"got NoneType $"):
        face_quality(None)


def test_clip_boxes_clips_to_the_frame_and_returns_a_float32_copy():
    boxes = np.array([[-5, 2, 30, 40], [1, -1, 3, 4]], np.float64)
    clipped = clip_boxes(boxes, 20, 10)
    assert clipped.dtype == np.float32 and clipped.shape == (2, 4)
    np.testing.assert_array_equal(clipped, [[0, 2, 20, 10], [1, 0, 3, 4]])
    assert boxes[0, 0] == -5  # the input is untouched
    assert clip_boxes(np.zeros(0), 5, 5).shape == (0, 4)


@pytest.mark.parametrize("stride", [1, 5, np.int64(3)])
def test_check_stride_returns_whole_numbers_of_one_or_more(stride):
    assert check_stride(stride) == stride


@pytest.mark.parametrize(
    "bad, shown", [(0, "0"), (-2, "-2"), (2.5, "2.5"), ("5", "'5'"), (True, "True"), (None, "None")]
)
def test_check_stride_names_the_bad_value(bad, shown):
    with pytest.raises(ValueError, match=rf"^stride must be a whole number >= 1, got {shown}$"):
        check_stride(bad)


def test_student_t_interval_by_hand():
    # mean 2.5, sd (ddof 1) = sqrt(5/3), n = 4, t_{0.975, 3} = 3.182446305284263
    mean, low, high = student_t_interval([1.0, 2.0, 3.0, 4.0])
    half = 3.182446305284263 * math.sqrt(5 / 3) / 2
    assert mean == 2.5
    assert (low, high) == pytest.approx((2.5 - half, 2.5 + half), rel=1e-12)
    assert (low, high) == pytest.approx(stats.t.interval(0.95, 3, 2.5, math.sqrt(5 / 3) / 2), rel=1e-12)
    assert student_t_interval([0.5, 0.5, 0.5]) == (0.5, 0.5, 0.5)
    one = student_t_interval([0.7])
    assert one[0] == 0.7 and math.isnan(one[1]) and math.isnan(one[2])


@pytest.mark.parametrize(
    "values, confidence, message",
    [
        ([1.0, 2.0], 1.0, r"confidence must be in \(0, 1\), got 1.0"),
        ([], 0.95, "non-empty 1-D"),
        ([[1.0]], 0.95, "non-empty 1-D"),
    ],
)
def test_student_t_interval_errors(values, confidence, message):
    with pytest.raises(ValueError, match=message):
        student_t_interval(values, confidence)


def test_jsonable_turns_numpy_nan_and_na_into_json():
    value = {
        "count": np.int64(3),
        "rate": np.float32(0.5),
        "flag": np.bool_(True),
        "missing": [math.nan, pd.NA, np.float64("nan")],
        "pair": (1, np.int32(2)),
        "name": "a",
        "inf": math.inf,
    }
    converted = jsonable(value)
    assert converted == {
        "count": 3,
        "rate": 0.5,
        "flag": True,
        "missing": [None, None, None],
        "pair": [1, 2],
        "name": "a",
        "inf": math.inf,
    }
    assert type(converted["count"]) is int and type(converted["flag"]) is bool
    assert json.loads(json.dumps(jsonable({"x": [np.int64(1), math.nan]}))) == {"x": [1, None]}


def test_jsonable_works_while_another_thread_is_importing_pandas(monkeypatch):
    """pandas is in ``sys.modules`` from the start of its import, before it defines ``NA``
    (a request thread's first report imports it while another serialises a cached summary)."""
    monkeypatch.setitem(sys.modules, "pandas", types.ModuleType("pandas"))  # NA not defined yet
    assert jsonable({"rate": np.float64(0.5), "missing": [math.nan, None]}) == {
        "rate": 0.5,
        "missing": [None, None],
    }


def test_default_models_dir_is_the_environment_variable_else_shared_models_beside_the_checkout(
    monkeypatch, tmp_path
):
    monkeypatch.setenv("DEID_MODELS_DIR", str(tmp_path))
    assert default_models_dir() == tmp_path
    monkeypatch.delenv("DEID_MODELS_DIR")
    assert default_models_dir() == Path(automated.__file__).resolve().parents[2] / "shared" / "models"
