"""Assignment on the real GRID campaign: balance, timeouts, idempotent answers, flags."""

from datetime import timedelta

import pytest
from django.utils import timezone

from evalsite.reports import per_video_report, submission_summary
from trials import assignment
from trials.models import Item, RatingSession, Rater, Response, SessionState, TrialKind

from .sessions import with_check_first


@pytest.fixture(autouse=True)
def no_plausibility_checks(settings):
    """These tests drive assignment directly, with no media fetched over HTTP (the checks
    are tested through the views in test_cheating.py)."""
    settings.TRIALS_PLAUSIBILITY_CHECKS = False


def running_session(campaign, code):
    session = assignment.join(campaign, participant_code=code)
    RatingSession.objects.filter(pk=session.pk).update(state=SessionState.RUNNING)
    session.refresh_from_db()
    return session


def answer(trial, choice=None, now=None):
    choice = choice if choice is not None else assignment.valid_choices(trial)[1]
    return assignment.record_response(
        trial, {"choice": choice, "response_time_ms": 1000, "replays": 0, "watch_time_ms": 3000}, now=now
    )


def skip_to_kind(session, kind, now=None):
    """Answer trials until the current one is of ``kind`` (for an attention check, in a
    session laid out to serve one: :func:`tests.trials.sessions.with_check_first`)."""
    if kind == TrialKind.CATCH and not session.trials.exclude(kind=TrialKind.PRACTICE).exists():
        session = with_check_first(session)
    while True:
        trial = assignment.current_trial(session, now=now)
        if trial is None or trial.kind == kind:
            return trial
        answer(trial, now=now)


def test_items_cover_every_video_condition_and_task(grid_campaign):
    items = Item.objects.filter(campaign=grid_campaign)
    # videos x (clear, blurred) x action + the 6 men's videos x (clear, blurred) x identity:
    # the 4 women are too few for a 5-face lineup + 1 for target-absent trials of women only
    # (trials.design.exposure_plan), so their videos get no identity trials.
    assert items.count() == 10 * 2 + 6 * 2
    identity = items.filter(task="identity")
    assert {i.source_video.identity.attributes["gender"] for i in identity} == {"male"}
    assert set(items.values_list("target_count", flat=True)) == {3}
    assert items.filter(masked_video=None).count() == 16
    assert assignment.sync_items(grid_campaign) == 0  # idempotent


def test_join_twice_resumes_the_same_session(grid_campaign):
    first = assignment.join(grid_campaign, participant_code="P-9")
    again = assignment.join(grid_campaign, participant_code=" P-9 ")
    assert first.pk == again.pk and Rater.objects.count() == 1
    with pytest.raises(ValueError, match="participant code or a rater account"):
        assignment.join(grid_campaign, participant_code="  ")


def test_least_completed_items_come_first(grid_campaign):
    item = Item.objects.filter(campaign=grid_campaign).first()
    session = running_session(grid_campaign, "P-1")
    trial = skip_to_kind(session, TrialKind.ITEM)
    answer(trial)
    order = list(Item.objects.least_completed_first(grid_campaign).values_list("id", "n_completed"))
    assert order[-1] == (trial.item_id, 1)
    assert all(n == 0 for _, n in order[:-1])
    assert item.pk in [pk for pk, _ in order]


def test_live_claims_count_against_the_target(grid_campaign):
    Item.objects.update(target_count=1)
    now = timezone.now()
    trials = [skip_to_kind(running_session(grid_campaign, f"P-{i}"), TrialKind.ITEM, now) for i in range(6)]
    claimed = [t.item_id for t in trials]
    assert len(set(claimed)) == len(claimed), "two raters hold a claim on the same one-response item"


def test_abandoned_claim_is_released_after_the_timeout(grid_campaign, settings):
    settings.TRIALS_CLAIM_TIMEOUT_S = 60
    settings.TRIALS_OVERASSIGN = False  # raters wait for the claim (over-assignment: test_hoarding.py)
    settings.TRIALS_PRACTICE = 0
    grid_campaign.attention_check_rate = 0.0  # evaluated trials only: the plan is predictable
    grid_campaign.save()
    Item.objects.update(target_count=1)
    now = timezone.now()
    slow = running_session(grid_campaign, "P-slow")
    held = skip_to_kind(slow, TrialKind.ITEM, now)
    # Everyone else saw the other items; only the held item is left.
    Item.objects.exclude(pk=held.item_id).update(target_count=0)
    fast = running_session(grid_campaign, "P-fast")
    assert skip_to_kind(fast, TrialKind.ITEM, now + timedelta(seconds=30)) is None  # still claimed
    fast2 = running_session(grid_campaign, "P-fast2")
    later = now + timedelta(seconds=61)
    taken = skip_to_kind(fast2, TrialKind.ITEM, later)
    assert taken.item_id == held.item_id
    answer(taken, now=later)
    with pytest.raises(assignment.TrialExpired):
        answer(held, now=later)
    assert Response.objects.filter(trial__item_id=held.item_id).count() == 1
    held.refresh_from_db()
    assert held.released
    # The slow rater resumes on a new trial (here: none left, so the session completes).
    assert assignment.current_trial(slow, now=later) is None


def test_lapsed_claim_with_room_left_is_kept(grid_campaign, settings):
    settings.TRIALS_CLAIM_TIMEOUT_S = 60
    now = timezone.now()
    session = running_session(grid_campaign, "P-1")
    trial = skip_to_kind(session, TrialKind.ITEM, now)
    response, created = answer(trial, now=now + timedelta(hours=1))
    assert created and response.trial_id == trial.pk


def test_a_resent_answer_is_stored_once_and_keeps_the_first_choice(grid_campaign):
    session = running_session(grid_campaign, "P-1")
    trial = assignment.current_trial(session)
    first, created = answer(trial, assignment.valid_choices(trial)[0])
    second, created_again = answer(trial, assignment.valid_choices(trial)[-1])
    assert created and not created_again and first.pk == second.pk
    assert Response.objects.count() == 1
    session.refresh_from_db()
    assert session.position == 1


def test_one_failed_attention_check_does_not_exclude_by_default(grid_campaign):
    session = running_session(grid_campaign, "P-1")
    catch = skip_to_kind(session, TrialKind.CATCH)
    answer(catch, next(c for c in assignment.valid_choices(catch) if c != catch.correct_choice))
    rater = Rater.objects.get()
    assert not rater.flagged and not rater.excluded  # TRIALS_MAX_ATTENTION_FAILURES = 2


def test_failed_attention_check_flags_the_rater(grid_campaign, settings):
    settings.TRIALS_MAX_ATTENTION_FAILURES = 1
    session = running_session(grid_campaign, "P-1")
    catch = skip_to_kind(session, TrialKind.CATCH)
    # The video shows a lineup face and an instruction naming another answer (trials.variants):
    # answering by the face (as a face-recognition bot does) fails the check.
    shown = catch.faces.get(gallery_image__identity_id=catch.probe_image.identity_id)
    assert catch.target_identity_id == catch.probe_image.identity_id
    assert catch.correct_choice in assignment.valid_choices(catch) and catch.correct_choice != str(
        shown.position
    )
    answer(catch, str(shown.position))
    rater = Rater.objects.get()
    assert rater.flagged and rater.flag_reason == "failed 1 attention checks"


def test_a_flagged_rater_is_excluded_until_the_organizer_includes_them_again(grid_campaign, settings):
    from trials.human_report import responses_frame

    settings.TRIALS_MAX_ATTENTION_FAILURES = 1
    session = running_session(grid_campaign, "P-1")
    catch = skip_to_kind(session, TrialKind.CATCH)
    answer(catch, next(c for c in assignment.valid_choices(catch) if c != catch.correct_choice))
    while (trial := assignment.current_trial(session)) is not None:
        answer(trial)
    rater = Rater.objects.get()
    # The organizer page shows "excluded" and offers "Include": what it shows is what scoring does.
    assert rater.flagged and rater.excluded
    submission = grid_campaign.submissions.get()
    assert responses_frame(submission).empty
    Rater.objects.filter(pk=rater.pk).update(excluded=False)  # the organizer's "Include"
    n_items = Response.objects.filter(trial__kind=TrialKind.ITEM).count()
    assert len(responses_frame(submission)) == n_items > 0


def test_identity_lineups_are_gender_matched_where_possible(grid_campaign):
    session = running_session(grid_campaign, "P-1")
    while (trial := assignment.current_trial(session)) is not None:
        if trial.task == "identity" and trial.target_identity.attributes["gender"] == "male":
            genders = {face.gallery_image.identity.attributes["gender"] for face in trial.faces.all()}
            assert genders == {"male"}
            assert trial.faces.count() == 5
        answer(trial)


def test_human_columns_join_the_per_video_report(grid_campaign, settings):
    settings.TRIALS_OUTLIER_ALPHA = 1e-12  # scripted raters: the figures' arithmetic, not the outlier test
    for i in range(4):
        session = running_session(grid_campaign, f"P-{i}")
        while (trial := assignment.current_trial(session)) is not None:
            answer(trial, trial.correct_choice if i % 2 == 0 else None)
    submission = grid_campaign.submissions.get()
    report = per_video_report(submission).set_index("video")
    expected = {
        "human_id_accuracy_clear",
        "human_id_accuracy_masked",
        "human_masking_success",
        "human_action_accuracy_clear",
        "human_action_accuracy_masked",
        "human_action_loss",
    }
    assert expected <= set(report.columns)
    summary = submission_summary(submission)["human"]
    assert (
        summary["n_responses"]
        == Response.objects.filter(trial__kind="item").exclude(trial__session__rater__flagged=True).count()
    )
    rated = report.dropna(subset=["human_masking_success"])
    assert (
        rated["human_masking_success"] == rated["human_id_accuracy_clear"] - rated["human_id_accuracy_masked"]
    ).all()
