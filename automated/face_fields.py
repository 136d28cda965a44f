"""The fields of an automated face evaluation (``face_eval.VideoEvaluation``) and its constants.

Kept apart from ``face_eval`` (which imports the detectors, embedders, OpenCV and
scikit-image) so that the Django models and admin that store and list these fields
import none of that at start-up.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

from .recognition import DEFAULT_EMBEDDER


@dataclass(frozen=True)
class VideoEvaluation:
    """Every automated face metric of one masked video (rates are fractions in [0, 1]).

    Attributes
    ----------
    frames_tested : int
        Frames compared (every ``stride``-th frame).
    clear_faces : int
        Tested frames with a face in the clear video (reference frames).
    masked_faces : int
        Reference frames where a face is found in the masked video.
    mean_iou : float
        Mean of the per-reference-frame IoU (0 where the masked frame has no face), in
        [0, 1]; NaN when ``clear_faces == 0``.
    detection_failure_rate : float
        ``1 - masked_faces / clear_faces``; NaN when ``clear_faces == 0``.
    match_rate : float
        Share of reference frames whose masked face matches the true identity's gallery
        at ``threshold`` (verification); NaN when ``clear_faces == 0``.
    rank1_rate, mean_rank : float
        Closed-set identification of the masked face among ``n_identities``: share of
        rank-1 hits and the mean rank (1 = best); NaN when ``clear_faces == 0``.
    mean_genuine_distance : float
        Mean L2 distance of the masked face to the true identity's gallery.
    clear_match_rate, clear_rank1_rate : float
        The same on the clear frames (unmasked reference); NaN when ``clear_faces == 0``.
    chance_level : float
        1 / ``n_identities``: the rank-1 rate of guessing.
    n_identities : int
    ssim : float
        Mean SSIM over tested frames, in [-1, 1] (``image_metrics.ssim``).
    psnr_db : float
        Mean finite PSNR over tested frames in dB; +inf if every tested frame is
        identical (``image_metrics.summarize_psnr``).
    psnr_identical_frames : int
        Tested frames identical to the clear frame (PSNR +inf, not in the mean).
    stride : int
    detector : str
    threshold : float
    embedder : str
        Registry name of the embedder (``recognition.EMBEDDERS``) or its class name.
    n_face_tracks : int
        Face tracks (people) in the tested clear frames (protocol step 2).
    faces_leaked : int
        Of those, tracks left detected or recognisable in the masked video (step 6).
    faces_detected, faces_recognisable : int
        Tracks detected, and tracks recognisable, in >= ``LEAK_SHARE`` of their frames.
    all_faces : int
        Clear faces over all tested frames and tracks.
    all_faces_mean_iou : float
        Mean IoU of every clear face with its best-overlapping masked box (0 if none).
    all_faces_detection_failure_rate : float
        Share of all clear faces with no masked box of IoU >= ``DETECTED_IOU``.

    The last seven are NaN when not measured (evaluations stored before face tracking);
    the rates are NaN when ``all_faces == 0``.
    """

    frames_tested: int
    clear_faces: int
    masked_faces: int
    mean_iou: float
    detection_failure_rate: float
    match_rate: float
    rank1_rate: float
    mean_rank: float
    mean_genuine_distance: float
    clear_match_rate: float
    clear_rank1_rate: float
    chance_level: float
    n_identities: int
    ssim: float
    psnr_db: float
    psnr_identical_frames: int
    stride: int
    detector: str
    threshold: float
    embedder: str = DEFAULT_EMBEDDER
    n_face_tracks: int | float = math.nan
    faces_leaked: int | float = math.nan
    faces_detected: int | float = math.nan
    faces_recognisable: int | float = math.nan
    all_faces: int | float = math.nan
    all_faces_mean_iou: float = math.nan
    all_faces_detection_failure_rate: float = math.nan

    def as_dict(self) -> dict:
        """Plain dict of all fields."""
        return asdict(self)


#: Settings recorded with every evaluation (not metrics).
SETTING_FIELDS = ("stride", "detector", "threshold", "embedder")
METRIC_FIELDS = tuple(f.name for f in fields(VideoEvaluation) if f.name not in SETTING_FIELDS)
#: Metrics that are counts (summed over the videos of a submission by ``summarize``).
COUNT_FIELDS = (
    "frames_tested",
    "clear_faces",
    "masked_faces",
    "psnr_identical_frames",
    "n_face_tracks",
    "faces_leaked",
    "faces_detected",
    "faces_recognisable",
    "all_faces",
)
#: A clear face is detected in the masked frame when a masked box overlaps it by at least
#: this IoU (the PASCAL VOC criterion, Everingham et al. 2010, IJCV 88(2), section 4.4).
DETECTED_IOU = 0.5
#: A track is leaked when detected or recognisable in at least this share of its frames.
LEAK_SHARE = 0.5
