"""Balanced assignment of rating items to raters, safe when many raters work at once.

Every (source video, condition, task) item of the evaluated subset must end with exactly
``campaign.raters_per_video`` completed responses (the MediaEval 2021 protocol asks for
"a minimum of 10 students" per video, ``../shared/seeds/002_68b18bfdbdb94491.txt``,
section 4.1). Items are handed out least-completed-first; an item has room while
completed responses + live (unexpired) claims < target, so concurrent raters never
overshoot; a claim not answered within ``TRIALS_CLAIM_TIMEOUT_S`` stops counting and the
item goes to someone else.

Concurrency. Every write path runs in one transaction and takes row locks in one order:

    session  ->  item  ->  trial     (then new Response/TrialFace rows and the Rater flag)

- :func:`current_trial` locks the rater's session, then (to refresh a lapsed claim) the
  trial's item, then writes the trial; :func:`record_response` locks the session, the
  trial's item, then the trial.
- A transaction waits for at most one item lock. Picking an item for a new trial tries
  candidates with ``SELECT ... FOR UPDATE SKIP LOCKED`` (PostgreSQL), each in a savepoint
  that is rolled back (releasing its lock) when the item turned out full, so only the item
  finally picked stays locked; it waits for a busy item only when every candidate was
  busy. Releasing a lapsed claim commits before the next pick, so no transaction holds
  two item locks. With one order and one waited-for item lock per transaction, no two
  transactions can wait for each other: no deadlock.
- Locking queries never lock joined rows (``of=("self",)``): locking the campaign or
  source video with a trial would serialise every rater on one row.
- The live count of an item is re-read under its lock (every claim, refresh, release and
  answer of an item happens under that lock), so the count-then-claim step is exact.
- On SQLite, ``SELECT ... FOR UPDATE`` does not exist; the project's settings open
  transactions with ``BEGIN IMMEDIATE`` (one writer at a time, 30 s busy timeout), which
  serialises the same steps.

Unique constraints (one active trial per session position, one response per trial) make
a resent request store nothing twice.
"""

from __future__ import annotations

import contextlib
import contextvars
import random
from collections.abc import Callable, Hashable, Iterator, Mapping

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Prefetch, Q
from django.utils import timezone

from evalsite.models import Campaign, GalleryImage, MaskedVideo, SourceVideo

from . import browser, design, integrity, lineups, plausibility, practice, variants
from .models import (
    Item,
    claim_timeout,
    RatingSession,
    Rater,
    Response,
    SessionState,
    Task,
    Trial,
    TrialFace,
    TrialKind,
)


class TrialExpired(Exception):
    """The trial's claim lapsed and its item went to other raters; the rater gets a new trial."""


def trials_per_session() -> int:
    return settings.TRIALS_PER_SESSION


def practice_trials() -> int:
    return settings.TRIALS_PRACTICE


# --- catalogue -> items --------------------------------------------------------------


def campaign_tasks(campaign: Campaign) -> list[str]:
    """Identity matching always; action labelling when the campaign has an action list."""
    return [Task.IDENTITY] + ([Task.ACTION] if campaign.action_vocabulary else [])


def identity_pool(campaign: Campaign, *, practice: bool = False) -> dict[int, dict]:
    """``{identity_pk: attributes}`` for identities with a gallery image (can be shown).

    Evaluated trials and catch trials draw from the evaluated identities; with
    ``practice=True`` the pool is the practice identities (``Identity.practice``), whose
    faces and videos appear in practice trials only.

    In the order of the identities' codes (lineups draw from it in that order); read once
    per step of :func:`current_trial` (:func:`_memo`): callers must not change it.
    """
    return _memoised(
        "identity_pool", (campaign.pk, practice), lambda: lineups.identity_pool(campaign, practice)
    )


def practice_pool(campaign: Campaign) -> tuple[dict[int, dict], list[int]]:
    """The practice identities with a gallery face, and the practice videos of them.

    Practice with feedback needs both: at least ``foils_per_trial + 1`` practice
    identities for a lineup (of practice faces only) and a video of one of them that is
    outside the evaluated subset. Without them the pool is empty and practice falls back
    to material that gives no feedback (:func:`gives_feedback`).

    Returns
    -------
    pool : dict
        ``{identity_pk: attributes}``; empty if practice material is insufficient.
    video_ids : list of int
        Practice source videos of those identities.
    """
    pool = identity_pool(campaign, practice=True)
    if len(pool) < campaign.foils_per_trial + 1:
        return {}, []
    videos = list(
        SourceVideo.objects.filter(
            campaign=campaign, identity_id__in=list(pool), in_evaluated_subset=False, attacker_train=False
        )
        .order_by()
        .values_list("id", flat=True)
    )
    return (pool, videos) if videos else ({}, [])


#: Values read once per step of :func:`current_trial` (:func:`_memo`): ``{(name, pk):
#: value}``, or None outside one (every call reads the database).
_MEMO: contextvars.ContextVar[dict | None] = contextvars.ContextVar("trials_assignment_memo", default=None)


@contextlib.contextmanager
def _memo() -> Iterator[None]:
    """Within it, :func:`identity_plans`, the session's layout (:func:`identity_positions`)
    and the videos and people it has shown (:func:`_seen_videos`, :func:`_session_videos`)
    are read from the database once per campaign and session: a new trial asked for them
    up to 4, 1 and 3 times (2 queries each), and a step that finds nothing for the session
    at a position tries the next one, asking again. The campaign's evaluated videos
    (:func:`_evaluated_videos`: the blocks, the layout's people and their count) and the
    session's trials (:func:`_session_trials`: the videos and people shown, the slots
    served) are one query each. The candidate items' query is built once
    (:func:`_open_items`; run afresh each time, but candidates found empty are not read
    again until the step releases a claim, :func:`_open_rows`), and hoarded claims are
    released once (:func:`_release_hoarded`). Only around code that makes no trial
    of the session, or makes it last, and changes no catalogue row: one
    :func:`_current_step` (a released claim ends it, and the next step reads afresh)."""
    if _MEMO.get() is not None:
        yield
        return
    token = _MEMO.set({})
    try:
        yield
    finally:
        _MEMO.reset(token)


def _memoised(name: str, pk: Hashable, compute: Callable):
    """``compute()``, once per ``(name, pk)`` inside :func:`_memo` (every time outside it)."""
    memo = _MEMO.get()
    if memo is None:
        return compute()
    if (name, pk) not in memo:
        memo[name, pk] = compute()
    return memo[name, pk]


def identity_plans(campaign: Campaign) -> tuple[dict[int, design.IdentityPlan], list[tuple[int, int]]]:
    """``(plans, videos)`` of :func:`trials.lineups.identity_plans` (the lineup blocks of
    the campaign's evaluated people), read once per step of :func:`current_trial`
    (:func:`_memo`): callers must not change what it returns."""
    return _memoised("identity_plans", campaign.pk, lambda: _identity_plans(campaign))


def _identity_plans(campaign: Campaign) -> tuple[dict[int, design.IdentityPlan], list[tuple[int, int]]]:
    return lineups.identity_plans(campaign, identity_pool(campaign), _evaluated_videos(campaign))


def _evaluated_videos(campaign: Campaign) -> list[tuple[int, int, str, bool, bool, bool]]:
    """The campaign's videos in the evaluated subset, by name: ``(pk, identity_pk, identity
    code, identity is a practice one, video is practice material, video is the attacker's
    own)``.

    One query serves :func:`identity_plans` (its videos), :func:`block_counts` (the people)
    and :func:`evaluated_trials_per_session`, which read three for every step of
    :func:`current_trial` (the session's layout, :func:`identity_positions`); read once
    per step inside :func:`_memo`, each call outside it."""
    return _memoised("evaluated_videos", campaign.pk, lambda: lineups.evaluated_videos(campaign))


def identity_exclusions(campaign: Campaign) -> dict[int, str]:
    """Evaluated videos that get no identity-matching trials, with the organizer's reason.

    A video whose identity's group (stratum of the campaign's demographic attributes) is
    too thin for a lineup that keeps the answer hidden by its make-up, whose identity is
    left over after the group's last lineup block, or beyond its block's equal number of
    videos per identity (the later videos by name) is left out of identity rating
    (:func:`trials.design.exposure_plan`); its action trials are unaffected.

    Returns
    -------
    dict
        ``{source_video_pk: reason}``; empty when every such video is rated.
    """
    plans, videos = identity_plans(campaign)
    kept = lineups.identity_videos(plans, videos)
    return {pk: plans[identity].reason for pk, identity in videos if pk not in kept}


def sync_items(campaign: Campaign) -> int:
    """Create the items of the evaluated subset (clear + every masked video of a rated
    submission, each task).

    Identity items need the video's identity to have a gallery face and a lineup with
    balanced exposure (:func:`identity_exclusions`), action items need an action label;
    videos lacking them get no such item (reported by
    :func:`trials.checks.campaign_warnings`). Existing items get the current target.

    Returns
    -------
    int
        Items created.
    """
    pool = identity_pool(campaign)
    no_identity_trials = identity_exclusions(campaign)
    created = 0
    videos = (
        SourceVideo.objects.filter(campaign=campaign, in_evaluated_subset=True, practice=False)
        .exclude(identity__practice=True)  # a practice identity is never evaluated
        .prefetch_related(
            # Only submissions the organizer put into rating (trials.services).
            Prefetch(
                "masked_videos",
                queryset=MaskedVideo.objects.filter(submission__rating_choice__included=True),
            )
        )
    )
    with transaction.atomic():
        for video in videos:
            for task in campaign_tasks(campaign):
                if task == Task.IDENTITY and (
                    video.identity_id not in pool or video.pk in no_identity_trials
                ):
                    continue
                if task == Task.ACTION and video.action not in campaign.action_vocabulary:
                    continue
                for masked in [None, *video.masked_videos.all()]:
                    _, made = Item.objects.update_or_create(
                        campaign=campaign,
                        source_video=video,
                        masked_video=masked,
                        task=task,
                        superseded_at=None,  # the item of the current file (trials.services.supersede_items)
                        defaults={"target_count": campaign.raters_per_video},
                    )
                    created += made
    return created


# --- joining ---------------------------------------------------------------------------


class OtherBrowser(Exception):
    """The session of this participant code is bound to another browser (:mod:`trials.browser`)."""


def join(
    campaign: Campaign,
    *,
    participant_code: str = "",
    user=None,
    browser_hash: str = "",
    address_hash: str = "",
    network_hash: str = "",
    platform_params: Mapping | None = None,
) -> RatingSession:
    """Get or create the rater and their session (a second join resumes the same session).

    Parameters
    ----------
    participant_code : str
        Normalised by :func:`trials.browser.normalise_participant_code`.
    browser_hash : str
        SHA-256 hex of the joining browser's secret key; empty (commands, simulations)
        joins without binding. A new session is bound to it, as is an unbound one.
    address_hash : str
        Keyed hash of the joining network address (:func:`trials.integrity.address_hash`);
        empty: not counted.
    network_hash : str
        Keyed hash of the joining address's IPv6 /48 or IPv4 /24
        (:func:`trials.integrity.network_hash`); empty: not counted.
    platform_params : mapping, optional
        Crowd-platform parameters of the join link, recorded on the rater's first join.

    Raises
    ------
    ValueError
        If neither a participant code nor a user is given.
    trials.browser.BadParticipantCode
        If the code has characters outside the documented set.
    OtherBrowser
        If the participant code's session is bound to another browser (a rater account
        moves its session to the new browser instead: its password is the secret).
    trials.integrity.JoinRefused
        If a new participant's browser or address already has its share of sessions
        (:func:`trials.integrity.check_join_caps`); nothing is stored then. A new
        session sharing a browser or an address with others flags them all
        (:func:`trials.integrity.flag_shared`).
    """
    participant_code = browser.normalise_participant_code(participant_code)
    if not participant_code and user is None:
        raise ValueError("a participant code or a rater account is needed to join")
    lookup = {"user": user} if user is not None else {"participant_code": participant_code}
    platform_id = browser.platform_id(platform_params or {})
    with transaction.atomic():
        try:
            with transaction.atomic():
                rater, made = Rater.objects.get_or_create(
                    campaign=campaign,
                    **lookup,
                    defaults={"platform_params": dict(platform_params or {}), "platform_id": platform_id},
                )
        except IntegrityError:  # the same participant joined twice at once, or another code
            rater = Rater.objects.filter(campaign=campaign, **lookup).first()
            if rater is None:  # ... with this platform ID (one code per platform ID)
                raise integrity.JoinRefused(integrity.PLATFORM_ID_TAKEN) from None
            made = False
        session = RatingSession.objects.select_for_update().filter(rater=rater).first()
        if session is None:
            # New participants of one campaign join one at a time (the campaign row's lock),
            # so concurrent joins from one machine cannot all pass the caps.
            Campaign.objects.select_for_update().filter(pk=campaign.pk).first()
            integrity.check_join_caps(
                campaign, browser_hash=browser_hash, address=address_hash, network=network_hash
            )
            seed = random.SystemRandom().getrandbits(48)
            session = RatingSession.objects.create(
                rater=rater,
                campaign=campaign,
                seed=seed,
                plan=layout(campaign, seed)[0],
                browser_key_hash=browser_hash,
                address_hash=address_hash,
                network_hash=network_hash,
            )
            integrity.flag_shared(session)
            return session
        if browser_hash and session.browser_key_hash != browser_hash:
            if session.browser_key_hash and user is None:
                raise OtherBrowser(f"session {session.pk} is open in another browser")
            session.browser_key_hash = browser_hash
            session.save(update_fields=["browser_key_hash"])
        if not made and platform_params and not rater.platform_params:
            Rater.objects.filter(pk=rater.pk).update(platform_params=dict(platform_params))
    return session


def evaluated_trials_per_session(campaign: Campaign) -> int:
    """Evaluated (item) trials in one session of ``campaign``, attention checks not counted.

    ``TRIALS_PER_SESSION``, fewer when the campaign has fewer evaluated people: a rater
    sees at most one video of each person (:func:`_new_trial`; practice never shows an
    evaluated person, :func:`_practice_trial`).
    """
    # The attacker's own videos are never shown to raters (:func:`_evaluated_videos`).
    n_people = len(
        {identity for _, identity, _, _, _, attacker in _evaluated_videos(campaign) if not attacker}
    )
    return max(0, min(trials_per_session(), n_people))


def block_counts(campaign: Campaign) -> tuple[int, int]:
    """``(lineup blocks, evaluated people in no block)`` of ``campaign`` (:func:`identity_plans`)."""
    plans, videos = identity_plans(campaign)
    blocks = {plan.block for plan in plans.values() if plan.block}
    in_blocks = {identity for block in blocks for identity in block}
    people = {
        identity
        for _, identity, _, _, practice_video, attacker in _evaluated_videos(campaign)
        if not attacker and not practice_video
    }
    return len(blocks), len(people - in_blocks)


def block_share(campaign: Campaign) -> float:
    """Evaluated identity trials one session of ``campaign`` is expected to give one lineup
    block (:func:`trials.design.evaluated_share_of_a_block`; 1.0 without blocks)."""
    n_blocks, _ = block_counts(campaign)
    if not n_blocks:
        return 1.0
    n_catch, n_identity = design.slot_counts(
        evaluated_trials_per_session(campaign), campaign.attention_check_rate, n_blocks
    )
    return design.evaluated_share_of_a_block(n_catch, n_identity, n_blocks) or 1.0


def layout(campaign: Campaign, seed: int) -> tuple[list[str], list[int]]:
    """The plan of a session with ``seed`` and the positions of its evaluated identity
    trials (:func:`trials.design.session_layout`); the same for the same seed and campaign."""
    n_blocks, n_free = block_counts(campaign)
    return design.session_layout(
        n_practice=practice_trials(),
        n_evaluated=evaluated_trials_per_session(campaign),
        attention_check_rate=campaign.attention_check_rate,
        n_blocks=n_blocks,
        n_free=n_free,
        rng=random.Random(f"layout-{seed}"),
    )


def identity_positions(session: RatingSession) -> list[int] | None:
    """Positions of ``session``'s evaluated identity trials (:func:`layout`), or None for a
    session whose stored plan is not its layout's (made before layouts, or the campaign's
    people changed since): its item positions take any task, as before."""
    plan, positions = _memoised("layout", session.pk, lambda: layout(session.campaign, session.seed))
    return positions if plan == list(session.plan) else None


# --- the current trial -----------------------------------------------------------------


def current_trial(session: RatingSession, *, now=None) -> Trial | None:
    """The trial at the session's position, claiming a new one if needed.

    Reloading returns the same trial. A trial whose claim lapsed is re-claimed if its item
    still has room, otherwise released and replaced. Returns None (and completes the
    session) when the plan is done or no item with room is left for this rater.
    """
    while True:  # a released claim is committed before the next pick (one item lock each)
        with transaction.atomic():
            locked = _lock_session(session.pk)
            if locked.state != SessionState.RUNNING:
                return None
            trial = _current_step(locked, _after_lock(now))
        if trial is not _RELEASED:
            return trial


#: :func:`_current_step` released a lapsed claim; the caller commits and picks anew.
_RELEASED = object()


def _current_step(session: RatingSession, now):
    # A step makes at most one trial of the session, last (it returns then): what it reads
    # of the session's trials and the catalogue before holds for every position it tries.
    with _memo():
        return _current_step_memoised(session, now)


def _current_step_memoised(session: RatingSession, now):
    start = session.position
    while session.position < len(session.plan):
        # At most one active trial a position (Trial's constraint): by pk, not by the
        # default order, which joins the session and the campaign.
        trial = session.trials.active().filter(position=session.position).order_by("pk").first()
        if trial is not None and not trial.completed:
            if not _keep_claim(trial, _lock_item(trial.item_id), now):
                trial = _RELEASED
        elif trial is None:
            trial = _new_trial(session, now)
        else:
            trial = None  # answered: move on
        if trial is not None:
            if session.position != start:
                session.save(update_fields=["position"])
            return trial
        session.position += 1  # completed trial, or nothing left to assign here
    _complete(session, now)
    return None


def _lock_session(pk: int) -> RatingSession:
    """First lock of every write path (see the module docstring for the order)."""
    return RatingSession.objects.select_for_update(of=("self",)).select_related("campaign").get(pk=pk)


def _lock_item(pk: int | None, *, skip_locked: bool = False, video: bool = False) -> Item | None:
    """Second lock: the item (None for no item, or with ``skip_locked`` for a busy one);
    ``video``: with its source video read in the same query (a new trial shows it)."""
    if pk is None:
        return None
    skip_locked = skip_locked and connection.features.has_select_for_update_skip_locked
    items = Item.objects.select_for_update(skip_locked=skip_locked, of=("self",))
    if video:
        items = items.select_related("source_video")
    return items.filter(pk=pk).order_by("pk").first()  # one row: no need of the default order's joins


def _after_lock(now=None):
    """The time to judge claims by, read once the locks are held.

    A request can wait seconds for the SQLite write lock; a clock read before the wait
    would let a lapsed claim look alive and an item overshoot its target. An explicit
    ``now`` (tests) is honoured unless the wall clock is already past it.
    """
    current = timezone.now()
    return current if now is None else max(now, current)


def _keep_claim(trial: Trial, item: Item | None, now) -> bool:
    """Refresh a lapsed claim if the item has room; else release the trial.

    ``item`` is the trial's item, already locked by the caller (None for practice and
    catch trials, which claim nothing).
    """
    if item is None:
        return True
    now = _after_lock(now)
    if not trial.claim_expired(now):
        return True
    others = Trial.objects.filter(item=item).exclude(pk=trial.pk).live(now).count()
    if others < item.target_count:
        trial.claimed_at = now
        trial.save(update_fields=["claimed_at"])
        return True
    trial.released = True
    trial.save(update_fields=["released"])
    variants.drop_variants_on_commit([trial.media_token])
    return False


def _complete(session: RatingSession, now) -> None:
    session.state = SessionState.COMPLETE
    session.completed_at = now
    session.save(update_fields=["state", "completed_at", "position"])


def _new_trial(session: RatingSession, now) -> Trial | None:
    rng = random.Random(session.seed * 1009 + session.position)
    kind = session.plan[session.position]
    if kind == design.PRACTICE:
        n_before = sum(1 for k in session.plan[: session.position] if k == design.PRACTICE)
        return _practice_trial(session, _seen_videos(session), rng, n_before)
    seen = _seen_evaluated_videos(session)  # what items and checks are chosen by
    # An excluded (flagged) rater goes on exactly like any other, so a bot cannot tell
    # it was caught; its trials and answers count toward no item (Item.with_counts).
    slots = identity_positions(session)
    if slots is None:  # a session from before layouts: as it was planned
        if kind == design.ITEM:
            return _item_trial(session, seen, rng, now)
        return _check_trial(session, seen, rng, now)
    # Identity-task trials (checks and evaluated ones) only at the layout's slots, each
    # from a block nobody of which the session has shown, the same rule for both kinds
    # (trials.design.session_layout): neither the position nor the blocks' history tells
    # a check from an evaluated trial.
    checks = {p for p, k in enumerate(session.plan) if k == design.CATCH}
    pending = _pending_slots(session, sorted(set(slots) | checks))
    position = session.position
    if pending and pending[0] == position:
        if kind == design.CATCH:
            trial = _check_trial(session, seen, rng, now)
        else:
            trial = _item_trial(session, seen, rng, now, identity=True)
        if trial is not None:
            return trial
        pending = pending[1:]  # no block for it: an ordinary trial here, as for either kind
    if not pending:
        return _item_trial(session, seen, rng, now, identity=False)
    # A slot is ahead: keep its block fresh. When only people of fresh blocks are left
    # (the people in no block and the other tasks' items are full), the next slot comes
    # here instead, whichever kind it is; it is not served again at its own position.
    avoid = _fresh_block_videos(session)
    trial = _item_trial(session, seen, rng, now, identity=False, avoid=avoid, fallback=False)
    if trial is None:
        if pending[0] in checks:
            trial = _check_trial(session, seen, rng, now)
        else:
            trial = _item_trial(session, seen, rng, now, identity=True)
    if trial is None:
        trial = _item_trial(session, seen, rng, now, identity=False)
    return trial


def _pending_slots(session, slots: list[int]) -> list[int]:
    """The identity-task slots of ``session`` (sorted positions: evaluated identity slots
    and checks) at or after its position that are still to be served. A slot is used up
    early by an identity-task trial placed at an earlier position that is no slot
    (:func:`_new_trial` moves the next slot forward when nothing else may come there):
    each such trial uses the first slot after it not used up before."""
    served = sorted(
        {
            position
            for position, kind, task, *_ in _session_trials(session)
            if position < session.position and task == Task.IDENTITY and kind != TrialKind.PRACTICE
        }
    )
    used: set[int] = set()
    for q in served:
        # Its own slot when q is a slot not used up before; else (q is no slot, or the
        # slot at q was used up by a trial pulled forward, so the trial at q is itself
        # one pulled forward) the first slot after it not used up before. (Skipping slot
        # positions here served the slot after a used one twice: pulled to the used
        # slot's position, and again at its own.)
        nxt = next((s for s in slots if s >= q and s not in used), None)
        if nxt is not None:
            used.add(nxt)
    return [s for s in slots if s >= session.position and s not in used]


def _seen_videos(session) -> frozenset[int]:
    """Every source video of every person the session has shown a video of (released
    trials included: the rater saw them), or whose face an attention check showed
    (:func:`_shown_people`). Rotation is per person, not per video: two videos of one
    person (same clothes, same room), or a clear and a masked one, in one session would
    let the rater carry the answer from one to the other.

    A check's face holds back its person like an evaluated identity trial's target: else
    a check left one more person for the rest of the session, and a session that runs out
    of people (GRID: 10 people, 11 positions) was one trial longer with its check than
    with its evaluated identity trial (30/30 sessions told apart by length), and only
    after a check did its face come back in a later video (review of 05213db)."""
    return _memoised("seen_videos", session.pk, lambda: frozenset(_read_seen_videos(session)))


def _read_seen_videos(session) -> set[int]:
    shown = _shown_people(session)
    return set(
        SourceVideo.objects.filter(campaign=session.campaign, identity_id__in=shown)
        .order_by()
        .values_list("id", flat=True)
    ) | set(_session_videos(session)[0])


def _seen_evaluated_videos(session) -> frozenset[int]:
    """:func:`_seen_videos` as items and attention checks are chosen by: its videos in the
    evaluated subset (every item's video is one: ``Item.objects.evaluated``) and the
    session's own, read from :func:`_evaluated_videos` (no query of its own)."""
    shown = _shown_people(session)
    evaluated = {pk for pk, identity, *_ in _evaluated_videos(session.campaign) if identity in shown}
    return frozenset(evaluated | _session_videos(session)[0])


def spent_block_videos(session) -> list[int]:
    """Evaluated videos whose identity trials this session can no longer get: those of
    every lineup block (:func:`trials.design.exposure_plan`) of which the session has
    shown anyone in a video (any task, practice or released trials included).

    Rotation is per person, so a person shown earlier in the session is never the
    answer of a later lineup: a rater who remembers who was shown (or who was the answer)
    could strike that face off a later lineup of the same block and gain (1/6 -> 1/5 per
    person struck off; issue 19: 65/290, p = 0.007). With at most one identity trial per
    block per session, none after a video of one of its people, and blocks disjoint, no
    lineup of a session ever shows a person seen before in it: elimination has nothing
    to strike (:func:`trials.design.fresh_blocks`).
    """
    shown = _shown_people(session)
    if not shown:
        return []
    plans, videos = identity_plans(session.campaign)
    blocks = {identity: plan.block for identity, plan in plans.items() if plan.block}
    fresh = design.fresh_blocks(blocks, shown)
    return [pk for pk, identity in videos if identity in blocks and identity not in fresh]


def _block_weights(campaign) -> dict[tuple, int]:
    """``{block: number of evaluated identity videos of its members}`` (:func:`identity_plans`)."""
    plans, _ = identity_plans(campaign)
    weights: dict[tuple, int] = {}
    for plan in plans.values():
        if plan.block:
            weights[plan.block] = weights.get(plan.block, 0) + plan.kept
    return weights


def check_blocks(session, *, seen=None, now=None) -> dict[tuple, int]:
    """The lineup blocks an attention check of ``session`` may draw from, with weights.

    ``{block: number of evaluated identity videos of its members}`` over the blocks from
    which the session could get an evaluated identity trial right now: blocks it has
    shown nobody of (:func:`trials.design.fresh_blocks`; a check's own face counts as
    shown there, so a check spends its block as an evaluated trial does) holding an identity
    item with room that the session has not seen. Empty when there is none: then the
    session gets no check there (before, a check fell back to a spent block, and "an
    identity trial after one of its block" spotted every check, hostile pass 3: 159/159).
    """
    weights = _block_weights(session.campaign)
    if not weights:
        return {}
    shown = _shown_people(session)
    fresh = {block: w for block, w in weights.items() if shown.isdisjoint(block)}
    if not fresh:
        return {}
    seen = _seen_videos(session) if seen is None else seen

    def targets(rows):
        return rows.values_list("source_video__identity_id", flat=True)

    open_targets = set(_open_rows(session, seen, now, targets, identity=True))
    if not open_targets and settings.TRIALS_OVERASSIGN:  # as _item_trial would over-assign
        open_targets = set(_open_rows(session, seen, now, targets, identity=True, over=True))
    return {block: w for block, w in fresh.items() if open_targets & set(block)}


def _fresh_block_videos(session) -> list[int]:
    """Evaluated videos of the people of blocks ``session`` has shown nobody of: trials of
    them would spend a block an identity slot ahead still needs."""
    shown = _shown_people(session)
    members = {i for block in _block_weights(session.campaign) if shown.isdisjoint(block) for i in block}
    # Only items' videos are avoided, all in the evaluated subset: no query of its own.
    return [pk for pk, identity, *_ in _evaluated_videos(session.campaign) if identity in members]


def _shown_people(session) -> frozenset[int]:
    """Identities the session has shown in a video (any task, practice or released
    trials), and those whose face an attention check's video showed."""
    return _session_videos(session)[1]


def _session_videos(session) -> tuple[frozenset[int], frozenset[int]]:
    """``(source videos, people)`` the session's trials showed (:func:`_shown_people`), from
    one query of its trials, read once per step of :func:`current_trial` (:func:`_memo`)."""
    return _memoised("session_videos", session.pk, lambda: _read_session_videos(session))


def _read_session_videos(session) -> tuple[frozenset[int], frozenset[int]]:
    videos, people = set(), set()
    for _, kind, _, video, person, target in _session_trials(session):
        if video is not None:  # a video (its person), any task, practice or released
            videos.add(video)
            people.add(person)
        if kind == TrialKind.CATCH and target is not None:  # the face a check's video showed
            people.add(target)
    return frozenset(videos), frozenset(people)


def _session_trials(session) -> list[tuple]:
    """Every trial of ``session`` (released ones too) as ``(position, kind, task, source
    video, its person, target identity)``, in no order: what :func:`_session_videos` and
    :func:`_pending_slots` read, from one query, once per step inside :func:`_memo` (a step
    makes at most one trial of the session, last)."""
    return _memoised(
        "session_trials",
        session.pk,
        lambda: list(
            session.trials.order_by().values_list(
                "position",
                "kind",
                "task",
                "source_video_id",
                "source_video__identity_id",
                "target_identity_id",
            )
        ),
    )


#: Candidate items read per pick, and rounds of (read candidates, try them) per pick.
PICK_CANDIDATES = 20
PICK_ROUNDS = 3


class _NoRoom(Exception):
    """The item locked for a pick was full: roll its savepoint back (releasing the lock)."""


def _candidates(session, seen, now, *, identity: bool | None = None, over: bool = False, spent=None):
    """Items ``session`` may get now, unlocked: with room (``over``: missing responses),
    of people it has not seen; identity items only from blocks it has shown nobody of.
    ``identity``: True for identity items only, False for the other tasks', None for any."""
    rows = _memoised(
        "candidates",
        (session.campaign_id, over, frozenset(seen), now),
        lambda: _open_items(session, seen, now, over),
    ).all()  # a fresh copy: never evaluated in the memo (claims change the counts within a step)
    if identity is not False:
        spent = spent_block_videos(session) if spent is None else spent
        rows = rows.exclude(task=Task.IDENTITY, source_video_id__in=spent)
    if identity is True:
        rows = rows.filter(task=Task.IDENTITY)
    elif identity is False:
        rows = rows.exclude(task=Task.IDENTITY)
    return rows


def _open_rows(session, seen, now, read: Callable, *, identity: bool | None, over=False, spent=None, skip=()):
    """``read(candidates)`` as a list: the candidates of :func:`_candidates` without items
    of the videos in ``skip``; within a step of :func:`current_trial` (:func:`_memo`), []
    without a query when the same candidates were found empty before in the step.

    Nothing a step does before its last action opens an item: a claim it makes ends it,
    an item it finds full is rolled back; only :func:`_release_hoarded` can lower an
    item's count (it forgets these). A step that finds nothing at one position and tries
    the next read the same empty candidates again at each: the last step of a session
    that found no more items (16 GRID sessions: 242 of their 494 queries repeated)."""
    spent = spent_block_videos(session) if spent is None and identity is not False else spent
    key = ("nothing_open", (identity, over, frozenset(seen), now, frozenset(spent or ()), frozenset(skip)))
    memo = _MEMO.get()
    if memo is not None and key in memo:
        return []
    rows = _candidates(session, seen, now, identity=identity, over=over, spent=spent)
    if skip:
        rows = rows.exclude(source_video_id__in=list(skip))
    found = list(read(rows))
    if not found and memo is not None:
        memo[key] = True
    return found


def _forget_nothing_open() -> None:
    """Candidates found empty in this step (:func:`_open_rows`) are read again."""
    memo = _MEMO.get()
    for key in [key for key in memo or () if key[0] == "nothing_open"]:
        del memo[key]


def _open_items(session, seen, now, over: bool):
    """The query of :func:`_candidates` before its task filters (built once per step: the
    counts' annotations cost about 2.5 ms of ORM work to build, more than running them)."""
    if over:
        return Item.objects.missing_responses(session.campaign, now=now).exclude(
            source_video_id__in=list(seen)
        )
    return Item.objects.least_completed_first(session.campaign, exclude_video_ids=seen, now=now)


def _item_trial(
    session, seen, rng, now, *, identity: bool | None = None, avoid=(), fallback: bool = True
) -> Trial | None:
    """Claim the least-completed item with room that this rater has not seen, or None.

    Candidates are read without locks, fewest completed responses first (random among
    ties), then tried one by one under a lock that skips items another rater is claiming
    or answering right now; only when every candidate is busy does it wait, for one.

    Over-assignment (``TRIALS_OVERASSIGN``): when every item this rater could take is held by open claims but
    still misses responses, the item with the fewest claims is claimed anyway (the first
    answers fill it, a later one gets :class:`TrialExpired`), so unanswered claims never
    turn raters away while responses are missing. Before claiming, the browser's and the
    address's older open claims beyond their limit are released (:func:`_release_hoarded`).

    ``identity`` (True, False, None) restricts the task (:func:`_candidates`); items of
    the videos in ``avoid`` are taken only when no other item is left (never with
    ``fallback=False``).
    """
    _release_hoarded(session, now)
    spent = spent_block_videos(session) if identity is not False else []
    avoid = list(avoid)
    skips = ([avoid, []] if fallback else [avoid]) if avoid else [[]]
    for _ in range(PICK_ROUNDS):
        over = False
        rows = []
        for skip in skips:
            rows = _open_rows(
                session,
                seen,
                now,
                lambda rows: rows.values_list("id", "n_completed")[:PICK_CANDIDATES],
                identity=identity,
                spent=spent,
                skip=skip,
            )
            if rows:
                break
        if not rows and settings.TRIALS_OVERASSIGN:
            over = True
            for skip in skips:
                rows = _open_rows(
                    session,
                    seen,
                    now,
                    lambda rows: rows.order_by("n_live", "n_completed", "id").values_list("id", "n_live")[
                        :PICK_CANDIDATES
                    ],
                    identity=identity,
                    over=True,
                    spent=spent,
                    skip=skip,
                )
                if rows:
                    break
        if not rows:
            return None
        order = sorted(rows, key=lambda row: (row[1], rng.random()))
        busy = []
        for pk, _ in order:
            trial = _claim_item(session, pk, rng, now, wait=False, over=over)
            if trial is not None and trial is not _BUSY:
                return trial
            if trial is _BUSY:
                busy.append(pk)
        if busy:
            trial = _claim_item(session, busy[0], rng, now, wait=True, over=over)
            if trial is not None:
                return trial
    return None


def _release_hoarded(session, now) -> None:
    """Release the open item claims of other sessions from this session's browser or
    address beyond ``TRIALS_MAX_OPEN_CLAIMS_PER_BROWSER`` / ``..._PER_ADDRESS`` - 1, oldest
    first, so one machine never holds more than its limit of items at once.

    The released trials' raters get :class:`TrialExpired` when they answer. Releasing
    needs no item lock: it only lowers an item's live count.

    The open claims of both are read in one query, once per step of :func:`current_trial`
    (:func:`_memo`): the session's own claims are not counted, so a second call in the
    step (another task, the fallback) would find nothing more to release.
    """
    _memoised("released_hoarded", session.pk, lambda: _release_hoarded_claims(session, now))


def _release_hoarded_claims(session, now) -> None:
    limits = {
        "browser_key_hash": settings.TRIALS_MAX_OPEN_CLAIMS_PER_BROWSER,
        "address_hash": settings.TRIALS_MAX_OPEN_CLAIMS_PER_ADDRESS,
    }
    values = {field: getattr(session, field) for field in limits if getattr(session, field)}
    if not values:
        return
    open_claims = Trial.objects.filter(
        session__campaign_id=session.campaign_id, kind=TrialKind.ITEM, completed=False, released=False
    ).exclude(session_id=session.pk)
    open_claims = open_claims.filter(claimed_at__gte=_after_lock(now) - claim_timeout())
    same_machine = Q()
    for field, value in values.items():
        same_machine |= Q(**{f"session__{field}": value})
    claims = list(
        open_claims.filter(same_machine)
        .order_by("-claimed_at", "-id")
        .values_list("pk", *(f"session__{field}" for field in limits))
    )
    done: set[int] = set()  # released by the browser's limit: no longer open for the address's
    for index, (field, limit) in enumerate(limits.items()):
        if field not in values:
            continue
        kept = [pk for pk, *hashes in claims if hashes[index] == values[field] and pk not in done]
        surplus = kept[limit - 1 :]
        if surplus:
            released = Trial.objects.filter(pk__in=surplus, completed=False)
            variants.drop_variants_on_commit(released.values_list("media_token", flat=True))
            released.update(released=True)
            done.update(surplus)
            _forget_nothing_open()  # the released claims' items may have room now


#: :func:`_claim_item` found the item locked by another transaction (skipped).
_BUSY = object()


def _claim_item(session, pk, rng, now, *, wait: bool, over: bool = False):
    """A trial of item ``pk`` if it still has room; None if full or gone; ``_BUSY`` if locked.

    With ``over`` (over-assignment) "room" is a missing response, whatever the open claims.
    """
    try:
        with transaction.atomic():  # savepoint: rolled back (lock released) when full
            item = _lock_item(pk, skip_locked=not wait, video=True)
            if item is None:
                gone = wait or not Item.objects.filter(pk=pk).exists()
                return None if gone else _BUSY
            now = _after_lock(now)
            taken = Trial.objects.filter(item=item)
            taken = taken.answered() if over else taken.live(now)
            if taken.count() >= item.target_count:
                raise _NoRoom
            return _build_trial(
                session, TrialKind.ITEM, item.task, item.source_video, rng, item=item, now=now
            )
    except _NoRoom:
        return None


def _practice_trial(session, seen, rng, n_before) -> Trial:
    """A practice trial; practice never shows a video of a person in evaluated videos.

    With practice material (imported practice identities and videos, or the built-in
    London practice people, :mod:`trials.practice`): a practice video and a lineup of
    practice faces, with feedback. Else an unevaluated video of a person with no
    evaluated video (the attacker's own material excepted; for action practice, one of a
    listed action); else an identity practice trial on practice people (action practice
    without action material), else a still-probe trial (a face and an instruction,
    :func:`_catch_trial`). Feedback follows :func:`gives_feedback`.

    A video of an evaluated person in practice would hand out its answer with feedback,
    and without feedback still show that person, whom the rater could then strike off a
    later lineup of the session (:func:`spent_block_videos`).
    """
    campaign = session.campaign
    tasks = campaign_tasks(campaign)
    task = tasks[n_before % len(tasks)]
    pool, practice_videos = practice_pool(campaign)
    practice = SourceVideo.objects.filter(pk__in=practice_videos).exclude(pk__in=seen)
    if practice_videos:
        videos = practice.filter(action__in=campaign.action_vocabulary) if task == Task.ACTION else practice
        video = videos.order_by("?").first()
        if video is not None:
            return _build_trial(session, TrialKind.PRACTICE, task, video, rng, pool=pool)
    evaluated_people = SourceVideo.objects.filter(
        campaign=campaign, in_evaluated_subset=True, practice=False
    ).values("identity_id")
    videos = (
        SourceVideo.objects.filter(campaign=campaign, attacker_train=False, in_evaluated_subset=False)
        .exclude(pk__in=seen)
        .exclude(identity_id__in=evaluated_people)
    )
    if task == Task.ACTION:
        videos = videos.filter(action__in=campaign.action_vocabulary)
    else:
        videos = videos.filter(identity_id__in=list(identity_pool(campaign)))
    video = videos.order_by("?").first()
    if video is not None:
        return _build_trial(session, TrialKind.PRACTICE, task, video, rng)
    video = practice.order_by("?").first() if practice_videos else None
    if video is not None:  # no action practice material: the identity task, on practice people
        return _build_trial(session, TrialKind.PRACTICE, Task.IDENTITY, video, rng, pool=pool)
    return _catch_trial(session, rng, kind=TrialKind.PRACTICE)


def _build_trial(session, kind, task, video, rng, *, item=None, now=None, pool=None) -> Trial:
    """A trial of ``video``; identity lineups come from ``pool`` (default: the evaluated identities)."""
    campaign = session.campaign
    trial = Trial(
        session=session,
        position=session.position,
        kind=kind,
        task=task,
        item=item,
        source_video=video,
        claimed_at=now or timezone.now(),
    )
    lineup = []
    if task == Task.ACTION:
        trial.correct_choice = video.action
    else:
        trial.target_identity_id = video.identity_id
        if item is not None:
            lineup, trial.target_present = _balanced_lineup(session, video.identity_id, rng)
        else:
            # Practice: make-up independent of the answer; no target-absent trials for a
            # thin stratum (practice people are never evaluated).
            pool = pool if pool is not None else identity_pool(campaign)
            lineup, trial.target_present = design.trial_lineup(
                video.identity_id,
                pool,
                practice.practice_attributes(campaign, pool),
                n_foils=campaign.foils_per_trial,
                target_absent_share=campaign.target_absent_share,
                rng=rng,
            )
        trial.correct_choice = design.correct_choice(video.identity_id, lineup)
    trial.save()
    _add_faces(trial, lineup, rng)
    return trial


def _balanced_lineup(session, target: int, rng) -> tuple[list, bool]:
    """An evaluated identity trial's lineup: the target's block minus one member at random
    (:func:`trials.design.balanced_lineup`). A target without a block (an item made before
    the catalogue changed) falls back to the matched lineup of :func:`trials.design.trial_lineup`.
    """
    campaign = session.campaign
    plan = identity_plans(campaign)[0].get(target)
    if plan is not None and plan.block:
        return design.balanced_lineup(target, plan.block, n_foils=campaign.foils_per_trial, rng=rng)
    return design.trial_lineup(
        target,
        identity_pool(campaign),
        campaign.demographic_attributes,
        n_foils=campaign.foils_per_trial,
        target_absent_share=campaign.target_absent_share,
        rng=rng,
    )


def _check_trial(session, seen, rng, now) -> Trial | None:
    """An attention check at this position, or None (an ordinary trial comes there, as at
    an evaluated identity slot that finds no block) when the
    session could get no evaluated identity trial here either: no block it has shown
    nobody of holds an identity item for it (:func:`check_blocks`)."""
    blocks = check_blocks(session, seen=seen, now=now)
    if not blocks:
        return None
    return _catch_trial(session, rng, blocks=blocks)


def _catch_trial(session, rng, *, kind=TrialKind.CATCH, blocks=None) -> Trial:
    """An attention check: an identity trial whose video shows a lineup face
    (:func:`probe_image_of`) and, for a stretch starting at a random moment, an
    instruction naming another answer (:func:`trials.variants.instructed_choice`).

    The probe (:func:`trials.media.catch_video_frames`) is real clip footage with that
    face pasted over the clip's face, following it (mirrored, relit, warped); a rater who
    reads the instruction passes, a face-recognition bot (or a rater answering by the face
    without watching) picks the face and fails. Its face's person is not shown again in
    the session (:func:`_seen_videos`); its bytes are made like every other trial's
    (:mod:`trials.variants`).

    Its lineup is made like an evaluated one (:func:`check_blocks`,
    :func:`trials.design.check_lineup`): a lineup block minus one member, from the blocks
    the session has shown nobody of when there are any, so its make-up never tells a
    check from an evaluated trial. A campaign without blocks (no group large enough for
    evaluated identity trials) falls back to a matched lineup from every identity.
    ``blocks`` (:func:`check_blocks`) defaults to every block (practice still-probes,
    which come before any evaluated person is shown).
    """
    campaign = session.campaign
    blocks = _block_weights(campaign) if blocks is None else blocks
    if blocks:
        lineup, target = design.check_lineup(blocks, n_foils=campaign.foils_per_trial, rng=rng)
    else:
        pool = identity_pool(campaign)
        target = rng.choice(sorted(pool))
        lineup, _ = design.build_lineup_relaxed(
            target,
            pool,
            campaign.demographic_attributes,
            n_foils=campaign.foils_per_trial,
            target_present=True,
            rng=rng,
        )
    trial = Trial.objects.create(
        session=session,
        position=session.position,
        kind=kind,
        task=Task.IDENTITY,
        probe_image=probe_image_of(target),
        target_identity_id=target,
        target_present=True,
        # The video also shows an instruction ("Choose face 3", trials.variants): its answer,
        # never the position of the face shown, so answering by the face always fails.
        correct_choice=variants.instructed_choice(
            int(design.correct_choice(target, lineup)), len(lineup), rng
        ),
    )
    _add_faces(trial, lineup, rng)
    return trial


def probe_image_of(identity_pk: int) -> GalleryImage:
    """The still a catch probe is made of: another photo than the lineup's when the identity
    has one (then no pixel of the lineup face is in the probe), else the lineup's own."""
    first_two = list(GalleryImage.objects.filter(identity_id=identity_pk).order_by("id")[:2])
    pk = lineups.probe_image_pk(image.pk for image in first_two)
    return next((image for image in first_two if image.pk == pk), None)


def _add_faces(trial: Trial, lineup, rng) -> None:
    first_image = {}
    for image_pk, identity_pk in (
        GalleryImage.objects.filter(identity_id__in=lineup).order_by("-id").values_list("id", "identity_id")
    ):
        first_image[identity_pk] = image_pk  # descending ids: the lowest id is written last
    TrialFace.objects.bulk_create(
        TrialFace(trial=trial, position=i, gallery_image_id=first_image[identity])
        for i, identity in enumerate(lineup, start=1)
    )


# --- responses -------------------------------------------------------------------------


def gives_feedback(trial: Trial) -> bool:
    """Practice shows the correct answer only where it reveals nothing about evaluated trials.

    That is a still-probe practice trial, or a practice video outside the evaluated
    subset of a person with no evaluated video (a practice identity, or one only ever
    shown as a foil). Feedback on an evaluated video, or on another video of a person in
    evaluated videos (same clothes, same room), would hand its answer to whoever practises
    (throw-away sessions).
    """
    if trial.kind != TrialKind.PRACTICE:
        return False
    if trial.source_video_id is None:
        return True
    video = trial.source_video
    if video.in_evaluated_subset:
        return False
    return not SourceVideo.objects.filter(
        identity_id=video.identity_id, in_evaluated_subset=True, practice=False
    ).exists()


def valid_choices(trial: Trial) -> list[str]:
    """``"0"``-``"5"`` for identity trials, the campaign's actions for action trials."""
    if trial.task == Task.ACTION:
        return list(trial.session.campaign.action_vocabulary)
    return [design.NOT_PRESENT] + [str(i) for i in range(1, trial.faces.count() + 1)]


def record_response(trial: Trial, answer: Mapping, *, now=None) -> tuple[Response, bool]:
    """Store the answer to ``trial`` once and advance the session.

    Parameters
    ----------
    trial : Trial
        Must belong to the requesting rater (checked by the view).
    answer : mapping
        Cleaned ``choice`` (str), ``response_time_ms``, ``replays``, ``watch_time_ms`` (int).

    Returns
    -------
    response : Response
    created : bool
        False when the trial was already answered (double click, resent request): the
        first stored answer is returned and nothing changes.

    Raises
    ------
    TrialExpired
        If the claim lapsed and the item reached its target through other raters.
    ValueError
        If ``choice`` is not a valid choice for this trial.
    """
    with transaction.atomic():
        # The lock order of every path: session, item, trial (module docstring).
        session = _lock_session(trial.session_id)
        item = _lock_item(trial.item_id)
        trial = Trial.objects.select_for_update().get(pk=trial.pk)
        trial.session = session  # the locked row (with its campaign), used to advance
        # One response per trial: no order needed (the default one joins the trial's).
        existing = Response.objects.filter(trial=trial).order_by("pk").first()
        if existing is not None:
            return existing, False
        expired = trial.released or not _keep_claim(trial, item, now) or _answered_by_others(trial, item)
        if not expired:
            return _store_response(trial, answer), True
    # Raised after the commit, so the release of the lapsed claim is kept.
    raise TrialExpired(f"trial {trial.token} expired")


def _answered_by_others(trial: Trial, item: Item | None) -> bool:
    """True (and the trial released) when ``item`` already has its target of counted
    answers: an over-assigned claim answered after others filled the item."""
    if item is None or Trial.objects.filter(item=item).answered().count() < item.target_count:
        return False
    trial.released = True
    trial.save(update_fields=["released"])
    variants.drop_variants_on_commit([trial.media_token])
    return True


def renew_claim(trial: Trial, *, now=None) -> bool:
    """Renew the claim of an unanswered trial (the trial page's heartbeat).

    A claim lives ``TRIALS_CLAIM_TIMEOUT_S`` after its last renewal, and is renewed for at
    most ``TRIALS_CLAIM_MAX_HOLD_S`` after the page was first shown; a lapsed claim is
    taken up again if its item still has room (:func:`_keep_claim`). Practice and checks
    hold no item but follow the same timing rule, so the reply after the maximum hold is
    the same for a check as for an evaluated trial.

    Returns
    -------
    bool
        True if the trial is still the rater's to answer; False if it was answered,
        released, or held too long (then its answer may still be taken if the item has
        room when it arrives).
    """
    with transaction.atomic():
        _lock_session(trial.session_id)
        item = _lock_item(trial.item_id)
        trial = Trial.objects.select_for_update().get(pk=trial.pk)
        if trial.completed or trial.released:
            return False
        now = _after_lock(now)
        if item is not None and _answered_by_others(trial, item):
            return False
        # The same hold rule for practice and checks (which hold no item), so the reply
        # never tells an attention check from an evaluated trial.
        if (now - (trial.shown_at or trial.claimed_at)).total_seconds() > settings.TRIALS_CLAIM_MAX_HOLD_S:
            return not trial.claim_expired(now)
        if item is None or not trial.claim_expired(now):
            trial.claimed_at = now
            trial.save(update_fields=["claimed_at"])
            return True
        return _keep_claim(trial, item, now)


def _store_response(trial: Trial, answer: Mapping) -> Response:
    """Save the answer, mark the trial done, flag and exclude on a failed catch trial, advance.

    Raises
    ------
    ValueError
        If ``answer["choice"]`` is not one of :func:`valid_choices`.
    """
    if answer["choice"] not in valid_choices(trial):
        raise ValueError(f"choice must be one of {valid_choices(trial)}, got {answer['choice']!r}")
    now = timezone.now()
    shown = trial.shown_at or trial.claimed_at
    response = Response.objects.create(
        trial=trial,
        choice=answer["choice"],
        correct=answer["choice"] == trial.correct_choice,
        response_time_ms=answer["response_time_ms"],
        # The page continues the counts of earlier loads of this trial (views.trial_state).
        replays=max(answer.get("replays", 0), trial.replays),
        # Capped by the server-side time since the video's first request (client's word).
        watch_time_ms=plausibility.capped_watch_ms(
            trial, max(answer.get("watch_time_ms", 0), trial.watch_time_ms), now
        ),
        server_time_ms=max(0, int((now - shown).total_seconds() * 1000)),
    )
    trial.completed = True
    trial.save(update_fields=["completed"])
    variants.drop_variants_on_commit([trial.media_token])  # its served copy is no longer needed
    reason = plausibility.implausible_answer(trial, now)
    if not reason and trial.kind == TrialKind.CATCH and not response.correct:
        failed = Response.objects.filter(
            trial__session=trial.session, trial__kind=TrialKind.CATCH, correct=False
        ).count()
        if failed >= plausibility.max_attention_failures():
            reason = f"failed {failed} attention checks"
    if reason:
        # The first reason flags and excludes; the organizer may include the rater again,
        # and a later reason does not overrule that decision.
        Rater.objects.filter(pk=trial.session.rater_id, flagged=False).update(
            flagged=True, excluded=True, flag_reason=reason
        )
    session = trial.session  # locked by the caller
    if session.position == trial.position:
        session.position += 1
        session.save(update_fields=["position"])
    return response
