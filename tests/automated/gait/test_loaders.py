"""Loaders of real skeleton walks: University of Calgary Kinect and CMU ASF/AMC."""

import numpy as np
import pandas as pd
import pytest

from automated.gait.acclaim import AcclaimError, forward_kinematics, read_amc, read_asf
from automated.gait.layouts import CALGARY_KINECT, CMU_MOCAP
from automated.gait.loaders import (
    GaitDataError,
    gender_by_subject,
    load_calgary,
    load_cmu_walks,
    read_calgary_positions,
)
from automated.gait.sequences import resample


@pytest.fixture(scope="session")
def calgary(data_dir):
    return load_calgary(data_dir)


@pytest.fixture(scope="session")
def cmu_folder(data_dir):
    return data_dir / "gait" / "cmu_mocap_asf_amc"


# --- University of Calgary Kinect walks ------------------------------------------------


def test_calgary_has_167_sequences_of_120_frames_18_joints(calgary):
    assert calgary.sequences.shape == (167, 120, 18, 3)
    assert calgary.sequences.dtype == np.float32
    assert calgary.n_subjects == 28
    assert calgary.layout is CALGARY_KINECT
    assert len(set(calgary.sequence_ids)) == 167


def test_calgary_first_row_matches_the_file(calgary):
    # sub1/Run1 row 2 of the CSV: Foot Left X,Y,Z then Ankle Left X,Y,Z ...; Head is joint 11.
    first = calgary.sequences[0, 0]
    np.testing.assert_allclose(first[0], [-0.216318, -0.19586, 4.27166], rtol=0, atol=1e-6)
    np.testing.assert_allclose(first[1], [-0.220506, -0.120775, 4.36565], rtol=0, atol=1e-6)
    np.testing.assert_allclose(first[11], [-0.132257, 1.31926, 4.3472], rtol=0, atol=1e-6)
    np.testing.assert_allclose(first[17], [0.0757615, 0.85699, 4.40007], rtol=0, atol=1e-6)


def test_calgary_subject_walks_towards_the_camera(calgary):
    # Front view: the spine base gets closer to the Kinect (Z decreases) over a walk; two
    # sequences (sub7/run1, sub17/run3) start or end with the subject turned away.
    spine_z = calgary.sequences[:, :, CALGARY_KINECT.indices(["spine_base"])[0], 2]
    assert (spine_z[:, -1] < spine_z[:, 0]).sum() == 165
    # Y is up, in metres: the head is above the feet in every sequence (median over frames;
    # Kinect loses the feet near the camera, so single frames can be wrong).
    head_y = calgary.sequences[:, :, 11, 1]
    feet_y = calgary.sequences[:, :, [0, 4], 1].max(axis=2)
    assert np.all(np.median(head_y - feet_y, axis=1) > 0.5)


def test_calgary_metadata_keeps_the_source_quirks(calgary):
    meta = calgary.metadata
    assert meta.groupby("subject_id").size().to_dict() == {s: (5 if s == 21 else 6) for s in range(1, 29)}
    assert sorted(meta.loc[meta.subject_id == 21, "run"]) == [1, 2, 3, 5, 6]
    assert list(meta.loc[meta.subject_id == 1, "gait_type"]) == ["N", "N", "AR", "AR", "AL", "AL"]
    genders = gender_by_subject(calgary)
    assert pd.isna(genders[8])
    assert (genders == "F").sum() == 8 and (genders == "M").sum() == 19


def test_calgary_last_row_of_a_file(data_dir):
    path = next((data_dir / "gait/ucalgary_kinect_gait/sub28/Run6").glob("*GeometricPositions*"))
    positions = read_calgary_positions(path)
    assert positions.shape == (120, 18, 3)
    np.testing.assert_allclose(positions[-1, 0], [-0.217427, -0.928338, 1.68313], atol=1e-6)


HEADER = ",".join(f"c{i}" for i in range(62)) + "\n"


@pytest.mark.parametrize(
    "content, message",
    [
        ("", "not a readable CSV"),
        ("a,b,c\n1,2,3\n", "expected 62 values per row, got 3"),
        (HEADER + ",".join(["1"] * 61 + ["x"]) + "\n", r"row 2, column 62 is not a finite number: 'x'"),
        (HEADER + ",".join(["1"] * 62) + "\n", "expected 120 frames, got 1"),
    ],
)
def test_calgary_malformed_file_raises(tmp_path, content, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(GaitDataError, match=message):
        read_calgary_positions(path)


def test_calgary_missing_folder_raises(tmp_path):
    with pytest.raises(GaitDataError, match="Calgary index not found"):
        load_calgary(tmp_path)


# --- CMU ASF/AMC -------------------------------------------------------------------------


def test_asf_bone_values_as_in_the_file(cmu_folder):
    skeleton = read_asf(cmu_folder / "07" / "07.asf")
    assert skeleton.joint_names == CMU_MOCAP.joint_names
    femur = skeleton.bones["lfemur"]
    assert femur.length == pytest.approx(6.92462)
    np.testing.assert_allclose(femur.direction, [0.34202, -0.939693, 0], atol=1e-6)
    np.testing.assert_allclose(femur.axis_deg, [0, 0, 20])
    assert femur.dof == ("rx", "ry", "rz")
    assert skeleton.bones["lhipjoint"].dof == ()
    assert skeleton.parents["lfemur"] == "lhipjoint" and skeleton.parents["lowerback"] == "root"
    assert skeleton.metres_per_unit == pytest.approx(0.0254 / 0.45)


def test_amc_frames_and_root_translation(cmu_folder):
    skeleton = read_asf(cmu_folder / "07" / "07.asf")
    motion = read_amc(cmu_folder / "07" / "07_01.amc", skeleton)
    assert motion.n_frames == 316  # CMU's published count (trials.csv)
    np.testing.assert_allclose(
        motion.channels["root"][0], [8.87208, 15.7511, -31.7081, 5.5217, 4.9122, 3.70117]
    )
    positions = forward_kinematics(skeleton, motion)
    # root position = AMC translation x 0.0254 / 0.45 metres (hand-computed)
    np.testing.assert_allclose(positions[0, 0], [0.500782, 0.889062, -1.789746], atol=1e-5)


@pytest.mark.parametrize("trial", ["02/02_01", "07/07_01", "35/35_01"])
def test_fk_bone_lengths_are_constant_and_equal_to_the_asf(cmu_folder, trial):
    subject = trial.split("/")[0]
    skeleton = read_asf(cmu_folder / subject / f"{subject}.asf")
    positions = forward_kinematics(skeleton, read_amc(cmu_folder / f"{trial}.amc", skeleton))
    names = skeleton.joint_names
    for name, bone in skeleton.bones.items():
        start = positions[:, names.index(skeleton.parents[name])]
        lengths = np.linalg.norm(positions[:, names.index(name)] - start, axis=1)
        np.testing.assert_allclose(lengths, bone.length * skeleton.metres_per_unit, atol=1e-9)


@pytest.mark.parametrize("trial", ["02/02_01", "07/07_01", "35/35_01"])
def test_fk_walk_is_a_plausible_human_walk(cmu_folder, trial):
    # Level-ground walks: both feet touch the floor (y = 0) at some frame, the head stays
    # 1.4-1.9 m above it, and the root moves at a walking speed (120 fps).
    subject = trial.split("/")[0]
    skeleton = read_asf(cmu_folder / subject / f"{subject}.asf")
    positions = forward_kinematics(skeleton, read_amc(cmu_folder / f"{trial}.amc", skeleton))
    names = skeleton.joint_names
    for toes in ("ltoes", "rtoes"):
        assert abs(positions[:, names.index(toes), 1].min()) < 0.03
    head_y = positions[:, names.index("head"), 1]
    assert 1.4 < head_y.min() and head_y.max() < 1.9
    root = positions[:, 0]
    speed = np.linalg.norm(root[-1, [0, 2]] - root[0, [0, 2]]) / (len(root) / 120)
    assert 0.9 < speed < 1.8


ASF_TWO_BONES = """:version 1.10
:units
  length 1.0
  angle deg
:root
   order TX TY TZ RX RY RZ
   axis XYZ
   position 0 0 0
   orientation 0 0 0
:bonedata
  begin
     id 1
     name up
     direction 0 1 0
     length 10
     axis 0 0 90 XYZ
    dof rx
  end
  begin
     id 2
     name side
     direction 1 0 0
     length 5
     axis 0 0 0 XYZ
  end
:hierarchy
  begin
    root up
    up side
  end
"""


def test_fk_rotates_about_the_bone_local_axis(tmp_path):
    # Bone "up" has local axes rotated 90 deg about z, so its local x is the global y: rx = 90
    # turns the child "side" (global +x) about global y, to global -z (R_y(90) x = -z).
    (tmp_path / "s.asf").write_text(ASF_TWO_BONES)
    amc = ":FULLY-SPECIFIED\n:DEGREES\n1\nroot 0 0 0 0 0 0\nup 90\n2\nroot 1 0 0 0 0 0\nup 0\n"
    (tmp_path / "s.amc").write_text(amc)
    skeleton = read_asf(tmp_path / "s.asf")
    positions = forward_kinematics(skeleton, read_amc(tmp_path / "s.amc", skeleton)) / 0.0254
    np.testing.assert_allclose(positions[0], [[0, 0, 0], [0, 10, 0], [0, 10, -5]], atol=1e-9)
    np.testing.assert_allclose(positions[1], [[1, 0, 0], [1, 10, 0], [6, 10, 0]], atol=1e-9)


@pytest.mark.parametrize(
    "amc, message",
    [
        ("root 0 0 0 0 0 0\n", "data before the first frame marker"),
        ("1\nroot 0 0 0 0 0 0\nknee 5\n", "segment 'knee' is not in skeleton"),
        ("1\nroot 0 0 0 0 0\n", "expected 6 numbers, got 5"),
        ("1\nroot 0 0 0 0 0 zero\n", "expected numbers"),
        (
            "1\nroot 0 0 0 0 0 0\nup 1\n2\nroot 0 0 0 0 0 0\n",
            r"frame 2 differs from frame 1 in segments \['up'\]",
        ),
        (":DEGREES\n", "no frame"),
    ],
)
def test_malformed_amc_raises(tmp_path, amc, message):
    (tmp_path / "s.asf").write_text(ASF_TWO_BONES)
    (tmp_path / "s.amc").write_text(amc)
    with pytest.raises(AcclaimError, match=message):
        read_amc(tmp_path / "s.amc", read_asf(tmp_path / "s.asf"))


@pytest.mark.parametrize(
    "replace, by, message",
    [
        ("    up side\n", "    up elbow\n", "names an unknown bone"),
        ("     length 5\n", "", "bone without length"),
        ("     direction 1 0 0\n", "     direction 1 0\n", "expected 3 numbers, got 2"),
        ("    dof rx\n", "    dof tx\n", "unsupported dof"),
        ("    root up\n", "", r"bones missing from :hierarchy: \['up'\]"),
    ],
)
def test_malformed_asf_raises(tmp_path, replace, by, message):
    assert replace in ASF_TWO_BONES
    (tmp_path / "s.asf").write_text(ASF_TWO_BONES.replace(replace, by))
    with pytest.raises(AcclaimError, match=message):
        read_asf(tmp_path / "s.asf")


def test_cmu_walks_load_every_trial_and_resample_to_the_paper_length(data_dir):
    raw = load_cmu_walks(data_dir)  # original lengths: an object array of sequences
    assert [s.shape for s in raw.sequences[:2]] == [(343, 31, 3), (298, 31, 3)]
    assert list(raw.metadata["n_frames_original"]) == [
        343,
        298,
        432,
        365,
        4563,
        4722,
        316,
        329,
        306,
        301,
        315,
        358,
    ]
    assert sorted(set(raw.subject_ids)) == [2, 3, 7, 35]
    assert raw.sequence_ids[6] == "07_01"
    walks = np.stack([resample(s, 100) for s in raw.sequences])
    assert walks.shape == (12, 100, 31, 3)
    np.testing.assert_allclose(walks[6, -1], raw.sequences[6][-1], atol=1e-6)
