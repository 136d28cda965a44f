"""Replacing masked and clear videos keeps results honest (real clips, a real face run).

- A masked video raters already saw is kept (superseded) with its responses; rating moves
  to new items of the new file.
- The summary counts only current masked videos; results computed on a replaced file are
  reported stale, naming the videos.
- A replaced clear video gets a new browser copy, and its masked videos are re-checked.
"""

import io
import math

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse
from rest_framework.test import APIClient

from automated.video import transcode_for_web
from evalsite import reports
from evalsite.models import MaskedVideo, SourceVideo
from evalsite.validation import ingest_submission_zip

from .conftest import GRID, make_zip
from .test_uploads import assert_every_stored_file_has_a_row


@pytest.fixture
def complete(submission, masked_files, data_dir, tmp_path):
    """The submission with a valid masked video for each of the 3 source videos."""
    ingest_submission_zip(
        submission,
        make_zip(
            tmp_path / "all.zip",
            {
                "bbaf2n.mp4": masked_files["good_bbaf2n"],
                "brbk7n.mp4": masked_files["good_brbk7n"],
                "id2_vcd_swwp2s.mpg": data_dir / GRID / "id2_vcd_swwp2s.mpg",
            },
        ),
        web_copies=False,
    )
    return submission


def _replace_bbaf2n(submission, new_file, tmp_path) -> str:
    """``upload_submission --replace`` with ``new_file`` as the masked bbaf2n; the command's output."""
    archive = make_zip(tmp_path / "again.zip", {"bbaf2n.mp4": new_file})
    out = io.StringIO()
    call_command("upload_submission", str(submission.pk), str(archive), "--replace", stdout=out)
    return out.getvalue()


@pytest.fixture
def plain_bbaf2n(masked_files, data_dir):
    """A second valid masked bbaf2n: the clear clip re-encoded (other bytes, same frames)."""
    path = masked_files["good_brbk7n"].parent / "plain.mp4"
    if not path.exists():
        transcode_for_web(data_dir / GRID / "bbaf2n.mpg", path)
    return path


def _open_rating(campaign):
    from trials.services import open_rating

    # 3 identities in the tiny campaign: lineups of 3 faces, no target-absent trials, one
    # stratum (matched on no attribute), so the thin-group rule (trials.design) keeps them.
    campaign.foils_per_trial, campaign.target_absent_share = 2, 0.0
    campaign.demographic_attributes = []
    campaign.save()
    return open_rating(campaign, prepare_media=False)


def _replaced(run, video):
    """The stale entry of ``run`` whose only change is the replaced file of ``video``."""
    return {
        "run_id": run.pk,
        "videos": [video],
        "replaced": [video],
        "plan_changed": [],
        "reason": f"run {run.pk} is out of date: video files replaced since the run was created: {video}",
    }


def _rated_trial(item, participant, *, answered: bool):
    from trials.assignment import join
    from trials.models import Response, SessionState, Trial

    session = join(item.campaign, participant_code=participant)
    session.state = SessionState.RUNNING
    session.save()
    trial = Trial.objects.create(
        session=session,
        position=0,
        kind="item",
        task=item.task,
        item=item,
        source_video=item.source_video,
        target_identity=item.source_video.identity,
        correct_choice="1",
        completed=answered,
    )
    if answered:
        Response.objects.create(trial=trial, choice="1", correct=True, response_time_ms=1500)
    return trial


def test_replace_after_rating_opened_keeps_the_responses_on_the_old_file_and_starts_new_items(
    complete, masked_files, plain_bbaf2n, tmp_path, media_root
):
    from trials.assignment import TrialExpired, record_response
    from trials.human_report import responses_frame
    from trials.models import Item

    _open_rating(complete.campaign)
    old = MaskedVideo.objects.get(source_video__name="bbaf2n")
    old_items = list(Item.objects.filter(masked_video=old).order_by("task"))
    assert [i.task for i in old_items] == ["action", "identity"]
    answered = _rated_trial(old_items[1], "P1", answered=True)
    claimed = _rated_trial(old_items[1], "P2", answered=False)
    assert len(responses_frame(complete).query("condition == 'masked'")) == 1

    out = _replace_bbaf2n(
        complete, plain_bbaf2n, tmp_path
    )  # raised ProtectedError (Item.masked_video) before

    assert "accepted  replaced" in out and "the earlier one is kept as superseded" in out
    new = MaskedVideo.objects.get(source_video__name="bbaf2n")
    old.refresh_from_db()
    assert new.pk != old.pk and (old.current, old.superseded_by_id) == (False, new.pk)
    assert old.file.storage.exists(old.file.name)
    # The response stays attached to the file the rater saw.
    answered.refresh_from_db()
    assert answered.item.masked_video_id == old.pk and answered.response.choice == "1"
    # New items for the new file (same tasks and target); the old ones take no new trials.
    new_items = Item.objects.filter(masked_video=new).order_by("task")
    assert [(i.task, i.target_count) for i in new_items] == [(i.task, i.target_count) for i in old_items]
    evaluated = set(Item.objects.evaluated(complete.campaign).values_list("pk", flat=True))
    assert not evaluated & {i.pk for i in old_items} and {i.pk for i in new_items} <= evaluated
    # The unanswered claim on the old file is released: its answer is refused, the rater moves on.
    claimed.refresh_from_db()
    assert claimed.released
    with pytest.raises(TrialExpired):
        record_response(claimed, {"choice": "1", "response_time_ms": 900})
    # Human scores of the submission count responses to its current masked videos only.
    assert responses_frame(complete).query("condition == 'masked'").empty
    assert_every_stored_file_has_a_row(media_root)


def test_replace_of_a_video_no_one_rated_works_before_and_after_rating_opened(
    complete, masked_files, plain_bbaf2n, tmp_path
):
    from trials.models import Item

    out = _replace_bbaf2n(complete, plain_bbaf2n, tmp_path)  # no items yet
    assert "accepted  replaced" in out and not Item.objects.exists()
    _open_rating(complete.campaign)
    current = MaskedVideo.objects.get(source_video__name="bbaf2n")
    assert Item.objects.filter(masked_video__source_video__name="bbaf2n").count() == 2
    assert set(
        Item.objects.filter(masked_video__source_video__name="bbaf2n").values_list("masked_video", flat=True)
    ) == {current.pk}
    # Items but no responses: refused before as "already used in 2 human rating rows".
    # Other bytes (a byte-identical file is refused as identical_to_current): the masked
    # clip the team first sent (inverted frames) differs from the current plain copy.
    out = _replace_bbaf2n(complete, masked_files["good_bbaf2n"], tmp_path)
    assert "accepted  replaced" in out
    newest = MaskedVideo.objects.get(source_video__name="bbaf2n")
    assert Item.objects.filter(masked_video=newest).count() == 2
    assert MaskedVideo.all_versions.filter(source_video__name="bbaf2n").count() == 3


def _face_run(submission):
    from automated.django_app.services import run_face_evaluation

    return run_face_evaluation(submission, stride=25)


def test_summary_after_a_replacement_counts_current_videos_and_names_the_stale_ones(
    complete, masked_files, plain_bbaf2n, tmp_path
):
    run = _face_run(complete)
    before = reports.submission_summary(complete)
    assert (before["complete"], before["masked_videos"], before["face_evaluation"]["n_videos"]) == (
        True,
        3,
        3,
    )
    assert (before["stale"], before["stale_videos"]) == (False, [])

    _replace_bbaf2n(complete, plain_bbaf2n, tmp_path)

    after = reports.submission_summary(complete)
    assert (after["complete"], after["masked_videos"], after["source_videos"]) == (True, 3, 3)
    assert after["face_evaluation"]["n_videos"] == 2  # the score of the replaced file is not counted
    assert (after["stale"], after["stale_videos"]) == (True, ["bbaf2n"])
    assert after["stale_results"] == {  # the run's behaviour section too (the same run)
        "face_evaluation": _replaced(run, "bbaf2n"),
        "behaviour": _replaced(run, "bbaf2n"),
    }
    rows = reports.per_video_report(complete).set_index("video")
    assert rows["stale"].to_dict() == {"bbaf2n": True, "brbk7n": False, "id2_vcd_swwp2s": False}
    assert rows.loc["bbaf2n", "stale_results"] == "face_evaluation behaviour"
    assert math.isnan(rows.loc["bbaf2n", "face_match_rate"]) and not math.isnan(
        rows.loc["brbk7n", "face_match_rate"]
    )
    table = reports.summary_table_as_csv(complete.campaign).splitlines()
    assert table[0].startswith(
        "submission_id,team,method,baseline_method,complete,masked_videos,source_videos,stale,stale_videos"
    )
    assert table[1].startswith(f"{complete.pk},Team A,method-1,,True,3,3,True,bbaf2n")

    rerun = _face_run(complete)  # a new run uses the current files: nothing is stale any more
    fresh = reports.submission_summary(complete)
    assert (fresh["stale"], fresh["face_evaluation"]["run_id"], fresh["face_evaluation"]["n_videos"]) == (
        False,
        rerun.pk,
        3,
    )


def _admin_change(client, video, upload):
    data = {
        "campaign": video.campaign_id,
        "identity": video.identity_id,
        "name": video.name,
        "action": video.action,
        "resolution_tier": video.resolution_tier,
        "in_evaluated_subset": "on" if video.in_evaluated_subset else "",
        "file": upload,
    }
    return client.post(reverse("admin:evalsite_sourcevideo_change", args=[video.pk]), data, follow=True)


def test_replacing_a_clear_video_in_the_admin_renews_the_browser_copy_and_flags_mismatching_masked_videos(
    complete, masked_files, client, tmp_path, media_root, django_capture_on_commit_callbacks
):
    video = SourceVideo.objects.get(name="bbaf2n")
    web = transcode_for_web(video.file.path, tmp_path / "web.mp4")  # the copy raters saw so far
    with web.open("rb") as handle:
        video.web_file.save("web.mp4", handle)
    old_file, old_web, old_web_bytes = video.file.name, video.web_file.name, web.read_bytes()
    run = _face_run(complete)
    client.force_login(User.objects.create_superuser("boss", "boss@example.org", "pw"))

    new_clip = SimpleUploadedFile("new.mp4", masked_files["short"].read_bytes())  # 70 frames, was 75
    with django_capture_on_commit_callbacks(execute=True):
        response = _admin_change(client, video, new_clip)

    assert response.status_code == 200
    html = response.content.decode()
    assert (
        "Masked video flagged (frame_count_mismatch): masked video of &#x27;bbaf2n&#x27; in Team A / method-1: "
        "75 frames, but source video &#x27;bbaf2n&#x27; has 70" in html
    )
    video.refresh_from_db()
    assert video.frame_count == 70 and video.file_replaced_at is not None
    assert video.web_file.name != old_web and video.web_file.read() != old_web_bytes
    assert not video.file.storage.exists(old_file) and not video.file.storage.exists(old_web)
    masked = MaskedVideo.objects.get(source_video=video)
    assert masked.check_code == "frame_count_mismatch"
    assert masked.check_message == (
        "masked video of 'bbaf2n' in Team A / method-1: 75 frames, but source video "
        "'bbaf2n' has 70; masked videos must keep every frame (after the clear video "
        "was replaced)"
    )
    summary = reports.submission_summary(complete)
    assert (summary["complete"], summary["masked_videos"], summary["flagged_videos"]) == (
        False,
        2,
        ["bbaf2n"],
    )
    assert summary["stale_results"] == {
        "face_evaluation": _replaced(run, "bbaf2n"),
        "behaviour": _replaced(run, "bbaf2n"),
    }
    assert list(complete.missing_source_videos().values_list("name", flat=True)) == ["bbaf2n"]

    # Putting the original clip back clears the flag (the masked video matches again).
    original = SimpleUploadedFile("clip.mpg", (masked_files["good_bbaf2n"]).read_bytes())
    _admin_change(client, video, original)
    masked.refresh_from_db()
    assert masked.check_code == "" and complete.is_complete


def test_a_file_that_is_not_a_video_is_refused_by_the_admin_form_and_changes_nothing(complete, client):
    video = SourceVideo.objects.get(name="brbk7n")
    before = video.file.name
    client.force_login(User.objects.create_superuser("boss", "boss@example.org", "pw"))
    response = _admin_change(client, video, SimpleUploadedFile("clip.mp4", b"plain text"))
    assert "<li>clip.mp4: not a readable video container</li>" in response.content.decode()
    video.refresh_from_db()
    assert video.file.name == before and video.file_replaced_at is None


def test_api_replace_of_a_clear_video_answers_the_flagged_masked_videos(complete, masked_files):
    video = SourceVideo.objects.get(name="brbk7n")
    client = APIClient()
    client.force_authenticate(User.objects.create_superuser("boss", "boss@example.org", "pw"))
    url = f"/api/source-videos/{video.pk}/replace/"
    bad = client.post(url, {"file": SimpleUploadedFile("x.mp4", b"text")}, format="multipart")
    assert bad.status_code == 400
    assert bad.json()["file"] == [
        {"message": "x.mp4: not a readable video container", "code": "unreadable_video"}
    ]
    response = client.post(
        url, {"file": SimpleUploadedFile("small.mp4", masked_files["small"].read_bytes())}, format="multipart"
    )
    assert response.status_code == 200
    body = response.json()
    assert (body["width"], body["height"]) == (180, 144)
    assert [(f["code"], f["submission"]) for f in body["flagged"]] == [("size_mismatch", complete.pk)]


# GRID clips of 3 identities with 2-4 clips each: the attack trains and tests on different clips.
ATTACK_CLIPS = {
    "ID01": [
        "grid_identity_clips/s1/bbal6n.mpg",
        "grid_identity_clips/s1/brif5s.mpg",
        "grid_identity_clips/s1/lgwazp.mpg",
        "grid_identity_clips/s1/pbwx2p.mpg",
    ],
    "ID04": [
        "grid_identity_clips/s4_probable/bbilzs.mpg",
        "grid_identity_clips/s4_probable/sgbc3n.mpg",
        "grid_talking_heads/lwbsza.mpg",
    ],
    "ID02": ["grid_talking_heads/id2_vcd_swwp2s.mpg", "grid_talking_heads/pwij3p.mpg"],
}


def test_an_attack_result_computed_on_a_replaced_masked_video_is_reported_stale(
    db, data_dir, media_root, tmp_path
):
    from pathlib import Path

    from django.core.files import File

    from automated.django_app.attack_service import run_attack
    from automated.django_app.services import create_baseline_submission
    from evalsite.models import Campaign, Identity

    campaign = Campaign.objects.create(name="GRID attack", slug="grid-attack")
    for code, clips in ATTACK_CLIPS.items():
        identity = Identity.objects.create(campaign=campaign, code=code)
        for clip in clips:
            video = SourceVideo(campaign=campaign, identity=identity, name=Path(clip).stem, action="talking")
            with (data_dir / "videos" / clip).open("rb") as handle:
                video.file.save(Path(clip).name, File(handle), save=True)
    submission = create_baseline_submission(
        campaign, "block_permute_fixed", key=bytes(range(32)), web_copies=False
    )
    run = run_attack(submission, attackers=["naive", "parrot"], recognizers=["lbph"], stride=25)
    assert reports.submission_summary(submission)["stale"] is False

    # The team uploads its masked pwij3p again (the same frames, re-encoded): a replacement.
    masked = MaskedVideo.objects.get(submission=submission, source_video__name="pwij3p")
    again = transcode_for_web(masked.file.path, tmp_path / "pwij3p.mp4")
    ingest_submission_zip(
        submission, make_zip(tmp_path / "re.zip", {"pwij3p.mp4": again}), replace=True, web_copies=False
    )

    summary = reports.submission_summary(submission)
    assert summary["attack"]["run_id"] == run.pk  # still the strongest attack: shown, but said to be stale
    assert summary["stale_results"] == {"attack": _replaced(run, "pwij3p")}
    assert (summary["complete"], summary["masked_videos"], summary["stale_videos"]) == (True, 9, ["pwij3p"])
    rows = reports.per_video_report(submission).set_index("video")
    assert rows.loc["pwij3p", "stale_results"] == "attack" and rows["stale"].sum() == 1
