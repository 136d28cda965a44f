"""Acclaim ASF (skeleton) and AMC (motion) files, and forward kinematics to joint positions.

The CMU Graphics Lab motion capture database distributes its walks in this format
(data/gait/cmu_mocap_asf_amc/SOURCE.md). The ASF gives, per bone, a rest direction (unit
vector in the global frame), a length, a local axis frame (``axis`` angles + rotation order)
and its degrees of freedom (``dof``); the AMC gives, per frame, the root translation and
rotation and each bone's rotation about its ``dof`` axes.

Forward kinematics (Acclaim convention, column vectors): with ``C`` the bone's axis rotation
and ``M`` its per-frame rotation built from the AMC values,

    R_bone  = R_parent @ C @ M @ C^-1
    end     = start + length * R_bone @ direction

where ``start`` is the parent's end point (the root position for the root's children) and
a rotation given as angles about axes ``a1 a2 a3`` (in that order) is the matrix
``R_a3 @ R_a2 @ R_a1`` (extrinsic, as ``scipy.spatial.transform.Rotation.from_euler`` with
lowercase axes).

Lengths: ``:units length L`` means one file unit is ``1 / L`` inches (the CMU convention:
their files say ``length 0.45``), so positions are converted to metres with
``0.0254 / L``.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

INCH_M = 0.0254
_ROTATION_DOFS = ("rx", "ry", "rz")


class AcclaimError(ValueError):
    """An ASF or AMC file is malformed or does not match its skeleton (file + line named)."""


@dataclass(frozen=True)
class Bone:
    """One ASF bone.

    Attributes
    ----------
    name : str
    direction : ndarray of shape (3,), float64
        Unit vector of the bone in the global frame at rest.
    length : float
        In file units (see ``AsfSkeleton.metres_per_unit``).
    axis_deg : ndarray of shape (3,), float64
        Angles of the bone's local axis frame, in degrees, about ``axis_order``.
    axis_order : str
        Rotation order of ``axis_deg``, e.g. ``"XYZ"``.
    dof : tuple of str
        Rotational degrees of freedom in AMC column order, e.g. ``("rx", "ry", "rz")``.
    """

    name: str
    direction: np.ndarray
    length: float
    axis_deg: np.ndarray
    axis_order: str
    dof: tuple[str, ...]


@dataclass(frozen=True)
class AsfSkeleton:
    """A parsed ASF skeleton.

    Attributes
    ----------
    name : str
    length_unit : float
        The ``:units length`` value ``L`` (one file unit = ``1 / L`` inches).
    angle_unit : {"deg", "rad"}
    root_order : tuple of str
        AMC column order of the root, e.g. ``("tx", "ty", "tz", "rx", "ry", "rz")``.
    root_axis_order : str
    root_orientation_deg : ndarray of shape (3,)
    bones : dict of str to Bone
        In file order.
    parents : dict of str to str
        Parent of each bone (``"root"`` for the root's children).
    """

    name: str
    length_unit: float
    angle_unit: str
    root_order: tuple[str, ...]
    root_axis_order: str
    root_orientation_deg: np.ndarray
    bones: dict[str, Bone]
    parents: dict[str, str]

    @property
    def metres_per_unit(self) -> float:
        """Metres per file length unit: ``0.0254 / length_unit``."""
        return INCH_M / self.length_unit

    @property
    def joint_names(self) -> tuple[str, ...]:
        """``("root", *bone names in file order)``: the joint order of ``forward_kinematics``."""
        return ("root", *self.bones)


@dataclass(frozen=True)
class AmcMotion:
    """A parsed AMC motion.

    Attributes
    ----------
    frame_numbers : ndarray of int of shape (n_frames,)
        The frame markers of the file (CMU files count from 1).
    channels : dict of str to ndarray of shape (n_frames, n_values), float64
        Per segment (``"root"`` and bone names) the values of every frame, in the order of
        the skeleton's ``root_order`` / bone ``dof``; angles in the file's angle unit.
    """

    frame_numbers: np.ndarray
    channels: dict[str, np.ndarray]

    @property
    def n_frames(self) -> int:
        return len(self.frame_numbers)


def _floats(words, path, line_no, count=None) -> list[float]:
    # Plain floats, not numpy: AMC files have ~30 lines per frame and thousands of frames.
    try:
        values = [float(w) for w in words]
    except ValueError:
        raise AcclaimError(f"{path}:{line_no}: expected numbers, got {' '.join(words)!r}") from None
    if count is not None and len(values) != count:
        raise AcclaimError(f"{path}:{line_no}: expected {count} numbers, got {len(values)}")
    if not all(map(math.isfinite, values)):
        raise AcclaimError(f"{path}:{line_no}: non-finite number in {' '.join(words)!r}")
    return values


def read_asf(path: str | os.PathLike) -> AsfSkeleton:
    """Parse an Acclaim ASF skeleton file.

    Parameters
    ----------
    path : path-like

    Returns
    -------
    AsfSkeleton

    Raises
    ------
    AcclaimError
        If the file is missing, a section or bone field is malformed, a bone lacks a
        direction or length, the hierarchy names an unknown bone, or a bone has a
        translational dof (not supported).
    """
    path = Path(path)
    if not path.is_file():
        raise AcclaimError(f"ASF file not found: {path}")
    units = {"length": 1.0, "angle": "deg"}
    root = {"order": ("tx", "ty", "tz", "rx", "ry", "rz"), "axis": "XYZ", "orientation": np.zeros(3)}
    bones: dict[str, Bone] = {}
    parents: dict[str, str] = {}
    name = path.stem
    section = None
    current: dict | None = None
    for line_no, raw in enumerate(path.read_text(errors="replace").splitlines(), start=1):
        words = raw.split()
        if not words or words[0].startswith("#"):
            continue
        if words[0].startswith(":"):
            section = words[0][1:].lower()
            if section == "name" and len(words) > 1:
                name = words[1]
            continue
        key = words[0].lower()
        if section == "units" and len(words) >= 2:
            if key == "length":
                units["length"] = float(_floats(words[1:2], path, line_no)[0])
                if units["length"] <= 0:
                    raise AcclaimError(f"{path}:{line_no}: length unit must be > 0, got {words[1]}")
            elif key == "angle":
                if words[1].lower() not in ("deg", "rad"):
                    raise AcclaimError(f"{path}:{line_no}: angle unit must be deg or rad, got {words[1]!r}")
                units["angle"] = words[1].lower()
        elif section == "root":
            if key == "order":
                root["order"] = tuple(w.lower() for w in words[1:])
            elif key == "axis":
                root["axis"] = words[1].upper()
            elif key == "orientation":
                root["orientation"] = np.array(_floats(words[1:], path, line_no, 3))
        elif section == "bonedata":
            if key == "begin":
                current = {"line": line_no, "dof": ()}
            elif key == "end":
                if current is None:
                    raise AcclaimError(f"{path}:{line_no}: 'end' without 'begin'")
                bones_name = current.get("name")
                for needed in ("name", "direction", "length"):
                    if needed not in current:
                        raise AcclaimError(f"{path}:{current['line']}: bone without {needed}")
                direction = current["direction"]
                norm = np.linalg.norm(direction)
                if norm == 0 and current["length"] != 0:
                    raise AcclaimError(f"{path}:{current['line']}: bone {bones_name!r} has a zero direction")
                bones[bones_name] = Bone(
                    name=bones_name,
                    direction=direction / norm if norm else direction,
                    length=current["length"],
                    axis_deg=current.get("axis", np.zeros(3)),
                    axis_order=current.get("axis_order", "XYZ"),
                    dof=current["dof"],
                )
                current = None
            elif current is not None:
                if key == "name":
                    current["name"] = words[1]
                elif key == "direction":
                    current["direction"] = np.array(_floats(words[1:], path, line_no, 3))
                elif key == "length":
                    current["length"] = float(_floats(words[1:2], path, line_no)[0])
                elif key == "axis":
                    current["axis"] = np.array(_floats(words[1:4], path, line_no, 3))
                    current["axis_order"] = words[4].upper() if len(words) > 4 else "XYZ"
                elif key == "dof":
                    dof = tuple(w.lower() for w in words[1:])
                    unsupported = [d for d in dof if d not in _ROTATION_DOFS]
                    if unsupported:
                        raise AcclaimError(
                            f"{path}:{line_no}: unsupported dof {unsupported} (rotations only)"
                        )
                    current["dof"] = dof
        elif section == "hierarchy":
            if key in ("begin", "end"):
                continue
            for child in words[1:]:
                parents[child] = words[0]
    if not bones:
        raise AcclaimError(f"{path}: no :bonedata bones")
    known = {"root", *bones}
    for child, parent in parents.items():
        if child not in bones or parent not in known:
            raise AcclaimError(f"{path}: hierarchy link {parent} -> {child} names an unknown bone")
    orphans = [b for b in bones if b not in parents]
    if orphans:
        raise AcclaimError(f"{path}: bones missing from :hierarchy: {orphans}")
    return AsfSkeleton(
        name=name,
        length_unit=units["length"],
        angle_unit=units["angle"],
        root_order=root["order"],
        root_axis_order=root["axis"],
        root_orientation_deg=root["orientation"],
        bones=bones,
        parents=parents,
    )


def read_amc(path: str | os.PathLike, skeleton: AsfSkeleton) -> AmcMotion:
    """Parse an Acclaim AMC motion file against its skeleton.

    Parameters
    ----------
    path : path-like
    skeleton : AsfSkeleton
        The subject's skeleton; fixes how many values each segment line must have.

    Returns
    -------
    AmcMotion

    Raises
    ------
    AcclaimError
        If the file is missing or has no frame, a line precedes the first frame marker,
        names a segment the skeleton lacks, has the wrong number of values or a
        non-number, or a frame lacks a segment that other frames have.
    """
    path = Path(path)
    if not path.is_file():
        raise AcclaimError(f"AMC file not found: {path}")
    expected = {"root": len(skeleton.root_order)} | {b.name: len(b.dof) for b in skeleton.bones.values()}
    frame_numbers: list[int] = []
    frames: list[dict[str, np.ndarray]] = []
    for line_no, raw in enumerate(path.read_text(errors="replace").splitlines(), start=1):
        words = raw.split()
        if not words or words[0].startswith(("#", ":")):
            continue
        if len(words) == 1 and words[0].isdigit():
            frame_numbers.append(int(words[0]))
            frames.append({})
            continue
        if not frames:
            raise AcclaimError(f"{path}:{line_no}: data before the first frame marker: {raw.strip()!r}")
        segment = words[0]
        if segment not in expected:
            raise AcclaimError(f"{path}:{line_no}: segment {segment!r} is not in skeleton {skeleton.name!r}")
        frames[-1][segment] = _floats(words[1:], path, line_no, expected[segment])
    if not frames:
        raise AcclaimError(f"{path}: no frame")
    segments = list(frames[0])
    for number, frame in zip(frame_numbers, frames):
        if set(frame) != set(segments):
            missing = sorted(set(segments) ^ set(frame))
            raise AcclaimError(
                f"{path}: frame {number} differs from frame {frame_numbers[0]} in segments {missing}"
            )
    if "root" not in segments:
        raise AcclaimError(f"{path}: no root line")
    channels = {
        s: np.array([f[s] for f in frames], dtype=np.float64).reshape(len(frames), -1) for s in segments
    }
    return AmcMotion(np.asarray(frame_numbers, dtype=np.int64), channels)


def _axis_rotation(angles_deg: np.ndarray, order: str) -> np.ndarray:
    return Rotation.from_euler(order.lower(), angles_deg, degrees=True).as_matrix()


def _motion_rotation(values: np.ndarray, dof: tuple[str, ...], degrees: bool) -> np.ndarray:
    """Per-frame rotation matrices (n, 3, 3) from AMC values about the ``dof`` axes."""
    n = len(values)
    rotational = [(i, d[1]) for i, d in enumerate(dof) if d in _ROTATION_DOFS]
    if not rotational:
        return np.broadcast_to(np.eye(3), (n, 3, 3))
    columns = [i for i, _ in rotational]
    sequence = "".join(axis for _, axis in rotational)
    return Rotation.from_euler(sequence, values[:, columns], degrees=degrees).as_matrix()


def forward_kinematics(skeleton: AsfSkeleton, motion: AmcMotion) -> np.ndarray:
    """Global joint positions of every frame, in metres.

    Parameters
    ----------
    skeleton : AsfSkeleton
    motion : AmcMotion
        Parsed with ``skeleton``; a bone absent from the AMC keeps its rest rotation.

    Returns
    -------
    positions : ndarray of shape (n_frames, 1 + n_bones, 3), float64
        Joint 0 is the root; joint ``1 + k`` is the END point of bone ``k`` in ASF file order
        (``skeleton.joint_names``). Metres in the mocap frame (CMU: y up).

    Raises
    ------
    AcclaimError
        If the root lacks translation channels.
    """
    degrees = skeleton.angle_unit == "deg"
    n = motion.n_frames
    scale = skeleton.metres_per_unit
    root_values = motion.channels["root"]
    try:
        translation = root_values[:, [skeleton.root_order.index(a) for a in ("tx", "ty", "tz")]]
    except ValueError:
        raise AcclaimError(
            f"skeleton {skeleton.name!r}: root order {skeleton.root_order} lacks tx/ty/tz"
        ) from None
    root_c = _axis_rotation(skeleton.root_orientation_deg, skeleton.root_axis_order)
    root_m = _motion_rotation(root_values, skeleton.root_order, degrees)
    rotations = {"root": root_c @ root_m @ root_c.T}
    ends = {"root": translation * scale}
    positions = np.zeros((n, 1 + len(skeleton.bones), 3))
    positions[:, 0] = ends["root"]
    pending = list(skeleton.bones)
    while pending:  # parents before children, whatever the file order
        ready = [b for b in pending if skeleton.parents[b] in rotations]
        for name in ready:
            bone = skeleton.bones[name]
            parent = skeleton.parents[name]
            c = _axis_rotation(bone.axis_deg, bone.axis_order)
            values = motion.channels.get(name, np.zeros((n, len(bone.dof))))
            m = _motion_rotation(values, bone.dof, degrees)
            rotations[name] = rotations[parent] @ c @ m @ c.T
            ends[name] = ends[parent] + bone.length * scale * (rotations[name] @ bone.direction)
            pending.remove(name)
        if not ready:
            raise AcclaimError(f"skeleton {skeleton.name!r}: cycle in the hierarchy among {pending}")
    for k, name in enumerate(skeleton.bones, start=1):
        positions[:, k] = ends[name]
    return positions
