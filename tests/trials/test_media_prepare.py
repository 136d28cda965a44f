"""Media preparation under concurrency: crops and web copies stored once, atomic files,
no transcoding inside a rater's request (503 + Retry-After until the task has run).

A concurrent request is played out exactly: the competing call runs to completion while
this one is cropping or transcoding (the window of the old check-then-create race).
"""

import json
import re
from pathlib import Path

import pytest
from django.test import Client

from evalsite.models import GalleryImage, MaskedVideo, SourceVideo
from trials import assignment, media
from trials.models import GalleryCrop, Trial
from trials.services import open_rating
from tests.crowd.simulation import build_grid_campaign
from trials.tasks import prepare_campaign_media

RESPOND = re.compile(r'"respond_url": "(/t/[^"]+/respond/)"')
CHOICE = re.compile(r'data-choice="([^"]+)"')
MEDIA = re.compile(r'src="(/m/[^"]+)"')


def files_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def test_a_crop_stored_by_a_concurrent_first_request_wins_and_ours_is_discarded(
    grid_campaign, media_root, monkeypatch
):
    image = GalleryImage.objects.filter(identity__campaign=grid_campaign).first()
    real_crop = media.face_crop_png
    other = {}

    def crop_while_another_request_finishes(image_rgb, *, size_px):
        if not other:
            monkeypatch.setattr(media, "face_crop_png", real_crop)
            other["crop"] = media.ensure_gallery_crop(image)  # the other request, start to end
        return real_crop(image_rgb, size_px=size_px)

    monkeypatch.setattr(media, "face_crop_png", crop_while_another_request_finishes)
    crop = media.ensure_gallery_crop(image)  # was IntegrityError (a 500 for the rater)
    assert crop.pk == other["crop"].pk and GalleryCrop.objects.filter(gallery_image=image).count() == 1
    assert files_in(media_root / "crops") == [Path(crop.file.name).name]  # our file deleted
    assert media.ensure_gallery_crop(image).pk == crop.pk  # and later calls just read it


def test_two_requests_replacing_an_old_crop_style_leave_one_new_crop(
    grid_campaign, media_root, monkeypatch, django_capture_on_commit_callbacks
):
    image = GalleryImage.objects.filter(identity__campaign=grid_campaign).first()
    old = media.ensure_gallery_crop(image)
    GalleryCrop.objects.filter(pk=old.pk).update(version=1)  # stored before the oval mask
    real_crop = media.face_crop_png
    other = {}

    def crop_while_another_request_replaces(image_rgb, *, size_px):
        if not other:
            monkeypatch.setattr(media, "face_crop_png", real_crop)
            other["crop"] = media.ensure_gallery_crop(image)
        return real_crop(image_rgb, size_px=size_px)

    monkeypatch.setattr(media, "face_crop_png", crop_while_another_request_replaces)
    with django_capture_on_commit_callbacks(execute=True):  # the old file goes after the commit
        crop = media.ensure_gallery_crop(image)
    assert crop.pk == other["crop"].pk != old.pk and crop.version == GalleryCrop.CURRENT_VERSION
    assert files_in(media_root / "crops") == [Path(crop.file.name).name]  # old and ours deleted


def test_a_web_copy_made_twice_at_once_is_stored_once(db, media_root, data_dir, grid_cache, monkeypatch):
    campaign = build_grid_campaign(data_dir, grid_cache, with_web_files=False)
    video = SourceVideo.objects.filter(campaign=campaign).first()
    real_transcode = media.transcode_for_web
    other = {}

    def transcode_while_a_redelivered_task_finishes(source, out):
        if not other:
            monkeypatch.setattr(media, "transcode_for_web", real_transcode)
            twin = SourceVideo.objects.get(pk=video.pk)
            other["made"], other["name"] = media.ensure_web_file(twin), twin.web_file.name
        return real_transcode(source, out)

    monkeypatch.setattr(media, "transcode_for_web", transcode_while_a_redelivered_task_finishes)
    assert media.ensure_web_file(video) is False and other["made"] is True
    assert video.web_file.name == other["name"] == SourceVideo.objects.get(pk=video.pk).web_file.name
    assert files_in(media_root / "web") == [Path(other["name"]).name]  # the loser's copy deleted
    assert media.ensure_web_file(video) is False  # prepared: nothing to do


def test_prepared_files_appear_whole_or_not_at_all(db, media_root, data_dir, grid_cache):
    campaign = build_grid_campaign(data_dir, grid_cache, with_web_files=False)
    video = SourceVideo.objects.filter(campaign=campaign).first()
    seen_while_writing = []

    def write_half_then_fail(path: Path):
        path.write_bytes(b"\x00" * 1000)
        seen_while_writing.extend(files_in(path.parent))
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        media.store_atomically(video.web_file, "web.mp4", write_half_then_fail)
    assert len(seen_while_writing) == 1 and seen_while_writing[0].startswith(".partial-")
    assert files_in(media_root / "web") == []  # nothing half-written is left under any name
    name = media.store_atomically(video.web_file, "web.mp4", lambda path: path.write_bytes(b"whole"))
    assert files_in(media_root / "web") == [Path(name).name]
    assert Path(video.web_file.storage.path(name)).read_bytes() == b"whole"


def test_a_video_not_prepared_is_a_503_to_retry_and_is_never_transcoded_in_the_request(
    db, media_root, data_dir, grid_cache
):
    campaign = build_grid_campaign(data_dir, grid_cache, with_web_files=False)
    open_rating(campaign, prepare_media=False)
    client = Client()
    assert client.post(f"/join/{campaign.join_code}/", {"participant_code": "P-1"}).status_code == 302
    client.post("/session/consent/", {"agree": "yes"})
    client.post("/session/start/")
    html = client.get("/session/").content.decode()
    while Trial.objects.get(token=RESPOND.search(html).group(1).split("/")[2]).source_video_id is None:
        client.post(
            RESPOND.search(html).group(1),
            json.dumps(
                {
                    "choice": CHOICE.findall(html)[0],
                    "response_time_ms": 900,
                    "replays": 0,
                    "watch_time_ms": 0,
                }
            ),
            content_type="application/json",
        )
        html = client.get("/session/").content.decode()
    video_url = MEDIA.findall(html)[-1]
    waiting = client.get(video_url)
    assert waiting.status_code == 503 and waiting["Retry-After"] == str(media.RETRY_AFTER_S)
    assert "being prepared" in waiting.content.decode() and waiting["Cache-Control"] == "private, no-store"
    assert files_in(media_root / "web") == []  # the request transcoded nothing
    # Faces are cropped on first use (cheap, race-safe); they are served meanwhile.
    assert all(client.get(url).status_code == 200 for url in MEDIA.findall(html)[:-1])

    result = prepare_campaign_media(campaign.pk)  # what opening rating queues
    expected = {"faces": 10, "videos": 20, "transcoded": 20, "catch_videos": 10, "failed": []}
    assert result == {**expected, "stills_checked": 10}  # a catch probe per identity (10)
    ready = client.get(video_url)
    assert ready.status_code == 200 and b"".join(ready.streaming_content)[4:8] == b"ftyp"
    again = prepare_campaign_media(campaign.pk)  # idempotent: nothing made twice
    assert again == {**expected, "transcoded": 0, "catch_videos": 0, "stills_checked": 0}
    videos = [
        *SourceVideo.objects.filter(campaign=campaign),
        *MaskedVideo.objects.filter(submission__campaign=campaign),
    ]
    copies = {video.web_file.name for video in videos if media.web_file_ready(video)}
    assert len(videos) == len(copies) == 20
    made = list(media_root.rglob("*.mp4"))
    assert len([p for p in made if p.parent.name == "web"]) == 20  # nothing made twice
    assert len([p for p in made if p.parent.name == "crops"]) == 10  # the catch probes, once
    assert len([p for p in made if p.parent.name not in ("web", "crops", "variants")]) == 0
    # The one video served: the trial's own byte variant (trials.variants), made once.
    assert len([p for p in made if p.parent.name == "variants"]) == 1


def test_preparation_removes_files_a_killed_writer_left_and_keeps_a_live_ones(
    grid_campaign, media_root, settings, tmp_path, monkeypatch
):
    """``store_atomically`` writes in a temporary folder of its own; a writer killed there
    leaves it (its clean-up never runs). Preparation removes such folders once older than
    twice the transcoding time limit, and keeps a live writer's."""
    import os
    import tempfile
    import time

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    seen = []
    video = grid_campaign.source_videos.first()
    media.store_atomically(
        video.web_file, "web.mp4", lambda path: seen.append(path) or path.write_bytes(b"x")
    )
    assert seen[0].parent.parent == tmp_path / "tmp"  # where a killed writer's folder would stay
    dead = tmp_path / "tmp" / f"{media.PARTIAL_FOLDER_PREFIX}dead"
    live = tmp_path / "tmp" / f"{media.PARTIAL_FOLDER_PREFIX}live"
    for folder in (dead, live):
        folder.mkdir()
        (folder / ".partial-web.mp4").write_bytes(b"half a video")
    hour_ago = time.time() - 2 * settings.DEID_TRANSCODE_TIMEOUT_S - 60
    for path in (dead / ".partial-web.mp4", dead):
        os.utime(path, (hour_ago, hour_ago))
    os.utime(live, (hour_ago, hour_ago))  # an old folder whose file is still being written
    prepare_campaign_media(grid_campaign.pk)
    assert not dead.exists() and live.exists()


def test_prepared_media_include_every_catch_probe_so_no_check_trial_builds_one_on_request(
    db, media_root, data_dir, grid_cache, monkeypatch
):
    """A probe made on first use made the first video request of a check about 4x slower
    than an evaluated trial's (hostile tester: 2.27 s vs 0.55 s median), which told a bot
    which trials are checks. Prepared media now hold each identity's probe, so a check's
    first request only renders its variant, like an evaluated trial's."""
    campaign = build_grid_campaign(data_dir, grid_cache, attention_check_rate=0.5)
    open_rating(campaign, prepare_media=False)
    assert prepare_campaign_media(campaign.pk)["catch_videos"] == 10
    probes = [
        assignment.probe_image_of(identity.pk)
        for identity in campaign.identities.exclude(gallery_images=None)
    ]
    assert len(probes) == 10
    for image in probes:
        crop = GalleryCrop.objects.get(gallery_image=image)
        assert crop.catch_video.name.endswith(media.CATCH_VIDEO_SUFFIX)
        assert crop.catch_video.storage.exists(crop.catch_video.name)

    def no_probe_in_a_request(*args, **kwargs):
        raise AssertionError("a catch probe was built inside a rater's request")

    monkeypatch.setattr(media, "catch_video_frames", no_probe_in_a_request)
    monkeypatch.setattr(media, "transcode_for_web", no_probe_in_a_request)
    client = Client()
    assert client.post(f"/join/{campaign.join_code}/", {"participant_code": "P-1"}).status_code == 302
    client.post("/session/consent/", {"agree": "yes"})
    client.post("/session/start/")
    served = 0
    for _ in range(40):
        html = client.get("/session/").content.decode()
        respond = RESPOND.search(html)
        if respond is None:
            break
        trial = Trial.objects.get(token=respond.group(1).split("/")[2])
        if trial.probe_image_id is not None:
            response = client.get(f"/m/{trial.media_token}", HTTP_RANGE="bytes=0-63")
            assert response.status_code == 206 and b"".join(response.streaming_content)[4:8] == b"ftyp"
            served += 1
        answer = {
            "choice": CHOICE.findall(html)[0],
            "response_time_ms": 900,
            "replays": 0,
            "watch_time_ms": 0,
        }
        client.post(respond.group(1), json.dumps(answer), content_type="application/json")
    assert served >= 1  # at least one check trial's video was served
