"""Trial construction: demographically matched lineups, target-absent trials, session plans.

Pure functions over plain Python values (no Django), following the MediaEval 2021 human
evaluation protocol (``../shared/seeds/002_68b18bfdbdb94491.txt``, section 4.2): the rater
matches the person in a video to one of 5 gallery faces shown at once, or answers that the
person is not among them; the faces are "matched demographically to the person in the
video so that gender, race, and age cannot provide cues to the identity".

Identities are passed as a mapping ``{identity_key: {attribute: value, ...}}``; a foil
matches the target when it has the same value for *every* listed attribute. A missing,
empty or ``"unknown"`` value (:data:`MISSING_VALUES`; the importer stores empty cells as
"unknown") never matches, so incomplete demographic records are not silently treated as
matching.

Lineup make-up never depends on the answer (:func:`trial_lineup`): a target-present
lineup (target + foils) and a target-absent lineup (foils only) are both drawn entirely
from the target's stratum (same value on every matching attribute), so the counts per
attribute value are the same whether or not the target is present. A target whose stratum
is too small for a target-absent lineup gets target-present trials only (the organizer is
told, :meth:`FoilShortage.message`): a mixed target-absent lineup would give the answer away.
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

NOT_PRESENT = "0"
PRACTICE, ITEM, CATCH = "practice", "item", "catch"


class FoilShortageError(ValueError):
    """Too few demographically matched identities to build a lineup for a target."""


@dataclass(frozen=True)
class FoilShortage:
    """A target identity that cannot get a fully matched lineup.

    Attributes
    ----------
    identity : hashable
        Key of the target identity.
    profile : dict
        Its values of the matching attributes (missing ones are ``None``).
    matching : int
        Other identities with the same values on every attribute.
    needed : int
        Matched identities a lineup needs (foils, +1 when target-absent trials are used).
    """

    identity: Hashable
    profile: dict
    matching: int
    needed: int

    def message(self, label: str | None = None, *, n_foils: int | None = None) -> str:
        """What is missing and what the lineups of this identity do about it.

        With ``n_foils`` (foils of a target-present lineup) the message says whether the
        identity still gets fully matched target-present trials, and that it gets no
        target-absent trials (they would need ``n_foils + 1`` matched identities).
        """
        profile = (
            ", ".join(
                f"{k}={v if v is not None else 'unknown (matches nobody)'}" for k, v in self.profile.items()
            )
            or "no attributes"
        )
        text = (
            f"identity {label or self.identity} ({profile}): only {self.matching} other "
            f"identities share these values, a lineup needs {self.needed}"
        )
        if n_foils is None or self.needed <= n_foils:
            return text
        missing_absent = n_foils + 1 - self.matching
        text += (
            f"; it gets no target-absent trials ({missing_absent} more matched "
            f"identit{'y' if missing_absent == 1 else 'ies'} needed), since a target-absent "
            "lineup of other groups would show raters the answer"
        )
        if self.matching < n_foils:
            text += (
                f", and its target-present lineups are {n_foils - self.matching} face(s) short of "
                "its group and filled with the closest-matched identities"
            )
        return text


#: Attribute values that mean "not recorded" (compared after strip + casefold).
MISSING_VALUES = frozenset({"", "unknown", "none", "n/a", "na", "?"})


def known_value(value):
    """``value``, or None when it is missing (None or one of :data:`MISSING_VALUES`)."""
    if value is None or str(value).strip().casefold() in MISSING_VALUES:
        return None
    return value


def profile_of(attributes: Mapping, matching_attributes: Sequence[str]) -> tuple:
    """The values of ``matching_attributes`` (``None`` where missing or unknown), as a hashable tuple."""
    return tuple(known_value(attributes.get(name)) for name in matching_attributes)


def matched_identities(
    target, identities: Mapping[Hashable, Mapping], matching_attributes: Sequence[str]
) -> list:
    """Keys of the identities other than ``target`` with the same value on every attribute.

    Identities with a missing value on any matching attribute match nobody.

    Raises
    ------
    KeyError
        If ``target`` is not in ``identities``.
    """
    wanted = profile_of(identities[target], matching_attributes)
    if any(value is None for value in wanted):
        return []
    return [
        key
        for key, attrs in identities.items()
        if key != target and profile_of(attrs, matching_attributes) == wanted
    ]


def foil_shortages(
    identities: Mapping[Hashable, Mapping],
    matching_attributes: Sequence[str],
    *,
    n_foils: int,
    targets: Sequence | None = None,
    target_absent: bool = True,
) -> list[FoilShortage]:
    """Targets without enough demographically matched identities for a lineup.

    Parameters
    ----------
    identities : mapping of key -> dict of attribute values
        Every identity that can appear as a gallery face (has a gallery image).
    matching_attributes : sequence of str
        Campaign attributes foils must share with the target, e.g.
        ``["gender", "race", "age_band"]``.
    n_foils : int
        Foils per identity trial (4 in seeds/002, 4.2: 5 faces in all).
    targets : sequence of keys, optional
        Identities appearing in videos (default: all of ``identities``).
    target_absent : bool, default=True
        When target-absent trials are used the lineup has ``n_foils + 1`` foils.

    Returns
    -------
    list of FoilShortage
        Empty when every target can be fully matched; the organizer is told about each
        entry instead of the lineup being silently mismatched.
    """
    needed = n_foils + (1 if target_absent else 0)
    shortages = []
    for target in identities if targets is None else targets:
        if target not in identities:
            shortages.append(FoilShortage(target, {}, 0, needed))
            continue
        matching = len(matched_identities(target, identities, matching_attributes))
        if matching < needed:
            profile = dict(zip(matching_attributes, profile_of(identities[target], matching_attributes)))
            shortages.append(FoilShortage(target, profile, matching, needed))
    return shortages


def build_lineup(
    target,
    identities: Mapping[Hashable, Mapping],
    matching_attributes: Sequence[str],
    *,
    n_foils: int,
    target_present: bool,
    rng: random.Random,
) -> list:
    """The gallery identities of one identity-matching trial, in random display order.

    Parameters
    ----------
    target : hashable
        The identity in the video.
    identities, matching_attributes
        As in :func:`foil_shortages`.
    n_foils : int
        Foils when the target is present; the lineup has ``n_foils + 1`` faces either way.
    target_present : bool
        False for a target-absent trial: the target's place goes to one more matched foil.
    rng : random.Random

    Returns
    -------
    list of keys, length ``n_foils + 1``
        Display order (position 1 is the first element).

    Raises
    ------
    FoilShortageError
        If fewer matched identities exist than the lineup needs.
    """
    if n_foils < 1:
        raise ValueError(f"n_foils must be >= 1, got {n_foils}")
    needed = n_foils + (0 if target_present else 1)
    pool = matched_identities(target, identities, matching_attributes)
    if len(pool) < needed:
        raise FoilShortageError(
            f"identity {target!r}: {len(pool)} demographically matched identities, need {needed}"
        )
    lineup = rng.sample(pool, needed) + ([target] if target_present else [])
    rng.shuffle(lineup)
    return lineup


def build_lineup_relaxed(
    target,
    identities: Mapping[Hashable, Mapping],
    matching_attributes: Sequence[str],
    *,
    n_foils: int,
    target_present: bool,
    rng: random.Random,
) -> tuple[list, list[str]]:
    """:func:`build_lineup` that fills a shortage with the closest-matched identities.

    Used for targets that :func:`foil_shortages` has reported to the organizer. Foils are
    the identities sharing the longest prefix of ``matching_attributes`` with the target
    (so list the most important attribute first), chosen at random within a prefix length:
    every fully matched identity is used before any partly matched one, so a shortage of
    matched foils never leaves the target the only face of its group by chance. Without a
    shortage this draws from the fully matched identities exactly as :func:`build_lineup`.

    Returns
    -------
    lineup : list of keys, length ``n_foils + 1``
        Display order (position 1 is the first element).
    used_attributes : list of str
        The prefix of ``matching_attributes`` that every foil shares with the target.

    Raises
    ------
    ValueError
        If ``n_foils < 1``.
    FoilShortageError
        If even unmatched there are fewer than ``n_foils + 1`` other identities.
    """
    if n_foils < 1:
        raise ValueError(f"n_foils must be >= 1, got {n_foils}")
    needed = n_foils + (0 if target_present else 1)
    others = [key for key in identities if key != target]
    if len(others) < needed:
        raise FoilShortageError(
            f"identity {target!r}: only {len(others)} other identities, a lineup needs {needed}"
        )
    wanted = profile_of(identities[target], matching_attributes)
    shared = {key: _shared_prefix(wanted, profile_of(identities[key], matching_attributes)) for key in others}
    rng.shuffle(others)
    others.sort(key=lambda key: -shared[key])  # stable: random order within a prefix length
    foils = others[:needed]
    lineup = foils + ([target] if target_present else [])
    rng.shuffle(lineup)
    return lineup, list(matching_attributes[: min(shared[key] for key in foils)])


def _shared_prefix(wanted: tuple, profile: tuple) -> int:
    """How many leading attributes ``profile`` shares with ``wanted`` (a missing value never matches)."""
    count = 0
    for want, value in zip(wanted, profile):
        if want is None or value != want:
            break
        count += 1
    return count


def supports_target_absent(
    target, identities: Mapping[Hashable, Mapping], matching_attributes: Sequence[str], *, n_foils: int
) -> bool:
    """Whether ``target``'s stratum holds ``n_foils + 1`` other identities (a target-absent lineup)."""
    return len(matched_identities(target, identities, matching_attributes)) >= n_foils + 1


def trial_lineup(
    target,
    identities: Mapping[Hashable, Mapping],
    matching_attributes: Sequence[str],
    *,
    n_foils: int,
    target_absent_share: float,
    rng: random.Random,
) -> tuple[list, bool]:
    """The lineup of one identity trial and whether the target is in it.

    The make-up is independent of the answer (seeds/002, section 4.2: demographics "cannot
    provide cues to the identity"): when the target's stratum (identities with the same
    known value on every matching attribute) holds ``n_foils + 1`` others, the target is
    absent with probability ``target_absent_share`` and both kinds of lineup consist of
    stratum members only, so the counts per attribute value are identical. Otherwise the
    target is always present (no target-absent trial can match a target-present one) and
    a stratum short of ``n_foils`` is filled by :func:`build_lineup_relaxed`.

    Parameters
    ----------
    target, identities, matching_attributes, n_foils
        As in :func:`build_lineup`.
    target_absent_share : float in [0, 1]
    rng : random.Random

    Returns
    -------
    lineup : list of keys, length ``n_foils + 1``, display order
    target_present : bool

    Raises
    ------
    ValueError
        On ``n_foils < 1`` or a share outside [0, 1].
    FoilShortageError
        If the pool has fewer than ``n_foils`` other identities.
    """
    present = True
    if supports_target_absent(target, identities, matching_attributes, n_foils=n_foils):
        present = draw_target_present(target_absent_share, rng)
    elif not 0.0 <= target_absent_share <= 1.0:
        raise ValueError(f"target_absent_share must be in [0, 1], got {target_absent_share}")
    lineup, _ = build_lineup_relaxed(
        target, identities, matching_attributes, n_foils=n_foils, target_present=present, rng=rng
    )
    return lineup, present


def correct_choice(target, lineup: Sequence) -> str:
    """The right answer: the 1-based position of ``target`` in ``lineup``, or ``"0"``."""
    return str(lineup.index(target) + 1) if target in lineup else NOT_PRESENT


def draw_target_present(target_absent_share: float, rng: random.Random) -> bool:
    """True with probability ``1 - target_absent_share``.

    Raises
    ------
    ValueError
        If ``target_absent_share`` is outside [0, 1].
    """
    if not 0.0 <= target_absent_share <= 1.0:
        raise ValueError(f"target_absent_share must be in [0, 1], got {target_absent_share}")
    return rng.random() >= target_absent_share


def session_plan(
    *, n_practice: int, n_evaluated: int, attention_check_rate: float, rng: random.Random
) -> list[str]:
    """Trial kinds by position: practice first, then evaluated trials with catch trials mixed in.

    ``round(n_evaluated * attention_check_rate)`` catch trials are placed at random among
    the evaluated trials, never first (the first real trial follows practice directly).

    Returns
    -------
    list of str
        ``"practice"``, ``"item"`` or ``"catch"`` per position.

    Raises
    ------
    ValueError
        On negative counts or a rate outside [0, 1].
    """
    if n_practice < 0 or n_evaluated < 0:
        raise ValueError(f"trial counts must be >= 0, got {n_practice} practice, {n_evaluated} evaluated")
    if not 0.0 <= attention_check_rate <= 1.0:
        raise ValueError(f"attention_check_rate must be in [0, 1], got {attention_check_rate}")
    n_catch = round(n_evaluated * attention_check_rate)
    body = [ITEM] * n_evaluated
    for _ in range(n_catch):
        body.insert(rng.randint(1, len(body)) if body else 0, CATCH)
    return [PRACTICE] * n_practice + body
