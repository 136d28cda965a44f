"""Django layer of the face evaluation on a tiny real campaign (3 GRID clips, 4 identities)."""

import io
import re
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings
from django.core.files import File
from django.core.files.base import ContentFile
from django.core.management import call_command
from django.core.management.base import CommandError
from PIL import Image

from automated.django_app.face_models import AutomatedRun, VideoScore
from automated.django_app import dispatch
from automated.django_app.services import MissingGalleryError, create_baseline_submission, run_face_evaluation
from automated.video import VideoWriter, iter_frames
from evalsite import reports
from evalsite.models import Campaign, GalleryImage, Identity, MaskedVideo, SourceVideo

from ..face_fixtures import GALLERY_FRAME, frame_at

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

# identity code -> (gallery clip, probe clips); the gallery still is from a different clip.
PEOPLE = {
    "ID01": ("grid_identity_clips/s1/bbal6n.mpg", ["grid_talking_heads/bbaf2n.mpg"]),
    "ID03": ("grid_talking_heads/pwij3p.mpg", ["grid_talking_heads/id2_vcd_swwp2s.mpg"]),
    "ID07": ("grid_identity_clips/s4_probable/bbilzs.mpg", ["grid_talking_heads/lwbsza.mpg"]),
    "ID08": ("grid_talking_heads/sbia1a.mpg", []),  # impostor identity, gallery only
}
STRIDE = 25  # 3 tested frames per clip


@pytest.fixture
def campaign(data_dir, media_root):
    campaign = Campaign.objects.create(name="Tiny GRID", slug="tiny-grid")
    for code, (gallery_clip, clips) in PEOPLE.items():
        identity = Identity.objects.create(campaign=campaign, code=code)
        still = io.BytesIO()
        Image.fromarray(frame_at(data_dir / "videos" / gallery_clip, GALLERY_FRAME)).save(still, format="PNG")
        image = GalleryImage(identity=identity, original_name="still.png")
        image.image.save("still.png", ContentFile(still.getvalue()), save=True)
        for clip in clips:
            video = SourceVideo(campaign=campaign, identity=identity, name=Path(clip).stem, action="talking")
            with (data_dir / "videos" / clip).open("rb") as handle:
                video.file.save(Path(clip).name, File(handle), save=True)
    return campaign


def test_baseline_submission_masks_every_source_video_under_opaque_names(campaign):
    submission = create_baseline_submission(campaign, "pixelate_face", web_copies=False)
    assert submission.baseline_method == "pixelate_face" and submission.team.name == "Baselines"
    assert submission.is_complete
    masked = list(submission.masked_videos.select_related("source_video"))
    assert len(masked) == 3
    for video in masked:
        assert (video.frame_count, video.width, video.height, video.fps) == (75, 360, 288, 25.0)
        name = Path(video.file.name).name
        assert name.endswith(".mkv") and video.source_video.name not in name
        assert "ID0" not in video.file.name and Path(video.file.path).is_file()
    # Idempotent: a second call keeps the same rows and files.
    files = sorted(v.file.name for v in masked)
    again = create_baseline_submission(campaign, "pixelate_face", web_copies=False)
    assert again.pk == submission.pk and sorted(again.masked_videos.values_list("file", flat=True)) == files
    assert MaskedVideo.objects.count() == 3


def test_baseline_name_taken_by_a_team_method_is_refused(campaign):
    from evalsite.services import create_submission

    create_submission(campaign, "Baselines", "blur_face")
    with pytest.raises(ValueError, match="not the 'blur_face' baseline"):
        create_baseline_submission(campaign, "blur_face", web_copies=False)
    with pytest.raises(ValueError, match="unknown baseline method 'smear'"):
        create_baseline_submission(campaign, "smear")


def test_evaluation_stores_scores_that_order_identity_above_blur(campaign):
    identity_submission = create_baseline_submission(campaign, "identity", web_copies=False)
    blurred_submission = create_baseline_submission(campaign, "blur_frame", web_copies=False)
    identity_run = run_face_evaluation(identity_submission, stride=STRIDE)
    blurred_run = run_face_evaluation(blurred_submission, stride=STRIDE)
    for run in (identity_run, blurred_run):
        assert run.status == AutomatedRun.Status.COMPLETED and run.finished_at >= run.started_at
        assert run.video_scores.count() == 3 and run.config["stride"] == STRIDE
        # Every run records its detector, embedder and threshold (the embedder's by default).
        assert (run.config["detector"], run.config["embedder"], run.config["threshold"]) == (
            "mediapipe",
            "dlib_resnet",
            0.6,
        )

    scores = VideoScore.objects.filter(run=identity_run)
    assert all(s.match_rate == 1.0 and s.rank1_rate == 1.0 and s.frames_tested == 3 for s in scores)
    assert all(
        s.psnr_db is None and s.psnr_identical_frames == 3 for s in scores
    )  # identical: +inf stored as NULL
    assert all(s.chance_level == pytest.approx(0.25) for s in scores)
    # One person per clip, left detectable and recognisable by the identity baseline.
    assert all((s.n_face_tracks, s.faces_leaked, s.all_faces) == (1, 1, 3) for s in scores)
    # The clear side is on disk (CACHE_DIR/clear_side): one entry per source video, shared by both runs.
    assert len(list((Path(settings.CACHE_DIR) / "clear_side").glob("clear_side_*.npz"))) == 3
    blurred = VideoScore.objects.filter(run=blurred_run)
    assert all(s.match_rate == 0.0 and s.ssim < 0.95 for s in blurred)

    table = reports.per_video_report(identity_submission).set_index("video")
    assert table.loc["bbaf2n", "face_rank1_rate"] == 1.0 and table.loc["bbaf2n", "identity_code"] == "ID01"
    summary = reports.submission_summary(blurred_submission)["face_evaluation"]
    assert summary["n_videos"] == 3 and summary["match_rate"] == 0.0
    assert summary["masking_success_match"] == 1.0
    assert reports.submission_summary(identity_submission)["face_evaluation"]["psnr_db"] is None

    # The latest completed run is the one reports show.
    latest = run_face_evaluation(identity_submission, stride=40)  # 2 tested frames per clip
    assert reports.submission_summary(identity_submission)["face_evaluation"]["run_id"] == latest.pk
    assert set(reports.per_video_report(identity_submission)["face_frames_tested"]) == {2}


def test_identity_without_gallery_image_fails_the_run_with_its_code(campaign):
    submission = create_baseline_submission(campaign, "identity", web_copies=False)
    GalleryImage.objects.filter(identity__code="ID03").delete()
    with pytest.raises(MissingGalleryError, match="identities without a gallery image: ID03"):
        run_face_evaluation(submission, stride=STRIDE)
    run = AutomatedRun.objects.get(submission=submission)
    assert run.status == AutomatedRun.Status.FAILED and "ID03" in run.error
    # The report says the run failed and why, instead of null.
    section = reports.submission_summary(submission)["face_evaluation"]
    assert section == {"status": "failed", "run_id": run.pk, "error": run.error}


def test_commands_make_baseline_and_evaluate(campaign):
    out = io.StringIO()
    call_command("make_baseline", "tiny-grid", "--method", "eye_mask", "--no-web-copies", stdout=out)
    submission = campaign.submissions.get(name="eye_mask")
    assert (
        f"submission {submission.pk}" in out.getvalue()
        and "3 masked videos (3 new, 0 kept)" in out.getvalue()
    )
    out = io.StringIO()
    call_command("make_baseline", "tiny-grid", "--method", "eye_mask", "--no-web-copies", stdout=out)
    assert "3 masked videos (0 new, 3 kept)" in out.getvalue()
    out = io.StringIO()
    call_command(
        "evaluate", str(submission.pk), "--stride", "40", "--embedder", "dlib_resnet_native", stdout=out
    )
    assert "completed" in out.getvalue() and "rank1_rate" in out.getvalue()
    # numbers as the data dictionary rounds them (rank1_rate: 4 decimals), never a raw float repr
    assert re.search(r"^  rank1_rate +(\d\.\d{4}|-)$", out.getvalue(), re.M)
    assert not re.search(r"\d\.\d{5,}", out.getvalue())
    assert AutomatedRun.objects.get(submission=submission).config["embedder"] == "dlib_resnet_native"


def test_queued_run_executes_through_the_celery_task_after_commit(
    campaign, django_capture_on_commit_callbacks, monkeypatch
):
    submission = create_baseline_submission(campaign, "identity", web_copies=False)
    # As with a broker: tasks are queued only once the run row is committed (the queued
    # tasks then still run eagerly here, in place of a worker).
    monkeypatch.setattr(dispatch, "runs_in_process", lambda: False)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        run = dispatch.start_run("face", submission, stride=40)
        assert run.status == AutomatedRun.Status.PENDING and run.progress == "0/3 videos"
        assert not run.video_scores.exists()
    # The queueing, then the completed run's report-warming hook (registered while it ran).
    assert len(callbacks) == 2 and callbacks[1].func.__name__ == "run_completed"
    run.refresh_from_db()
    assert run.status == AutomatedRun.Status.COMPLETED and run.video_scores.count() == 3
    assert (run.videos_done, run.videos_total) == (3, 3)


def test_admin_lists_runs_and_scores_read_only(campaign, admin_client):
    submission = create_baseline_submission(campaign, "identity", web_copies=False)
    run = AutomatedRun.objects.create(submission=submission, config={"stride": 5})
    for url in (
        "/admin/automated/automatedrun/",
        "/admin/automated/videoscore/",
        f"/admin/automated/automatedrun/{run.pk}/change/",
    ):
        assert admin_client.get(url).status_code == 200
    assert admin_client.get("/admin/automated/automatedrun/add/").status_code == 403


def test_submission_without_masked_videos_is_not_evaluated(campaign):
    from evalsite.services import create_submission

    submission = create_submission(campaign, "Team A", "nothing yet")
    with pytest.raises(
        ValueError, match=r"'Team A / nothing yet' has no masked video yet \(3 source videos\)"
    ):
        run_face_evaluation(submission, stride=STRIDE)
    with pytest.raises(ValueError, match="has no masked video yet"):
        run_face_evaluation(submission, stride=STRIDE, allow_incomplete=True)
    assert not AutomatedRun.objects.filter(submission=submission).exists()


def test_incomplete_submission_is_evaluated_only_when_allowed(campaign):
    submission = create_baseline_submission(campaign, "identity", web_copies=False)
    submission.masked_videos.get(source_video__name="lwbsza").delete()
    with pytest.raises(
        ValueError, match=r"is incomplete: 1 of 3 source videos have no masked video \(lwbsza\)"
    ):
        run_face_evaluation(submission, stride=40)
    assert not AutomatedRun.objects.filter(submission=submission).exists()
    run = run_face_evaluation(submission, stride=40, allow_incomplete=True)
    assert run.status == AutomatedRun.Status.COMPLETED and run.video_scores.count() == 2
    with pytest.raises(CommandError, match="is incomplete"):
        call_command("evaluate", str(submission.pk), "--stride", "40", stdout=io.StringIO())
    out = io.StringIO()
    call_command("evaluate", str(submission.pk), "--stride", "40", "--allow-incomplete", stdout=out)
    assert "n_videos                 2" in out.getvalue()


def test_an_incomplete_submission_is_refused_naming_the_option_that_allows_it(campaign):
    from automated.django_app.api import OPTIONS
    from automated.django_app.attack_models import AttackRun
    from automated.django_app.attack_service import create_attack_run
    from automated.django_app.services import create_face_run

    submission = create_baseline_submission(campaign, "identity", web_copies=False)
    submission.masked_videos.get(source_video__name="lwbsza").delete()
    pk = submission.pk
    missing = "submission 'Baselines / identity' is incomplete: 1 of 3 source videos have no masked video (lwbsza); "
    for kind, command, create in (
        ("face", "evaluate", create_face_run),
        ("attack", "attack", create_attack_run),
    ):
        with pytest.raises(ValueError) as refused:
            create(submission)
        assert str(refused.value) == (
            f"{missing}upload them, or run on the masked ones anyway: `manage.py {command} {pk} --allow-incomplete`, "
            f'or in the API POST /api/submissions/{pk}/runs/ {{"kind": "{kind}", "allow_incomplete": true}} '
            f'(/evaluate/: {{"{kind}": {{"allow_incomplete": true}}}})'
        )
        # the named way out is real: the API's option, validated as the API does, creates the run
        options = OPTIONS[kind](data={"allow_incomplete": True})
        assert options.is_valid(), options.errors
        run = dispatch.create_run(kind, submission, **options.validated_data)
        assert run.videos_total == 2
    assert AutomatedRun.objects.filter(submission=submission).count() == 1 and AttackRun.objects.count() == 1
    with pytest.raises(CommandError, match=rf"`manage.py attack {pk} --allow-incomplete`"):
        call_command("attack", str(pk), "--no-wait", stdout=io.StringIO())


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"stride": 0}, "stride must be a whole number >= 1, got 0"),
        ({"detector": "yolo"}, "unknown face detector 'yolo'"),
        ({"threshold": -1.0}, "threshold must be a finite L2 distance >= 0, got -1.0"),
    ],
)
def test_queued_and_direct_runs_check_their_options_before_creating_a_run(campaign, kwargs, message):
    submission = create_baseline_submission(campaign, "identity", web_copies=False)
    for start in (run_face_evaluation, lambda s, **kw: dispatch.start_run("face", s, **kw)):
        with pytest.raises(ValueError, match=message):
            start(submission, **kwargs)
    assert not AutomatedRun.objects.filter(submission=submission).exists()


def test_clear_video_without_a_face_is_stored_as_undefined(campaign, data_dir, tmp_path):
    """A source video where no face is found gets NULL face scores; the run completes."""
    path = tmp_path / "wall.mkv"  # ten real frames cropped to the wall above the speaker
    with VideoWriter(path, 25.0, (64, 48), codec="ffv1") as writer:
        for _, frame in iter_frames(data_dir / "videos/grid_talking_heads/bbaf2n.mpg", end=10):
            writer.write(np.ascontiguousarray(frame[:48, :64]))
    video = SourceVideo(
        campaign=campaign, identity=campaign.identities.get(code="ID08"), name="wall", action="none"
    )
    with path.open("rb") as handle:
        video.file.save("wall.mkv", File(handle), save=True)
    submission = create_baseline_submission(campaign, "blur_frame", web_copies=False)
    run = run_face_evaluation(submission, stride=5)
    score = run.video_scores.get(masked_video__source_video__name="wall")
    assert (score.frames_tested, score.clear_faces, score.match_rate, score.mean_iou) == (2, 0, None, None)
    assert run.status == AutomatedRun.Status.COMPLETED and run.video_scores.count() == 4


def test_gallery_image_without_a_face_fails_the_run_naming_the_image(campaign):
    submission = create_baseline_submission(campaign, "identity", web_copies=False)
    image = GalleryImage.objects.get(identity__code="ID08")
    wall = io.BytesIO()
    Image.fromarray(np.full((120, 160, 3), 128, np.uint8)).save(wall, format="PNG")
    image.original_name = "wall.png"
    image.image.save("wall.png", ContentFile(wall.getvalue()), save=True)
    with pytest.raises(
        ValueError, match="gallery image 'wall.png' of identity ID08: no face found in the 160x120"
    ):
        run_face_evaluation(submission, stride=STRIDE)
    assert AutomatedRun.objects.get(submission=submission).status == AutomatedRun.Status.FAILED


def test_api_face_run_options_name_the_embedder():
    from automated.django_app.api import FaceRunOptions

    options = FaceRunOptions(data={"detector": "mmod"})
    assert options.is_valid() and options.validated_data["embedder"] == "dlib_resnet"
    assert options.validated_data["detector"] == "mmod"
    assert FaceRunOptions(data={"embedder": "arcface"}).is_valid()  # the InsightFace backend's
    bad = FaceRunOptions(data={"embedder": "facenet"})
    assert not bad.is_valid() and '"facenet" is not a valid choice.' in str(bad.errors["embedder"])


def test_the_attack_reads_the_crops_the_face_evaluation_made_and_decodes_nothing(campaign, monkeypatch):
    """Issue 20, each file decoded once: the face run's decoding pass leaves the attack's
    face crops in its cache (``attack.faces.CropPass``), so the attack's per-video units
    decode no frame (here decoding would fail the run)."""
    from automated.attack import faces
    from automated.django_app.attack_models import AttackRun
    from automated.django_app.attack_service import run_attack

    submission = create_baseline_submission(campaign, "blur_face", web_copies=False)
    assert run_face_evaluation(submission, stride=5).status == AutomatedRun.Status.COMPLETED

    def no_decoding(*args, **kwargs):
        raise AssertionError("the attack decoded a video")

    monkeypatch.setattr(faces, "_clear_crops", no_decoding)
    monkeypatch.setattr(faces, "_masked_crops", no_decoding)
    run = run_attack(submission, attackers=["clear", "naive"], recognizers=["lbph"], stride=5)
    assert run.status == AttackRun.Status.COMPLETED, run.error
    assert sorted(run.extractions.values_list("n_crops", flat=True)) == [15, 15, 15]  # 75 frames, stride 5
