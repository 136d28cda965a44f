"""Dataset import: the real tiny dataset imports; each broken folder gets its own message."""

import csv
import json
import shutil

import pytest

from automated.video import VideoInfo
from evalsite.importer import DatasetError, import_dataset
from evalsite.models import Campaign, GalleryImage, Identity, SourceVideo


@pytest.fixture
def folder(tmp_path, tiny_dataset):
    """A writable copy of the tiny dataset."""
    return shutil.copytree(tiny_dataset, tmp_path / "copy")


def _rewrite_csv(path, edit):
    with path.open(newline="") as handle:
        rows = list(csv.reader(handle))
    rows = edit(rows)
    with path.open("w", newline="") as handle:
        csv.writer(handle).writerows(rows)


def _problems(folder, name="Broken"):
    with pytest.raises(DatasetError) as caught:
        import_dataset(folder, name, web_copies=False)
    return caught.value.problems


def test_tiny_dataset_imports_with_probed_metadata_and_opaque_file_names(campaign):
    assert campaign.name == "Tiny" and campaign.slug == "tiny"
    assert campaign.action_vocabulary == ["talking"]
    assert campaign.demographic_attributes == ["gender_unofficial"]
    assert list(Identity.objects.values_list("code", flat=True)) == ["ID01", "ID02", "ID03"]
    assert Identity.objects.get(code="ID02").attributes == {"gender_unofficial": "female"}
    assert GalleryImage.objects.count() == 3
    video = SourceVideo.objects.get(name="bbaf2n")
    assert (video.frame_count, video.width, video.height, video.fps) == (75, 360, 288, 25.0)
    assert video.duration_s == pytest.approx(3.0)
    assert video.resolution_tier == "low" and video.in_evaluated_subset
    for stored in [v.file.name for v in SourceVideo.objects.all()] + [
        g.image.name for g in GalleryImage.objects.all()
    ]:
        assert "ID0" not in stored and "bbaf2n" not in stored and "brbk7n" not in stored


@pytest.mark.django_db
def test_web_copy_is_a_browser_playable_mp4_with_every_frame(media_root, tiny_dataset):
    report = import_dataset(tiny_dataset, "Web", web_copies=True)
    assert report.videos == 3
    video = SourceVideo.objects.get(name="brbk7n")
    assert video.web_file.name.endswith(".mp4")
    info = VideoInfo.from_video_path(video.web_file.path)
    assert info.frame_count == 75 and info.resolution_wh == (360, 288)


@pytest.mark.django_db
def test_missing_column_is_named(media_root, folder):
    _rewrite_csv(folder / "videos.csv", lambda rows: [["video", "identity", "act"], *rows[1:]])
    assert any("videos.csv: missing column(s) ['action']" in p for p in _problems(folder))


@pytest.mark.django_db
def test_unknown_identity_in_videos_csv_is_named_with_its_line(media_root, folder):
    _rewrite_csv(folder / "videos.csv", lambda rows: [rows[0], [rows[1][0], "ID99", "talking"], *rows[2:]])
    assert "videos.csv line 2: unknown identity 'ID99' (not in identities.csv)" in _problems(folder)


@pytest.mark.django_db
def test_missing_video_file_and_missing_gallery_are_both_reported(media_root, folder):
    (folder / "videos" / "brbk7n.mpg").unlink()
    shutil.rmtree(folder / "gallery" / "ID03")
    problems = _problems(folder)
    assert "videos.csv line 3: file videos/brbk7n.mpg is missing" in problems
    assert "identity 'ID03' has no gallery image in gallery/ID03/" in problems
    assert len(problems) == 2


@pytest.mark.django_db
def test_unreadable_video_is_rejected(media_root, folder):
    (folder / "videos" / "bbaf2n.mpg").write_text("not a video")
    problems = _problems(folder)
    assert len(problems) == 1
    assert problems[0].startswith("videos.csv line 2: videos/bbaf2n.mpg is not a usable video")


@pytest.mark.django_db
def test_duplicate_identity_and_duplicate_video_name_ignoring_case(media_root, folder):
    _rewrite_csv(folder / "identities.csv", lambda rows: [*rows, ["id01", "male"]])
    shutil.copyfile(folder / "videos" / "bbaf2n.mpg", folder / "videos" / "BBAF2N.avi")
    _rewrite_csv(folder / "videos.csv", lambda rows: [*rows, ["BBAF2N.avi", "ID01", "talking"]])
    problems = _problems(folder)
    assert "identities.csv line 5: duplicate identity 'id01'" in problems
    assert any(p.startswith("videos.csv line 5: duplicate video name 'BBAF2N'") for p in problems)


@pytest.mark.django_db
def test_unlisted_file_gallery_of_unknown_identity_and_bad_action(media_root, folder):
    shutil.copyfile(folder / "videos" / "bbaf2n.mpg", folder / "videos" / "extra.mpg")
    (folder / "gallery" / "ID77").mkdir()
    (folder / "campaign.json").write_text(json.dumps({"action_vocabulary": ["eating"]}))
    problems = _problems(folder)
    assert "videos/extra.mpg is not listed in videos.csv" in problems
    assert "gallery/ID77/: identity 'ID77' is not in identities.csv" in problems
    assert "videos.csv line 2: action 'talking' is not in the action vocabulary ['eating']" in problems


@pytest.mark.django_db
def test_failed_import_leaves_no_rows_and_no_files(media_root, folder):
    (folder / "videos" / "lbax4n.mpg").write_bytes(b"")
    _rewrite_csv(folder / "videos.csv", lambda rows: [*rows, ["lbax4n.mpg", "ID01", "talking"]])
    _problems(folder)
    assert not Campaign.objects.exists() and not SourceVideo.objects.exists()
    assert not media_root.exists() or not any(p.is_file() for p in media_root.rglob("*"))


def test_existing_campaign_name_is_refused(campaign, tiny_dataset):
    assert _problems(tiny_dataset, "Tiny") == ["campaign 'Tiny' already exists"]
    assert Campaign.objects.count() == 1


@pytest.mark.django_db
def test_campaign_json_supplies_name_and_settings(media_root, folder):
    (folder / "campaign.json").write_text(
        json.dumps(
            {
                "name": "From JSON",
                "raters_per_video": 3,
                "demographic_attributes": ["gender_unofficial"],
                "action_vocabulary": ["talking", "eating"],
            }
        )
    )
    campaign = import_dataset(folder, web_copies=False).campaign
    assert (campaign.name, campaign.raters_per_video) == ("From JSON", 3)
    assert campaign.action_vocabulary == ["talking", "eating"]


@pytest.mark.django_db
def test_unknown_demographic_attribute_is_refused(media_root, folder):
    (folder / "campaign.json").write_text(json.dumps({"demographic_attributes": ["race"]}))
    assert "demographic attribute(s) ['race'] are not columns of identities.csv" in _problems(folder)


@pytest.mark.django_db
def test_role_column_marks_practice_videos_outside_the_evaluated_subset(media_root, folder):
    _rewrite_csv(
        folder / "videos.csv",
        lambda rows: [rows[0] + ["role"], rows[1] + ["practice"], *[r + ["evaluated"] for r in rows[2:]]],
    )
    campaign = import_dataset(folder, "With practice", web_copies=False).campaign
    practice = SourceVideo.objects.get(campaign=campaign, practice=True)
    assert not practice.in_evaluated_subset
    assert (
        SourceVideo.objects.filter(campaign=campaign, practice=False, in_evaluated_subset=True).count() == 2
    )


@pytest.mark.django_db
def test_bad_role_and_practice_in_the_evaluated_subset_are_refused(media_root, folder):
    _rewrite_csv(
        folder / "videos.csv",
        lambda rows: [
            rows[0] + ["role", "practice", "in_evaluated_subset"],
            rows[1] + ["training", "", ""],
            rows[2] + ["", "yes", "true"],
            *[r + ["", "", ""] for r in rows[3:]],
        ],
    )
    problems = _problems(folder)
    assert (
        "videos.csv line 2: role must be one of evaluated, practice, attacker_train, got 'training'"
        in problems
    )
    assert "videos.csv line 3: a practice video cannot be in the evaluated subset" in problems
