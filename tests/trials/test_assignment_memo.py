"""The per-new-trial memo of trials.assignment (``_memo``): same trials, fewer queries, nothing kept.

A new trial read the campaign's lineup blocks (:func:`trials.assignment.identity_plans`) and
the videos and people its session has shown (``_session_videos``) up to 4 and 3 times; inside
``_new_trial`` they are read once, as are the campaign's evaluated videos (``_evaluated_videos``:
the blocks, the layout's people and their count) and the session's trials (``_session_trials``:
the videos and people shown, the identity slots served). These tests drive whole GRID
sessions with and without the memo and compare every trial served.
"""

import contextlib
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from evalsite.models import Identity
from trials import assignment
from trials.models import Item, RatingSession, SessionState, Trial

from .sessions import with_identity_first

SEEDS = tuple(range(11, 27))  # 16 sessions: the last ones find items full and skip positions


@pytest.fixture(autouse=True)
def no_plausibility_checks(settings):
    settings.TRIALS_PLAUSIBILITY_CHECKS = False


class _Undo(Exception):
    """Roll a run back so the next one starts from the same database."""


def run_sessions(campaign) -> list[tuple]:
    """Every trial of sessions with fixed seeds, answered in turn (first choice), as tuples
    of what decides a trial: position, kind, task, item, video, probe, target, answer, lineup."""
    served = []
    now = timezone.now()
    with contextlib.suppress(_Undo), transaction.atomic():
        for n, seed in enumerate(SEEDS):
            session = assignment.join(campaign, participant_code=f"memo{n}")
            plan = assignment.layout(campaign, seed)[0]
            RatingSession.objects.filter(pk=session.pk).update(
                seed=seed, plan=plan, state=SessionState.RUNNING
            )
            session.refresh_from_db()
            while (trial := assignment.current_trial(session, now=now)) is not None:
                faces = tuple(trial.faces.order_by("position").values_list("gallery_image_id", flat=True))
                served.append(
                    (
                        seed,
                        trial.position,
                        trial.kind,
                        trial.task,
                        trial.item_id,
                        trial.source_video_id,
                        trial.probe_image_id,
                        trial.target_identity_id,
                        trial.correct_choice,
                        faces,
                    )
                )
                answer = {"choice": assignment.valid_choices(trial)[1], "response_time_ms": 1000}
                assignment.record_response(trial, {**answer, "replays": 0, "watch_time_ms": 3000}, now=now)
                now += timedelta(seconds=1)
        raise _Undo
    return served


def test_sessions_get_the_same_trials_with_and_without_the_memo(grid_campaign, monkeypatch):
    with_memo = run_sessions(grid_campaign)
    monkeypatch.setattr(assignment, "_memo", contextlib.nullcontext)
    without = run_sessions(grid_campaign)
    assert with_memo == without
    # Whole sessions of the GRID campaign: practice, checks, identity and action trials.
    assert len(with_memo) > 100
    kinds = {(kind, task) for _, _, kind, task, *_ in with_memo}
    # Later sessions found nothing from some position on (items full): their last step
    # tried every remaining position of the plan in turn.
    served = {seed: sum(1 for s, *_ in with_memo if s == seed) for seed in SEEDS}
    short = [seed for seed in SEEDS if served[seed] < len(assignment.layout(grid_campaign, seed)[0])]
    assert len(short) >= 4, served
    assert {
        ("practice", "identity"),
        ("item", "identity"),
        ("item", "action"),
        ("catch", "identity"),
    } <= kinds


def new_trial_queries(campaign, code: str, calls: dict) -> int:
    """Queries of the request that makes a session's first evaluated identity trial (and
    ``calls`` counted in that request only)."""
    session = with_identity_first(assignment.join(campaign, participant_code=code))
    RatingSession.objects.filter(pk=session.pk).update(state=SessionState.RUNNING)
    while True:
        calls.update(plans=0, shown=0)
        with CaptureQueriesContext(connection) as queries:
            trial = assignment.current_trial(session)
        if (trial.kind, trial.task) == ("item", "identity"):
            return len(queries)
        answer = {"choice": assignment.valid_choices(trial)[1], "response_time_ms": 1000}
        assignment.record_response(trial, {**answer, "replays": 0, "watch_time_ms": 3000})


def test_a_new_trial_reads_blocks_and_shown_people_once(grid_campaign, monkeypatch):
    calls = {"plans": 0, "shown": 0}
    plans, shown = assignment._identity_plans, assignment._read_session_videos

    def counted_plans(campaign):
        calls["plans"] += 1
        return plans(campaign)

    def counted_shown(session):
        calls["shown"] += 1
        return shown(session)

    monkeypatch.setattr(assignment, "_identity_plans", counted_plans)
    monkeypatch.setattr(assignment, "_read_session_videos", counted_shown)
    with transaction.atomic():
        with_memo = new_trial_queries(grid_campaign, "counted", calls)
        transaction.set_rollback(True)
    assert calls == {"plans": 1, "shown": 1}
    monkeypatch.setattr(assignment, "_memo", contextlib.nullcontext)
    without = new_trial_queries(grid_campaign, "counted", calls)
    # Without it, the blocks were read 3 times (its slot, the blocks spent, its lineup,
    # 2 queries each) and the session's trials 3 times (the videos and the people seen,
    # the blocks spent; 1 query each).
    assert calls == {"plans": 3, "shown": 3}
    # 6 for those, and 4 more: the layout's people and their count, and the evaluated
    # videos of the people seen, come from the blocks' query of videos
    # (trials.assignment._evaluated_videos), the slots already served from the session's
    # trials' query (_session_trials), each a query of its own without the memo.
    assert with_memo == without - 10


def test_nothing_is_kept_outside_a_new_trial(grid_campaign):
    """Each request reads the catalogue afresh: a changed attribute changes the blocks at once."""
    plans, _ = assignment.identity_plans(grid_campaign)
    assert sum(1 for plan in plans.values() if plan.block) == 6  # the six men: one block
    man = next(pk for pk, plan in plans.items() if plan.block)
    Identity.objects.filter(pk=man).update(attributes={"gender": "female"})
    plans, _ = assignment.identity_plans(grid_campaign)
    assert sum(1 for plan in plans.values() if plan.block) == 0  # five men are too few
    with assignment._memo():
        inside = assignment.identity_plans(grid_campaign)
        Identity.objects.filter(pk=man).update(attributes={"gender": "male"})
        assert assignment.identity_plans(grid_campaign) is inside  # read once inside
    assert sum(1 for plan in assignment.identity_plans(grid_campaign)[0].values() if plan.block) == 6


def test_the_candidates_query_is_built_once_a_step_and_run_afresh(grid_campaign, monkeypatch):
    """Inside a step the candidate items' query is built once (``_open_items``) and every use
    runs a copy: an item filled meanwhile (here: its target lowered to 0) is left out at once."""
    builds = []
    open_items = assignment._open_items

    def counted(*args):
        builds.append(args)
        return open_items(*args)

    monkeypatch.setattr(assignment, "_open_items", counted)
    session = assignment.join(grid_campaign, participant_code="afresh")
    now = timezone.now()
    with assignment._memo():
        first = list(
            assignment._candidates(session, frozenset(), now, identity=False).values_list("id", flat=True)
        )
        Item.objects.filter(pk=first[0]).update(target_count=0)
        again = list(
            assignment._candidates(session, frozenset(), now, identity=False).values_list("id", flat=True)
        )
    assert len(builds) == 1
    assert again == first[1:]


def test_candidates_found_empty_are_read_again_only_after_a_release(grid_campaign, settings):
    """Inside a step, candidates found empty are not read again (the last step of a session
    tried the same empty reads at every position left) until the step releases another
    session's hoarded claim, which may give an item room: then they are read afresh."""
    settings.TRIALS_MAX_OPEN_CLAIMS_PER_BROWSER = 1
    sessions = [assignment.join(grid_campaign, participant_code=f"empty{n}") for n in range(2)]
    RatingSession.objects.filter(pk__in=[s.pk for s in sessions]).update(browser_key_hash="b" * 64)
    holder, session = (RatingSession.objects.select_related("campaign").get(pk=s.pk) for s in sessions)
    now = timezone.now()
    item = Item.objects.filter(campaign=grid_campaign, task="action").order_by("pk").first()
    Item.objects.filter(campaign=grid_campaign).exclude(pk=item.pk).update(target_count=0)
    Item.objects.filter(pk=item.pk).update(target_count=1)
    # The other session of this browser holds the one item with a target: nothing is open.
    held = Trial.objects.create(
        session=holder,
        position=0,
        kind="item",
        task="action",
        item=item,
        source_video=item.source_video,
        correct_choice="x",
        claimed_at=now,
    )
    settings.TRIALS_OVERASSIGN = False

    def read():
        with CaptureQueriesContext(connection) as queries:
            rows = assignment._open_rows(
                session, frozenset(), now, lambda rows: rows.values_list("id", flat=True), identity=False
            )
        return rows, len(queries)

    with assignment._memo():
        assert read()[0] == []
        assert read() == ([], 0)  # not read again
        assignment._release_hoarded(session, now)  # the browser's limit: the held claim goes
        assert Trial.objects.get(pk=held.pk).released
        rows, n_queries = read()
        assert rows == [item.pk] and n_queries == 1
    assert read()[0] == [item.pk]  # outside a step: always read
