"""Strategists against evaluated lineups (issue 19): base rates, recurrence, group make-up.

A campaign is built in the test (the demo's shape: 4 women, and men of whom ID01 has 5
evaluated videos, ID11 4, ID07 3, the others 1), every item rated by 10 raters with the
lineups :mod:`trials.design` builds, and each strategy that needs no face recognition is
replayed on every trial. None may beat chance (1/6: 5 faces + "not present") at
p < 0.01 (one-sided binomial test); the same strategies on the old lineups (random
matched foils) do, which shows the test can fail.
"""

import random
from collections import Counter, defaultdict

import pytest
from scipy.stats import binomtest

from trials import design

N_FOILS, SHARE, RATERS, MASKED_CONDITIONS = 4, 0.2, 10, 3
CHANCE = 1 / 6
ATTRS = ["gender"]
VIDEOS = (
    {"ID01": 5, "ID11": 4, "ID07": 3} | {f"M{i:02d}": 1 for i in range(10)} | {f"W{i}": 1 for i in range(4)}
)
PEOPLE = {key: {"gender": "female" if key.startswith("W") else "male"} for key in VIDEOS}


def served_trials(lineup_of, plan=None, seed=0):
    """(target, video, lineup, present) of every trial: each kept video x (clear + masked
    conditions) x RATERS raters."""
    rng = random.Random(seed)
    trials = []
    for target, n in VIDEOS.items():
        kept = n if plan is None else plan[target].kept
        for video in range(kept):
            for _ in range((1 + MASKED_CONDITIONS) * RATERS):
                lineup, present = lineup_of(target, rng)
                trials.append((target, f"{target}-v{video}", lineup, present))
    return trials


def new_design():
    plan = design.exposure_plan(VIDEOS, PEOPLE, ATTRS, n_foils=N_FOILS, target_absent_share=SHARE)

    def lineup_of(target, rng):
        return design.balanced_lineup(target, plan[target].block, n_foils=N_FOILS, rng=rng)

    return served_trials(lineup_of, plan)


def old_design():
    def lineup_of(target, rng):
        return design.trial_lineup(target, PEOPLE, ATTRS, n_foils=N_FOILS, target_absent_share=SHARE, rng=rng)

    return served_trials(lineup_of)


def score(trials, pick) -> tuple[int, int, float]:
    """Correct picks, trials, and the one-sided binomial p-value against CHANCE."""
    right = 0
    for target, video, lineup, present in trials:
        choice = pick(target, video, lineup)
        right += choice == (target if present else design.NOT_PRESENT)
    return right, len(trials), binomtest(right, len(trials), CHANCE, alternative="greater").pvalue


def base_rate_pick(trials):
    """Pick the face of the identity with the most evaluated videos (ties at random)."""
    rng = random.Random(1)
    return lambda target, video, lineup: max(lineup, key=lambda key: (VIDEOS[key], rng.random()))


def recurrence_pick(trials, link):
    """A Sybil ring pools the lineups of linked trials (same video, or same person: linked by
    clothes) and picks the face shown most often among them."""
    seen = defaultdict(Counter)
    for target, video, lineup, _ in trials:
        seen[link(target, video)].update(lineup)
    rng = random.Random(2)
    return lambda target, video, lineup: max(
        lineup, key=lambda key: (seen[link(target, video)][key], rng.random())
    )


def least_recurrence_pick(trials, link):
    """The mirror image: the face shown least often (the target is dropped as often as a foil?)."""
    seen = defaultdict(Counter)
    for target, video, lineup, _ in trials:
        seen[link(target, video)].update(lineup)
    rng = random.Random(3)
    return lambda target, video, lineup: min(
        lineup, key=lambda key: (seen[link(target, video)][key], rng.random())
    )


def by_video(target, video):
    return video


def by_person(target, video):
    return target


STRATEGIES = {
    "base rate": base_rate_pick,
    "recurrence per video": lambda trials: recurrence_pick(trials, by_video),
    "recurrence per person": lambda trials: recurrence_pick(trials, by_person),
    "least recurrence per person": lambda trials: least_recurrence_pick(trials, by_person),
    "always not present": lambda trials: lambda target, video, lineup: design.NOT_PRESENT,
}


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_no_strategy_without_recognition_beats_chance(name):
    trials = new_design()
    right, n, p = score(trials, STRATEGIES[name](trials))
    assert n == 12 * (1 + MASKED_CONDITIONS) * RATERS  # 2 blocks of 6 men, one video each
    assert p >= 0.01, f"{name}: {right}/{n} = {right / n:.3f} beats chance 1/6 (p = {p:.2g})"


@pytest.mark.parametrize("name", ["base rate", "recurrence per video", "recurrence per person"])
def test_the_same_strategies_beat_chance_on_random_matched_foils(name):
    trials = old_design()
    right, n, p = score(trials, STRATEGIES[name](trials))
    assert p < 1e-6, f"{name}: {right}/{n}"  # the 36 % (base rate) and 46 % (recurrence)


def test_every_shown_face_is_the_answer_equally_often():
    # P(target | shown) per identity: 1/6 for each (5/6 present, 1 of 5 faces).
    shown, answer = Counter(), Counter()
    for target, _, lineup, present in new_design():
        shown.update(lineup)
        answer[target] += present
    for key in shown:
        assert binomtest(answer[key], shown[key], CHANCE).pvalue > 0.001, key
    # Exposure is equal: every identity of a block is shown equally often (within noise).
    assert max(shown.values()) / min(shown.values()) < 1.2


def test_thin_group_is_excluded_and_no_lineup_mixes_groups():
    plan = design.exposure_plan(VIDEOS, PEOPLE, ATTRS, n_foils=N_FOILS, target_absent_share=SHARE)
    for woman in ("W0", "W1", "W2", "W3"):
        assert plan[woman].kept == 0 and plan[woman].block == ()
        assert plan[woman].reason == (
            f"identity {woman} (gender=female): its group has 4 identities with evaluated videos, a lineup "
            "that does not reveal the answer by its make-up needs 6 (5 faces + 1 for target-absent "
            "trials): its videos get no identity trials"
        )
    # Men: 13, blocks of 6 sorted by videos; the 13th (fewest videos) is left over.
    assert plan["ID01"].block == ("ID01", "ID11", "ID07", "M00", "M01", "M02")
    assert (plan["ID01"].kept, plan["ID11"].kept, plan["ID07"].kept) == (1, 1, 1)
    assert "5 evaluated videos, but its lineup block's identities have 1 each" in plan["ID01"].reason
    assert "4 of its videos get no identity trials" in plan["ID01"].reason
    assert plan["M09"].kept == 0 and "left over with the fewest videos" in plan["M09"].reason
    trials = new_design()
    assert {t for t, *_ in trials} == {"ID01", "ID11", "ID07"} | {f"M{i:02d}" for i in range(9)}
    assert all({PEOPLE[key]["gender"] for key in lineup} == {"male"} for _, _, lineup, _ in trials)
    # The make-up says nothing about presence: both kinds of lineup are 5 men.
    absent = [t for t in trials if not t[3]]
    assert binomtest(len(absent), len(trials), 1 / 6).pvalue > 0.001


def test_old_lineups_of_a_thin_group_give_presence_away():
    # The "4 women + 1 man always hold the target": the old relaxed lineups.
    rng = random.Random(5)
    for _ in range(50):
        lineup, present = design.trial_lineup(
            "W0", PEOPLE, ATTRS, n_foils=N_FOILS, target_absent_share=SHARE, rng=rng
        )
        assert present and Counter(PEOPLE[k]["gender"] for k in lineup) == {"female": 4, "male": 1}


def test_block_size_and_absent_share():
    assert design.draw_size(4, 0.2) == 6 and design.draw_size(4, 0.0) == 5
    assert design.effective_absent_share(4, 0.2) == pytest.approx(1 / 6)
    assert design.effective_absent_share(4, 0.0) == 0.0
    people = {f"p{i}": {"g": "x"} for i in range(5)}
    plan = design.exposure_plan({k: 1 for k in people}, people, ["g"], n_foils=4, target_absent_share=0.0)
    rng = random.Random(0)
    for _ in range(20):
        lineup, present = design.balanced_lineup("p0", plan["p0"].block, n_foils=4, rng=rng)
        assert present and sorted(lineup) == sorted(people)
    with pytest.raises(ValueError, match="not in its block"):
        design.balanced_lineup("zz", plan["p0"].block, n_foils=4, rng=rng)
    with pytest.raises(ValueError, match="a block holds 3 or 4 identities, got 5"):
        design.balanced_lineup("p0", plan["p0"].block, n_foils=2, rng=rng)
    with pytest.raises(ValueError, match="video counts must be >= 0"):
        design.exposure_plan({"p0": -1}, people, ["g"], n_foils=4, target_absent_share=0.0)


def test_missing_attribute_value_is_a_group_of_one():
    people = {f"p{i}": {"g": "x"} for i in range(6)} | {"u": {"g": "unknown"}}
    plan = design.exposure_plan({k: 1 for k in people}, people, ["g"], n_foils=4, target_absent_share=0.2)
    assert plan["u"].kept == 0 and "a missing attribute value, which matches nobody" in plan["u"].reason
    assert plan["p0"].kept == 1 and len(plan["p0"].block) == 6


# --- through assignment, on the real GRID campaign (4 women, 6 men) --------------------

from evalsite.models import SourceVideo  # noqa: E402
from trials import assignment  # noqa: E402
from evalsite.reports import per_video_report  # noqa: E402
from trials.models import Item, Rater, RatingSession, SessionState, Trial  # noqa: E402

from .sessions import with_check_first, with_identity_first  # noqa: E402


def _run_session(campaign, code, *, flag_after=None, check_first=False, identity_first=False):
    """Answer a whole session (first choice each time); flag and exclude the rater after
    ``flag_after`` evaluated answers. Returns its trials in order. ``check_first``: laid
    out to serve its attention check (:func:`tests.trials.sessions.with_check_first`);
    ``identity_first``: its evaluated identity trial (``with_identity_first``)."""
    session = assignment.join(campaign, participant_code=code)
    RatingSession.objects.filter(pk=session.pk).update(state=SessionState.RUNNING)
    session.refresh_from_db()
    if check_first:
        session = with_check_first(session)
    if identity_first:
        session = with_identity_first(session)
    answered = 0
    while (trial := assignment.current_trial(session)) is not None:
        assignment.record_response(
            trial, {"choice": assignment.valid_choices(trial)[0], "response_time_ms": 2000}
        )
        answered += trial.kind == "item"
        if answered == flag_after:
            Rater.objects.filter(pk=session.rater_id).update(flagged=True, excluded=True, flag_reason="test")
    return list(Trial.objects.filter(session=session).order_by("position")), session


@pytest.fixture
def second_clip_of_a_man(grid_campaign):
    """A second evaluated clip of one man (same file, as a second recording of him would share
    his clothes and room), synced into items like a catalogue change."""
    first = SourceVideo.objects.filter(campaign=grid_campaign, identity__attributes__gender="male").first()
    SourceVideo.objects.create(
        campaign=grid_campaign,
        identity=first.identity,
        name=f"{first.name}-second",
        action=first.action,
        file=first.file.name,
        web_file=first.web_file.name,
        in_evaluated_subset=True,
    )
    assignment.sync_items(grid_campaign)
    return first.identity


def test_a_rater_never_sees_two_videos_of_one_person(grid_campaign, second_clip_of_a_man, settings):
    settings.TRIALS_PLAUSIBILITY_CHECKS = False
    # The second clip gets action items only: its block keeps one video per man.
    second = Item.objects.filter(source_video__name__endswith="-second")
    assert set(second.values_list("task", flat=True)) == {"action"}
    reasons = assignment.identity_exclusions(grid_campaign)
    assert any(
        "2 evaluated videos, but its lineup block's identities have 1 each" in r for r in reasons.values()
    )
    both = 0
    for i in range(24):
        trials, _ = _run_session(grid_campaign, f"link-{i}")
        people = [t.source_video.identity_id for t in trials if t.source_video_id]
        assert len(people) == len(set(people)), f"session {i} showed one person twice"
        both += second_clip_of_a_man.pk in people
    assert both > 0  # the person with two clips was rated, once per session


def test_served_lineups_are_the_block_minus_one(grid_campaign, settings):
    settings.TRIALS_PLAUSIBILITY_CHECKS = False
    plans = assignment.identity_plans(grid_campaign)[0]
    men = {p.block for p in plans.values() if p.block}
    assert len(men) == 1 and len(next(iter(men))) == 6  # one block: the 6 men
    served = 0
    for i in range(6):  # laid out to serve the identity slot (one block: a check first takes it)
        trials, _ = _run_session(grid_campaign, f"block-{i}", identity_first=True)
        for trial in trials:
            if trial.kind != "item" or trial.task != "identity":
                continue
            faces = {f.gallery_image.identity_id for f in trial.faces.all()}
            block = set(plans[trial.target_identity_id].block)
            assert len(faces) == 5 and faces < block
            assert trial.target_present == (trial.target_identity_id in faces)
            served += 1
    assert served == 6  # one per session: its one block


def test_a_flagged_rater_gets_the_same_session_as_anyone(grid_campaign, settings):
    settings.TRIALS_PLAUSIBILITY_CHECKS = False
    honest, honest_session = _run_session(grid_campaign, "honest", check_first=True)
    flagged, flagged_session = _run_session(grid_campaign, "caught", flag_after=1, check_first=True)
    assert Rater.objects.get(participant_code="caught").excluded
    # Same count and mix of trials (both laid out to serve their check, as GRID's one
    # lineup block serves a check or an evaluated identity trial): the plan's but one
    # position, as in every GRID session (10 people for 11 study positions; the check
    # holds back its face's person as an evaluated identity trial holds back its target).
    assert len(flagged) == len(flagged_session.plan) - 1 == len(honest) == len(honest_session.plan) - 1
    assert Counter(t.kind for t in flagged) == Counter(t.kind for t in honest)
    assert all(t.source_video_id for t in flagged if t.kind == "item")
    # None of the flagged rater's answers count toward any item.
    counted = sum(i.n_completed for i in Item.objects.filter(campaign=grid_campaign).with_counts())
    assert counted == sum(t.kind == "item" for t in honest)


def test_report_gives_every_human_figure_with_and_without_flagged_raters(grid_campaign, settings):
    from evalsite.reports import submission_summary
    from trials.models import FlagKind, RaterFlag

    settings.TRIALS_PLAUSIBILITY_CHECKS = False
    honest, _ = _run_session(grid_campaign, "honest")
    caught, _ = _run_session(grid_campaign, "caught", flag_after=1)  # flagged and excluded
    shared, _ = _run_session(grid_campaign, "shared")
    # Flagged for a shared address, not excluded: in the headline, not in "without flagged".
    RaterFlag.objects.create(
        rater=Rater.objects.get(participant_code="shared"), kind=FlagKind.SHARED_ADDRESS, reason="test"
    )
    n = {
        name: sum(t.kind == "item" for t in trials)
        for name, trials in [("honest", honest), ("caught", caught), ("shared", shared)]
    }
    human = submission_summary(grid_campaign.submissions.get())["human"]
    assert human["n_responses"] == n["honest"] + n["shared"]
    assert human["with_flagged"]["n_responses"] == n["honest"] + n["caught"] + n["shared"]
    assert human["without_flagged"]["n_responses"] == n["honest"]
    assert (human["with_flagged"]["n_raters_left_out"], human["without_flagged"]["n_raters_left_out"]) == (
        0,
        2,
    )
    report = per_video_report(grid_campaign.submissions.get()).set_index("video")
    assert report["human_id_n_clear_with_flagged"].sum() + report["human_id_n_masked_with_flagged"].sum() >= (
        report["human_id_n_clear"].sum() + report["human_id_n_masked"].sum()
    )
    assert (
        report["human_action_n_clear_without_flagged"].fillna(0).sum()
        + report["human_id_n_clear_without_flagged"].fillna(0).sum()
        + report["human_action_n_masked_without_flagged"].fillna(0).sum()
        + report["human_id_n_masked_without_flagged"].fillna(0).sum()
        == n["honest"]
    )
