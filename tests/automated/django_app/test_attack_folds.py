"""Per-fold units of attack runs in the shared run lifecycle (cheap kinds, real database rows).

The attack kind plans one cross-video fold per tested video when the run is created; once
every video is extracted the folds are units of their own (one Celery task each, shared by
workers), stored once each whatever the redeliveries, and the summary step runs after the
last fold. The heavy computations run in test_attack_service.py.
"""

import pytest

from automated.django_app import dispatch, lifecycle
from automated.django_app.attack_models import AttackFold, AttackResult, AttackRun
from automated.django_app.attack_service import AttackRunKind, create_attack_run
from evalsite.models import Campaign, Identity, MaskedVideo, SourceVideo, Submission, Team

pytestmark = pytest.mark.django_db

ROW = dict(
    selection="all",
    subset_size=2,
    repeat=0,
    n_identities=2,
    n_train=4,
    n_test=2,
    chance_level=0.5,
    fit_s=0.0,
    predict_s=0.0,
)


class CountingFoldKind(AttackRunKind):
    """The attack kind with no decoding or training: counts its calls."""

    def __init__(self):
        self.videos, self.folds, self.finals = [], [], 0

    def compute_video(self, run, masked):
        self.videos.append(masked.pk)
        return {"n_crops": 2, "extraction_s": 0.5}

    def compute_fold(self, run, fold):
        self.folds.append(fold)
        return {"test_videos": run.planned_folds[fold], "rows": [], "predictions": {}, "fit_s": 1.0}

    def compute_final(self, run):
        self.finals += 1
        done = sorted(run.folds.values_list("fold", flat=True))
        row = dict(ROW, recognizer="lbph", attacker="parrot", accuracy=len(done) / 4, chance_normalised=0.0)
        return {"table": [row], "per_video": [], "n_samples": 8, "training_s": 2.0, "counts": {"n_folds": 4}}


@pytest.fixture
def submission():
    # ID01 with 3 videos, ID02 with 2 (one the attacker's own), ID03 with 1 (extra class).
    campaign = Campaign.objects.create(name="Folds", slug="folds")
    submission = Submission.objects.create(
        campaign=campaign, team=Team.objects.create(campaign=campaign, name="T"), name="m"
    )
    layout = [
        ("ID01", False),
        ("ID01", False),
        ("ID01", False),
        ("ID02", False),
        ("ID02", True),
        ("ID03", False),
    ]
    identities = {}
    for i, (code, attacker) in enumerate(layout):
        if code not in identities:
            identities[code] = Identity.objects.create(campaign=campaign, code=code)
        identity = identities[code]
        source = SourceVideo.objects.create(
            campaign=campaign,
            identity=identity,
            name=f"clip{i}",
            file=f"clear/{i}.mpg",
            attacker_train=attacker,
            in_evaluated_subset=not attacker,
        )
        MaskedVideo.objects.create(submission=submission, source_video=source, file=f"masked/{i}.mkv")
    return submission


def test_folds_are_planned_from_the_catalogue(submission):
    run = create_attack_run(submission, attackers=["parrot"], recognizers=["lbph"])
    names = [[MaskedVideo.objects.get(pk=pk).source_video.name for pk in fold] for fold in run.planned_folds]
    # Leave one video out over ID01's three clips and ID02's evaluated clip (its other clip,
    # the attacker's own, always trains); ID03 has a single clip: an extra class only.
    assert names == [["clip0"], ["clip1"], ["clip2"], ["clip3"]] and run.folds_total == 4


def test_fold_units_run_once_each_after_every_video_then_the_summary(submission):
    kind = CountingFoldKind()
    run = create_attack_run(submission, attackers=["parrot"], recognizers=["lbph"])
    outcomes = [lifecycle.process_video(kind, run.pk, pk) for pk in run.planned_videos]
    assert [o.folds_due for o in outcomes] == [False] * 5 + [True]
    assert not any(o.final_due for o in outcomes)  # the folds come first
    assert lifecycle.run_final_step(kind, run.pk, owner="early") is False  # folds not done: not claimed
    first = [lifecycle.process_fold(kind, run.pk, fold) for fold in range(4)]
    assert [o.stored for o in first] == [True] * 4 and [o.final_due for o in first] == [False] * 3 + [True]
    # Redelivered or duplicated fold tasks, and a fold outside the plan, store nothing.
    again = [lifecycle.process_fold(kind, run.pk, fold) for fold in (0, 3, 4, -1)]
    assert not any(o.stored for o in again) and kind.folds == [0, 1, 2, 3]
    assert lifecycle.run_final_step(kind, run.pk, owner="suite") is True
    run.refresh_from_db()
    assert run.status == AttackRun.Status.COMPLETED and run.folds_done == 4 and kind.finals == 1
    assert AttackFold.objects.filter(run=run).count() == 4
    assert AttackResult.objects.get(run=run).accuracy == 1.0  # the summary saw all four folds
    assert run.counts == {"n_folds": 4} and run.timing["extraction_s"] == pytest.approx(3.0)


def test_requeue_after_extraction_queues_only_the_missing_folds(submission, monkeypatch):
    kind = CountingFoldKind()
    run = create_attack_run(submission, attackers=["parrot"], recognizers=["lbph"])
    for pk in run.planned_videos:
        lifecycle.process_video(kind, run.pk, pk)
    lifecycle.process_fold(kind, run.pk, 1)
    queued, suites = [], []
    monkeypatch.setattr(dispatch.RUN_KINDS["attack"].fold_task, "delay", lambda *args: queued.append(args))
    monkeypatch.setattr(
        dispatch.RUN_KINDS["attack"].final_task, "apply_async", lambda args, task_id=None: suites.append(args)
    )
    assert dispatch.enqueue(run) == 0  # no video left
    assert queued == [(run.pk, 0), (run.pk, 2), (run.pk, 3)] and suites == []
    assert dispatch.describe(run) == "running: 6/6 videos extracted, 1/4 folds"


def test_inline_execution_runs_videos_folds_and_summary(submission):
    kind = CountingFoldKind()
    run = lifecycle.execute_inline(
        kind, create_attack_run(submission, attackers=["parrot"], recognizers=["lbph"])
    )
    assert run.status == AttackRun.Status.COMPLETED
    assert (len(kind.videos), kind.folds, kind.finals) == (6, [0, 1, 2, 3], 1)
