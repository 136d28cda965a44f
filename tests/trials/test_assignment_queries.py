"""Database queries of the rater's hot path: a new trial and an answer, over whole GRID sessions.

The rater path is the product's hot path at scale (``tests/ops/test_rater_simulation_http.py``:
100 raters over HTTP); a py-spy profile of its gunicorn workers found 60 % of
:func:`trials.assignment.current_trial` in building ORM queries, about 17 a new trial. The
counts below are those after the cut (16 sessions, 108 trials: 16.5 queries a new trial
before, 13.2 after; an answer 9.8; 494 queries in the 16 last steps, which found nothing,
before, 252 after); a change that makes the path read more fails here, and
so must say why.
"""

import contextlib
from collections import defaultdict
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from trials import assignment
from trials.models import RatingSession, SessionState

from .test_assignment_memo import SEEDS


@pytest.fixture(autouse=True)
def no_plausibility_checks(settings):
    settings.TRIALS_PLAUSIBILITY_CHECKS = False


class _Undo(Exception):
    """Roll the sessions back."""


def count_queries(campaign) -> tuple[dict, list[int], list[int], list[int]]:
    """Queries (SAVEPOINT and RELEASE statements included) of every request that made a
    new trial, by (kind, task), of every reload of it, of every answer, and of each
    session's last request (which found no more trial and completed the session)."""
    new, reloads, answers, last = defaultdict(list), [], [], []
    now = timezone.now()
    with contextlib.suppress(_Undo), transaction.atomic():
        for n, seed in enumerate(SEEDS):
            session = assignment.join(campaign, participant_code=f"queries{n}")
            plan = assignment.layout(campaign, seed)[0]
            RatingSession.objects.filter(pk=session.pk).update(
                seed=seed, plan=plan, state=SessionState.RUNNING
            )
            session.refresh_from_db()
            while True:
                with CaptureQueriesContext(connection) as made:
                    trial = assignment.current_trial(session, now=now)
                if trial is None:
                    last.append(len(made))
                    break
                with CaptureQueriesContext(connection) as reloaded:
                    assert assignment.current_trial(session, now=now) == trial
                new[trial.kind, trial.task].append(len(made))
                reloads.append(len(reloaded))
                answer = {"choice": assignment.valid_choices(trial)[1], "response_time_ms": 1000}
                with CaptureQueriesContext(connection) as answered:
                    assignment.record_response(
                        trial, {**answer, "replays": 0, "watch_time_ms": 3000}, now=now
                    )
                answers.append(len(answered))
                now += timedelta(seconds=1)
        raise _Undo
    return dict(new), reloads, answers, last


def test_queries_of_a_new_trial_and_an_answer_do_not_grow(grid_campaign):
    new, reloads, answers, last = count_queries(grid_campaign)
    served = {key: len(counts) for key, counts in new.items()}
    assert served == {
        ("practice", "identity"): 32,
        ("item", "action"): 60,
        ("catch", "identity"): 8,
        ("item", "identity"): 8,
    }
    # Before: 1784 in all (15, 19, 19, 21 at most by kind, as keyed below).
    assert sum(sum(counts) for counts in new.values()) <= 1430
    assert {key: max(counts) for key, counts in new.items()} == {
        ("practice", "identity"): 13,
        ("item", "action"): 15,
        ("catch", "identity"): 14,
        ("item", "identity"): 17,
    }
    # A reload reads the session and its trial (and locks the trial's item): unchanged.
    assert sum(reloads) <= 500 and max(reloads) == 5
    assert sum(answers) <= 1054 and max(answers) == 11
    # A session's last step tries every position left; the later sessions find the items
    # full and read the same empty candidates at each (494 queries before, 242 repeated).
    assert len(last) == 16 and sum(last) <= 252
