"""Replacing a clear video sets aside the human ratings of the old clear file (real clips).

The same mechanism as a masked replacement (``trials.services.supersede_items``): the old
clear items keep their responses, marked superseded, and count for nothing; new clear
items of the new file ask for new ratings; an in-flight trial on the old file cannot
count for the new one. Figures are computed by hand in the comments.
"""

import math

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from evalsite import reports
from evalsite.models import MaskedVideo, SourceVideo
from evalsite.services import replace_source_video

from .test_replacements import _open_rating, _rated_trial, complete, plain_bbaf2n  # noqa: F401 (fixtures)


def _answer(item, participant, correct: bool):
    """A completed trial of ``item`` by a new rater ``participant``, right or wrong."""
    from trials.models import Response

    trial = _rated_trial(item, participant, answered=False)
    trial.completed = True
    trial.save(update_fields=["completed"])
    Response.objects.create(
        trial=trial, choice="1" if correct else "0", correct=correct, response_time_ms=1500
    )
    return trial


def _items(campaign, video, *, masked: bool):
    from trials.models import Item

    items = Item.objects.filter(campaign=campaign, source_video__name=video, superseded_at__isnull=True)
    return {i.task: i for i in items.filter(masked_video__isnull=not masked)}


def _rollup(campaign):
    """The clear-video progress row and the raters estimate of bbaf2n's 4 items (3 per session)."""
    from trials import progress
    from trials.models import Item

    evaluated = list(
        Item.objects.evaluated(campaign).select_related("masked_video", "source_video").with_counts()
    )
    of_bbaf2n = [i for i in evaluated if i.source_video.name == "bbaf2n"]
    return progress.rollup(evaluated)[0], progress.raters_needed(of_bbaf2n, per_session=3)


@pytest.fixture
def rated(complete):
    """Rating open; hand-made responses on bbaf2n (clear and masked) and brbk7n (clear)."""
    campaign = complete.campaign
    campaign.raters_per_video = 6  # saved by _open_rating; every item's target
    _open_rating(campaign)
    clear, masked = _items(campaign, "bbaf2n", masked=False), _items(campaign, "bbaf2n", masked=True)
    for n, ok in enumerate([True, True, True, False]):  # clear identity: 3 of 4 right
        _answer(clear["identity"], f"C{n}", ok)
    for n in range(2):  # clear action: 2 of 2 right
        _answer(clear["action"], f"A{n}", True)
    for n, ok in enumerate([True, False, False, False]):  # masked identity: 1 of 4 right
        _answer(masked["identity"], f"M{n}", ok)
    other = _items(campaign, "brbk7n", masked=False)
    for n, ok in enumerate([True, False]):  # brbk7n clear identity: 1 of 2 right
        _answer(other["identity"], f"B{n}", ok)
    in_flight = _rated_trial(clear["identity"], "FLIGHT", answered=False)  # shown, not answered
    return complete, in_flight


def test_replacing_a_clear_video_sets_aside_its_old_responses_and_asks_for_new_ratings(
    rated, plain_bbaf2n, settings
):
    from trials.assignment import TrialExpired, record_response
    from trials.models import Item, Response

    submission, in_flight = rated
    campaign = submission.campaign
    video = SourceVideo.objects.get(name="bbaf2n")
    before = reports.per_video_report(submission).set_index("video")
    assert before.loc["bbaf2n", "human_id_accuracy_clear"] == 0.75  # 3 / 4
    assert before.loc["bbaf2n", "human_id_accuracy_masked"] == 0.25  # 1 / 4
    assert before.loc["bbaf2n", "human_masking_success"] == 0.5  # 0.75 - 0.25
    assert before.loc["bbaf2n", "human_action_accuracy_clear"] == 1.0  # 2 / 2
    assert before.loc[
        "bbaf2n", ["human_id_n_superseded_clear", "human_action_n_superseded_clear"]
    ].tolist() == [
        0,
        0,
    ]
    summary = reports.submission_summary(submission)["human"]
    assert summary["id_accuracy_clear"] == pytest.approx(4 / 6)  # (3 + 1) / (4 + 2), both videos
    assert summary["n_superseded_responses"] == 0
    # Clear row, 6 items (3 videos x 2 tasks) of target 6: 8 usable (4 + 2 + 2), 1 open
    # claim, 36 - 8 - 1 = 27 still needed; bbaf2n's items need (6-4-1) + (6-2) + (6-4) + 6 = 13
    # more responses, from 13 different raters (ceil(13 / 3) = 5 sessions would not do).
    row, estimate = _rollup(campaign)
    assert (row.n_items, row.usable, row.target, row.claimed, row.still_needed) == (6, 8, 36, 1, 27)
    assert (estimate.still_needed, estimate.by_video, estimate.raters) == (13, 13, 13)
    old_clear = _items(campaign, "bbaf2n", masked=False)

    replace_source_video(video, plain_bbaf2n)  # the clear clip re-encoded: masked videos still match

    video.refresh_from_db()
    # The old items and their 6 responses are kept, marked superseded at the replacement time.
    old = Item.objects.filter(pk__in=[i.pk for i in old_clear.values()])
    assert set(old.values_list("superseded_at", flat=True)) == {video.file_replaced_at}
    assert Response.objects.filter(trial__item__in=old).count() == 6
    new_clear = _items(campaign, "bbaf2n", masked=False)
    assert sorted((i.task, i.target_count) for i in new_clear.values()) == [("action", 6), ("identity", 6)]
    evaluated = set(Item.objects.evaluated(campaign).values_list("pk", flat=True))
    assert not evaluated & set(old.values_list("pk", flat=True))
    assert {i.pk for i in new_clear.values()} <= evaluated

    after = reports.per_video_report(submission).set_index("video")
    assert after.loc["bbaf2n", "human_id_n_clear"] == 0 and math.isnan(
        after.loc["bbaf2n", "human_id_accuracy_clear"]
    )
    assert math.isnan(after.loc["bbaf2n", "human_masking_success"])  # no clear rating of the new file yet
    assert after.loc["bbaf2n", "human_id_accuracy_masked"] == 0.25  # the masked side is untouched
    assert after.loc[
        "bbaf2n", ["human_id_n_superseded_clear", "human_action_n_superseded_clear"]
    ].tolist() == [
        4,
        2,
    ]
    assert after.loc["bbaf2n", "human_id_n_superseded_masked"] == 0
    assert (
        "human: clear video replaced; 6 responses to the earlier file kept, not counted"
        in (after.loc["bbaf2n", "caveats"])
    )
    assert "replaced" not in after.loc["brbk7n", "caveats"]
    assert after.loc["brbk7n", ["human_id_accuracy_clear", "human_id_n_superseded_clear"]].tolist() == [
        0.5,
        0,
    ]
    summary = reports.submission_summary(submission)
    assert summary["human"]["id_accuracy_clear"] == 0.5  # brbk7n only: 1 / 2
    assert summary["human"]["n_superseded_responses"] == 6
    assert "human" not in summary["stale_results"]  # the old responses are not counted, so nothing is stale

    # Progress asks for the new file's ratings: 2 usable (brbk7n), no claim, 36 - 2 = 34
    # still needed; bbaf2n now needs 6 + 6 (new clear) + 2 + 6 (masked) = 20 responses.
    row, estimate = _rollup(campaign)
    assert (row.n_items, row.usable, row.target, row.claimed, row.still_needed) == (6, 2, 36, 0, 34)
    assert (estimate.still_needed, estimate.by_video, estimate.raters) == (20, 20, 20)

    # The rater shown the old file mid-session: the claim is released and the answer refused.
    in_flight.refresh_from_db()
    assert in_flight.released
    with pytest.raises(TrialExpired):
        record_response(in_flight, {"choice": "1", "response_time_ms": 900})
    assert not Response.objects.filter(trial=in_flight).exists()
    # A trial on the old item that slipped in during the replacement is answered, but lands on
    # the superseded item and counts for nothing.
    settings.TRIALS_PLAUSIBILITY_CHECKS = False  # this scripted rater fetches no media
    late = _rated_trial(old_clear["identity"], "LATE", answered=False)
    record_response(late, {"choice": "0", "response_time_ms": 900})  # no faces made here: only "0"
    late_report = reports.per_video_report(submission).set_index("video")
    assert late_report.loc["bbaf2n", ["human_id_n_clear", "human_id_n_superseded_clear"]].tolist() == [0, 5]

    # New ratings of the new clear file: 1 of 2 right -> 0.5, masking success 0.5 - 0.25.
    for n, ok in enumerate([True, False]):
        _answer(new_clear["identity"], f"N{n}", ok)
    rows = reports.per_video_report(submission).set_index("video")
    assert rows.loc["bbaf2n", ["human_id_n_clear", "human_id_accuracy_clear"]].tolist() == [2, 0.5]
    assert rows.loc["bbaf2n", "human_masking_success"] == 0.25


def test_superseded_clear_responses_are_marked_in_the_organizer_page_and_admin(rated, plain_bbaf2n, client):
    submission, _ = rated
    campaign = submission.campaign
    replace_source_video(SourceVideo.objects.get(name="bbaf2n"), plain_bbaf2n)
    client.force_login(User.objects.create_superuser("boss", "boss@example.org", "pw"))

    page = client.get(reverse("trials:organizer_campaign", args=[campaign.pk])).content.decode()
    assert page.count("superseded: file replaced") == 2  # the old clear identity and action items

    url = reverse("admin:trials_response_changelist")
    kept = client.get(url, {"trial__item__superseded_at__isempty": "0"})
    counted = client.get(url, {"trial__item__superseded_at__isempty": "1"})
    assert kept.context["cl"].result_count == 6  # 4 identity + 2 action on the old clear file
    assert counted.context["cl"].result_count == 6  # 4 masked + 2 brbk7n clear


def test_a_masked_replacement_marks_the_old_masked_items_superseded_the_same_way(
    rated, plain_bbaf2n, tmp_path
):
    from trials.models import Item

    from .test_replacements import _replace_bbaf2n

    submission, _ = rated
    old_masked = _items(submission.campaign, "bbaf2n", masked=True)
    _replace_bbaf2n(submission, plain_bbaf2n, tmp_path)

    old = Item.objects.filter(pk__in=[i.pk for i in old_masked.values()])
    replaced = MaskedVideo.all_versions.get(pk=old_masked["identity"].masked_video_id)
    assert set(old.values_list("superseded_at", flat=True)) == {replaced.superseded_at}
    rows = reports.per_video_report(submission).set_index("video")
    # The 4 masked identity responses (1 right) are set aside; the clear side is untouched.
    assert rows.loc["bbaf2n", ["human_id_n_masked", "human_id_n_superseded_masked"]].tolist() == [0, 4]
    assert rows.loc["bbaf2n", ["human_id_n_clear", "human_id_accuracy_clear"]].tolist() == [4, 0.75]
    assert (
        "human: masked video replaced; 4 responses to the earlier file kept, not counted"
        in (rows.loc["bbaf2n", "caveats"])
    )


def test_a_clear_video_replaced_before_rating_opens_and_twice_after_keeps_one_current_item_per_task(
    complete, plain_bbaf2n
):
    from trials.models import Item

    video = SourceVideo.objects.get(name="bbaf2n")
    replace_source_video(video, plain_bbaf2n)  # no items yet: nothing to set aside
    assert not Item.objects.exists()
    _open_rating(complete.campaign)
    clear = Item.objects.filter(source_video=video, masked_video__isnull=True)
    assert clear.count() == 2 and not clear.filter(superseded_at__isnull=False).exists()
    replace_source_video(video, plain_bbaf2n)
    replace_source_video(video, plain_bbaf2n)
    # 3 files rated: 2 superseded sets (one per replacement) and the current pair.
    assert clear.count() == 6
    assert sorted(clear.filter(superseded_at__isnull=True).values_list("task", flat=True)) == [
        "action",
        "identity",
    ]
    assert len(set(clear.exclude(superseded_at=None).values_list("superseded_at", flat=True))) == 2
    # Opening rating again (sync_items) finds the current items and makes none.
    assert _open_rating(complete.campaign).items_created == 0
    assert clear.count() == 6
