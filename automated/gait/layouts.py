"""Joint layouts: the names and body-part groups of each skeleton the gait code reads.

A skeleton sequence is an array of shape ``(n_frames, n_joints, 3)``; the layout says which
joint is at which index, so the anonymizations of seeds/000 section 5.6.2 (Keep(legs),
Keep(head)) and root centring can be applied to Kinect, MediaPipe and CMU skeletons alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class JointLayout:
    """Joint order of a skeleton and its named groups of joints.

    Attributes
    ----------
    name : str
    joint_names : tuple of str
        Joint ``j`` of an array ``(n_frames, n_joints, 3)`` is ``joint_names[j]``.
    groups : dict of str to tuple of str
        Named joint subsets; at least ``"legs"`` and ``"head"`` (seeds/000, section 5.6.2).
    root : tuple of str
        Joints whose mean is the body's root (centre for ``sequences.center_on_root``).

    Raises
    ------
    ValueError
        If a group or the root names a joint not in ``joint_names``, or names repeat.
    """

    name: str
    joint_names: tuple[str, ...]
    groups: dict[str, tuple[str, ...]] = field(default_factory=dict)
    root: tuple[str, ...] = ()

    def __post_init__(self):
        if len(set(self.joint_names)) != len(self.joint_names):
            raise ValueError(f"layout {self.name!r}: joint names repeat")
        known = set(self.joint_names)
        for group, names in {**self.groups, "root": self.root}.items():
            unknown = [n for n in names if n not in known]
            if unknown:
                raise ValueError(f"layout {self.name!r}: group {group!r} names unknown joints {unknown}")

    @property
    def n_joints(self) -> int:
        return len(self.joint_names)

    def indices(self, names) -> list[int]:
        """Indices of joints given by name, or of a named group given as a str.

        Raises
        ------
        KeyError
            If a group or joint name is unknown (the message lists the known ones).
        """
        if isinstance(names, str):
            if names not in self.groups:
                raise KeyError(f"layout {self.name!r} has no group {names!r}; groups: {sorted(self.groups)}")
            names = self.groups[names]
        position = {n: i for i, n in enumerate(self.joint_names)}
        missing = [n for n in names if n not in position]
        if missing:
            raise KeyError(f"layout {self.name!r} has no joint(s) {missing}")
        return [position[n] for n in names]


# University of Calgary Kinect v2 walks: the 18 joints of GeometricPositions, file order
# (data/gait/ucalgary_kinect_gait/SOURCE.md).
CALGARY_KINECT = JointLayout(
    name="ucalgary_kinect",
    joint_names=(
        "foot_left",
        "ankle_left",
        "knee_left",
        "hip_left",
        "foot_right",
        "ankle_right",
        "knee_right",
        "hip_right",
        "spine_base",
        "spine_mid",
        "neck",
        "head",
        "shoulder_left",
        "shoulder_right",
        "wrist_left",
        "wrist_right",
        "elbow_left",
        "elbow_right",
    ),
    groups={
        "legs": (
            "foot_left",
            "ankle_left",
            "knee_left",
            "hip_left",
            "foot_right",
            "ankle_right",
            "knee_right",
            "hip_right",
        ),
        "head": ("head",),
        "upper_body": (
            "spine_mid",
            "neck",
            "head",
            "shoulder_left",
            "shoulder_right",
            "wrist_left",
            "wrist_right",
            "elbow_left",
            "elbow_right",
        ),
    },
    root=("spine_base",),
)

# MediaPipe Pose (BlazePose GHUM) 33 landmarks, in ``mediapipe.solutions.pose.PoseLandmark``
# order. "visible_head_and_shoulders" are the joints a driver-facing or talking-head clip
# shows (face + shoulders); hips, legs and mostly arms are out of frame there, and the model
# then returns guesses with visibility near 0 (see ``pose.py``).
MEDIAPIPE_POSE = JointLayout(
    name="mediapipe_pose",
    joint_names=(
        "nose",
        "left_eye_inner",
        "left_eye",
        "left_eye_outer",
        "right_eye_inner",
        "right_eye",
        "right_eye_outer",
        "left_ear",
        "right_ear",
        "mouth_left",
        "mouth_right",
        "left_shoulder",
        "right_shoulder",
        "left_elbow",
        "right_elbow",
        "left_wrist",
        "right_wrist",
        "left_pinky",
        "right_pinky",
        "left_index",
        "right_index",
        "left_thumb",
        "right_thumb",
        "left_hip",
        "right_hip",
        "left_knee",
        "right_knee",
        "left_ankle",
        "right_ankle",
        "left_heel",
        "right_heel",
        "left_foot_index",
        "right_foot_index",
    ),
    groups={
        "legs": (
            "left_hip",
            "right_hip",
            "left_knee",
            "right_knee",
            "left_ankle",
            "right_ankle",
            "left_heel",
            "right_heel",
            "left_foot_index",
            "right_foot_index",
        ),
        "head": (
            "nose",
            "left_eye_inner",
            "left_eye",
            "left_eye_outer",
            "right_eye_inner",
            "right_eye",
            "right_eye_outer",
            "left_ear",
            "right_ear",
            "mouth_left",
            "mouth_right",
        ),
        "visible_head_and_shoulders": (
            "nose",
            "left_eye_inner",
            "left_eye",
            "left_eye_outer",
            "right_eye_inner",
            "right_eye",
            "right_eye_outer",
            "left_ear",
            "right_ear",
            "mouth_left",
            "mouth_right",
            "left_shoulder",
            "right_shoulder",
        ),
        "shoulders": ("left_shoulder", "right_shoulder"),
    },
    root=("left_hip", "right_hip"),
)

# CMU mocap (Acclaim ASF, 31 segments): joint = the root, then the END point of each bone
# in ASF order (``acclaim.forward_kinematics``).
CMU_BONES = (
    "lhipjoint",
    "lfemur",
    "ltibia",
    "lfoot",
    "ltoes",
    "rhipjoint",
    "rfemur",
    "rtibia",
    "rfoot",
    "rtoes",
    "lowerback",
    "upperback",
    "thorax",
    "lowerneck",
    "upperneck",
    "head",
    "lclavicle",
    "lhumerus",
    "lradius",
    "lwrist",
    "lhand",
    "lfingers",
    "lthumb",
    "rclavicle",
    "rhumerus",
    "rradius",
    "rwrist",
    "rhand",
    "rfingers",
    "rthumb",
)
CMU_MOCAP = JointLayout(
    name="cmu_mocap",
    joint_names=("root", *CMU_BONES),
    groups={
        "legs": (
            "lhipjoint",
            "lfemur",
            "ltibia",
            "lfoot",
            "ltoes",
            "rhipjoint",
            "rfemur",
            "rtibia",
            "rfoot",
            "rtoes",
        ),
        "head": ("upperneck", "head"),
    },
    root=("root",),
)
