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


def session_layout(
    *,
    n_practice: int,
    n_evaluated: int,
    attention_check_rate: float,
    n_blocks: int,
    n_free: int,
    rng: random.Random,
) -> tuple[list[str], list[int]]:
    """A session's plan (as :func:`session_plan`) and the positions of its evaluated
    identity trials, placed so that nothing about a position tells a check from one.

    An attention check is an identity trial and, like an evaluated one, takes a lineup
    block the session has shown nobody of (:func:`fresh_blocks`), which it spends
    (hostile pass 3: checks drawn from spent blocks were spotted 159/159 as "the second
    identity trial", since an evaluated one never comes from a spent block and always
    came first). So the catch positions and the identity positions are drawn together:
    ``k = n_catch + n_identity`` slots, a uniform random ``k``-subset of the first
    ``prefix`` study positions, of which a uniform random ``n_catch`` are the checks.
    Whatever the positions and the history of a session, an identity-task slot is a
    check with probability ``n_catch / k`` (exchangeable labels). A slot is served only
    while a fresh block with an identity item is left (the caller decides, the same rule
    for both kinds), so at most ``n_blocks`` slots are served, and a check that finds no
    block is left out (no check: the realised check rate is lower, see
    :func:`expected_checks`).

    ``n_identity = max(n_blocks - n_catch, 1)`` (none without blocks): all planned checks
    fit when the campaign has more blocks than checks, else a session holds one evaluated
    identity slot beside its checks. ``prefix = min(study length, n_free + k)``, where
    ``n_free`` is the number of evaluated people in no block: trials before a slot must
    show nobody of a fresh block (else the block is spent), and the people in no block
    can fill at most ``n_free`` of them.

    Returns
    -------
    plan : list of str
        ``"practice"``, ``"item"`` or ``"catch"`` per position.
    identity_positions : list of int
        Positions (in ``plan``) of the ``"item"`` trials that are identity slots.
    """
    if n_practice < 0 or n_evaluated < 0 or n_blocks < 0 or n_free < 0:
        raise ValueError(
            f"counts must be >= 0, got {n_practice} practice, {n_evaluated} evaluated, "
            f"{n_blocks} blocks, {n_free} free"
        )
    if not 0.0 <= attention_check_rate <= 1.0:
        raise ValueError(f"attention_check_rate must be in [0, 1], got {attention_check_rate}")
    n_catch, n_identity = slot_counts(n_evaluated, attention_check_rate, n_blocks)
    length = n_evaluated + n_catch
    k = n_catch + n_identity
    prefix = min(length, n_free + k)
    slots = rng.sample(range(prefix), k)
    catches = set(rng.sample(slots, n_catch))
    body = [CATCH if i in catches else ITEM for i in range(length)]
    identity = sorted(n_practice + i for i in slots if i not in catches)
    return [PRACTICE] * n_practice + body, identity


def slot_counts(n_evaluated: int, attention_check_rate: float, n_blocks: int) -> tuple[int, int]:
    """``(n_catch, n_identity)`` of a session under :func:`session_layout`: its attention
    checks, ``round(n_evaluated * attention_check_rate)``, and its evaluated identity slots,
    ``min(n_evaluated, max(n_blocks - n_catch, 1))`` (none without blocks)."""
    n_catch = round(n_evaluated * attention_check_rate)
    return n_catch, (min(n_evaluated, max(n_blocks - n_catch, 1)) if n_blocks else 0)


def evaluated_share_of_a_block(n_catch: int, n_identity: int, n_blocks: int) -> float:
    """Expected evaluated identity trials one session gives one lineup block under
    :func:`session_layout`: of its ``k = n_catch + n_identity`` slots at most ``n_blocks``
    are served, each evaluated with probability ``n_identity / k``, spread over the blocks,
    so ``min(k, n_blocks) * n_identity / k / n_blocks`` (1 without checks; 1/2 with one
    block, one check and one identity slot). 0 without blocks or identity slots."""
    k = n_catch + n_identity
    if not (k and n_blocks and n_identity):
        return 0.0
    return min(k, n_blocks) * n_identity / k / n_blocks


def expected_checks(n_catch: int, n_identity: int, n_blocks: int) -> float:
    """Checks a session is expected to hold under :func:`session_layout`: of its
    ``n_catch + n_identity`` slots at most ``n_blocks`` are served, each a check with
    probability ``n_catch / (n_catch + n_identity)`` (every slot finding a block; fewer
    when items fill up or trials before a slot spend its block)."""
    k = n_catch + n_identity
    return min(k, n_blocks) * n_catch / k if k else 0.0


# --- balanced exposure: lineups that give nothing to a strategist ---------------------
#
# A rater who cannot recognise anyone still sees which faces are shown together, how
# often each face recurs over the lineups of one video or of linked videos (a Sybil ring
# pools its sessions), and how many videos each identity has (the catalogue, or counting).
# Evaluated lineups are built so that none of this tells the answer:
#
# - Blocks: each stratum (identities with evaluated videos and the same known value on
#   every matching attribute) is cut into fixed blocks of ``draw_size`` identities with
#   the same number of evaluated videos (videos above the block's smallest count are
#   left out). Every lineup of a target is its block minus one member drawn uniformly:
#   the target itself (a target-absent trial, share 1 / draw_size) or another member.
# - Given its block, a lineup is independent of which member is the target, and every
#   member of a block is the target of the same number of trials. So given any lineups
#   seen, however many and however linked (same video, same person), each face shown is
#   the answer with probability 1 / draw_size and so is "not present": counting
#   recurrences, picking the identity with the most videos or reading the group's
#   make-up all score chance (exchangeability; the design of a balanced lineup in
#   Wells & Luus 1990, "Police lineups as experiments", PSPB 16(1):106-117, where every
#   lineup member must be an equally plausible choice for one who lacks the memory).
# - A stratum with fewer than ``draw_size`` identities cannot be balanced (a lineup of
#   other groups, or one that always holds the target, shows the answer by its
#   make-up): its videos get no identity trials, and the identities left over after
#   the last full block (those with the fewest videos) neither.
#
# With target-absent trials the absent share is exactly 1 / draw_size (1/6 for 4 foils):
# a share the block members' recurrences cannot tell apart from the target's.


def draw_size(n_foils: int, target_absent_share: float) -> int:
    """Identities in a lineup block: ``n_foils + 1``, plus one when target-absent trials are used."""
    return n_foils + 1 + (1 if target_absent_share > 0 else 0)


def effective_absent_share(n_foils: int, target_absent_share: float) -> float:
    """The target-absent share evaluated lineups actually have: ``1 / draw_size`` if any, else 0."""
    return 1.0 / draw_size(n_foils, target_absent_share) if target_absent_share > 0 else 0.0


@dataclass(frozen=True)
class IdentityPlan:
    """How many of an identity's evaluated videos get identity-matching trials, and its block.

    Attributes
    ----------
    videos : int
        Evaluated videos of the identity that could get identity trials.
    kept : int
        Videos that get them (the first ``kept`` in the caller's order); 0 = none.
    block : tuple
        The identities every lineup of this identity is drawn from (itself included);
        empty when ``kept == 0``.
    reason : str
        Empty when ``kept == videos``; otherwise the plain-language reason shown to the organizer.
    """

    videos: int
    kept: int
    block: tuple = ()
    reason: str = ""


def exposure_plan(
    video_counts: Mapping[Hashable, int],
    identities: Mapping[Hashable, Mapping],
    matching_attributes: Sequence[str],
    *,
    n_foils: int,
    target_absent_share: float,
    labels: Mapping[Hashable, str] | None = None,
) -> dict[Hashable, IdentityPlan]:
    """Lineup blocks of the identities in evaluated videos, and which videos they keep.

    Each stratum's members are sorted by number of videos (most first; ties by key) and
    cut into consecutive blocks of :func:`draw_size`; a block keeps as many videos per
    member as its member with the fewest has. Members after the last full block, and
    every member of a stratum smaller than one block (a thin group), keep none. An
    identity with a missing matching value forms a stratum of its own (matches nobody).

    Parameters
    ----------
    video_counts : mapping of identity key -> int
        Evaluated videos per identity that would get identity trials (>= 0; 0 = not a target).
    identities : mapping of identity key -> dict of attribute values
        Gallery identities (at least those in ``video_counts``).
    matching_attributes : sequence of str
    n_foils : int
        Foils per lineup (>= 1).
    target_absent_share : float in [0, 1]
        Only whether it is 0 matters (:func:`effective_absent_share`).
    labels : mapping, optional
        Identity key -> code used in the reasons (default: the key).

    Returns
    -------
    dict of identity key -> IdentityPlan
        One entry per key of ``video_counts``.

    Raises
    ------
    ValueError
        On ``n_foils < 1``, a share outside [0, 1] or a negative count.
    KeyError
        If an identity of ``video_counts`` is not in ``identities``.
    """
    if n_foils < 1:
        raise ValueError(f"n_foils must be >= 1, got {n_foils}")
    if not 0.0 <= target_absent_share <= 1.0:
        raise ValueError(f"target_absent_share must be in [0, 1], got {target_absent_share}")
    if any(n < 0 for n in video_counts.values()):
        raise ValueError(f"video counts must be >= 0, got {dict(video_counts)}")
    size = draw_size(n_foils, target_absent_share)
    need = f"{n_foils + 1} faces" + (" + 1 for target-absent trials" if size > n_foils + 1 else "")
    labels = labels or {}
    strata: dict[tuple, list] = {}
    for key, n in video_counts.items():
        if n > 0:
            profile = profile_of(identities[key], matching_attributes)
            strata.setdefault(profile if None not in profile else ("missing", key), []).append(key)
    plans = {key: IdentityPlan(n, n) for key, n in video_counts.items()}
    for profile, members in strata.items():
        group = (
            "a missing attribute value, which matches nobody"
            if profile[:1] == ("missing",)
            else ", ".join(f"{a}={v}" for a, v in zip(matching_attributes, profile)) or "everyone"
        )
        members.sort(key=lambda key: (-video_counts[key], str(key)))
        n_blocks = len(members) // size
        for key in members[n_blocks * size :]:
            why = (
                f"its group has {len(members)} identities with evaluated videos, a lineup that does not "
                f"reveal the answer by its make-up needs {size} ({need})"
                if n_blocks == 0
                else f"its group has {len(members)} identities with evaluated videos, lineups come from "
                f"blocks of {size}, and it is left over with the fewest videos"
            )
            plans[key] = IdentityPlan(
                video_counts[key],
                0,
                reason=f"identity {labels.get(key, key)} ({group}): {why}: its videos get no identity trials",
            )
        for b in range(n_blocks):
            block = tuple(members[b * size : (b + 1) * size])
            kept = min(video_counts[key] for key in block)
            for key in block:
                n = video_counts[key]
                reason = (
                    f"identity {labels.get(key, key)} ({group}): {n} evaluated videos, but its lineup block's "
                    f"identities have {kept} each and every face must be the answer equally often: "
                    f"{n - kept} of its videos get no identity trials"
                    if n > kept
                    else ""
                )
                plans[key] = IdentityPlan(n, kept, block, reason)
    return plans


def balanced_lineup(target, block: Sequence, *, n_foils: int, rng: random.Random) -> tuple[list, bool]:
    """The lineup of one evaluated identity trial: the target's block minus one member at random.

    Parameters
    ----------
    target : hashable
        The identity in the video; a member of ``block``.
    block : sequence of keys
        :attr:`IdentityPlan.block` of the target: ``n_foils + 1`` identities (no
        target-absent trials) or ``n_foils + 2`` (the dropped member is the target with
        probability ``1 / len(block)``: a target-absent trial).
    n_foils : int >= 1
    rng : random.Random

    Returns
    -------
    lineup : list of keys, length ``n_foils + 1``, display order
    target_present : bool

    Raises
    ------
    ValueError
        If the target is not in the block or the block has another size.
    """
    block = list(block)
    if target not in block:
        raise ValueError(f"target {target!r} is not in its block {block}")
    if len(block) not in (n_foils + 1, n_foils + 2):
        raise ValueError(f"a block holds {n_foils + 1} or {n_foils + 2} identities, got {len(block)}")
    if len(block) == n_foils + 2:
        block.remove(rng.choice(block))
    rng.shuffle(block)
    return block, target in block


def fresh_blocks(blocks: Mapping[Hashable, Sequence], shown) -> set:
    """Identities whose lineup block holds nobody in ``shown``: those a session may still
    give an identity trial of.

    Within a session rotation is per person: whoever was shown in a video (as the answer
    of an identity trial, in an action trial, in practice) is never the answer later. A
    later lineup of the same block would show that face as a certain non-answer, and a
    rater who struck it off would choose among the remaining options (1/5 instead of
    1/6 for one face struck off). Blocks are disjoint, so when every identity trial of a
    session comes from a block none of whose people the session has shown, no lineup of
    the session shows anyone seen before in it and each of its 6 options is the answer
    with probability 1/6 whatever the rater remembers (the exchangeability argument above
    holds given the session's history too). After an identity trial its block is spent
    (its target was shown).

    Parameters
    ----------
    blocks : mapping of identity key -> sequence of keys
        :attr:`IdentityPlan.block` of each identity with identity trials.
    shown : iterable of keys
        Identities shown in a video earlier in the session.

    Returns
    -------
    set of keys
        The keys of ``blocks`` whose block has no member in ``shown``.
    """
    shown = set(shown)
    return {key for key, block in blocks.items() if shown.isdisjoint(block)}


def check_lineup(blocks: Mapping[tuple, float], *, n_foils: int, rng: random.Random) -> tuple[list, object]:
    """The lineup of an attention check, made like an evaluated lineup, and the face its video shows.

    A check's lineup must not differ in make-up from an evaluated one (issue 19: checks
    drawn from the whole pool showed faces of a thin group, which evaluated lineups never
    show, in 32 of 75 checks, so a strategist spotted checks by who was in the lineup).
    So a check draws a block with probability proportional to its weight (the share of
    evaluated identity trials it gets), takes the block minus one member drawn uniformly
    (:func:`balanced_lineup`, exactly as an evaluated lineup of any member of the block),
    and shows one of the lineup's faces, drawn uniformly, in its video. Given its block, a
    check's lineup then has the same distribution as an evaluated one, and every face of
    it appears in evaluated lineups.

    Parameters
    ----------
    blocks : mapping of tuple of keys -> float
        :attr:`IdentityPlan.block` (``n_foils + 1`` or ``n_foils + 2`` identities) -> weight
        > 0, e.g. the number of evaluated identity trials the block's members get.
    n_foils : int >= 1
    rng : random.Random

    Returns
    -------
    lineup : list of keys, length ``n_foils + 1``, display order
    shown : key
        The identity whose face the check's video shows (a member of ``lineup``).

    Raises
    ------
    ValueError
        If ``blocks`` is empty, a weight is not positive, or a block has the wrong size.
    """
    if not blocks:
        raise ValueError("an attention check needs at least one lineup block")
    if any(weight <= 0 for weight in blocks.values()):
        raise ValueError(f"block weights must be > 0, got {list(blocks.values())}")
    keys = sorted(blocks, key=repr)  # a fixed order, so a seeded rng gives a fixed draw
    block = rng.choices(keys, weights=[blocks[key] for key in keys])[0]
    lineup, _ = balanced_lineup(block[0], block, n_foils=n_foils, rng=rng)
    return lineup, rng.choice(lineup)
