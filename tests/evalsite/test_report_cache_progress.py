"""A run under way recomputes only what shows its progress (issue 21).

Before: every pending or running run, and every result row it added, was part of the
campaign's fingerprint, so each video one run finished recomputed every report of the
campaign (the team's submission page took 7.7-15 s on the demo while any run was under
way). Now the fingerprint leaves active runs out (the reports read completed runs only),
and what shows a run's state (a summary section's "pending" / "running" with its video
counts) is cached under the state of the runs it read as well
(``report_cache.reads_progress``), also when it is read through another cached value
(the campaign summary table reads every submission's summary).

The campaign: the lifecycle tests' (3 videos, database rows only), plus a second team's
submission of the same videos; the runs are scored by the counting run kind (no decoding).
Calls of the summary and per-video report computations are counted.
"""

import json

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from automated.django_app import lifecycle
from automated.django_app.face_models import AutomatedRun, VideoScore
from evalsite import report_cache, reports
from evalsite.models import MaskedVideo, Submission, Team
from tests.automated.django_app.test_run_lifecycle import CountingFaceKind, _face_run
from tests.automated.django_app.test_run_lifecycle import submission  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture
def counted(monkeypatch, settings, tmp_path):
    """Calls of the submission summary's computation, by ("summary", submission id), and of
    the per-video report's, by ("per_video", submission id, team's view?); the reports
    cached in a folder of this test."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(tmp_path / "report-cache"),
        }
    }
    settings.FAIRNESS_COMPUTE_QUALITY_ON_DEMAND = False  # no video files here
    calls = []
    summary, per_video = reports.compute_submission_summary, reports.compute_per_video_report

    def counting_summary(submission, team=False):
        calls.append(("summary", submission.pk))
        return summary(submission, team=team)

    def counting_per_video(submission, *, stale=None, team=False):
        calls.append(("per_video", submission.pk, team))
        return per_video(submission, stale=stale, team=team)

    monkeypatch.setattr(reports, "compute_submission_summary", counting_summary)
    monkeypatch.setattr(reports, "compute_per_video_report", counting_per_video)
    return calls


@pytest.fixture
def other(submission):  # noqa: F811
    """Another team's submission of the same three videos."""
    campaign = submission.campaign
    other = Submission.objects.create(
        campaign=campaign, team=Team.objects.create(campaign=campaign, name="U"), name="n"
    )
    for masked in submission.masked_videos.select_related("source_video"):
        MaskedVideo.objects.create(
            submission=other, source_video=masked.source_video, file=f"masked/u-{masked.pk}.mkv"
        )
    return other


def _face_section(submission):  # noqa: F811
    with report_cache.scope():  # as a request reads it
        return reports.submission_summary(submission, team=True)["face_evaluation"]


def _face_column(campaign, submission, column):  # noqa: F811
    with report_cache.scope():
        table = reports.campaign_summary_table(campaign).set_index("submission_id")
    return table.loc[submission.pk, f"face_evaluation.{column}"]


def test_a_submission_summary_follows_its_own_run_not_another_teams(submission, other, counted):  # noqa: F811
    kind = CountingFaceKind()
    mine, theirs = _face_run(submission), _face_run(other)
    pending = {"status": "pending", "run_id": mine.pk, "videos_done": 0, "videos_total": 3}
    assert _face_section(submission) == pending
    assert _face_section(submission) == pending
    assert counted.count(("summary", submission.pk)) == 1  # the second read came from the cache

    lifecycle.process_video(kind, theirs.pk, theirs.planned_videos[0])  # the other team's run moves on
    assert AutomatedRun.objects.get(pk=theirs.pk).videos_done == 1
    assert _face_section(submission) == pending
    assert counted.count(("summary", submission.pk)) == 1  # not recomputed

    lifecycle.process_video(kind, mine.pk, mine.planned_videos[0])  # its own run moves on
    assert _face_section(submission) == {
        "status": "running",
        "run_id": mine.pk,
        "videos_done": 1,
        "videos_total": 3,
    }
    assert counted.count(("summary", submission.pk)) == 2
    lifecycle.process_video(kind, mine.pk, mine.planned_videos[1])
    assert _face_section(submission)["videos_done"] == 2
    assert counted.count(("summary", submission.pk)) == 3
    # Its per-video report reads completed runs only: computed once through all of this
    # (the team's view; the organizer's, which the fairness section reads, too).
    assert counted.count(("per_video", submission.pk, True)) == 1
    assert counted.count(("per_video", submission.pk, False)) == 1

    lifecycle.process_video(kind, mine.pk, mine.planned_videos[2])  # completed: the results show
    section = _face_section(submission)
    assert section["status"] == "completed" and section["n_videos"] == 3
    assert section["match_rate"] == pytest.approx(0.5)
    assert counted.count(("per_video", submission.pk, True)) == 2


def test_the_campaign_summary_table_follows_every_runs_progress(submission, other, counted):  # noqa: F811
    # The table reads every submission's summary (cached values of their own): the progress
    # they read is carried up to the table's entry, also when they come from the cache.
    kind, campaign = CountingFaceKind(), submission.campaign
    mine, theirs = _face_run(submission), _face_run(other)
    assert _face_column(campaign, other, "videos_done") == 0
    assert _face_column(campaign, submission, "status") == "pending"
    lifecycle.process_video(kind, theirs.pk, theirs.planned_videos[0])
    assert _face_column(campaign, other, "videos_done") == 1
    assert _face_column(campaign, other, "status") == "running"
    assert _face_column(campaign, submission, "videos_done") == 0
    for masked in theirs.planned_videos[1:]:
        lifecycle.process_video(kind, theirs.pk, masked)
    assert _face_column(campaign, other, "status") == "completed"
    assert _face_column(campaign, other, "n_videos") == 3
    lifecycle.process_video(kind, mine.pk, mine.planned_videos[0])
    assert _face_column(campaign, submission, "videos_done") == 1


def test_the_team_report_shows_its_run_at_once_and_a_result_row_edit_of_a_completed_run(
    submission,  # noqa: F811
    other,
    counted,
):
    kind = CountingFaceKind()
    member = User.objects.create_user("t-member", password="pw-t-member")
    submission.team.members.add(member)
    client = Client()
    client.force_login(member)
    url = reverse("team:submission_report", args=[submission.pk, "json"])

    def face():
        response = client.get(url)
        assert response.status_code == 200
        return json.loads(response.content)["summary"]["face_evaluation"]

    mine, theirs = _face_run(submission), _face_run(other)
    assert face()["status"] == "pending"
    lifecycle.process_video(kind, theirs.pk, theirs.planned_videos[0])
    assert face() == {"status": "pending", "run_id": mine.pk, "videos_done": 0, "videos_total": 3}
    assert counted.count(("summary", submission.pk)) == 1
    lifecycle.process_video(kind, mine.pk, mine.planned_videos[0])
    assert face()["videos_done"] == 1
    for masked in mine.planned_videos[1:]:
        lifecycle.process_video(kind, mine.pk, masked)
    assert face()["match_rate"] == pytest.approx(0.5)
    # A completed run's rows are the fingerprint's: an edit in place shows at once.
    VideoScore.objects.filter(run=mine).update(match_rate=0.25)
    assert face()["match_rate"] == pytest.approx(0.25)


def test_the_organizer_pages_run_lines_follow_their_own_submissions_runs(
    submission,  # noqa: F811
    other,
    counted,
    monkeypatch,
):
    # The first run queued in a campaign changed every submission's lines' key (the digest
    # named the result tables of the campaign's active runs in each submission's part).
    from automated.django_app import evaluate_all

    calls, compute = [], evaluate_all._part_states

    def counting(which):
        calls.append(which.pk)
        return compute(which)

    monkeypatch.setattr(evaluate_all, "_part_states", counting)

    def face_line(which):
        with report_cache.scope():  # as the organizer's campaign page reads them
            return next(line["text"] for line in evaluate_all.part_states(which) if line["kind"] == "face")

    assert face_line(other) == face_line(submission) == "face: not run"
    mine = _face_run(submission)
    assert face_line(other) == "face: not run"
    assert face_line(submission) == f"face run {mine.pk}: pending: 0/3 videos"
    lifecycle.process_video(CountingFaceKind(), mine.pk, mine.planned_videos[0])
    assert face_line(submission) == f"face run {mine.pk}: running: 1/3 videos"
    assert face_line(other) == "face: not run"
    assert calls.count(other.pk) == 1 and calls.count(submission.pk) == 3
