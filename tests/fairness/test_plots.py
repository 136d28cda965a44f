"""Violin plots of per-group distributions (fairness/plots.py)."""

import io

import numpy as np
import pytest
from PIL import Image

from fairness.plots import violin_png


def test_violin_png_with_small_and_constant_groups():
    png = violin_png({"a": [1.0, 2.0, 3.0], "b": [2.0], "c": [4.0, 4.0]}, title="t", ylabel="score")
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG"
    width, height = image.size
    assert height == 360 and width == int((1.6 + 1.3 * 3) * 100)
    assert png == violin_png({"a": [1.0, 2.0, 3.0], "b": [2.0], "c": [4.0, 4.0]}, title="t", ylabel="score")
    assert np.asarray(image.convert("L")).min() < 50  # something dark was drawn


def test_violin_png_needs_a_group():
    with pytest.raises(ValueError, match="no group has scores"):
        violin_png({}, title="t", ylabel="y")
