"""The row locks the rater paths take on PostgreSQL, for ``test_rater_locks_postgres.py``.

Run in a child process with ``DATABASE_URL`` set and a campaign built (``python -m
tests.crowd.simulation --setup-only``)::

    python -m tests.ops.lock_probe CAMPAIGN_ID

prints one JSON object: for each path, the tables of its ``SELECT ... FOR UPDATE``
statements in order (with whether each skipped locked rows and locked joined rows too),
and what a pick did while another connection held every candidate item but one.
"""

import json
import os
import re
import sys
import threading
import time
from contextlib import contextmanager
from datetime import timedelta

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")

import django  # noqa: E402

django.setup()

from django.db import connection, transaction  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402
from django.utils import timezone  # noqa: E402

from evalsite.models import Campaign  # noqa: E402
from trials import assignment  # noqa: E402
from trials.models import Item, RatingSession, SessionState, Trial, TrialKind  # noqa: E402

ANSWER = {"response_time_ms": 1000, "replays": 0, "watch_time_ms": 3000}


def locks(queries) -> list[dict]:
    """``[{"table", "skip_locked", "joined"}]`` for each locking statement, in order."""
    out = []
    for query in queries:
        sql = query["sql"]
        if " FOR UPDATE" not in sql and " FOR NO KEY UPDATE" not in sql:
            continue
        table = re.search(r'FROM "(\w+)"', sql).group(1)
        out.append(
            {
                "table": table,
                "skip_locked": "SKIP LOCKED" in sql,
                # Joined rows are locked too unless the clause names only this table (OF).
                "joined": " JOIN " in sql and f'OF "{table}"' not in sql,
            }
        )
    return out


def captured(call):
    with CaptureQueriesContext(connection) as queries:
        result = call()
    return result, locks(queries.captured_queries)


def running_session(campaign, code):
    session = assignment.join(campaign, participant_code=code)
    RatingSession.objects.filter(pk=session.pk).update(state=SessionState.RUNNING)
    session.refresh_from_db()
    return session


def answer(trial):
    return assignment.record_response(trial, {"choice": assignment.valid_choices(trial)[1], **ANSWER})


def to_item_slot(session):
    """Answer trials until the next position is an evaluated item (none claimed yet)."""
    while session.plan[RatingSession.objects.get(pk=session.pk).position] != "item":
        answer(assignment.current_trial(session))


def _dry_pick(session) -> int:
    """The item ``session``'s next pick claims, rolled back (nothing stored)."""
    with transaction.atomic():
        point = transaction.savepoint()
        item = assignment.current_trial(session).item_id
        transaction.savepoint_rollback(point)
    session.refresh_from_db()
    return item


@contextmanager
def _holding(item_ids):
    """Another connection holds the locks of ``item_ids`` (as other raters' transactions do)."""
    held, release = threading.Event(), threading.Event()

    def hold_locks():
        with transaction.atomic():
            for pk in item_ids:
                assignment._lock_item(pk)
            held.set()
            release.wait(30)
        connection.close()

    holder = threading.Thread(target=hold_locks)
    holder.start()
    held.wait(30)
    try:
        yield
    finally:
        release.set()
        holder.join()


def main(campaign_id: int) -> dict:
    campaign = Campaign.objects.get(pk=campaign_id)
    report = {}

    # Claiming a new item trial, then answering it.
    session = running_session(campaign, "probe-1")
    to_item_slot(session)
    trial, report["current_trial_new_item"] = captured(lambda: assignment.current_trial(session))
    assert trial.kind == TrialKind.ITEM
    _, report["record_response"] = captured(lambda: answer(trial))

    # A lapsed claim refreshed on reload.
    trial = assignment.current_trial(session)
    while trial.kind != TrialKind.ITEM:
        answer(trial)
        trial = assignment.current_trial(session)
    Trial.objects.filter(pk=trial.pk).update(claimed_at=timezone.now() - timedelta(days=1))
    kept, report["current_trial_lapsed_claim"] = captured(lambda: assignment.current_trial(session))
    report["lapsed_claim_kept"] = kept.pk == trial.pk
    # The trial page's heartbeat renewing that claim.
    renewed, report["renew_claim"] = captured(lambda: assignment.renew_claim(kept))
    report["heartbeat_renewed"] = renewed

    # A pick while another connection holds every candidate item but one: skipped, no wait.
    # The one left free is an item this session's slot can take (its layout, the people it
    # holds back), and not the pick's first choice: the pick must skip that one's lock.
    other = running_session(campaign, "probe-2")
    to_item_slot(other)
    seen = set(other.trials.exclude(source_video=None).values_list("source_video_id", flat=True))
    candidates = list(
        Item.objects.least_completed_first(campaign, exclude_video_ids=seen).values_list("id", flat=True)
    )
    first = _dry_pick(other)
    with _holding([first]):
        free = _dry_pick(other)
    with _holding([pk for pk in candidates if pk != free]):
        started = time.perf_counter()
        picked = assignment.current_trial(other)
        seconds = time.perf_counter() - started
    report["pick_while_locked"] = {
        "candidates": len(candidates),
        "first_choice_skipped": free != first and first in candidates,
        "picked_free_item": picked.item_id == free,
        "seconds": seconds,
    }
    return report


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]))))
