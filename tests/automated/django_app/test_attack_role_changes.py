"""A source video's role changed after runs were planned (issue 11, hostile tester's findings).

1. Making an evaluated clip that a completed attack run tested the attacker's material (or
   the reverse) changes the folds a new run would plan, and the face evaluation's videos:
   the old runs are out of date (``evaluate_all.is_current``) and reported stale, naming
   the video (``evalsite.staleness.stale_results``); the headline prefers the re-run.
2. A video raters have answered about cannot become attacker material (model ``clean()``
   and the admin), with the number of responses and the way out.
3. A recognizer failing in a Django fold names the tested videos by source-video name.

Cheap: synthetic crops (``_attack_data`` patched), eigenfaces/lbph, no video decoding.
"""

import numpy as np
import pytest
from django.core.exceptions import ValidationError
from django.db.models.fields.files import FieldFile

from automated.attack.data import AttackData
from automated.django_app import attack_service, evaluate_all, lifecycle
from automated.django_app.attack_models import AttackResult, AttackRun
from automated.django_app.attack_report import attack_section, strongest_completed_run
from automated.django_app.attack_service import ATTACK_RUN, create_attack_run
from automated.django_app.face_models import AutomatedRun
from automated.django_app.services import FACE_RUN
from evalsite.models import SourceVideo
from evalsite.staleness import stale_results

from .test_attack_hostile import MULTI, NoDecodingKind, _campaign, _synthetic

pytestmark = pytest.mark.django_db

# MULTI: videos 0, 1 of ID01 (evaluated), 2 of ID02 (evaluated), 3 of ID02 (attacker's),
# 4 of ID03 (single): leave-one-video-out tests 0, 1 and 2.
OPTIONS = {"attackers": ["naive", "parrot"], "recognizers": ["eigenfaces"], "verification": False}


def _data():
    base = _synthetic(layout=("ID01", "ID01", "ID02", "ID02", "ID03"), frames=4)
    roles = np.where(base.groups == 3, "attacker_train", "evaluated")
    return AttackData(base.clear, base.masked, base.identities, base.groups, roles=roles)


def _set_role(video, attacker: bool):
    video.attacker_train, video.in_evaluated_subset = attacker, not attacker
    video.full_clean()
    video.save()


def _tested(run_or_folds):
    folds = run_or_folds.planned_folds if isinstance(run_or_folds, AttackRun) else run_or_folds
    return sorted(
        sorted(SourceVideo.objects.filter(masked_videos__pk__in=fold).values_list("name", flat=True))
        for fold in folds
    )


def test_an_evaluated_clip_made_attacker_material_makes_the_attack_run_out_of_date(monkeypatch):
    monkeypatch.setattr(attack_service, "_attack_data", lambda run, masked_videos: _data())
    submission = _campaign("role", MULTI)
    run = lifecycle.execute_inline(NoDecodingKind(), create_attack_run(submission, **OPTIONS))
    assert run.status == AttackRun.Status.COMPLETED, run.error
    assert _tested(run) == [["role0"], ["role1"], ["role2"]]
    assert evaluate_all.is_current(run, submission) and evaluate_all.plan_changes(run, submission) == []
    assert "attack" not in stale_results(submission, {"attack": attack_section(submission)})

    # The hostile tester's admin change: role1 (tested in fold 1) becomes the attacker's.
    _set_role(SourceVideo.objects.get(name="role1"), attacker=True)
    fresh = ATTACK_RUN.fresh_folds(
        run, list(ATTACK_RUN.plan(submission).select_related("source_video__identity"))
    )
    assert _tested(fresh) == [["role0"], ["role2"]]  # stored plan 3 folds, fresh plan 2
    assert evaluate_all.plan_changes(run, submission) == ["role1"]
    assert not evaluate_all.is_current(run, submission)
    assert evaluate_all.covering_run("attack", submission) is None  # evaluate everything re-runs it
    stale = stale_results(submission, {"attack": attack_section(submission)})
    assert stale["attack"] == {
        "run_id": run.pk,
        "videos": ["role1"],
        "replaced": [],
        "plan_changed": ["role1"],
        "reason": f"run {run.pk} is out of date: video roles (or the masked videos) changed since "
        "the run was planned: role1",
    }
    assert [p["text"] for p in evaluate_all.part_states(submission)][1].endswith("(out of date)")

    # The re-run plans 2 folds; it is the headline even when the stale run scored higher.
    rerun = lifecycle.execute_inline(NoDecodingKind(), create_attack_run(submission, **OPTIONS))
    assert rerun.folds_total == 2 and _tested(rerun) == [["role0"], ["role2"]]
    AttackResult.objects.filter(run=run).exclude(attacker="clear").update(accuracy=1.0)
    assert strongest_completed_run(submission) == rerun
    assert evaluate_all.is_current(rerun, submission)
    assert "attack" not in stale_results(submission, {"attack": attack_section(submission)})

    # Undoing the change makes the old plan the fresh one again.
    _set_role(SourceVideo.objects.get(name="role1"), attacker=False)
    assert evaluate_all.is_current(run, submission) and not evaluate_all.is_current(rerun, submission)


def test_attacker_material_made_evaluated_adds_a_fold_and_the_report_says_why(monkeypatch):
    from evalsite.reports import per_video_report, submission_summary

    monkeypatch.setattr(attack_service, "_attack_data", lambda run, masked_videos: _data())
    submission = _campaign("back", MULTI)
    run = lifecycle.execute_inline(NoDecodingKind(), create_attack_run(submission, **OPTIONS))
    _set_role(SourceVideo.objects.get(name="back3"), attacker=False)  # ID02's attacker clip
    fresh = ATTACK_RUN.fresh_folds(
        run, list(ATTACK_RUN.plan(submission).select_related("source_video__identity"))
    )
    assert _tested(fresh) == [["back0"], ["back1"], ["back2"], ["back3"]]
    assert evaluate_all.plan_changes(run, submission) == ["back3"]
    assert not evaluate_all.is_current(run, submission)
    summary = submission_summary(submission)
    assert summary["stale"] is True and summary["stale_videos"] == ["back3"]
    assert summary["stale_results"]["attack"]["plan_changed"] == ["back3"]
    assert "video roles (or the masked videos) changed" in summary["stale_results"]["attack"]["reason"]
    report = per_video_report(submission).set_index("video")
    assert report.loc["back3", "stale_results"] == "attack" and bool(report.loc["back3", "stale"])
    assert (
        "attack: run planned before this video's role (or masked video) changed"
        in report.loc["back3", "caveats"]
    )
    assert report.loc["back0", "stale_results"] == ""


def test_a_role_change_makes_the_face_run_out_of_date():
    submission = _campaign("face", MULTI)
    planned = list(FACE_RUN.plan(submission).values_list("pk", flat=True))  # all but face3
    run = AutomatedRun.objects.create(
        submission=submission,
        config={},
        planned_videos=planned,
        videos_total=len(planned),
        status="completed",
    )
    assert evaluate_all.plan_changes(run, submission) == [] and evaluate_all.is_current(run, submission)
    _set_role(SourceVideo.objects.get(name="face1"), attacker=True)
    assert evaluate_all.plan_changes(run, submission) == ["face1"]
    assert not evaluate_all.is_current(run, submission)
    stale = stale_results(
        submission, {"face_evaluation": {"run_id": run.pk}, "behaviour": {"run_id": run.pk}}
    )
    assert stale["face_evaluation"]["plan_changed"] == ["face1"] and stale["behaviour"]["videos"] == ["face1"]
    _set_role(SourceVideo.objects.get(name="face1"), attacker=False)
    _set_role(SourceVideo.objects.get(name="face3"), attacker=False)  # now the face run must score it
    assert evaluate_all.plan_changes(run, submission) == ["face3"]


def _responses(video, n):
    from trials.models import Rater, RatingSession, Response, Trial

    for i in range(n):
        rater = Rater.objects.create(campaign=video.campaign, participant_code=f"P{video.pk}-{i}")
        session = RatingSession.objects.create(rater=rater, campaign=video.campaign)
        trial = Trial.objects.create(
            session=session,
            position=0,
            kind="item",
            task="identity",
            source_video=video,
            target_identity=video.identity,
            correct_choice="1",
            completed=True,
        )
        Response.objects.create(trial=trial, choice="1", correct=True, response_time_ms=1200)


def test_a_rated_video_cannot_become_attacker_material(admin_client):
    submission = _campaign("rated", MULTI)
    video = SourceVideo.objects.get(name="rated0")
    _responses(video, 3)
    assert video.rater_responses() == 3
    message = (
        "video 'rated0' has 3 rater responses: raters have seen it as evaluated material, so it cannot "
        "become the attacker's training material (those responses would drop out of the scores, and the "
        "attacker would train on what raters rated). Keep it evaluated; to give the attacker material of "
        "identity ID01, add a new clip of it with 'attacker training material' ticked "
        "(admin: Source videos > Add)."
    )
    video.attacker_train, video.in_evaluated_subset = True, False
    with pytest.raises(ValidationError) as caught:
        video.full_clean()
    assert caught.value.message_dict == {"attacker_train": [message]}

    # The admin's change form refuses it too and changes nothing.
    url = f"/admin/evalsite/sourcevideo/{video.pk}/change/"
    form = admin_client.get(url).context["adminform"].form
    data = {n: v for n, v in form.initial.items() if v is not None and not isinstance(v, FieldFile)}
    data.update(attacker_train="on", in_evaluated_subset="")
    data = {k: v for k, v in data.items() if v is not False}
    response = admin_client.post(url, data)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["attacker_train"] == [message]
    assert not SourceVideo.objects.get(pk=video.pk).attacker_train

    # An unrated video's role change goes through and says what it makes out of date.
    other = SourceVideo.objects.get(name="rated1")
    data = {**data, "name": other.name, "identity": other.identity_id}
    response = admin_client.post(f"/admin/evalsite/sourcevideo/{other.pk}/change/", data, follow=True)
    assert [str(m) for m in response.context["messages"]] == [
        "rated1: role now attacker_train; attack and face runs planned before are reported out of date "
        "until re-run (Evaluate everything).",
        f'The source video “<a href="/admin/evalsite/sourcevideo/{other.pk}/change/">rated1</a>” was '
        "changed successfully.",
    ]
    assert SourceVideo.objects.get(pk=other.pk).attacker_train

    # Other edits of the rated video, and unrated videos, are fine; so is the reverse.
    video.refresh_from_db()
    video.action = "talking"
    video.full_clean()
    _set_role(SourceVideo.objects.get(name="rated3"), attacker=False)
    assert submission.campaign.source_videos.filter(attacker_train=True).count() == 1


def test_a_practice_video_with_one_response_is_refused_in_the_singular():
    _campaign("prac", MULTI)
    video = SourceVideo.objects.get(name="prac4")
    video.in_evaluated_subset, video.practice = False, True
    video.save()
    _responses(video, 1)
    video.practice, video.attacker_train = False, True
    with pytest.raises(
        ValidationError, match="has 1 rater response: raters have seen it as practice material"
    ):
        video.full_clean()


def test_a_failing_recognizer_in_a_django_fold_names_the_source_videos(monkeypatch):
    from sklearn.base import BaseEstimator, ClassifierMixin

    from automated.attack import recognizers

    class Singular(ClassifierMixin, BaseEstimator):
        def fit(self, X, y):
            raise ValueError("matrix is singular")

    monkeypatch.setattr(attack_service, "_attack_data", lambda run, masked_videos: _data())
    submission = _campaign("named", MULTI)
    run = create_attack_run(submission, **{**OPTIONS, "attackers": ["naive"]})
    # attack_service imports the recognizers where a fold runs (not at Django start-up).
    monkeypatch.setattr(recognizers, "get_recognizers", lambda names, table: {"broken": Singular})
    expected = "fold 0 (tested videos named0), recognizer broken x attacker naive: matrix is singular"
    with pytest.raises(ValueError) as caught:
        lifecycle.execute_inline(NoDecodingKind(), run)
    assert str(caught.value) == expected
    run.refresh_from_db()
    assert run.status == AttackRun.Status.FAILED and expected in run.error


def test_the_demo_reruns_an_attack_whose_folds_a_role_change_altered(monkeypatch):
    from evalsite.portal import demo

    monkeypatch.setattr(attack_service, "_attack_data", lambda run, masked_videos: _data())
    submission = _campaign("demo", MULTI)
    run = lifecycle.execute_inline(NoDecodingKind(), create_attack_run(submission, **OPTIONS))
    assert demo._attack_is_current(submission, run.config)
    _set_role(SourceVideo.objects.get(name="demo0"), attacker=True)
    assert not demo._attack_is_current(submission, run.config)


def test_list_submissions_says_a_role_change_made_the_attack_stale(monkeypatch):
    from evalsite.portal.management.commands.list_submissions import submissions_table

    monkeypatch.setattr(attack_service, "_attack_data", lambda run, masked_videos: _data())
    submission = _campaign("list", MULTI)
    lifecycle.execute_inline(NoDecodingKind(), create_attack_run(submission, **OPTIONS))
    assert submissions_table(submission.campaign)["attack"].tolist() == ["completed 5/5"]
    _set_role(SourceVideo.objects.get(name="list2"), attacker=True)
    assert submissions_table(submission.campaign)["attack"].tolist() == [
        "completed 5/5, stale: 1 video with a changed role"
    ]
