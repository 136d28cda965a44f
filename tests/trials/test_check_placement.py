"""Attention checks cannot be told from evaluated identity trials by their place (issue 19,
hostile pass 3).

Before: a check could take a lineup block the session had already spent, an evaluated
identity trial never did, and the evaluated one came first after practice (299/300
sessions): "an identity trial after the session's first" spotted 159/159 checks at the
default rate and a lazy rater who guessed except where that rule fired passed 80/80.

Now a check is drawn like an evaluated identity trial: it takes a block the session has
shown nobody of (and spends it), and the slots of both are drawn together, uniformly
among the first study positions, the checks a uniform subset of them
(:func:`trials.design.session_layout`). Sessions are played through the assignment
service with pinned seeds (so every figure below is the same on every run).
"""

import random
from collections import Counter

from scipy.stats import binomtest, chi2_contingency

from trials import assignment, design
from trials.models import Item, RatingSession, SessionState, Trial, TrialKind

from .test_sybil_ring import HONEST

N_SESSIONS = 80


def _served(plan, identity, n_blocks):
    """Kinds of the slots a session serves: the first ``n_blocks`` of its identity-task
    slots (checks and evaluated), as :func:`trials.assignment._new_trial` does when every
    slot finds a block with an item."""
    slots = sorted(
        [(p, "catch") for p, kind in enumerate(plan) if kind == design.CATCH]
        + [(p, "item") for p in identity]
    )
    return slots[:n_blocks]


def test_layout_puts_checks_where_evaluated_identity_trials_go():
    """Pure: over 4,000 layouts, served checks and served evaluated identity slots have one
    distribution of positions (chi-square of position x kind), and the checks per session
    are :func:`trials.design.expected_checks` within binomial bounds."""
    for n_blocks, n_free, rate in ((1, 4, 0.1), (5, 0, 0.1), (3, 6, 0.3), (2, 10, 0.1)):
        rng = random.Random(n_blocks * 100 + n_free)
        table = Counter()
        per_session = []
        n_sessions = 4000
        for _ in range(n_sessions):
            plan, identity = design.session_layout(
                n_practice=2,
                n_evaluated=10,
                attention_check_rate=rate,
                n_blocks=n_blocks,
                n_free=n_free,
                rng=rng,
            )
            assert len(plan) == 2 + 10 + round(10 * rate)  # the length never tells anything
            served = _served(plan, identity, n_blocks)
            for position, kind in served:
                table[position, kind] += 1
            per_session.append(sum(kind == "catch" for _, kind in served))
        positions = sorted({p for p, _ in table})
        rows = [[table[p, "catch"] for p in positions], [table[p, "item"] for p in positions]]
        p_position = chi2_contingency(rows).pvalue
        n_catch = round(10 * rate)
        expected = design.expected_checks(n_catch, max(n_blocks - n_catch, 1), n_blocks)
        mean = sum(per_session) / n_sessions
        sd = (sum((x - mean) ** 2 for x in per_session) / (n_sessions - 1)) ** 0.5
        print(
            f"blocks {n_blocks}, free people {n_free}, rate {rate}: served positions {positions}, "
            f"position x kind chi-square p = {p_position:.3g}; checks a session {mean:.3f} "
            f"(expected {expected:.3f}, sd {sd:.2f})"
        )
        assert p_position > 0.01
        assert abs(mean - expected) <= 3.3 * sd / n_sessions**0.5  # two-sided 0.001
        # With more blocks than checks, the campaign's rate is met exactly.
        if n_blocks > n_catch:
            assert set(per_session) == {n_catch}


def _pinned(campaign, code, seed):
    session = assignment.join(campaign, participant_code=code)
    plan, _ = assignment.layout(campaign, seed)
    RatingSession.objects.filter(pk=session.pk).update(seed=seed, plan=plan, state=SessionState.RUNNING)
    session.refresh_from_db()
    return session


def test_no_positional_rule_spots_checks(grid_campaign, settings):
    """80 sessions on the GRID campaign at its default check rate (0.1 of 10 evaluated
    trials: one planned check a session), answered like an honest crowd except on identity
    trials, where a lazy rater guesses unless a rule says "check" (then it answers the
    check right). Every rule a rater can apply without watching is at chance, and the
    sessions hold the checks the layout promises (one block: a session serves its check or
    its evaluated identity trial, whichever slot comes first; 1/2 each)."""
    settings.TRIALS_PLAUSIBILITY_CHECKS = False
    Item.objects.update(target_count=400)
    plans, _ = assignment.identity_plans(grid_campaign)
    block_of = {identity: plan.block for identity, plan in plans.items() if plan.block}
    rng = random.Random(19)
    rows = []  # (session, index in study, kind, features)
    checks_per_session = []
    lengths = Counter()  # (study trials, served a check) per session
    came_back = Counter()  # (is check, its person shown in a later video of the session)
    lazy_passed = 0
    rules = {
        "not the first identity trial of its session": lambda f: f["n_identity_before"] > 0,
        "first identity trial of its session": lambda f: f["n_identity_before"] == 0,
        "after a trial showing a member of its block": lambda f: f["block_member_before"],
        "its lineup shows a person the session showed": lambda f: f["face_seen_before"],
        "first study trial": lambda f: f["index"] == 0,
        "not the first study trial": lambda f: f["index"] > 0,
    }
    for i in range(N_SESSIONS):
        session = _pinned(grid_campaign, f"c-{i}", 1000 + i)
        n_practice = session.plan.count(design.PRACTICE)
        shown = set()  # identities shown in a video (or a check's face) so far
        n_identity = 0
        n_checks = 0
        identity_task_person = None  # (is check, the person its video or face showed)
        later_videos = set()  # people shown in a video after the identity-task trial
        while (trial := assignment.current_trial(session)) is not None:
            if identity_task_person and trial.source_video_id:
                later_videos.add(trial.source_video.identity_id)
            choices = assignment.valid_choices(trial)
            condition = "masked" if trial.item_id and trial.item.masked_video_id else "clear"
            if trial.kind != TrialKind.PRACTICE and trial.task == "identity":
                faces = set(trial.faces.values_list("gallery_image__identity_id", flat=True))
                block = next(block_of[f] for f in faces if f in block_of)
                features = {
                    "index": trial.position - n_practice,
                    "n_identity_before": n_identity,
                    "block_member_before": bool(shown & set(block)),
                    "face_seen_before": bool(shown & faces),
                }
                is_check = trial.kind == TrialKind.CATCH
                rows.append((i, features["index"], is_check, features))
                person = trial.target_identity_id if is_check else trial.source_video.identity_id
                identity_task_person = (is_check, person)
                n_identity += 1
                n_checks += is_check
                lazy = rules["not the first identity trial of its session"](features)
                choice = trial.correct_choice if lazy else rng.choice(choices)
                lazy_passed += is_check and choice == trial.correct_choice
            else:
                p = 0.95 if trial.kind != TrialKind.ITEM else HONEST[(trial.task, condition)]
                right = rng.random() < p
                choice = (
                    trial.correct_choice
                    if right
                    else rng.choice([c for c in choices if c != trial.correct_choice])
                )
            if trial.source_video_id:
                shown.add(trial.source_video.identity_id)
            if trial.kind == TrialKind.CATCH:
                shown.add(trial.target_identity_id)
            assignment.record_response(trial, {"choice": choice, "response_time_ms": 3000})
        checks_per_session.append(n_checks)
        lengths[session.trials.exclude(kind=TrialKind.PRACTICE).count(), n_checks] += 1
        if identity_task_person:
            came_back[identity_task_person[0], identity_task_person[1] in later_videos] += 1

    n = len(rows)
    n_checks = sum(is_check for _, _, is_check, _ in rows)
    majority = max(n_checks, n - n_checks) / n
    print(f"{N_SESSIONS} sessions: {n} identity-task trials, {n_checks} checks ({n_checks / n:.2f})")
    print(
        "positions in the study (index: checks/identity trials):",
        {
            index: f"{sum(c for _, j, c, _ in rows if j == index)}/{sum(1 for _, j, _, _ in rows if j == index)}"
            for index in sorted({j for _, j, _, _ in rows})
        },
    )
    for name, rule in rules.items():
        hits = sum(rule(f) == is_check for _, _, is_check, f in rows)
        fired = sum(rule(f) for _, _, _, f in rows)
        p = binomtest(hits, n, majority, alternative="greater").pvalue
        print(f"rule '{name}': fired {fired}/{n}, right {hits}/{n} (majority {majority:.2f}, p = {p:.3g})")
        assert p > 0.01, name
    # Exact counts: no identity trial (check or evaluated) follows another of its session,
    # a trial of a member of its block, or shows a face the session showed before.
    assert all(f["n_identity_before"] == 0 and not f["block_member_before"] for *_, f in rows)
    assert not any(f["face_seen_before"] for *_, f in rows)
    # The index in the study: one distribution for checks and evaluated identity trials.
    indices = sorted({j for _, j, _, _ in rows})
    table = [
        [sum(1 for _, j, c, _ in rows if j == index and c == kind) for index in indices]
        for kind in (True, False)
    ]
    p_index = chi2_contingency(table).pvalue
    print(f"index x kind: chi-square p = {p_index:.3g}")
    assert p_index > 0.01
    # The lazy rater passes checks at chance (1/6).
    p_lazy = binomtest(lazy_passed, n_checks, 1 / 6, alternative="greater").pvalue
    print(
        f"lazy rater (guesses unless 'not the first identity trial'): checks passed {lazy_passed}/{n_checks} (p = {p_lazy:.3g})"
    )
    assert p_lazy > 0.01
    # The check rate: each session serves one identity slot, a check with probability 1/2
    # (trials.design.expected_checks(1, 1, 1)); every session served one.
    expected = design.expected_checks(1, 1, 1)
    p_rate = binomtest(sum(checks_per_session), N_SESSIONS, expected).pvalue
    print(
        f"checks per session: {Counter(checks_per_session)} (expected {expected} each, binomial p = {p_rate:.3g})"
    )
    assert n == N_SESSIONS and set(checks_per_session) <= {0, 1}
    assert p_rate > 0.01
    # The session's length and the people it shows: a check holds back its face's person
    # as an evaluated trial holds back its target. GRID has 10 people for 11 study
    # positions, so every session shows 10 study trials, with its check (1 + 9 videos) or
    # its evaluated identity trial (10 videos); before (review of 05213db) check sessions
    # showed 11 and evaluated ones 10 (30/30 told apart), and a check's face came back in
    # a later action video (14/14 checks, 0/16 evaluated trials).
    print(
        f"(study trials, checks) per session: {sorted(lengths.items())}; (check, person back): {sorted(came_back.items())}"
    )
    assert {length for length, _ in lengths} == {10}
    assert {checks for _, checks in lengths} == {0, 1}
    assert not any(back for _, back in came_back)


def test_pulled_forward_slots_tell_nothing(grid_campaign, settings):
    """The items of the 4 people in no block (the women) are full: every study position
    before the session's first identity-task slot would have to show a man and spend the
    block, so the first slot, check or evaluated, is pulled forward to the first study
    position (trials.assignment._new_trial) and not served again at its own. 30 sessions
    with pinned seeds: each serves one identity-task trial, at study index 0; the share of
    checks there is the layout's 1/2 within binomial bounds, and the sessions' lengths do
    not depend on it: 6 study trials each (the identity-task trial, then the action items
    of the 5 men it did not hold back)."""
    settings.TRIALS_PLAUSIBILITY_CHECKS = False
    Item.objects.update(target_count=400)
    plans, _ = assignment.identity_plans(grid_campaign)
    in_block = {identity for plan in plans.values() if plan.block for identity in plan.block}
    assert len(in_block) == 6
    Item.objects.exclude(source_video__identity_id__in=in_block).update(target_count=0)
    rng = random.Random(5)
    served = []  # (study index, is check, study trials of its session)
    for i in range(30):
        session = _pinned(grid_campaign, f"pull-{i}", 2000 + i)
        n_practice = session.plan.count(design.PRACTICE)
        identity_task = []
        while (trial := assignment.current_trial(session)) is not None:
            if trial.kind != TrialKind.PRACTICE and trial.task == "identity":
                identity_task.append((trial.position - n_practice, trial.kind == TrialKind.CATCH))
            assignment.record_response(
                trial, {"choice": rng.choice(assignment.valid_choices(trial)), "response_time_ms": 3000}
            )
        assert len(identity_task) == 1
        served.append((*identity_task[0], session.trials.exclude(kind=TrialKind.PRACTICE).count()))
    n_checks = sum(is_check for _, is_check, _ in served)
    print(f"pulled forward: {n_checks}/{len(served)} checks; {Counter(served)}")
    assert {index for index, _, _ in served} == {0}
    assert {length for _, _, length in served} == {6}
    assert binomtest(n_checks, len(served), 0.5).pvalue > 0.01


def test_a_slot_pulled_to_a_used_slot_is_not_served_again(grid_campaign):
    """``_pending_slots`` by hand: slots 3, 5, 7. An identity-task trial at position 2 (no
    slot) used slot 3; the one at position 3 (a used slot) was then pulled forward too and
    used slot 5: at position 4 only slot 7 is pending (before: 5 and 7, so slot 5 came
    twice). A trial served at its own slot uses that slot only."""
    session = _pinned(grid_campaign, "pending", 7)
    for position, kind in ((2, TrialKind.CATCH), (3, TrialKind.ITEM)):
        Trial.objects.create(
            session=session, position=position, kind=kind, task="identity", correct_choice="1"
        )
    session.position = 4
    assert assignment._pending_slots(session, [3, 5, 7]) == [7]
    assert assignment._pending_slots(session, [2, 3, 5, 7]) == [5, 7]  # both at own slots
    # Slots 1, 5, 7: the trial at 2 (no slot) used 5, the one at 3 (no slot) used 7.
    assert assignment._pending_slots(session, [1, 5, 7]) == []
