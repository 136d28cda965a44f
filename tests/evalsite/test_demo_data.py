"""The demo dataset builder writes the importer layout from the real clips, honestly labelled."""

import csv
import json

import numpy as np
import pytest
from PIL import Image

from automated.video import iter_frames
from evalsite.demo_data import ACTION_VOCABULARY, DEMO_PEOPLE, build_demo_dataset
from evalsite.importer import import_dataset
from evalsite.models import SourceVideo


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory, data_dir):
    return build_demo_dataset(data_dir, tmp_path_factory.mktemp("demo") / "demo_data")


def _rows(path):
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_eleven_pseudonymous_identities_and_eighteen_videos(demo_dir):
    identities = _rows(demo_dir / "identities.csv")
    assert [r["identity"] for r in identities] == [f"ID{i:02d}" for i in range(1, 12)]
    videos = _rows(demo_dir / "videos.csv")
    assert len(videos) == 18 == len(list((demo_dir / "videos").iterdir()))
    assert {r["identity"] for r in videos} == {r["identity"] for r in identities}
    assert (
        sum(r["identity"] == "ID01" for r in videos) == 3
        and sum(r["identity"] == "ID11" for r in videos) == 5
    )


def test_demographics_are_official_only_for_cremad_and_by_eye_column_is_labelled(demo_dir):
    identities = {r["identity"]: r for r in _rows(demo_dir / "identities.csv")}
    assert identities["ID11"] == {
        "identity": "ID11",
        "gender_unofficial": "male",
        "gender": "male",
        "race": "Caucasian",
        "ethnicity": "Not Hispanic",
        "age_band": "50-59",
    }
    assert identities["ID02"]["gender_unofficial"] == "female"  # GRID clips.csv, by eye
    assert all(identities[f"ID{i:02d}"]["gender"] == "unknown" for i in range(1, 11))
    assert all(identities[f"ID{i:02d}"]["race"] == "unknown" for i in range(1, 11))
    config = json.loads((demo_dir / "campaign.json").read_text())
    assert config["demographic_attributes"] == ["gender_unofficial"]


def test_actions_are_talking_for_grid_and_acted_emotion_for_cremad(demo_dir):
    actions = {r["video"]: r["action"] for r in _rows(demo_dir / "videos.csv")}
    assert actions["bbaf2n.mpg"] == "talking"
    assert actions["1001_DFA_ANG_XX.flv"] == "talking (angry)"
    assert actions["1001_DFA_SAD_XX.flv"] == "talking (sad)"
    assert set(actions.values()) == set(ACTION_VOCABULARY)


def test_gallery_still_comes_from_a_different_clip_where_one_exists(demo_dir, data_dir):
    sources = {r["identity"]: r for r in _rows(demo_dir / "gallery_sources.csv")}
    assert {c for c, r in sources.items() if r["from_a_different_clip"] == "yes"} == {
        "ID01",
        "ID03",
        "ID07",
        "ID11",
    }
    video_clips = {r["source_clip"] for r in _rows(demo_dir / "videos.csv")}
    for person in DEMO_PEOPLE:
        if sources[person.code]["from_a_different_clip"] == "yes":
            assert person.gallery_clip not in video_clips
    # ID03's still is frame 37 of pwij3p.mpg (the other clip of GRID speaker s2), pixel for pixel.
    still = np.asarray(Image.open(demo_dir / "gallery" / "ID03" / "still.png"))
    frame = next(
        f for _, f in iter_frames(data_dir / "videos/grid_talking_heads/pwij3p.mpg", start=37, end=38)
    )
    assert sources["ID03"]["frame_index"] == "37" and np.array_equal(still, frame)


@pytest.mark.django_db
def test_demo_layout_imports(demo_dir, media_root):
    report = import_dataset(demo_dir, web_copies=False)
    assert (report.identities, report.gallery_images, report.videos) == (11, 11, 18)
    assert SourceVideo.objects.get(name="lgbf6s").resolution_tier == "high"  # 720x576
    assert SourceVideo.objects.get(name="1001_DFA_HAP_XX").frame_count == 56
    # Raters are asked to agree to the consent text, so the demo campaign must have one.
    assert "participant code" in SourceVideo.objects.first().campaign.consent_text


def test_refuses_to_overwrite_a_folder_it_did_not_write(tmp_path, data_dir):
    (tmp_path / "mine.txt").write_text("keep me")
    with pytest.raises(ValueError, match="was not written by the demo builder"):
        build_demo_dataset(data_dir, tmp_path)
    assert (tmp_path / "mine.txt").read_text() == "keep me"


def test_missing_data_folder_is_named(tmp_path):
    with pytest.raises(ValueError, match="expected the data file .*clips.csv"):
        build_demo_dataset(tmp_path / "nowhere", tmp_path / "out")
