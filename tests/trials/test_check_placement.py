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
from trials.models import Item, RatingSession, SessionState, TrialKind

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
        while (trial := assignment.current_trial(session)) is not None:
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
