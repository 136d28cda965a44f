"""Report providers of the face evaluation (see evalsite/reports.py).

Both read the submission's latest completed ``AutomatedRun``: per-video columns prefixed
``face_`` and the ``face_evaluation`` summary section (None before any completed run).
"""

import pandas as pd

from evalsite import reports

from automated.face_eval import METRIC_FIELDS
from .face_models import AutomatedRun, VideoScore
from .services import run_summary


def face_video_columns(submission) -> pd.DataFrame:
    """One row per evaluated masked video (index: source-video name), one ``face_<metric>`` column per metric.

    Units as ``face_eval.VideoEvaluation``: rates, IoU and SSIM are fractions, ranks
    count identities (1 = best), distances are L2 between embeddings, PSNR is in dB.
    Undefined values (no face in the tested clear frames) are empty (NaN). An empty
    ``face_psnr_db`` with ``face_psnr_identical_frames == face_frames_tested`` means
    +inf (every tested frame identical to its source): +inf itself is kept out because
    the JSON exports and the REST API must stay strict JSON.
    """
    run = AutomatedRun.objects.latest_completed_for(submission)
    columns = [f"face_{name}" for name in METRIC_FIELDS]
    if run is None:
        return pd.DataFrame(columns=columns)
    # Scores of a replaced (superseded) masked video describe a file no longer current.
    rows = VideoScore.objects.filter(run=run, masked_video__current=True).select_related(
        "masked_video__source_video"
    )
    frame = pd.DataFrame(
        [
            {"video": s.masked_video.source_video.name, **{f"face_{n}": getattr(s, n) for n in METRIC_FIELDS}}
            for s in rows
        ],
        columns=["video", *columns],
    )
    return frame.set_index("video")


def face_summary(submission) -> dict | None:
    """``services.run_summary`` of the latest completed run, or None if there is none."""
    run = AutomatedRun.objects.latest_completed_for(submission)
    return None if run is None else run_summary(run)


def register() -> None:
    """Register this module's video columns and summary section."""
    reports.register_video_columns("face", face_video_columns)
    reports.register_summary_section("face_evaluation", face_summary)
