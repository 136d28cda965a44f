"""Skeleton time series from video with MediaPipe Pose (offline), cached per video.

The gait attack on videos (issue 4, "Gait-style recognition") needs one skeleton per frame.
MediaPipe 0.10.21's legacy ``mediapipe.solutions.pose`` ships the BlazePose GHUM model in
the wheel; only ``model_complexity=1`` is bundled (0 and 2 try to download, so they are not
offered). One person per frame; 33 landmarks (``layouts.MEDIAPIPE_POSE``).

Missing detections: frames where the model finds no person are filled by linear
interpolation over the frame index between the nearest frames with a detection (frames
before the first / after the last detection repeat it), and flagged in
``PoseSequence.detected``. A video with no detection at all raises ``NoPoseDetectedError``.

Usable joints: driver-facing and talking-head clips (GRID 360x288, CREMA-D 480x360) show the
head and the top of the shoulders only. There the face landmarks (0-10) and the shoulders
(11, 12) have visibility > 0.5; elbows, wrists, hands, hips and legs are out of frame and
the model returns extrapolated guesses with visibility near 0 (measured on the GRID and
CREMA-D clips, tests/automated/test_gait_pose.py). Use the layout group
``"visible_head_and_shoulders"`` for such clips; Keep(legs) is meaningless there.

Cache: one ``.npz`` per (video content, stride, detection threshold, MediaPipe version) in
``cache_dir``; the file name is a SHA-256 token, so no identity or file name leaks into it.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import mediapipe as mp
import numpy as np

from ..cache_files import save_npz
from ..native_logs import QuietStart
from ..video import VideoError, VideoInfo, iter_frames
from .layouts import MEDIAPIPE_POSE
from .sequences import PAPER_N_FRAMES, resample

MODEL_COMPLEXITY = 1  # the only complexity whose model ships in the mediapipe 0.10.21 wheel
N_LANDMARKS = MEDIAPIPE_POSE.n_joints  # 33
_CACHE_VERSION = "1"


class NoPoseDetectedError(ValueError):
    """MediaPipe found no person in any frame of a video."""


@dataclass(frozen=True)
class PoseSequence:
    """MediaPipe pose landmarks of the frames of one video.

    Attributes
    ----------
    frame_indices : ndarray of int64 of shape (n_frames,)
        Video frame index of each row (``start, start + stride, ...``).
    landmarks_xyz : ndarray of shape (n_frames, 33, 3), float32
        MediaPipe normalised image coordinates: x and y as fractions of the frame width and
        height (may fall outside [0, 1] for joints out of frame; y grows downwards), z depth
        relative to the hips in roughly the scale of x (smaller = closer to the camera).
    world_xyz : ndarray of shape (n_frames, 33, 3), float32
        MediaPipe world landmarks in metres, origin at the hip midpoint (estimated even when
        the hips are out of frame).
    visibility : ndarray of shape (n_frames, 33), float32 in [0, 1]
        Likelihood that the landmark is visible (not occluded, in frame).
    detected : ndarray of bool of shape (n_frames,)
        False where no person was found and the row was interpolated.
    resolution_wh : tuple of (int, int)
        (width, height) of the video in pixels.
    fps : float
        Frame rate of the video (frames per second).
    """

    frame_indices: np.ndarray
    landmarks_xyz: np.ndarray
    world_xyz: np.ndarray
    visibility: np.ndarray
    detected: np.ndarray
    resolution_wh: tuple[int, int]
    fps: float

    def __post_init__(self):
        n = len(self.frame_indices)
        expected = {
            "landmarks_xyz": (n, N_LANDMARKS, 3),
            "world_xyz": (n, N_LANDMARKS, 3),
            "visibility": (n, N_LANDMARKS),
            "detected": (n,),
        }
        for name, shape in expected.items():
            if getattr(self, name).shape != shape:
                raise ValueError(f"{name} must have shape {shape}, got {getattr(self, name).shape}")

    @property
    def detection_rate(self) -> float:
        """Share of frames with a detection, in [0, 1]."""
        return float(self.detected.mean())

    def pixels_xyz(self) -> np.ndarray:
        """Landmarks in pixels: (x * width, y * height, z * width), float32 (n_frames, 33, 3).

        Isotropic units, so a sequence can be resampled and fed to the gait features.
        """
        width, height = self.resolution_wh
        return self.landmarks_xyz * np.array([width, height, width], dtype=np.float32)

    def mean_visibility(self) -> dict[str, float]:
        """Mean visibility of each landmark over the detected frames, by joint name."""
        rows = self.visibility[self.detected]
        return {name: float(v) for name, v in zip(MEDIAPIPE_POSE.joint_names, rows.mean(axis=0))}


def _new_pose_estimator(min_detection_confidence: float):
    """The MediaPipe Pose graph in video (tracking) mode with the bundled model."""
    return QuietStart(
        lambda: mp.solutions.pose.Pose(
            static_image_mode=False,
            model_complexity=MODEL_COMPLEXITY,
            enable_segmentation=False,
            min_detection_confidence=min_detection_confidence,
            min_tracking_confidence=0.5,
        )
    )


def _interpolate_missing(values: np.ndarray, detected: np.ndarray, frame_indices: np.ndarray) -> np.ndarray:
    """Fill undetected rows by linear interpolation over the frame index (edges held)."""
    if detected.all():
        return values
    flat = values.reshape(len(values), -1)
    filled = np.empty_like(flat)
    known_t = frame_indices[detected]
    for column in range(flat.shape[1]):
        filled[:, column] = np.interp(frame_indices, known_t, flat[detected, column])
    return filled.reshape(values.shape)


def detect_poses(
    video_path: str | os.PathLike, *, stride: int = 1, min_detection_confidence: float = 0.5
) -> PoseSequence:
    """Run MediaPipe Pose on every ``stride``-th frame of a video (no cache).

    Parameters
    ----------
    video_path : path-like
    stride : int, default=1
        Process frames 0, stride, 2 * stride, ...
    min_detection_confidence : float in [0, 1], default=0.5

    Returns
    -------
    PoseSequence
        Missing detections interpolated (module docstring).

    Raises
    ------
    VideoError
        If the file is not a readable video.
    NoPoseDetectedError
        If no frame has a detection.
    ValueError
        If ``stride`` < 1 or ``min_detection_confidence`` is outside [0, 1].
    """
    if not 0.0 <= min_detection_confidence <= 1.0:
        raise ValueError(f"min_detection_confidence must be in [0, 1], got {min_detection_confidence}")
    info = VideoInfo.from_video_path(video_path)
    indices, image_rows, world_rows, visibility_rows, detected = [], [], [], [], []
    missing_row = np.zeros((N_LANDMARKS, 4), dtype=np.float32)
    estimator = _new_pose_estimator(min_detection_confidence)
    try:
        for frame_index, frame_rgb in iter_frames(video_path, stride=stride):
            result = estimator.process(frame_rgb)
            indices.append(frame_index)
            found = result.pose_landmarks is not None
            detected.append(found)
            if found:
                image = np.array(
                    [[p.x, p.y, p.z, p.visibility] for p in result.pose_landmarks.landmark], np.float32
                )
                world = np.array([[p.x, p.y, p.z] for p in result.pose_world_landmarks.landmark], np.float32)
            else:
                image, world = missing_row, missing_row[:, :3]
            image_rows.append(image[:, :3])
            visibility_rows.append(image[:, 3])
            world_rows.append(world)
    finally:
        estimator.close()
    detected = np.array(detected, dtype=bool)
    if not detected.any():
        raise NoPoseDetectedError(f"{Path(video_path).name}: no person detected in {len(indices)} frames")
    frame_indices = np.array(indices, dtype=np.int64)
    fill = lambda rows: _interpolate_missing(np.stack(rows), detected, frame_indices)  # noqa: E731
    return PoseSequence(
        frame_indices=frame_indices,
        landmarks_xyz=fill(image_rows),
        world_xyz=fill(world_rows),
        visibility=fill(visibility_rows),
        detected=detected,
        resolution_wh=info.resolution_wh,
        fps=info.fps,
    )


def _cache_key(video_path: Path, stride: int, min_detection_confidence: float) -> str:
    digest = hashlib.sha256()
    with open(video_path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    settings = f"|{stride}|{min_detection_confidence}|{mp.__version__}|{MODEL_COMPLEXITY}|{_CACHE_VERSION}"
    digest.update(settings.encode())
    return digest.hexdigest()


def extract_pose_sequence(
    video_path: str | os.PathLike,
    *,
    cache_dir: str | os.PathLike,
    stride: int = 1,
    min_detection_confidence: float = 0.5,
) -> PoseSequence:
    """Pose landmarks of a video, computed once and cached in ``cache_dir``.

    The cache entry is keyed by the SHA-256 of the video's bytes and the settings, so a
    changed file is recomputed and every attacker of a suite reuses one extraction (issue 4,
    "computed once and cached for all attackers").

    Parameters
    ----------
    video_path : path-like
    cache_dir : path-like
        Folder for ``<sha256>.npz`` entries (created if missing).
    stride : int, default=1
    min_detection_confidence : float in [0, 1], default=0.5

    Returns
    -------
    PoseSequence

    Raises
    ------
    VideoError, NoPoseDetectedError, ValueError
        As ``detect_poses``; a missing video raises ``VideoError``.
    """
    path = Path(video_path)
    if not path.is_file():
        raise VideoError(f"video file not found: {path}")
    cache_dir = Path(cache_dir)
    entry = cache_dir / f"{_cache_key(path, stride, min_detection_confidence)}.npz"
    if entry.is_file():
        with np.load(entry) as stored:
            return PoseSequence(
                frame_indices=stored["frame_indices"],
                landmarks_xyz=stored["landmarks_xyz"],
                world_xyz=stored["world_xyz"],
                visibility=stored["visibility"],
                detected=stored["detected"],
                resolution_wh=tuple(int(v) for v in stored["resolution_wh"]),
                fps=float(stored["fps"]),
            )
    poses = detect_poses(path, stride=stride, min_detection_confidence=min_detection_confidence)
    save_npz(  # atomic: a concurrent reader never sees half a file
        entry,
        compressed=False,
        frame_indices=poses.frame_indices,
        landmarks_xyz=poses.landmarks_xyz,
        world_xyz=poses.world_xyz,
        visibility=poses.visibility,
        detected=poses.detected,
        resolution_wh=np.array(poses.resolution_wh),
        fps=np.array(poses.fps),
    )
    return poses


def pose_time_series(
    video_path: str | os.PathLike,
    *,
    cache_dir: str | os.PathLike,
    n_frames: int = PAPER_N_FRAMES,
    stride: int = 1,
    coordinates: str = "normalised",
) -> np.ndarray:
    """A video as one fixed-length skeleton sequence, ready for the gait recognizers.

    The cached MediaPipe landmarks (``extract_pose_sequence``) resampled to ``n_frames``
    frames by linear interpolation over time (seeds/000, section 5.3: 100 frames).

    Parameters
    ----------
    video_path : path-like
    cache_dir : path-like
    n_frames : int, default=100
    stride : int, default=1
    coordinates : {"normalised", "pixels", "world"}, default="normalised"
        ``"normalised"``: fractions of the frame width / height (resolution gives no cue,
        as the attack protocol requires when clips differ in size); ``"pixels"``:
        ``PoseSequence.pixels_xyz``; ``"world"``: MediaPipe world landmarks in metres.

    Returns
    -------
    ndarray of shape (n_frames, 33, 3), float32
        Joint order ``layouts.MEDIAPIPE_POSE``.

    Raises
    ------
    ValueError
        If ``coordinates`` is unknown or the video has fewer than 2 processed frames;
        ``VideoError`` / ``NoPoseDetectedError`` as ``extract_pose_sequence``.
    """
    poses = extract_pose_sequence(video_path, cache_dir=cache_dir, stride=stride)
    choices = {
        "normalised": lambda: poses.landmarks_xyz,
        "pixels": poses.pixels_xyz,
        "world": lambda: poses.world_xyz,
    }
    if coordinates not in choices:
        raise ValueError(f"coordinates must be one of {sorted(choices)}, got {coordinates!r}")
    return resample(choices[coordinates](), n_frames).astype(np.float32)
