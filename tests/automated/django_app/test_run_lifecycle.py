"""The shared run lifecycle (automated/django_app/lifecycle.py) on the database, without models.

The run kinds here are the real face and attack kinds with their heavy per-video and
final computations replaced by cheap deterministic ones that count their calls, so each
rule of the lifecycle (claim once, no-op on finished runs, one row per video, final step
once per owner, failure never overwriting a completed run) is checked in milliseconds.
The real computations run in tests/automated/django_app/test_face_services.py,
test_attack_service.py and, on real Celery workers, tests/ops/test_celery_runs.py.
"""

import pytest

from automated.django_app import dispatch, lifecycle
from automated.django_app.attack_models import AttackExtraction, AttackResult, AttackRun
from automated.django_app.attack_service import AttackRunKind
from automated.django_app.face_models import AutomatedRun, VideoScore
from automated.django_app.services import FaceRunKind
from evalsite.models import Campaign, Identity, MaskedVideo, SourceVideo, Submission, Team

pytestmark = pytest.mark.django_db

Status = AutomatedRun.Status


class CountingFaceKind(FaceRunKind):
    """The face kind, scoring a video as ``frames_tested = masked video id`` (no decoding)."""

    def __init__(self, fail_on=None):
        self.calls, self.fail_on = [], fail_on

    def compute_video(self, run, masked):
        self.calls.append(masked.pk)
        if masked.pk == self.fail_on:
            raise ValueError(f"source video {masked.source_video.name!r}: cannot decode frame 7")
        return {"frames_tested": masked.pk, "match_rate": 0.5}


class CountingAttackKind(AttackRunKind):
    """The attack kind with a one-row suite table (no crops, no training)."""

    def __init__(self):
        self.video_calls, self.final_calls = [], 0

    def compute_video(self, run, masked):
        self.video_calls.append(masked.pk)
        return {"n_crops": 3, "extraction_s": 0.25}

    def compute_final(self, run):
        self.final_calls += 1
        row = dict(
            recognizer="lbph",
            attacker="parrot",
            selection="all",
            subset_size=2,
            repeat=0,
            n_identities=2,
            n_train=4,
            n_test=2,
            accuracy=1.0,
            chance_level=0.5,
            chance_normalised=1.0,
            fit_s=0.0,
            predict_s=0.0,
        )
        return {"table": [row], "per_video": [], "n_samples": 6, "training_s": 0.5}


@pytest.fixture
def submission(db):
    campaign = Campaign.objects.create(name="Lifecycle", slug="lifecycle")
    submission = Submission.objects.create(
        campaign=campaign, team=Team.objects.create(campaign=campaign, name="T"), name="m"
    )
    for i, code in enumerate(["ID01", "ID02", "ID03"]):
        identity = Identity.objects.create(campaign=campaign, code=code)
        source = SourceVideo.objects.create(
            campaign=campaign, identity=identity, name=f"clip{i}", file=f"clear/{i}.mpg"
        )
        MaskedVideo.objects.create(submission=submission, source_video=source, file=f"masked/{i}.mkv")
    return submission


def _face_run(submission):
    planned = list(submission.masked_videos.order_by("source_video__name").values_list("pk", flat=True))
    return AutomatedRun.objects.create(
        submission=submission, planned_videos=planned, videos_total=len(planned)
    )


def test_claim_moves_pending_to_running_once(submission):
    run = _face_run(submission)
    assert lifecycle.claim(AutomatedRun, run.pk) is True
    assert lifecycle.claim(AutomatedRun, run.pk) is False
    run.refresh_from_db()
    assert run.status == Status.RUNNING and run.started_at is not None


def test_run_completes_with_its_last_video_and_counts_progress(submission):
    kind, run = CountingFaceKind(), _face_run(submission)
    first, second, third = run.planned_videos
    assert lifecycle.process_video(kind, run.pk, first).stored
    run.refresh_from_db()
    assert (run.status, run.progress) == (Status.RUNNING, "1/3 videos")
    lifecycle.process_video(kind, run.pk, second)
    lifecycle.process_video(kind, run.pk, third)
    run.refresh_from_db()
    assert (run.status, run.videos_done, run.videos_total) == (Status.COMPLETED, 3, 3)
    assert sorted(VideoScore.objects.filter(run=run).values_list("frames_tested", flat=True)) == sorted(
        run.planned_videos
    )


def test_redelivered_video_task_of_a_completed_run_is_a_no_op(submission):
    kind, run = CountingFaceKind(), _face_run(submission)
    lifecycle.execute_inline(kind, run)
    finished_at = AutomatedRun.objects.get(pk=run.pk).finished_at
    for masked_video_id in run.planned_videos:  # e.g. a worker restart redelivers them all
        outcome = lifecycle.process_video(kind, run.pk, masked_video_id)
        assert outcome == lifecycle.VideoOutcome(stored=False, final_due=False)
    run.refresh_from_db()
    assert (run.status, run.finished_at, run.error) == (Status.COMPLETED, finished_at, "")
    assert len(kind.calls) == 3 and VideoScore.objects.filter(run=run).count() == 3
    assert lifecycle.claim(AutomatedRun, run.pk) is False
    assert lifecycle.fail(AutomatedRun, run.pk, "late error") is False  # never marks a completed run failed
    assert AutomatedRun.objects.get(pk=run.pk).status == Status.COMPLETED


def test_duplicate_delivery_of_one_video_stores_one_row(submission):
    kind, run = CountingFaceKind(), _face_run(submission)
    video = run.planned_videos[0]
    assert lifecycle.process_video(kind, run.pk, video).stored
    assert not lifecycle.process_video(
        kind, run.pk, video
    ).stored  # sequential duplicate: not even recomputed
    assert kind.calls == [video]
    # Two deliveries computing at once (visibility timeout while the first still ran):
    # both reach the store; the second finds the row and counts nothing.
    assert lifecycle._store_video(kind, run.pk, run.planned_videos[1], {"frames_tested": 1}) is True
    assert lifecycle._store_video(kind, run.pk, run.planned_videos[1], {"frames_tested": 2}) is False
    run.refresh_from_db()
    assert run.videos_done == 2 and VideoScore.objects.filter(run=run).count() == 2
    assert VideoScore.objects.get(run=run, masked_video_id=run.planned_videos[1]).frames_tested == 1


def test_a_failing_video_fails_the_run_and_the_others_store_nothing(submission):
    run = _face_run(submission)
    kind = CountingFaceKind(fail_on=run.planned_videos[1])
    lifecycle.process_video(kind, run.pk, run.planned_videos[0])
    with pytest.raises(ValueError, match="source video 'clip1': cannot decode frame 7"):
        lifecycle.process_video(kind, run.pk, run.planned_videos[1])
    run.refresh_from_db()
    assert (
        run.status == Status.FAILED and run.error == "ValueError: source video 'clip1': cannot decode frame 7"
    )
    assert not lifecycle.process_video(kind, run.pk, run.planned_videos[2]).stored
    assert kind.calls == run.planned_videos[:2]  # the third was never computed
    run.refresh_from_db()
    assert run.status == Status.FAILED and run.videos_done == 1


def test_a_masked_video_replaced_after_queueing_is_still_scored_and_the_run_completes(submission):
    # Replacing one video mid-run must not throw away every other video's work: the
    # planned version is scored (and reported stale by evalsite.staleness).
    kind, run = CountingFaceKind(), _face_run(submission)
    MaskedVideo.objects.filter(pk=run.planned_videos[0]).update(current=False)
    for pk in run.planned_videos:
        assert lifecycle.process_video(kind, run.pk, pk).stored
    run.refresh_from_db()
    assert run.status == Status.COMPLETED and run.videos_done == 3
    assert kind.calls == run.planned_videos


def test_a_masked_video_deleted_after_queueing_fails_the_run_by_name(submission):
    kind, run = CountingFaceKind(), _face_run(submission)
    MaskedVideo.all_versions.filter(pk=run.planned_videos[0]).delete()
    with pytest.raises(LookupError, match=f"masked video {run.planned_videos[0]} was deleted"):
        lifecycle.process_video(kind, run.pk, run.planned_videos[0])
    assert AutomatedRun.objects.get(pk=run.pk).status == Status.FAILED


def test_a_video_outside_the_plan_is_ignored(submission):
    kind, run = CountingFaceKind(), _face_run(submission)
    AutomatedRun.objects.filter(pk=run.pk).update(planned_videos=run.planned_videos[:1], videos_total=1)
    assert not lifecycle.process_video(kind, run.pk, run.planned_videos[2]).stored
    assert kind.calls == [] and not VideoScore.objects.exists()


def _attack_run(submission):
    planned = list(submission.masked_videos.order_by("source_video__name").values_list("pk", flat=True))
    return AttackRun.objects.create(
        submission=submission, planned_videos=planned, videos_total=len(planned), config={"stride": 5}
    )


def test_attack_final_step_runs_once_after_every_video(submission):
    kind, run = CountingAttackKind(), _attack_run(submission)
    outcomes = [lifecycle.process_video(kind, run.pk, pk) for pk in run.planned_videos]
    assert [o.final_due for o in outcomes] == [False, False, True]
    assert lifecycle.run_final_step(kind, run.pk, owner="task-a") is True
    run.refresh_from_db()
    assert run.status == Status.COMPLETED and run.extraction_s == pytest.approx(0.75) and run.n_samples == 6
    # Redelivered suite task, a second suite task, redelivered video tasks: all no-ops.
    assert lifecycle.run_final_step(kind, run.pk, owner="task-a") is False
    assert lifecycle.run_final_step(kind, run.pk, owner="task-b") is False
    assert not any(lifecycle.process_video(kind, run.pk, pk).final_due for pk in run.planned_videos)
    assert kind.final_calls == 1 and len(kind.video_calls) == 3
    assert (
        AttackResult.objects.filter(run=run).count() == 1
        and AttackExtraction.objects.filter(run=run).count() == 3
    )


def test_attack_final_step_owned_by_one_task_until_its_redelivery(submission):
    kind, run = CountingAttackKind(), _attack_run(submission)
    assert lifecycle.run_final_step(kind, run.pk, owner="early") is False  # not claimed: videos not done
    for pk in run.planned_videos:
        lifecycle.process_video(kind, run.pk, pk)
    # The suite task "a" claimed the step, then its worker died before writing.
    AttackRun.objects.filter(pk=run.pk).update(final_task="a")
    assert lifecycle.run_final_step(kind, run.pk, owner="b") is False  # a different duplicate: no-op
    assert kind.final_calls == 0
    assert lifecycle.run_final_step(kind, run.pk, owner="a") is True  # the redelivery of "a" takes over
    assert kind.final_calls == 1 and AttackRun.objects.get(pk=run.pk).status == Status.COMPLETED


def test_enqueue_queues_only_unfinished_videos(submission, monkeypatch):
    kind, run = CountingFaceKind(), _face_run(submission)
    lifecycle.process_video(kind, run.pk, run.planned_videos[0])
    queued = []
    monkeypatch.setattr(dispatch.RUN_KINDS["face"].video_task, "delay", lambda *args: queued.append(args))
    assert dispatch.enqueue(run) == 2 and queued == [(run.pk, pk) for pk in run.planned_videos[1:]]
    AutomatedRun.objects.filter(pk=run.pk).update(status=Status.COMPLETED)
    assert dispatch.enqueue(run) == 0 and len(queued) == 2
