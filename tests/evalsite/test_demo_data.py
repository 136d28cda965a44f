"""The demo dataset builder writes the importer layout from the real clips, honestly labelled."""

import csv
import json
from pathlib import Path

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


def test_eleven_pseudonymous_identities_and_twenty_four_videos(demo_dir):
    identities = _rows(demo_dir / "identities.csv")
    assert [r["identity"] for r in identities] == [f"ID{i:02d}" for i in range(1, 12)]
    videos = _rows(demo_dir / "videos.csv")
    assert len(videos) == 24 == len(list((demo_dir / "videos").iterdir()))
    assert {r["identity"] for r in videos} == {r["identity"] for r in identities}
    # GRID s1 7 clips, s4 (probable) 5, CREMA-D 1001 6, each less the gallery's; s2 both.
    per_identity = {
        code: sum(r["identity"] == code for r in videos) for code in ("ID01", "ID03", "ID07", "ID11")
    }
    assert per_identity == {"ID01": 6, "ID03": 2, "ID07": 4, "ID11": 5}
    assert sum(per_identity.values()) + 7 == 24  # 7 single-clip GRID speakers


def test_every_clip_of_a_person_with_several_is_a_video_or_the_gallery_still(demo_dir, data_dir):
    # The cross-video attack needs every second clip the data folder has of a person.
    with (data_dir / "videos" / "grid_identity_clips" / "clips.csv").open(newline="") as handle:
        listed = [r for r in csv.DictReader(handle)]
    grid = {
        person: {
            Path("grid_identity_clips", r["file"]).as_posix().replace("grid_identity_clips/../", "")
            for r in listed
            if r["identity"] == person
        }
        for person in ("grid_s1", "grid_s2", "grid_s4_probable")
    }
    cremad = {f"cremad/{p.name}" for p in (data_dir / "videos" / "cremad").glob("*.flv")}
    used = {p.code: {p.gallery_clip, *p.videos} for p in DEMO_PEOPLE}
    assert used["ID01"] == grid["grid_s1"] and len(grid["grid_s1"]) == 7
    assert used["ID03"] == grid["grid_s2"] and len(grid["grid_s2"]) == 2
    assert used["ID07"] == grid["grid_s4_probable"] and len(grid["grid_s4_probable"]) == 5
    assert used["ID11"] == cremad and len(cremad) == 6
    sources = {r["source_clip"] for r in _rows(demo_dir / "videos.csv")}
    assert sources == {clip for p in DEMO_PEOPLE for clip in p.videos}


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
    rows = _rows(demo_dir / "videos.csv")
    evaluated_clips = {r["source_clip"] for r in rows if r["role"] == "evaluated"}
    for person in DEMO_PEOPLE:
        different = sources[person.code]["from_a_different_clip"] == "yes"
        assert different == (person.gallery_clip not in evaluated_clips)
        assert sources[person.code]["from_evaluated_clip"] == ("no" if different else "yes")
    # A still raters are not shown either: ID03's clip is the attacker's own, the others
    # are clips left out of the dataset.
    roles = {code: r["source_clip_role"] for code, r in sources.items()}
    assert roles == {
        "ID01": "not in videos.csv",
        "ID03": "attacker_train",
        "ID07": "not in videos.csv",
        "ID11": "not in videos.csv",
        **{f"ID{i:02d}": "evaluated" for i in (2, 4, 5, 6, 8, 9, 10)},
    }
    assert {r["source_clip"]: r["role"] for r in rows}["grid_talking_heads/pwij3p.mpg"] == "attacker_train"
    # ID03's still is frame 37 of pwij3p.mpg (the other clip of GRID speaker s2), pixel for pixel.
    still = np.asarray(Image.open(demo_dir / "gallery" / "ID03" / "still.png"))
    frame = next(
        f for _, f in iter_frames(data_dir / "videos/grid_talking_heads/pwij3p.mpg", start=37, end=38)
    )
    assert sources["ID03"]["frame_index"] == "37" and np.array_equal(still, frame)


@pytest.mark.django_db
def test_demo_layout_imports(demo_dir, media_root):
    report = import_dataset(demo_dir, web_copies=False)
    assert (report.identities, report.gallery_images, report.videos) == (11, 11, 24)
    assert SourceVideo.objects.filter(in_evaluated_subset=True).count() == 20
    assert sorted(SourceVideo.objects.filter(attacker_train=True).values_list("name", flat=True)) == [
        "1001_DFA_SAD_XX",
        "lgwazp",
        "pwij3p",
        "sgbc3n",
    ]
    # 720x576: ID07's three high-quality clips (conditions B and C).
    assert sorted(SourceVideo.objects.filter(resolution_tier="high").values_list("name", flat=True)) == [
        "lgbf6s",
        "sgac2a",
        "sgbc3n",
    ]
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
