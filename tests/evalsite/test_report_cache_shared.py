"""The report cache is shared by processes, warmed when runs finish, and sees in-place edits (issue 21).

Before: the cache was Django's per-process memory cache, so each gunicorn worker computed
every report once (the campaign summary CSV took 34-63 s on a worker's first request); the
first request after the runs finished paid it too; and a large table's row edited in place
(count, highest id and latest time-stamp unchanged) left the fingerprint as it was.

The campaign is the lifecycle tests' (3 videos, database rows only), its runs scored by
the counting run kind (no decoding); calls of the summary table's computation are counted.
"""

import pytest
from django.core.cache.backends.filebased import FileBasedCache

from automated.django_app import lifecycle
from automated.django_app.face_models import AutomatedRun, VideoScore
from evalsite import report_cache, reports
from evalsite.models import Team
from trials.models import Item
from tests.automated.django_app.test_run_lifecycle import CountingFaceKind, _face_run
from tests.automated.django_app.test_run_lifecycle import submission  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture
def counted(monkeypatch, settings, tmp_path):
    """Calls of the summary table's computation; the reports cached in a folder of this test
    (the site's default cache: ``FileBasedCache`` under ``DEID_VAR_DIR``)."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(tmp_path / "report-cache"),
        }
    }
    settings.FAIRNESS_COMPUTE_QUALITY_ON_DEMAND = False  # no video files here
    calls = []
    compute = reports._campaign_summary_table

    def counting(campaign):
        calls.append(campaign.pk)
        return compute(campaign)

    monkeypatch.setattr(reports, "_campaign_summary_table", counting)
    return calls


def _summary(campaign):
    with report_cache.scope():  # as a request reads it
        return reports.campaign_summary_table(campaign)


def test_the_site_caches_reports_in_a_folder_every_process_shares():
    from django.conf import settings as site

    from evalsite.settings import _report_cache

    assert _report_cache("")["BACKEND"] == "django.core.cache.backends.filebased.FileBasedCache"
    assert _report_cache("")["LOCATION"] == site.VAR_DIR / "report-cache"
    assert _report_cache("redis://127.0.0.1:6379/1") == {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": "redis://127.0.0.1:6379/1",
    }
    from django.core.exceptions import ImproperlyConfigured

    with pytest.raises(ImproperlyConfigured, match="DEID_REPORT_CACHE_URL='memcached://x'"):
        _report_cache("memcached://x")


def test_a_second_process_reads_what_the_first_computed_until_a_change(
    submission,  # noqa: F811
    counted,
    monkeypatch,
    tmp_path,
):
    campaign = submission.campaign
    first = _summary(campaign)
    assert counted == [campaign.pk] and first["team"].tolist() == ["T"]
    # Another gunicorn worker: a cache object of its own on the same folder, no memory shared.
    monkeypatch.setattr(report_cache, "cache", FileBasedCache(str(tmp_path / "report-cache"), {}))
    again = _summary(campaign)
    assert counted == [campaign.pk] and again.equals(first)
    Team.objects.filter(pk=submission.team_id).update(name="Renamed")  # an edit: computed anew
    assert _summary(campaign)["team"].tolist() == ["Renamed"] and len(counted) == 2


def test_an_in_place_edit_of_a_large_tables_row_changes_the_fingerprint(submission, settings):  # noqa: F811
    # before: count, highest id and latest time-stamp only, so these edits went unseen
    kind, run = CountingFaceKind(), _face_run(submission)
    for masked in run.planned_videos:
        lifecycle.process_video(kind, run.pk, masked)
    source = submission.masked_videos.first().source_video
    item = Item.objects.create(
        campaign=submission.campaign, source_video=source, task="action", target_count=10
    )
    seen = {report_cache.fingerprint(submission.campaign)}
    for edit in (
        lambda: VideoScore.objects.filter(run=run, masked_video__source_video=source).update(match_rate=0.75),
        lambda: VideoScore.objects.filter(run=run, masked_video__source_video=source).update(n_identities=7),
        lambda: Item.objects.filter(pk=item.pk).update(target_count=12),
        lambda: Item.objects.filter(pk=item.pk).update(task="identity"),
    ):
        edit()
        seen.add(report_cache.fingerprint(submission.campaign))
    assert len(seen) == 5  # each edit gave a fingerprint of its own
    assert report_cache.fingerprint(submission.campaign) in seen  # and reading it again is stable
    # The cache outlives processes: a setting that changes the figures changes the key too.
    settings.FAIRNESS_BOOTSTRAP_RESAMPLES += 1
    assert report_cache.fingerprint(submission.campaign) not in seen


def test_the_last_run_to_finish_warms_the_reports_the_pages_read(
    submission,  # noqa: F811
    counted,
    settings,
    django_capture_on_commit_callbacks,
    admin_client,
):
    settings.DEID_WARM_REPORTS = True
    campaign = submission.campaign
    kind, first, second = CountingFaceKind(), _face_run(submission), _face_run(submission)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        for masked in first.planned_videos:
            lifecycle.process_video(kind, first.pk, masked)
    assert len(callbacks) == 1 and counted == []  # the second run is pending: nothing warmed yet
    with django_capture_on_commit_callbacks(execute=True):
        for masked in second.planned_videos:
            lifecycle.process_video(kind, second.pk, masked)
    assert not AutomatedRun.objects.exclude(status="completed").exists()
    assert counted == [campaign.pk]  # the last run warmed the summary (in-process: no broker here)
    response = admin_client.get(f"/api/campaigns/{campaign.pk}/summary/?format=csv")
    assert response.status_code == 200 and b"submission_id" in response.content
    assert counted == [campaign.pk]  # the page read it from the cache
