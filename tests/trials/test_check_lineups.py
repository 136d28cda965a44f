"""Attention checks that lineup make-up does not give away (issue 19, hostile pass 2, #2).

Checks used to draw their lineup from every identity with a gallery face, so GRID's 4
women (a group too thin for evaluated lineups) appeared in checks only: 32 of 75 checks
showed such a face, 0 of 9 evaluated lineups. A strategist then spotted checks by who was
in the lineup. Checks now draw a lineup block minus one member, like evaluated lineups
(:func:`trials.design.check_lineup`). Replayed here: the share of check lineups with a
face never seen in an evaluated lineup, and a make-up classifier (trained on other
sessions) against chance, on the demo's shape in pure Python (with the old rule, to show
the classifier catches it) and on the real GRID campaign through the assignment code.
"""

import random
from collections import Counter

from scipy.stats import binomtest

from trials import assignment, design
from trials.models import RatingSession, SessionState, Trial

from .test_strategists import ATTRS, N_FOILS, PEOPLE, SHARE, VIDEOS


def makeup_classifier(rows, n_groups: int):
    """Hits of a lineup make-up classifier, leave-one-group-out, on a balanced test set.

    ``rows``: (group, is_check, lineup). Trained on the other groups' rows, it calls a
    lineup a check when it shows a face that no evaluated lineup there showed, or when
    lineups of the same make-up (the same set of faces) were checks more often than
    lineups overall. Tested on every evaluated lineup and as many checks (evenly spread),
    so chance is 1/2.

    Returns
    -------
    hits, n : int
    p : float
        One-sided binomial p-value of ``hits`` against 1/2.
    """
    items = [row for row in rows if not row[1]]
    checks = [row for row in rows if row[1]]
    step = max(1, len(checks) // max(1, len(items)))
    tested = items + checks[::step][: len(items)]
    hits = 0
    for group, is_check, lineup in tested:
        train = [row for row in rows if row[0] != group]
        in_items = {face for _, check, faces in train if not check for face in faces}
        same = [check for _, check, faces in train if frozenset(faces) == frozenset(lineup)]
        overall = sum(check for _, check, _ in train) / len(train)
        guess = any(face not in in_items for face in lineup) or (
            bool(same) and sum(same) / len(same) > overall
        )
        hits += guess == is_check
    n = len(tested)
    return hits, n, binomtest(hits, n, 0.5, alternative="greater").pvalue


def off_evaluated_share(rows) -> tuple[int, int]:
    """Check lineups showing a face that no evaluated lineup shows, and checks in all."""
    in_items = {face for _, check, faces in rows if not check for face in faces}
    checks = [faces for _, check, faces in rows if check]
    return sum(any(face not in in_items for face in faces) for faces in checks), len(checks)


def demo_rows(check_rule, *, sessions=60, seed=0):
    """Rows of ``sessions`` simulated sessions of the demo's shape (13 men, of whom 12 in 2
    blocks, and 4 women): one evaluated identity lineup and 5 checks each."""
    plan = design.exposure_plan(VIDEOS, PEOPLE, ATTRS, n_foils=N_FOILS, target_absent_share=SHARE)
    targets = [key for key, p in plan.items() if p.block for _ in range(p.kept)]
    blocks = Counter()
    for key in targets:
        blocks[plan[key].block] += 1
    rng = random.Random(seed)
    rows = []
    for s in range(sessions):
        target = rng.choice(targets)
        lineup, _ = design.balanced_lineup(target, plan[target].block, n_foils=N_FOILS, rng=rng)
        rows.append((s % 10, False, lineup))
        rows += [(s % 10, True, check_rule(blocks, rng)) for _ in range(5)]
    return rows


def new_check(blocks, rng):
    return design.check_lineup(blocks, n_foils=N_FOILS, rng=rng)[0]


def old_check(blocks, rng):
    """The rule before: a target from every identity, matched foils (filled from other groups)."""
    target = rng.choice(sorted(PEOPLE))
    return design.build_lineup_relaxed(target, PEOPLE, ATTRS, n_foils=N_FOILS, target_present=True, rng=rng)[
        0
    ]


def test_check_lineup_is_a_block_minus_one_and_shows_one_of_its_faces():
    blocks = {("a", "b", "c", "d", "e", "f"): 1.0}
    rng = random.Random(0)
    dropped = Counter()
    for _ in range(600):
        lineup, shown = design.check_lineup(blocks, n_foils=4, rng=rng)
        assert len(lineup) == 5 == len(set(lineup)) and set(lineup) < set("abcdef") and shown in lineup
        dropped.update(set("abcdef") - set(lineup))
    assert binomtest(dropped["a"], 600, 1 / 6).pvalue > 0.001  # each member dropped 1/6 of the time
    # Blocks are drawn by weight.
    two = {("a", "b", "c", "d", "e", "f"): 3, ("g", "h", "i", "j", "k", "l"): 1}
    picked = Counter(
        "first" if set(design.check_lineup(two, n_foils=4, rng=rng)[0]) <= set("abcdef") else "second"
        for _ in range(800)
    )
    assert binomtest(picked["first"], 800, 0.75).pvalue > 0.001
    for bad, message in (({}, "at least one lineup block"), ({("a",) * 6: 0}, "weights must be > 0")):
        try:
            design.check_lineup(bad, n_foils=4, rng=rng)
        except ValueError as error:
            assert message in str(error)
        else:
            raise AssertionError(f"{bad} accepted")


def test_check_lineups_of_the_demo_shape_are_not_spotted_by_make_up():
    old = demo_rows(old_check)
    new = demo_rows(new_check)
    off_old, off_new = off_evaluated_share(old), off_evaluated_share(new)
    assert off_old[0] > 0.15 * off_old[1]  # women (and leftover men): only ever in checks
    assert off_new == (0, 300)
    old_hits, old_n, old_p = makeup_classifier(old, 10)
    assert old_p < 0.01, f"old rule: the classifier should spot checks, {old_hits}/{old_n}"
    hits, n, p = makeup_classifier(new, 10)
    print(
        f"demo shape: off-evaluated checks old {off_old}, new {off_new}; make-up classifier "
        f"old {old_hits}/{old_n} (p = {old_p:.3g}), new {hits}/{n} (p = {p:.3g})"
    )
    assert p >= 0.01, f"{hits}/{n} checks told from evaluated lineups by make-up (p = {p:.2g})"


def _session_lineups(campaign, code, seed):
    """Answer a whole session with a pinned seed and plan; rows (session, is_check, lineup) of its
    identity trials (practice still-probes are left out: they come before the study)."""
    session = assignment.join(campaign, participant_code=code)
    plan, _ = assignment.layout(campaign, seed)  # pinned too: the outcome is the same on every run
    RatingSession.objects.filter(pk=session.pk).update(state=SessionState.RUNNING, seed=seed, plan=plan)
    session.refresh_from_db()
    while (trial := assignment.current_trial(session)) is not None:
        assignment.record_response(
            trial, {"choice": assignment.valid_choices(trial)[0], "response_time_ms": 2000}
        )
    rows = []
    for trial in Trial.objects.filter(session=session, task="identity", kind__in=["item", "catch"]):
        faces = list(trial.faces.order_by("position").values_list("gallery_image__identity_id", flat=True))
        rows.append((code, trial.kind == "catch", faces))
    return rows


def test_grid_check_lineups_show_only_evaluated_lineup_faces(db, media_root, data_dir, grid_cache, settings):
    from tests.crowd.simulation import build_grid_campaign
    from trials.services import open_rating

    settings.TRIALS_PLAUSIBILITY_CHECKS = False
    campaign = build_grid_campaign(
        data_dir, grid_cache, raters_per_video=6, attention_check_rate=0.5, name="checks"
    )
    open_rating(campaign, prepare_media=False)
    plans, _ = assignment.identity_plans(campaign)
    women = {pk for pk, plan in plans.items() if not plan.block}
    assert len(women) == 4  # GRID's thin group: no evaluated identity trials
    rows = []
    for i in range(36):
        rows += _session_lineups(campaign, f"check-{i}", seed=1000 + i)
    kinds = Counter(check for _, check, _ in rows)
    # A check takes a block like an evaluated identity trial (one block on GRID): each
    # session serves one identity-task slot, a check with probability 5/6 at this rate
    # (trials.design.session_layout: 5 planned checks, 1 evaluated slot). Before, checks
    # reused spent blocks (4 or 5 a session) and were spotted by that (hostile pass 3).
    assert kinds[True] + kinds[False] >= 30 and kinds[True] >= 20 and kinds[False] >= 2  # 25 + 9
    off, n_checks = off_evaluated_share(rows)
    assert off == 0, f"{off}/{n_checks} check lineups show a face no evaluated lineup shows"
    assert not any(women & set(faces) for _, _, faces in rows)
    hits, n, p = makeup_classifier(rows, 12)
    print(
        f"GRID: {n_checks} checks, {kinds[False]} evaluated lineups, off-evaluated {off}; classifier {hits}/{n}, p = {p:.3g}"
    )
    assert p >= 0.01
