"""Served copies do not outlive their trial, and a report recomputes the flags (issue 19).

- A trial's video variant (:mod:`trials.variants`, biometric data) is deleted from
  storage once the trial is answered or released, and every variant of a campaign when
  rating closes; before, only ``prepare_campaign_media`` removed variants older than a day.
- The report's human figures follow the flags as of now
  (:func:`trials.integrity.current_flags`): before, a report read the flags as stored, and
  the per-rater accuracy test ran only when the organizer page was opened. Reading writes
  nothing (issue 21); the organizer page and the closing of rating store the flags.
"""

import json

from django.core.files.storage import default_storage
from django.utils import timezone

from evalsite.reports import submission_summary
from trials import assignment, integrity, variants
from trials.models import FlagKind, Item, Rater, RaterFlag, Response, Trial
from trials.services import close_rating

from .test_cheating import CHOICE, MEDIA, RESPOND, _start


def _open_trial(client):
    """The current trial page's trial and HTML, its video fetched (variant made and stored)."""
    html = client.get("/session/").content.decode()
    trial = Trial.objects.get(token=RESPOND.search(html).group(1).split("/")[2])
    video = client.get(f"/m/{trial.media_token}", HTTP_RANGE="bytes=0-1023")
    assert video.status_code == 206
    assert f"/m/{trial.media_token}" in MEDIA.findall(html)
    return trial, html


def test_served_variants_are_deleted_when_answered_released_or_closed(
    grid_campaign, settings, django_capture_on_commit_callbacks
):
    settings.TRIALS_PLAUSIBILITY_CHECKS = False
    client = _start(grid_campaign, "cleaner")
    trial, html = _open_trial(client)
    name = variants.variant_name(trial.media_token)
    assert default_storage.exists(name)
    body = {"choice": CHOICE.findall(html)[0], "response_time_ms": 2000}
    with django_capture_on_commit_callbacks(execute=True) as callbacks:  # inside the test's transaction
        reply = client.post(RESPOND.search(html).group(1), json.dumps(body), content_type="application/json")
    assert reply.json()["stored"] and len(callbacks) == 1
    assert not default_storage.exists(name)  # answered: gone once the answer is committed

    # A released claim (here: lapsed, its item taken by others) loses its copy too.
    second, _ = _open_trial(client)
    released = variants.variant_name(second.media_token)
    assert default_storage.exists(released)
    Trial.objects.filter(pk=second.pk).update(released=True)
    assert variants.remove_served_variants(grid_campaign) == 1  # the sweep of prepare_campaign_media
    assert not default_storage.exists(released)

    # An open trial keeps its copy until rating closes.
    other = _start(grid_campaign, "still-watching")
    third, _ = _open_trial(other)
    kept = variants.variant_name(third.media_token)
    assert variants.remove_served_variants(grid_campaign) == 0 and default_storage.exists(kept)
    close_rating(grid_campaign)
    assert not default_storage.exists(kept)
    assert default_storage.listdir("variants")[1] == []


def _answer(session, position, item, *, correct: bool):
    trial = Trial.objects.create(
        session=session,
        position=position,
        kind="item",
        task=item.task,
        item=item,
        source_video=item.source_video,
        target_identity_id=item.source_video.identity_id,
        target_present=True,
        correct_choice="1",
        claimed_at=timezone.now(),
        completed=True,
    )
    Response.objects.create(
        trial=trial, choice="1" if correct else "2", correct=correct, response_time_ms=4000
    )


def _ring_and_careless(grid_campaign, settings):
    """16 honest raters right on 1 masked identity trial in 6, one ring member right on all 6;
    a rater with 2 failed checks (flagged at 3: ``TRIALS_MAX_ATTENTION_FAILURES = 3``). Only
    answers are stored (no page opened, no flag). Returns the submission."""
    masked = list(
        Item.objects.filter(campaign=grid_campaign, task="identity", masked_video__isnull=False).order_by(
            "pk"
        )
    )
    assert len(masked) == 6  # the 6 men: one block
    for r in range(16):
        session = assignment.join(grid_campaign, participant_code=f"honest-{r}")
        for i, item in enumerate(masked):
            _answer(session, i, item, correct=(i == r % 6))
    ring = assignment.join(grid_campaign, participant_code="ring")
    for i, item in enumerate(masked):
        _answer(ring, i, item, correct=True)
    settings.TRIALS_MAX_ATTENTION_FAILURES = 3
    careless = assignment.join(grid_campaign, participant_code="careless")
    for position in range(2):
        trial = Trial.objects.create(
            session=careless,
            position=position,
            kind="catch",
            task="identity",
            correct_choice="3",
            claimed_at=timezone.now(),
            completed=True,
        )
        Response.objects.create(trial=trial, choice="1", correct=False, response_time_ms=4000)
    assert not RaterFlag.objects.exists() and not Rater.objects.filter(excluded=True).exists()
    return grid_campaign.submissions.get()


def test_the_report_recomputes_outlier_and_attention_flags_without_writing(grid_campaign, settings):
    """Building the report flags and excludes the ring member and, once the organizer lowers
    the attention threshold to 2, the careless rater: the figures follow the flags as of now
    (``trials.integrity.current_flags``). Reading them twice writes nothing (before, issue 21:
    every read rewrote the flags); the organizer page and the closing of rating store them,
    and a stored flag excludes once (the organizer may include the rater again)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from evalsite import report_cache
    from evalsite.reports import per_video_report

    submission = _ring_and_careless(grid_campaign, settings)
    # The fairness section measures missing face quality on first read and stores it (a lazy
    # measurement, its own setting): off here, so every query below is the report's reading.
    settings.FAIRNESS_COMPUTE_QUALITY_ON_DEMAND = False
    with CaptureQueriesContext(connection) as queries:
        human = submission_summary(submission)["human"]
        again = submission_summary(submission)["human"]
        with report_cache.scope():  # as a request reads them (cached by the campaign's inputs)
            report = per_video_report(submission)
            cached = submission_summary(submission)["human"]
    writes = [q["sql"] for q in queries if q["sql"].lstrip().split()[0].upper() in WRITES]
    assert writes == [] and len(queries) > 20
    assert (
        json.dumps(human, sort_keys=True)
        == json.dumps(again, sort_keys=True)
        == json.dumps(cached, sort_keys=True)
    )
    ring_rater = Rater.objects.get(participant_code="ring")
    now = integrity.current_flags(grid_campaign)
    assert set(now.flags) == {(ring_rater.pk, FlagKind.ACCURACY_OUTLIER)}
    assert now.flags[ring_rater.pk, FlagKind.ACCURACY_OUTLIER].startswith(
        "accuracy on evaluated trials and attention checks 6/6"
    )
    assert now.excluded == now.flagged == {ring_rater.pk}
    # The headline leaves the ring member out: 16 honest raters x 6 masked answers.
    assert human["n_excluded_raters"] == 1
    assert human["with_flagged"]["n_responses"] == 17 * 6
    assert human["without_flagged"]["n_responses"] == 16 * 6
    assert report["human_id_n_masked"].sum() == 16 * 6
    assert report["human_id_n_masked_with_flagged"].sum() == 17 * 6
    assert not RaterFlag.objects.exists() and not Rater.objects.filter(excluded=True).exists()  # read only

    settings.TRIALS_MAX_ATTENTION_FAILURES = 2
    assert submission_summary(submission)["human"]["n_excluded_raters"] == 1  # no item answers of theirs
    careless_rater = Rater.objects.get(participant_code="careless")
    assert integrity.current_flags(grid_campaign).raters[careless_rater.pk] == (
        True,
        True,
        "failed 2 attention checks",
    )
    close_rating(grid_campaign)  # stores the flags
    flag = RaterFlag.objects.get(rater=ring_rater)
    assert (flag.kind, flag.reason) == (FlagKind.ACCURACY_OUTLIER, now.flags[ring_rater.pk, flag.kind])
    assert set(Rater.objects.filter(excluded=True).values_list("participant_code", flat=True)) == {
        "ring",
        "careless",
    }
    careless_rater.refresh_from_db()
    assert careless_rater.flagged and careless_rater.excluded
    assert careless_rater.flag_reason == "failed 2 attention checks"

    # The organizer includes the ring member again: the stored flag does not exclude a second
    # time, on read or on the next refresh; the member stays flagged (left out of without_flagged).
    Rater.objects.filter(pk=ring_rater.pk).update(excluded=False)
    human = submission_summary(submission)["human"]
    assert human["n_excluded_raters"] == 0 and human["without_flagged"]["n_responses"] == 16 * 6
    assert integrity.refresh_flags(grid_campaign).excluded == {careless_rater.pk}
    assert integrity.flagged_rater_ids(grid_campaign) == {ring_rater.pk, careless_rater.pk}


def _files(root) -> dict:
    """Every file under ``root`` with its size and modification time."""
    return {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def test_media_of_an_answered_or_released_trial_are_a_404_and_never_made_again(
    grid_campaign, settings, media_root, django_capture_on_commit_callbacks
):
    """Hostile pass 2, #5: re-fetching a served video after answering gave 200 every time,
    re-encoded and stored again (0.5-0.8 s of CPU each)."""
    settings.TRIALS_PLAUSIBILITY_CHECKS = False
    client = _start(grid_campaign, "refetcher")
    kinds = []
    for _ in range(4):  # 2 practice trials (with feedback), then evaluated trials or checks
        html = client.get("/session/").content.decode()
        trial = Trial.objects.get(token=RESPOND.search(html).group(1).split("/")[2])
        urls = MEDIA.findall(html)
        video = f"/m/{trial.media_token}"
        assert video in urls
        for url in urls:
            assert client.get(url).status_code == 200, url
        body = {"choice": CHOICE.findall(html)[0], "response_time_ms": 2000}
        with django_capture_on_commit_callbacks(execute=True):
            client.post(RESPOND.search(html).group(1), json.dumps(body), content_type="application/json")
        before = _files(media_root)
        assert not default_storage.exists(variants.variant_name(trial.media_token))
        for url in urls:
            assert client.get(url).status_code == 404, (trial.kind, url)
        assert client.get(video, HTTP_RANGE="bytes=0-63").status_code == 404
        assert _files(media_root) == before  # nothing encoded or stored again
        kinds.append(trial.kind)
    assert kinds[:2] == ["practice", "practice"] and set(kinds[2:]) <= {"item", "catch"}

    # A released trial (its claim lapsed and its item went to others) likewise.
    html = client.get("/session/").content.decode()
    trial = Trial.objects.get(token=RESPOND.search(html).group(1).split("/")[2])
    urls = MEDIA.findall(html)
    assert client.get(f"/m/{trial.media_token}").status_code == 200
    Trial.objects.filter(pk=trial.pk).update(released=True)
    variants.remove_served_variants(grid_campaign)
    before = _files(media_root)
    assert [client.get(url).status_code for url in urls] == [404] * len(urls)
    assert _files(media_root) == before


WRITES = {"INSERT", "UPDATE", "DELETE", "REPLACE"}
