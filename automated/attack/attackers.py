"""Attacker knowledge: which training and test samples are clear or masked.

seeds/000_0b74979cb8a3f1c3.txt, section 4.2.1 and 5.2: the *naive* attacker trains on
clear data (unaware of the anonymization), the *parrot* attacker trains on anonymized data
(Newton et al. 2003; the "informed attacker" of Srivastava et al. 2020), and the
*%-parrot* attackers train on a mix with 25 / 50 / 75 % of the training samples anonymized
(hypothesis H2). Every attacker is tested on anonymized samples, except the *clear*
baseline (clear on clear), which approximates the worst case of the anonymization.

The *reversal* attacker (after "Fantomas: Understanding Face Anonymization
Reversibility", the follow-up to seeds/000) trains on clear samples and first restores
each masked test sample with a network trained on the attacker's (masked, clear) pairs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .protocol import identity_rng, round_half_up

if TYPE_CHECKING:
    from .data import AttackData  # pandas: not needed to name the attackers


@dataclass(frozen=True)
class Attacker:
    """One attacker knowledge level.

    Attributes
    ----------
    name : str
    masked_train_fraction : float in [0, 1]
        Share of each identity's training samples the attacker sees anonymized.
    test_masked : bool
        True: tested on anonymized samples; False only for the clear baseline.
    restores : bool
        True for the *reversal* attacker: an image-to-image network trained on the
        attacker's (masked, clear) training pairs undoes the masking of each test sample
        before the recognizer (trained on clear samples) sees it (``reversal.py``).
    """

    name: str
    masked_train_fraction: float
    test_masked: bool = True
    restores: bool = False

    def __post_init__(self):
        if not 0.0 <= self.masked_train_fraction <= 1.0:
            raise ValueError(f"masked_train_fraction must be in [0, 1], got {self.masked_train_fraction}")

    @property
    def is_baseline(self) -> bool:
        """True for the clear-on-clear bound, which is not an attack on the masking."""
        return not self.test_masked


ATTACKERS: dict[str, Attacker] = {
    a.name: a
    for a in (
        Attacker("clear", 0.0, test_masked=False),
        Attacker("naive", 0.0),
        Attacker("parrot_25", 0.25),
        Attacker("parrot_50", 0.50),
        Attacker("parrot_75", 0.75),
        Attacker("parrot", 1.0),
        Attacker("reversal", 0.0, restores=True),
    )
}
#: The paper's attackers (seeds/000 section 5.2); ``reversal`` trains a network and is
#: chosen by name.
DEFAULT_ATTACKERS = ("clear", "naive", "parrot_25", "parrot_50", "parrot_75", "parrot")


def get_attackers(names) -> list[Attacker]:
    """Look attackers up by name (``ATTACKERS``); ``Attacker`` instances pass through.

    Raises
    ------
    ValueError
        If a name is unknown or an attacker is given more than once (its rows would count
        twice: twice the folds and a narrower interval over folds).
    """
    result = []
    for name in names:
        if isinstance(name, Attacker):
            result.append(name)
        elif name in ATTACKERS:
            result.append(ATTACKERS[name])
        else:
            raise ValueError(f"unknown attacker {name!r}; known: {', '.join(ATTACKERS)}")
    given = [a.name for a in result]
    repeated = sorted({n for n in given if given.count(n) > 1})
    if repeated:
        raise ValueError(f"attacker(s) {', '.join(repeated)} given more than once; give each once")
    return result


def masked_training_mask(identities, fraction: float, *, seed: int = 0) -> np.ndarray:
    """Choose which training samples a %-parrot attacker sees anonymized.

    Per identity, ``round_half_up(fraction * n_identity_samples)`` samples are drawn
    without replacement with a generator seeded by ``seed`` and the identity label, so the
    choice is reproducible and independent of which other identities are evaluated.

    Parameters
    ----------
    identities : array-like of shape (n_train,)
        Identity of each training sample.
    fraction : float in [0, 1]
    seed : int, default=0

    Returns
    -------
    ndarray of bool of shape (n_train,)
        True where the sample is taken from the masked data.
    """
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"fraction must be in [0, 1], got {fraction}")
    identities = np.asarray(identities)
    mask = np.zeros(len(identities), dtype=bool)
    for identity in sorted(set(identities.tolist())):
        idx = np.flatnonzero(identities == identity)
        n_masked = round_half_up(fraction * len(idx))
        chosen = identity_rng(seed + 1, identity).permutation(len(idx))[:n_masked]
        mask[idx[chosen]] = True
    return mask


def build_training_set(data: AttackData, train_idx, attacker: Attacker, *, seed: int = 0):
    """Training samples and labels as the attacker sees them.

    Returns
    -------
    X : ndarray of shape (len(train_idx), ...)
    y : ndarray of shape (len(train_idx),)
    """
    train_idx = np.asarray(train_idx)
    y = data.identities[train_idx]
    use_masked = masked_training_mask(y, attacker.masked_train_fraction, seed=seed)
    X = np.where(
        use_masked.reshape((-1,) + (1,) * (data.clear.ndim - 1)),
        data.masked[train_idx],
        data.clear[train_idx],
    )
    return X, y


def build_test_set(data: AttackData, test_idx, attacker: Attacker):
    """Test samples (masked, or clear for the baseline) and their true labels."""
    test_idx = np.asarray(test_idx)
    source = data.masked if attacker.test_masked else data.clear
    return source[test_idx], data.identities[test_idx]
