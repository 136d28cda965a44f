"""Helpers for tests that need a session with an attention check.

An attention check takes a lineup block the session has shown nobody of, like an
evaluated identity trial, and a session's slots for both are drawn together
(:func:`trials.design.session_layout`): on the GRID test campaign (one block) a session
gets either its check or its evaluated identity trial, whichever slot comes first.
"""

from trials import assignment, design
from trials.models import RatingSession


def with_check_first(session: RatingSession) -> RatingSession:
    """Give a new ``session`` (no study trial made yet) the first seed (1, 2, ...) whose
    layout puts an attention check before its first evaluated identity slot, so the check
    is served; deterministic."""
    return _with_first_slot(session, check=True)


def with_identity_first(session: RatingSession) -> RatingSession:
    """As :func:`with_check_first`, with the evaluated identity slot first (it is served)."""
    return _with_first_slot(session, check=False)


def _with_first_slot(session: RatingSession, *, check: bool) -> RatingSession:
    for seed in range(1, 1000):
        plan, identity = assignment.layout(session.campaign, seed)
        catches = [i for i, kind in enumerate(plan) if kind == design.CATCH]
        first = min(catches + identity, default=None)
        if first is not None and (first in catches) == check:
            RatingSession.objects.filter(pk=session.pk).update(seed=seed, plan=plan)
            session.refresh_from_db()
            return session
    raise AssertionError(f"no layout with {'a check' if check else 'an identity slot'} first")


def sessions_shaped_as_before(monkeypatch) -> None:
    """Sessions laid out as before hostile pass 3: identity items at any item position (the
    evaluated one first), checks from a fresh block or else any block, so a GRID session
    at check rate 0.5 serves about 5 checks. Only for tests of what the served bytes carry,
    which need many checks and do not depend on where checks stand
    (``tests/trials/test_check_placement.py`` tests that)."""

    def check_blocks(session, **_):
        weights = assignment._block_weights(session.campaign)
        shown = assignment._shown_people(session)
        return {b: w for b, w in weights.items() if shown.isdisjoint(b)} or weights

    monkeypatch.setattr(assignment, "identity_positions", lambda session: None)
    monkeypatch.setattr(assignment, "check_blocks", check_blocks)
