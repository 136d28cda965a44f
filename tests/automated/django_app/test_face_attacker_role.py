"""The face evaluation leaves attacker training material out (issue 11, ``role=attacker_train``).

Teams mask the attacker's own clips (the attack trains on them), so a submission is only
complete with them; but the face evaluation plans, scores and reports only the other
videos, and every aggregate (summary, behaviour, leaderboard) is over those. A run that
scored an attacker clip before this rule keeps its row, which the reports leave out.

Hand-made campaign: identities A, B, C; clips a1 (A), b1 (B) evaluated, a2 (A) attacker
material. Stored scores (rank-1, match, SSIM, detection failure, behaviour):
a1 (0.5, 0.25, 0.6, 0.2, 0.8), b1 (0.0, 0.0, 0.4, 0.6, 0.6), a2 (1.0, 1.0, 0.9, 0.0, 0.2).
Over a1 and b1: rank-1 (0.5 + 0.0) / 2 = 0.25, match 0.125, SSIM 0.5, detection failure
0.4, behaviour 0.7; with a2 they would be 0.5, 0.4167, 0.6333, 0.2667, 0.5333.

Real data (the demo's case): ID03's attacker clip pwij3p is the clip its gallery still is
taken from; a pixelate_face run scores the 3 other clips (rank-1 1/3), pwij3p would add a
rank-1 rate of 1.0 (mean 0.5).
"""

import io
import math
from datetime import timedelta

import pytest
from django.core.files.base import ContentFile
from django.utils import timezone
from PIL import Image

from automated.django_app import dispatch, evaluate_all
from automated.django_app.face_models import AutomatedRun, VideoScore
from automated.django_app.face_report import ATTACKER_TRAINING, face_video_columns
from automated.django_app.services import (
    FACE_RUN,
    create_baseline_submission,
    create_face_run,
    run_face_evaluation,
)
from evalsite import reports
from evalsite.portal import leaderboard
from evalsite.portal.demo import _evaluation_is_current
from evalsite.models import Campaign, GalleryImage, Identity, MaskedVideo, SourceVideo, Submission, Team

from ..face_fixtures import GALLERY_FRAME, add_real_clip, frame_at

pytestmark = pytest.mark.django_db

# video -> (rank1_rate, match_rate, ssim, detection_failure_rate, behaviour_score)
SCORES = {
    "a1": (0.5, 0.25, 0.6, 0.2, 0.8),
    "b1": (0.0, 0.0, 0.4, 0.6, 0.6),
    "a2": (1.0, 1.0, 0.9, 0.0, 0.2),
}
STRIDE, DETECTOR = 5, "mediapipe"


@pytest.fixture
def submission(media_root):
    campaign = Campaign.objects.create(name="Roles", slug="roles")
    people = {code: Identity.objects.create(campaign=campaign, code=code) for code in "ABC"}
    for name, code, attacker in (("a1", "A", False), ("b1", "B", False), ("a2", "A", True)):
        SourceVideo.objects.create(
            campaign=campaign,
            identity=people[code],
            name=name,
            file=f"clear/{name}.mpg",
            attacker_train=attacker,
            in_evaluated_subset=not attacker,
        )
    team = Team.objects.create(campaign=campaign, name="T")
    submission = Submission.objects.create(campaign=campaign, team=team, name="m")
    for video in campaign.source_videos.all():
        MaskedVideo.objects.create(submission=submission, source_video=video, file=f"masked/{video.name}.mkv")
    return submission


def _masked(submission, name):
    return MaskedVideo.objects.get(submission=submission, source_video__name=name)


def _complete(run, names, *, finished_at=None):
    """Store the hand-made scores of ``names`` in ``run`` and mark it completed."""
    for name in names:
        rank1, match, ssim, failure, behaviour = SCORES[name]
        VideoScore.objects.create(
            run=run,
            masked_video=_masked(run.submission, name),
            frames_tested=10,
            clear_faces=10,
            masked_faces=8,
            rank1_rate=rank1,
            match_rate=match,
            clear_rank1_rate=1.0,
            clear_match_rate=1.0,
            ssim=ssim,
            detection_failure_rate=failure,
            n_identities=3,
            chance_level=1 / 3,
            n_face_tracks=1,
            faces_leaked=1,
            behaviour_score=behaviour,
            behaviour_metrics={"behaviour_score": behaviour},
        )
    AutomatedRun.objects.filter(pk=run.pk).update(
        status="completed", finished_at=finished_at or timezone.now(), videos_done=len(names)
    )
    run.refresh_from_db()
    return run


def test_face_run_plans_every_masked_video_but_the_attackers_and_completeness_still_needs_it(submission):
    run = create_face_run(submission, stride=STRIDE, detector=DETECTOR)
    evaluated = [_masked(submission, "a1").pk, _masked(submission, "b1").pk]
    assert run.planned_videos == evaluated and run.videos_total == 2  # 3 masked - 1 attacker clip
    # The attack suite's plan (the lifecycle default) still has all three: it trains on a2.
    assert dispatch.RUN_KINDS["attack"].kind.plan(submission).count() == 3
    assert list(FACE_RUN.plan(submission).values_list("pk", flat=True)) == evaluated
    # Completeness is unchanged: without the attacker clip masked the submission is incomplete.
    assert submission.is_complete
    _masked(submission, "a2").delete()
    assert not submission.is_complete
    with pytest.raises(ValueError, match=r"incomplete: 1 of 3 source videos have no masked video \(a2\)"):
        create_face_run(submission, stride=STRIDE, detector=DETECTOR)
    # Only attacker material masked: nothing for the face evaluation to score.
    only = Submission.objects.create(campaign=submission.campaign, team=submission.team, name="only")
    MaskedVideo.objects.create(
        submission=only, source_video=SourceVideo.objects.get(name="a2"), file="masked/only-a2.mkv"
    )
    with pytest.raises(ValueError, match="attacker training material only"):
        create_face_run(only, stride=STRIDE, detector=DETECTOR, allow_incomplete=True)
    assert not AutomatedRun.objects.filter(submission=only).exists()


def test_reports_summary_and_leaderboard_are_over_the_evaluated_videos_only(submission):
    run = _complete(create_face_run(submission, stride=STRIDE, detector=DETECTOR), ["a1", "b1"])
    assert run.video_scores.count() == 2

    columns = face_video_columns(submission)
    assert sorted(columns.index) == ["a1", "b1"]  # no row for the attacker clip
    table = reports.per_video_report(submission).set_index("video")
    # The report still lists every source video (a2 is masked: completeness), without face scores.
    assert bool(table.loc["a2", "has_masked_video"]) and math.isnan(table.loc["a2", "face_rank1_rate"])
    assert ATTACKER_TRAINING in table.loc["a2", "caveats"]
    assert table.loc["a1", "face_rank1_rate"] == 0.5 and ATTACKER_TRAINING not in table.loc["a1", "caveats"]

    summary = reports.submission_summary(submission)
    face = summary["face_evaluation"]
    assert face["n_videos"] == 2 and face["frames_tested"] == 20
    assert face["rank1_rate"] == pytest.approx(0.25)  # (0.5 + 0.0) / 2, not 0.5 with a2
    assert face["match_rate"] == pytest.approx(0.125)
    assert face["ssim"] == pytest.approx(0.5)
    assert face["masking_success_rank1"] == pytest.approx(0.75)
    assert summary["behaviour"]["behaviour_score"] == pytest.approx(0.7)  # (0.8 + 0.6) / 2

    row = leaderboard.leaderboard_frame(submission.campaign).iloc[0]
    assert row["face_detection_failure_rate"] == pytest.approx(0.4)  # (0.2 + 0.6) / 2
    assert row["face_detection_failure_rate_n"] == 2 and row["ssim_n"] == 2
    assert row["behaviour_score"] == pytest.approx(0.7)


def test_an_older_run_that_scored_the_attacker_clip_is_reported_without_it_and_is_not_current(submission):
    config = create_face_run(submission, stride=STRIDE, detector=DETECTOR).config
    AutomatedRun.objects.all().delete()
    planned = [_masked(submission, n).pk for n in ("a1", "a2", "b1")]
    old = AutomatedRun.objects.create(
        submission=submission, config=config, planned_videos=planned, videos_total=3
    )
    _complete(old, ["a1", "a2", "b1"])
    assert old.video_scores.count() == 3  # its rows are kept
    assert sorted(face_video_columns(submission).index) == ["a1", "b1"]
    face = reports.submission_summary(submission)["face_evaluation"]
    assert face["run_id"] == old.pk and face["n_videos"] == 2
    assert face["rank1_rate"] == pytest.approx(0.25)
    # Its plan is not what a run plans now: redone once by "evaluate everything" and the demo.
    assert not evaluate_all.is_current(old, submission)
    assert evaluate_all.covering_run("face", submission) is None
    assert not _evaluation_is_current(submission, STRIDE, DETECTOR)


def test_a_run_planned_without_the_attacker_clip_is_current_and_stays_so_when_it_is_replaced(submission):
    run = _complete(create_face_run(submission, stride=STRIDE, detector=DETECTOR), ["a1", "b1"])
    assert evaluate_all.is_current(run, submission, {"stride": STRIDE, "detector": DETECTOR})
    assert evaluate_all.covering_run("face", submission).pk == run.pk
    assert _evaluation_is_current(submission, STRIDE, DETECTOR)  # the demo does not re-run it
    assert not _evaluation_is_current(submission, STRIDE * 2, DETECTOR)

    def replace(name):
        old = _masked(submission, name)
        later = run.created_at + timedelta(seconds=1)
        MaskedVideo.all_versions.filter(pk=old.pk).update(current=False, superseded_at=later)
        MaskedVideo.objects.create(
            submission=submission, source_video=old.source_video, file=f"masked/{name}-v2.mkv"
        )

    # A new file of the attacker clip changes nothing the face run covers.
    replace("a2")
    assert evaluate_all.is_current(run, submission)
    assert _evaluation_is_current(submission, STRIDE, DETECTOR)
    assert "face_evaluation" not in reports.submission_summary(submission)["stale_results"]
    # A new file of an evaluated clip does.
    replace("b1")
    assert not evaluate_all.is_current(run, submission)
    assert not _evaluation_is_current(submission, STRIDE, DETECTOR)
    assert reports.submission_summary(submission)["stale_results"]["face_evaluation"]["videos"] == ["b1"]


# --- real data: the demo's case (GRID; the gallery still of ID03 is frame 37 of pwij3p) ---

# identity -> (gallery clip, [(clip, attacker material?)]); ID08 is an impostor, gallery only.
GRID = {
    "ID01": ("grid_identity_clips/s1/bbal6n.mpg", [("grid_talking_heads/bbaf2n.mpg", False)]),
    "ID03": (
        "grid_talking_heads/pwij3p.mpg",
        [("grid_talking_heads/id2_vcd_swwp2s.mpg", False), ("grid_talking_heads/pwij3p.mpg", True)],
    ),
    "ID07": ("grid_identity_clips/s4_probable/bbilzs.mpg", [("grid_talking_heads/lwbsza.mpg", False)]),
    "ID08": ("grid_talking_heads/sbia1a.mpg", []),
}


@pytest.fixture
def grid_campaign(data_dir, media_root):
    campaign = Campaign.objects.create(name="GRID roles", slug="grid-roles")
    for code, (gallery_clip, clips) in GRID.items():
        identity = Identity.objects.create(campaign=campaign, code=code)
        still = io.BytesIO()
        Image.fromarray(frame_at(data_dir / "videos" / gallery_clip, GALLERY_FRAME)).save(still, format="PNG")
        GalleryImage(identity=identity, original_name="still.png").image.save(
            "still.png", ContentFile(still.getvalue()), save=True
        )
        for clip, attacker in clips:
            add_real_clip(campaign, identity, data_dir, clip, attacker_train=attacker)
    return campaign


@pytest.mark.slow
def test_real_run_leaves_out_the_attacker_clip_the_gallery_still_comes_from(grid_campaign):
    submission = create_baseline_submission(grid_campaign, "pixelate_face", web_copies=False)
    assert submission.is_complete and submission.masked_videos.count() == 4  # pwij3p is masked too
    run = run_face_evaluation(submission, stride=25)
    scored = sorted(run.video_scores.values_list("masked_video__source_video__name", flat=True))
    assert run.videos_total == 3 and scored == ["bbaf2n", "id2_vcd_swwp2s", "lwbsza"]
    columns = face_video_columns(submission)
    assert sorted(columns.index) == scored
    face = reports.submission_summary(submission)["face_evaluation"]
    assert face["n_videos"] == 3 and face["frames_tested"] == 9  # 3 tested frames per clip
    assert face["rank1_rate"] == pytest.approx(columns["face_rank1_rate"].astype(float).mean())
    assert _evaluation_is_current(submission, 25, "mediapipe")
    # Pixelated faces: only ID03's other clip is still ranked first (3 of 3 tested frames).
    assert columns["face_rank1_rate"].astype(float).to_dict() == {
        "bbaf2n": 0.0,
        "id2_vcd_swwp2s": 1.0,
        "lwbsza": 0.0,
    }
    assert face["rank1_rate"] == pytest.approx(1 / 3)
    # The attacker clip, scored by the run's own per-video step, is the gallery still's own
    # clip: ranked first at every tested frame, it would have lifted the mean to (1 + 1) / 4.
    attacker = FACE_RUN.compute_video(run, _masked(submission, "pwij3p"))
    assert attacker["rank1_rate"] == 1.0
    assert (1.0 + attacker["rank1_rate"]) / 4 == 0.5
