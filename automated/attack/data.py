"""The input of the attack suite: clear samples, masked samples aligned with them, labels."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

#: Role of a source video: evaluated (tested, shown to raters) or the attacker's own
#: labelled training material (masked by teams too, never tested, never shown to raters).
ROLE_EVALUATED = "evaluated"
ROLE_ATTACKER_TRAIN = "attacker_train"
ROLES = (ROLE_EVALUATED, ROLE_ATTACKER_TRAIN)


@dataclass(frozen=True)
class AttackData:
    """Aligned clear and masked samples of a closed set of identities.

    Sample ``i`` of ``masked`` is the anonymized version of sample ``i`` of ``clear``
    (the same face crop box of the same frame, or the same skeleton sequence), so each
    attacker can choose per sample which version it sees (seeds/000, section 5.4: "either
    the clear samples or the anonymized samples go into the respective datasets").

    Attributes
    ----------
    clear : ndarray of shape (n_samples, ...)
        Clear samples: face crops ``uint8`` (n, H, W, 3) or (n, H, W), all scaled to one
        size, or any fixed-shape array per sample (e.g. gait sequences (n, T, J, 3)).
    masked : ndarray of the same shape as ``clear``
        The anonymized samples.
    identities : ndarray of shape (n_samples,)
        Identity label (the class of closed-set identification).
    groups : ndarray of shape (n_samples,), default=None
        Recording each sample comes from (video, gait sequence). Samples of one group
        never fall on both sides of the train/test split (``protocol.split_train_test``).
        None: every sample is its own group (independent still images).
    time_index : ndarray of int of shape (n_samples,), default=None
        Position in the group in frames, used to split a single-video identity into
        contiguous segments with a gap. None: the sample order.
    features : ndarray of float of shape (n_samples, n_features), default=None
        Feature vectors of the CLEAR samples for the feature-space selection strategies
        Distinctive and Center (seeds/000, section 4.2.3 and 5.7).
    identity_metadata : pandas.DataFrame, default=None
        One row per identity (index: identity label), numeric or categorical columns such
        as gender or age, for the Metadata selection strategy.
    roles : ndarray of str of shape (n_samples,), default=None
        Role of the video each sample comes from: ``"evaluated"`` (tested) or
        ``"attacker_train"`` (the attacker's own labelled material: always in training,
        never tested). None: every sample is evaluated. One role per group.

    Raises
    ------
    ValueError
        If the arrays are not aligned (lengths or clear/masked shapes differ) or empty, a
        role is unknown, or one group has two roles.
    """

    clear: np.ndarray
    masked: np.ndarray
    identities: np.ndarray
    groups: np.ndarray | None = None
    time_index: np.ndarray | None = None
    features: np.ndarray | None = None
    identity_metadata: pd.DataFrame | None = None
    roles: np.ndarray | None = None

    def __post_init__(self):
        set_ = object.__setattr__  # frozen: normalise once, here
        set_(self, "clear", np.asarray(self.clear))
        set_(self, "masked", np.asarray(self.masked))
        set_(self, "identities", np.asarray(self.identities))
        n = len(self.identities)
        if n == 0:
            raise ValueError("AttackData has no samples")
        if self.identities.ndim != 1:
            raise ValueError(f"identities must be 1-D, got shape {self.identities.shape}")
        if len(self.clear) != n or len(self.masked) != n:
            raise ValueError(
                f"inconsistent numbers of samples: clear {len(self.clear)}, "
                f"masked {len(self.masked)}, identities {n}"
            )
        if self.clear.shape != self.masked.shape:
            raise ValueError(
                f"masked samples must have the shape of the clear ones: "
                f"{self.masked.shape} != {self.clear.shape}"
            )
        groups = np.arange(n) if self.groups is None else np.asarray(self.groups)
        set_(self, "groups", groups)
        if groups.shape != (n,):
            raise ValueError(f"groups must have shape ({n},), got {groups.shape}")
        if self.time_index is not None:
            set_(self, "time_index", np.asarray(self.time_index))
            if self.time_index.shape != (n,):
                raise ValueError(f"time_index must have shape ({n},), got {self.time_index.shape}")
        if self.features is not None:
            set_(self, "features", np.asarray(self.features, dtype=np.float64))
            if self.features.ndim != 2 or len(self.features) != n:
                raise ValueError(f"features must have shape ({n}, n_features), got {self.features.shape}")

        if self.roles is not None:
            set_(self, "roles", np.asarray(self.roles).astype(str))
            if self.roles.shape != (n,):
                raise ValueError(f"roles must have shape ({n},), got {self.roles.shape}")
            unknown = sorted(set(self.roles.tolist()) - set(ROLES))
            if unknown:
                raise ValueError(f"unknown video role(s) {unknown}; known: {', '.join(ROLES)}")
            per_group = pd.Series(self.roles).groupby(groups).nunique()
            if (per_group > 1).any():
                raise ValueError(f"groups {per_group.index[per_group > 1].tolist()} mix video roles")

    @property
    def train_only(self) -> np.ndarray:
        """ndarray of bool of shape (n_samples,): True for the attacker's own training material."""
        if self.roles is None:
            return np.zeros(self.n_samples, bool)
        return self.roles == ROLE_ATTACKER_TRAIN

    @property
    def n_samples(self) -> int:
        return len(self.identities)

    @property
    def identity_labels(self) -> list:
        """Sorted distinct identities (the closed set)."""
        return sorted(set(self.identities.tolist()))
