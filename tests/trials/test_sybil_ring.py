"""A simulated Sybil ring (issue 19): 17 participant codes from one machine among an honest
crowd, carrying identities over from clear to masked videos (every answer right).

The carry-over cannot be prevented when a ring sees both a clear and a masked video of one
recording; what stops it is that the ring is one machine: every code after the first is
flagged at its join (a shared network address; the organizer had raised the cap to 20, a
lab), every flag excludes, and the report's figures leave flagged raters out while its
``with_flagged`` figures show what they would have done.
"""

import random

import pytest
from django.test import Client

from evalsite.reports import submission_summary
from trials import assignment, integrity
from trials.models import FlagKind, Item, RaterFlag, RatingSession, Response, SessionState, Task, TrialKind

RING_ADDRESS = "203.0.113.66"
RING = 17
#: Honest raters' chance of a right answer: (task, condition) -> probability.
HONEST = {
    ("identity", "clear"): 0.9,
    ("identity", "masked"): 0.25,
    ("action", "clear"): 0.8,
    ("action", "masked"): 0.7,
}


@pytest.fixture(autouse=True)
def scripted(settings):
    settings.TRIALS_PLAUSIBILITY_CHECKS = False  # scripted raters fetch no media
    settings.TRIALS_MAX_SESSIONS_PER_ADDRESS = 20  # the organizer allowed a lab: the ring gets in


def _joined(campaign, code, address):
    reply = Client(REMOTE_ADDR=address).post(f"/join/{campaign.join_code}/", {"participant_code": code})
    assert reply.status_code == 302, reply.content[:300]
    RatingSession.objects.filter(rater__participant_code=code).update(state=SessionState.RUNNING)
    return RatingSession.objects.get(rater__participant_code=code)


def _play(session, rng, *, ring: bool) -> None:
    while (trial := assignment.current_trial(session)) is not None:
        choices = assignment.valid_choices(trial)
        condition = "masked" if trial.item_id and trial.item.masked_video_id else "clear"
        right = ring or trial.kind != TrialKind.ITEM or rng.random() < HONEST[(trial.task, condition)]
        choice = (
            trial.correct_choice if right else rng.choice([c for c in choices if c != trial.correct_choice])
        )
        try:
            assignment.record_response(trial, {"choice": choice, "response_time_ms": 3000})
        except assignment.TrialExpired:
            continue


def test_a_ring_of_17_codes_from_one_machine_is_flagged_and_left_out_of_the_report(grid_campaign):
    Item.objects.update(target_count=6)
    rng = random.Random(19)
    arrivals = [("ring", i) for i in range(RING)] + [("honest", i) for i in range(RING)]
    rng.shuffle(arrivals)
    arrivals.insert(0, arrivals.pop(next(i for i, (kind, _) in enumerate(arrivals) if kind == "ring")))
    honest_codes = []
    for kind, i in arrivals:  # the ring arrives first and keeps coming among honest raters
        code = f"{kind}-{i}"
        address = RING_ADDRESS if kind == "ring" else f"198.51.100.{i + 1}"
        _play(_joined(grid_campaign, code, address), rng, ring=kind == "ring")
        honest_codes += [code] if kind == "honest" else []
    n = len(honest_codes)
    while Item.objects.missing_responses(grid_campaign).exists():  # honest raters fill the rest
        code = f"honest-{n}"
        _play(_joined(grid_campaign, code, f"198.51.{100 + n // 250}.{n % 250 + 1}"), rng, ring=False)
        honest_codes.append(code)
        n += 1
        assert n < 200

    ring = RatingSession.objects.filter(rater__participant_code__startswith="ring-")
    ring_raters = set(ring.values_list("rater_id", flat=True))
    assert len(ring_raters) == RING and len(set(ring.values_list("address_hash", flat=True))) == 1
    # Every ring code is flagged for the shared address (the reason names the 16 others) and excluded.
    flags = RaterFlag.objects.filter(kind=FlagKind.SHARED_ADDRESS)
    assert set(flags.values_list("rater_id", flat=True)) == ring_raters
    assert all(flag.reason.count(",") == RING - 2 for flag in flags)
    assert not ring.filter(rater__excluded=False).exists()
    flagged = integrity.flagged_rater_ids(grid_campaign)
    honest = set(
        RatingSession.objects.filter(rater__participant_code__in=honest_codes).values_list(
            "rater_id", flat=True
        )
    )
    assert ring_raters <= flagged and not (flagged & honest)
    # The first ring code answered evaluated trials before the second joined: all right.
    ring_answers = Response.objects.filter(trial__session__in=ring, trial__kind=TrialKind.ITEM)
    assert ring_answers.exists() and not ring_answers.filter(correct=False).exists()

    # The report's figures are the honest crowd's, to the response: ...
    human = submission_summary(grid_campaign.submissions.get())["human"]
    honest_answers = Response.objects.filter(trial__session__rater__in=honest, trial__kind=TrialKind.ITEM)
    for task, key in ((Task.IDENTITY, "id"), (Task.ACTION, "action")):
        for condition, masked in (("clear", True), ("masked", False)):
            rows = honest_answers.filter(trial__task=task, trial__item__masked_video__isnull=masked)
            n_rows, k = rows.count(), rows.filter(correct=True).count()
            items = Item.objects.evaluated(grid_campaign).filter(task=task, masked_video__isnull=masked)
            assert human[f"{key}_n_{condition}"] == n_rows == 6 * items.count() > 0  # every target met
            assert human[f"{key}_accuracy_{condition}"] == pytest.approx(k / n_rows)
            low, high = human[f"{key}_ci_{condition}"]
            assert low <= k / n_rows <= high
    # ... and the ring's answers are in the figures with flagged raters counted.
    assert human["with_flagged"]["n_responses"] == human["n_responses"] + ring_answers.count()
    assert human["n_excluded_raters"] >= 1 and human["n_excluded_responses"] == ring_answers.count()
