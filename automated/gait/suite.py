"""Gait data for the attack suite: clear and anonymized skeleton sequences, aligned.

Glue between ``loaders`` / ``anonymize`` / ``features`` and ``automated.attack``: one
``AttackData`` per anonymization, with whole sequences as split groups (so the 75/25 split
of seeds/000 section 5.4 goes by sequence, e.g. 4 of a Calgary subject's 6 walks for
training and 2 for testing) and the PCA selection features of section 5.7.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..attack.data import AttackData
from .features import selection_features
from .loaders import GaitDataset
from .sequences import PAPER_N_FRAMES, resample


def gait_attack_data(
    dataset: GaitDataset,
    anonymization: Callable[[np.ndarray], np.ndarray],
    *,
    n_frames: int = PAPER_N_FRAMES,
) -> AttackData:
    """Resample a gait dataset, anonymize it, and pair clear with masked sequences.

    Parameters
    ----------
    dataset : GaitDataset
        Equal-length sequences (e.g. ``load_calgary``).
    anonymization : callable
        Maps sequences (n, n_frames, n_joints, 3) to masked ones of the same shape (e.g. a
        value of ``anonymize.paper_anonymizations(dataset.layout)``). Applied after the
        resampling, as the paper anonymizes its 100-frame sequences.
    n_frames : int, default=100
        seeds/000, section 5.3.

    Returns
    -------
    AttackData
        ``clear``/``masked`` (n, n_frames, n_joints, 3) float32, ``identities`` = subject
        ids, ``groups`` = sequence ids, ``features`` = ``selection_features`` of the clear
        sequences.

    Raises
    ------
    ValueError
        If the anonymization changes the shape.
    """
    clear = resample(dataset.sequences, n_frames).astype(np.float32)
    masked = np.asarray(anonymization(clear), dtype=np.float32)
    if masked.shape != clear.shape:
        raise ValueError(f"anonymization changed the shape: {clear.shape} -> {masked.shape}")
    return AttackData(
        clear=clear,
        masked=masked,
        identities=dataset.subject_ids,
        groups=dataset.sequence_ids,
        features=selection_features(clear),
    )
