"""Where pretrained weights live: the one models-folder resolver of the science core.

Django-free and a leaf. The site reads it too: ``evalsite/conf.py`` declares ``DEID_MODELS_DIR``
with this default (documented on the configuration page).
"""

from __future__ import annotations

import os
from pathlib import Path


def default_models_dir() -> Path:
    """``$DEID_MODELS_DIR``, else ``../shared/models`` beside the project checkout.

    Returns
    -------
    pathlib.Path
        The folder (not checked to exist: the loaders name the missing file).
    """
    configured = os.environ.get("DEID_MODELS_DIR")
    return Path(configured) if configured else Path(__file__).resolve().parents[2] / "shared" / "models"
