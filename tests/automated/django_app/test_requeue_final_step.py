"""Re-queueing a run whose claimed final step (attack suite) was lost completes it (review of issue 8)."""

import pytest

from automated.django_app import dispatch, lifecycle
from automated.django_app.attack_models import AttackResult, AttackRun
from automated.django_app.run_models import RunStatus

from .test_run_lifecycle import CountingAttackKind, _attack_run, submission  # noqa: F401 (fixture)


def test_requeue_after_a_lost_suite_task_takes_over_its_claim(submission, monkeypatch):  # noqa: F811
    kind, run = CountingAttackKind(), _attack_run(submission)
    for pk in run.planned_videos:
        lifecycle.process_video(kind, run.pk, pk)
    # The suite task "lost-1" claimed the step; its message then vanished (broker restarted
    # without persistence), so no redelivery of it will ever come.
    AttackRun.objects.filter(pk=run.pk).update(final_task="lost-1")
    queued = []
    monkeypatch.setattr(
        dispatch.RUN_KINDS["attack"].final_task,
        "apply_async",
        lambda args, task_id=None: queued.append((args, task_id)),
    )
    assert dispatch.enqueue(run) == 0
    assert queued == [((run.pk,), "lost-1")]  # the re-queued suite runs as the claimant
    assert lifecycle.run_final_step(kind, run.pk, owner=queued[0][1]) is True
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED and kind.final_calls == 1
    assert AttackResult.objects.filter(run=run).count() == 1
    assert dispatch.enqueue(run) == 0 and len(queued) == 1  # a finished run queues nothing


def test_requeue_of_an_unclaimed_final_step_gets_a_fresh_task_id(submission, monkeypatch):  # noqa: F811
    kind, run = CountingAttackKind(), _attack_run(submission)
    for pk in run.planned_videos:
        lifecycle.process_video(kind, run.pk, pk)
    queued = []
    monkeypatch.setattr(
        dispatch.RUN_KINDS["attack"].final_task,
        "apply_async",
        lambda args, task_id=None: queued.append((args, task_id)),
    )
    assert dispatch.enqueue(run) == 0 and queued == [((run.pk,), None)]


def test_a_second_start_with_the_same_options_while_the_first_is_active_is_refused(submission):  # noqa: F811
    first = dispatch.create_run("attack", submission)
    with pytest.raises(
        ValueError,
        match=rf"attack run {first.pk} of this submission with the same options is already pending \(0/3 videos\)",
    ):
        dispatch.create_run("attack", submission)
    assert AttackRun.objects.filter(submission=submission).count() == 1
    other = dispatch.create_run("attack", submission, seed=7)  # other options: a run of its own
    AttackRun.objects.filter(pk=first.pk).update(status=RunStatus.COMPLETED)
    again = dispatch.create_run("attack", submission)  # the first one finished: a new run may start
    assert AttackRun.objects.filter(submission=submission).count() == 3 and again.pk not in (
        first.pk,
        other.pk,
    )
