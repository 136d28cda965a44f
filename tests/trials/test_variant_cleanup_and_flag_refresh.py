"""Served copies do not outlive their trial, and a report recomputes the flags (issue 19).

- A trial's video variant (:mod:`trials.variants`, biometric data) is deleted from
  storage once the trial is answered or released, and every variant of a campaign when
  rating closes; before, only ``prepare_campaign_media`` removed variants older than a day.
- The report's human figures come after the flags are recomputed
  (:func:`trials.integrity.refresh_flags`): before, a report read the flags as stored, and
  the per-rater accuracy test ran only when the organizer page was opened.
"""

import json

from django.core.files.storage import default_storage
from django.utils import timezone

from evalsite.reports import submission_summary
from trials import assignment, variants
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


def test_the_report_recomputes_outlier_and_attention_flags(grid_campaign, settings):
    """16 honest raters right on 1 masked identity trial in 6, one ring member right on all 6;
    a rater with 2 failed checks when 3 flagged, then the organizer lowers it to 2. Only
    answers are stored (no page opened): building the report flags and excludes both."""
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

    submission = grid_campaign.submissions.get()
    human = submission_summary(submission)["human"]
    ring_rater = Rater.objects.get(participant_code="ring")
    assert RaterFlag.objects.filter(rater=ring_rater, kind=FlagKind.ACCURACY_OUTLIER).exists()
    flag = RaterFlag.objects.get(rater=ring_rater).reason
    assert flag.startswith("accuracy on evaluated trials and attention checks 6/6")
    assert set(Rater.objects.filter(excluded=True).values_list("participant_code", flat=True)) == {"ring"}
    # The headline leaves the ring member out: 16 honest raters x 6 masked answers.
    assert human["n_excluded_raters"] == 1
    assert human["with_flagged"]["n_responses"] == 17 * 6
    assert human["without_flagged"]["n_responses"] == 16 * 6

    settings.TRIALS_MAX_ATTENTION_FAILURES = 2
    submission_summary(submission)
    careless_rater = Rater.objects.get(participant_code="careless")
    assert careless_rater.flagged and careless_rater.excluded
    assert careless_rater.flag_reason == "failed 2 attention checks"


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
