"""The redelivery limit of a poison unit (``lifecycle.start_unit``, ``DEID_TASK_MAX_DELIVERIES``).

A unit whose worker dies in it every time (SIGKILL, out of memory, a crash in a decoder)
would be redelivered forever (``acks_late``, ``reject_on_worker_lost``). Here the death is
a ``BaseException`` that is not an ``Exception`` raised from the unit's work: like a
killed process, nothing after it runs (no result, no failure stored), while the start was
already counted and committed. The same unit on real Celery workers, SIGKILLed on every
delivery: tests/ops/test_celery_runs.py.
"""

import pytest

from automated.django_app import lifecycle
from automated.django_app.attack_models import AttackFold, AttackRun
from automated.django_app.face_models import AutomatedRun, VideoScore

from .test_run_lifecycle import CountingAttackKind, CountingFaceKind, _face_run, submission  # noqa: F401

pytestmark = pytest.mark.django_db

Status = AutomatedRun.Status


class WorkerDied(BaseException):
    """What the unit's worker sees of its own SIGKILL: the work stops there, nothing is stored."""


class DyingFaceKind(CountingFaceKind):
    """The counting face kind whose worker dies in ``victim`` the first ``deaths`` times."""

    def __init__(self, victim, deaths=10**6):
        super().__init__()
        self.victim, self.deaths = victim, deaths

    def compute_video(self, run, masked):
        if masked.pk == self.victim and self.calls.count(masked.pk) < self.deaths:
            self.calls.append(masked.pk)
            raise WorkerDied
        return super().compute_video(run, masked)


class DyingAttackKind(CountingAttackKind):
    """The counting attack kind whose worker dies in every fold and in every summary step."""

    def __init__(self):
        super().__init__()
        self.fold_calls = 0

    def compute_fold(self, run, fold):
        self.fold_calls += 1
        raise WorkerDied

    def compute_final(self, run):
        self.final_calls += 1
        raise WorkerDied


def _deliver(call, times: int) -> None:
    for _ in range(times):
        with pytest.raises(WorkerDied):
            call()


def test_a_video_whose_worker_dies_every_time_fails_its_run_at_the_next_delivery(submission, settings):  # noqa: F811
    settings.DEID_TASK_MAX_DELIVERIES = 3
    run, other = _face_run(submission), _face_run(submission)
    first, victim, third = run.planned_videos
    kind = DyingFaceKind(victim)
    assert lifecycle.process_video(kind, run.pk, first).stored
    _deliver(lambda: lifecycle.process_video(kind, run.pk, victim), 3)
    run.refresh_from_db()
    assert run.status == Status.RUNNING and run.deliveries == {f"video:{first}": 1, f"video:{victim}": 3}
    # The fourth delivery does not run the video again: it fails the run, naming it.
    assert lifecycle.process_video(kind, run.pk, victim) == lifecycle.VideoOutcome(False, False)
    assert kind.calls == [first, victim, victim, victim]
    run.refresh_from_db()
    assert run.status == Status.FAILED and run.finished_at is not None
    assert run.error == "video clip1: the worker died 3 times while processing it; see the worker log"
    assert run.deliveries == {f"video:{first}": 1, f"video:{victim}": 3}  # the failing delivery adds nothing
    # The run's last video is a no-op now; the other run of the same submission is untouched.
    assert not lifecycle.process_video(kind, run.pk, third).stored and kind.calls.count(third) == 0
    assert run.videos_done == 1 and VideoScore.objects.filter(run=run).count() == 1
    other.refresh_from_db()
    assert (other.status, other.deliveries, other.error) == (Status.PENDING, {}, "")


def test_a_video_redelivered_after_its_worker_died_below_the_limit_completes(submission, settings):  # noqa: F811
    settings.DEID_TASK_MAX_DELIVERIES = 3
    run = _face_run(submission)
    victim = run.planned_videos[0]
    kind = DyingFaceKind(victim, deaths=2)
    _deliver(lambda: lifecycle.process_video(kind, run.pk, victim), 2)
    run = lifecycle.execute_inline(kind, run)  # the third delivery of victim, then the other two
    assert (run.status, run.videos_done, run.error) == (Status.COMPLETED, 3, "")
    assert run.deliveries == {f"video:{pk}": 3 if pk == victim else 1 for pk in run.planned_videos}
    scores = VideoScore.objects.filter(run=run).values_list("masked_video_id", "frames_tested")
    assert sorted(scores) == [(pk, pk) for pk in sorted(run.planned_videos)]


def test_with_a_limit_of_one_the_first_death_fails_the_run_and_says_once(submission, settings):  # noqa: F811
    settings.DEID_TASK_MAX_DELIVERIES = 1
    run = _face_run(submission)
    victim = run.planned_videos[2]
    kind = DyingFaceKind(victim)
    _deliver(lambda: lifecycle.process_video(kind, run.pk, victim), 1)
    assert not lifecycle.process_video(kind, run.pk, victim).stored
    run.refresh_from_db()
    assert (run.status, run.error) == (
        Status.FAILED,
        "video clip2: the worker died once while processing it; see the worker log",
    )


def _extracted_attack_run(submission, folds):
    planned = list(submission.masked_videos.order_by("source_video__name").values_list("pk", flat=True))
    run = AttackRun.objects.create(
        submission=submission,
        planned_videos=planned,
        videos_total=3,
        videos_done=3,  # every face crop extracted: the folds are due
        status=AttackRun.Status.RUNNING,
        config={"stride": 5},
        planned_folds=[[planned[i] for i in fold] for fold in folds],
        folds_total=len(folds),
    )
    return run, planned


def test_an_attack_fold_whose_worker_dies_every_time_fails_the_run_naming_the_fold_and_its_videos(
    submission,  # noqa: F811
    settings,
):
    settings.DEID_TASK_MAX_DELIVERIES = 3
    run, planned = _extracted_attack_run(submission, [[0, 2], [1]])
    kind = DyingAttackKind()
    _deliver(lambda: lifecycle.process_fold(kind, run.pk, 0), 3)
    assert lifecycle.process_fold(kind, run.pk, 0) == lifecycle.VideoOutcome(False, False)
    assert kind.fold_calls == 3 and not AttackFold.objects.filter(run=run).exists()
    run.refresh_from_db()
    assert run.status == AttackRun.Status.FAILED and run.deliveries == {"fold:0": 3}
    assert run.error == (
        "fold 0 (testing videos clip0, clip2): the worker died 3 times while processing it; see the worker log"
    )
    assert not lifecycle.process_fold(kind, run.pk, 1).stored and kind.fold_calls == 3


def test_an_attack_summary_whose_worker_dies_every_time_fails_the_run(submission, settings):  # noqa: F811
    settings.DEID_TASK_MAX_DELIVERIES = 2
    run, _ = _extracted_attack_run(submission, [])
    kind = DyingAttackKind()
    # The suite task redelivered under its own id (the claim on final_task admits it).
    _deliver(lambda: lifecycle.run_final_step(kind, run.pk, owner="suite-task-1"), 2)
    assert lifecycle.run_final_step(kind, run.pk, owner="suite-task-1") is False
    run.refresh_from_db()
    assert kind.final_calls == 2 and run.deliveries == {"final": 2}
    assert (run.status, run.error) == (
        AttackRun.Status.FAILED,
        "the attack summary step: the worker died 2 times while processing it; see the worker log",
    )
