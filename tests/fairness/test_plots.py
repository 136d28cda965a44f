"""Violin plots of per-group distributions (fairness/plots.py)."""

import io

import numpy as np
import pytest
from PIL import Image

from fairness.plots import violin_png
from tests.fresh_process import run_fresh


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


def test_the_site_starts_without_matplotlib():
    """matplotlib (~0.6 CPU s to import) loads when a plot is drawn, not when a server,
    worker or command starts: Django set up and the URLconf (every view module) loaded in a
    fresh process leave it unimported; drawing a plot then imports it."""
    code = (
        "import sys, django; django.setup(); "
        "from django.urls import get_resolver; get_resolver().url_patterns; "
        "print('matplotlib' in sys.modules); "
        "from fairness.plots import violin_png; violin_png({'a': [0.1, 0.2]}, title='t', ylabel='y'); "
        "print('matplotlib' in sys.modules)"
    )
    assert run_fresh(code).split() == ["False", "True"]
