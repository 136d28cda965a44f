"""A double-clicked upload on PostgreSQL, for ``test_rater_locks_postgres.py``.

Run in a child process with ``DATABASE_URL`` set (a migrated database)::

    python -m tests.ops.upload_quota_probe ZIP

A phase takes one upload per team (failed ones count). Request A passes the quota check
and pauses before making its record; request B of the same team then comes in. Before the
fix B passed the same check (A's record did not exist yet) and both were stored; now B
waits for A's team lock and is refused. Prints one JSON object: what each request got
and how many uploads were stored.

``python -m tests.ops.upload_quota_probe --primaries``: two runs of one team made primary
at once (:func:`evalsite.phases.set_primary`), 20 times: the errors and primary counts.
"""

import json
import os
import sys
import threading

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402

from evalsite import uploads  # noqa: E402
from evalsite.models import Campaign, Phase, SubmissionUpload  # noqa: E402
from evalsite.phases import Refused  # noqa: E402
from evalsite.services import create_submission  # noqa: E402

#: Seconds the main thread gives B to pass the check while A pauses (B is blocked by
#: A's lock when the fix holds; without it B passes at once). Not an assertion on time.
B_CHANCE_S = 5


def main(zip_path: str) -> dict:
    campaign = Campaign.objects.create(name="Double click", slug="double-click")
    Phase.objects.create(campaign=campaign, name="test", max_uploads=1, failed_uploads_count=True)
    run = create_submission(campaign, "Team Quick", "quick-1", phase="test")
    a_checked, b_checked, go = threading.Event(), threading.Event(), threading.Event()
    real_check = uploads.check_upload

    def check(submission, **options):
        late = real_check(submission, **options)
        if threading.current_thread().name == "A":
            a_checked.set()
            go.wait(60)  # A holds whatever it holds here
        else:
            b_checked.set()
        return late

    uploads.check_upload = check
    results = {}

    def send(name):
        try:
            upload = uploads.receive_upload(run, zip_path)
            results[name] = f"stored ({upload.status})"
        except Refused as refused:
            results[name] = f"refused ({refused.code})"
        finally:
            connection.close()

    first = threading.Thread(target=send, args=("A",), name="A")
    second = threading.Thread(target=send, args=("B",), name="B")
    first.start()
    a_checked.wait(60)
    second.start()
    b_passed_while_a_paused = b_checked.wait(B_CHANCE_S)
    go.set()
    first.join(120)
    second.join(120)
    return {
        **results,
        "b_passed_the_check_while_a_paused": b_passed_while_a_paused,
        "stored": SubmissionUpload.objects.filter(submission=run).count(),
    }


def primaries(rounds: int = 20) -> dict:
    """Two runs of one team made primary at once, ``rounds`` times: the errors seen and the
    primary runs left after each round (exactly one when the choices are serialised)."""
    from evalsite import phases

    campaign = Campaign.objects.create(name="Two primaries", slug="two-primaries")
    Phase.objects.create(campaign=campaign, name="test")
    runs = [create_submission(campaign, "Team Twin", f"twin-{i}", phase="test") for i in (1, 2, 3)]
    errors, counts = [], []
    for _ in range(rounds):
        phases.set_primary(runs[0])
        start = threading.Barrier(2)

        def choose(run):
            try:
                start.wait(30)
                phases.set_primary(run)
            except Exception as error:  # noqa: BLE001 - reported to the test
                errors.append(type(error).__name__)
            finally:
                connection.close()

        pair = [threading.Thread(target=choose, args=(run,)) for run in runs[1:]]
        for thread in pair:
            thread.start()
        for thread in pair:
            thread.join(60)
        counts.append(campaign.submissions.filter(primary=True).count())
    return {"errors": errors, "primaries_after_each_round": sorted(set(counts))}


if __name__ == "__main__":
    if sys.argv[1] == "--primaries":
        print(json.dumps(primaries()))
    else:
        print(json.dumps(main(sys.argv[1])))
