"""Report providers of the face evaluation (see evalsite/reports.py).

Both read the submission's latest completed ``AutomatedRun``: per-video columns prefixed
``face_`` and the ``face_evaluation`` summary section (None before any completed run).
Both name the recognition model behind the verification threshold (``face_detector``,
``face_embedder``, ``face_distance``, ``face_threshold``: what the run recorded) and
give the chance level of the mean rank, ``(N + 1) / 2`` for N gallery identities. The
data-dictionary entries of every column are registered here too (``register``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING


from evalsite import dictionary, reports
from evalsite.dictionary import Column

from automated.face_fields import DETECTED_IOU, LEAK_SHARE, METRIC_FIELDS
from automated.recognition import EMBEDDERS, MATCH_THRESHOLD, embedder_spec
from .face_models import AutomatedRun, VideoScore
from .services import LEGACY_EMBEDDER, run_summary

# pandas is imported where it is used: slow to import, and Django start-up imports this module.
if TYPE_CHECKING:
    import pandas as pd

MEDIAEVAL = "seeds/002_68b18bfdbdb94491.txt, computational face recognition evaluation"
PRIVHAR = "seeds/004_cf13f4f759494b31.txt, section 3 (metrics)"
CLOSED_SET = "seeds/000_0b74979cb8a3f1c3.txt, closed-set identification"
PROTOCOL = "automated/face_eval.py, module protocol"
MODEL = f"the run's face_embedder (default dlib_resnet: dlib's ResNet face embedding; one of {', '.join(EMBEDDERS)})"
DETECTOR = "the run's face_detector (default mediapipe BlazeFace)"
THRESHOLD = (
    "the run's face_threshold (default: the embedder's documented value, "
    + ", ".join(f"{name} {spec.threshold:g}" for name, spec in EMBEDDERS.items())
    + ")"
)
DISTANCE = "Euclidean (L2) between embeddings; a distance <= threshold is a match"


def _rate(meaning, ideal, source=PROTOCOL, **extra) -> Column:
    return Column(
        meaning, "float", unit="fraction", range="[0, 1]", ideal=ideal, precision=4, source=source, **extra
    )


def _count(meaning, unit="frames", ideal="", source=PROTOCOL) -> Column:
    return Column(meaning, "int", unit=unit, range=">= 0", ideal=ideal, source=source)


_RECOGNITION = {"model": MODEL, "threshold": THRESHOLD, "distance": DISTANCE}
_IDENTIFICATION = {"model": MODEL, "distance": DISTANCE}

#: Dictionary entries of the face metrics, by ``VideoEvaluation`` field (per video; the
#: summary uses the same entries: means over videos, counts summed).
METRIC_ENTRIES = {
    "frames_tested": _count("frames compared (every stride-th frame)"),
    "clear_faces": _count("tested frames with a face in the clear video (reference frames)"),
    "masked_faces": _count("reference frames where a face is detected in the masked video", ideal="0"),
    "mean_iou": Column(
        "mean IoU of the clear face box with the best-overlapping masked box over reference frames "
        "(0 where the masked frame has no face)",
        "float",
        range="[0, 1]",
        ideal="0 (no face found where the person is)",
        precision=4,
        model=DETECTOR,
        source=MEDIAEVAL + " (IoU; MediaEval cumulates it, a mean does not depend on video length)",
    ),
    "detection_failure_rate": _rate(
        "1 - masked_faces / clear_faces: share of clear faces the detector no longer finds after masking",
        "1",
        PRIVHAR,
        model=DETECTOR,
    ),
    "match_rate": _rate(
        "share of reference frames whose masked face is verified as the true identity against its gallery face",
        "0",
        MEDIAEVAL + " (count of matches)",
        **_RECOGNITION,
    ),
    "rank1_rate": _rate(
        "share of reference frames whose masked face is closest to the true identity among all gallery "
        "identities (closed-set rank-1); chance level = chance_level",
        "chance_level (no better than guessing)",
        CLOSED_SET,
        **_IDENTIFICATION,
    ),
    "mean_rank": Column(
        "mean rank of the true identity among the gallery identities for the masked face (1 = first); "
        "random guessing gives mean_rank_chance = (N + 1) / 2",
        "float",
        unit="rank",
        range="1 .. n_identities",
        ideal="mean_rank_chance ((N + 1) / 2) or higher",
        precision=3,
        source=CLOSED_SET,
        **_IDENTIFICATION,
    ),
    "mean_genuine_distance": Column(
        "mean L2 distance of the masked face embedding to the true identity's gallery embedding",
        "float",
        unit="L2 distance",
        range=">= 0",
        ideal="above the threshold (no match)",
        precision=4,
        source=PROTOCOL,
        **_RECOGNITION,
    ),
    "clear_match_rate": _rate(
        "match_rate on the clear frames (what recognition achieves without masking: the upper bound)",
        "",
        MEDIAEVAL,
        **_RECOGNITION,
    ),
    "clear_rank1_rate": _rate(
        "rank1_rate on the clear frames (unmasked upper bound)", "", CLOSED_SET, **_IDENTIFICATION
    ),
    "chance_level": _rate("1 / n_identities: the rank-1 rate of random guessing", "", CLOSED_SET),
    "n_identities": _count("gallery identities the masked face is ranked among (N)", unit="identities"),
    "ssim": Column(
        "mean structural similarity of masked vs clear frames over tested frames",
        "float",
        range="[-1, 1]",
        ideal="low for privacy (1 = unchanged frame)",
        precision=4,
        source=PRIVHAR,
    ),
    "psnr_db": Column(
        "mean finite PSNR of masked vs clear tested frames; empty with psnr_identical_frames == "
        "frames_tested means +inf (every frame identical)",
        "float",
        unit="dB",
        range=">= 0",
        ideal="low for privacy",
        precision=2,
        source=PRIVHAR,
    ),
    "psnr_identical_frames": _count(
        "tested frames identical to the clear frame (PSNR +inf, left out of the mean)", ideal="0"
    ),
    "n_face_tracks": _count(
        "face tracks (people) in the tested clear frames (protocol step 2)", unit="tracks"
    ),
    "faces_leaked": _count(
        f"tracks still detected or recognisable in >= {LEAK_SHARE:g} of their frames after masking (step 6)",
        unit="tracks",
        ideal="0",
    ),
    "faces_detected": _count(
        f"tracks detected in >= {LEAK_SHARE:g} of their frames after masking", unit="tracks", ideal="0"
    ),
    "faces_recognisable": _count(
        f"tracks matched to their identity in >= {LEAK_SHARE:g} of their frames after masking",
        unit="tracks",
        ideal="0",
    ),
    "all_faces": _count("clear faces over all tested frames and tracks", unit="faces"),
    "all_faces_mean_iou": Column(
        "mean IoU of every clear face with its best-overlapping masked box (0 if none)",
        "float",
        range="[0, 1]",
        ideal="0",
        precision=4,
        model=DETECTOR,
        source=PROTOCOL,
    ),
    "all_faces_detection_failure_rate": _rate(
        f"share of all clear faces with no masked box of IoU >= {DETECTED_IOU:g}",
        "1",
        PRIVHAR,
        model=DETECTOR,
    ),
}
#: Per-video columns naming the recognition set-up of the run (constant within a run).
SETUP_ENTRIES = {
    "detector": Column("face detector of the run (registry name)", "str", source="automated/detection.py"),
    "embedder": Column(
        "face embedder (recognition model) of the run (registry name, automated.recognition.EMBEDDERS)",
        "str",
        source="automated/recognition.py",
    ),
    "distance": Column(
        "distance the embedder's embeddings are compared by",
        "str",
        range=" | ".join(sorted({spec.distance for spec in EMBEDDERS.values()})),
    ),
    "threshold": Column(
        "verification threshold on that distance: a distance <= threshold is a match",
        "float",
        unit="L2 distance",
        range=">= 0",
        precision=3,
        source="the embedder's documented value (automated.recognition.EMBEDDERS); dlib: "
        "dnn_face_recognition_ex.cpp (0.6, 99.38 % on LFW)",
    ),
}
MEAN_RANK_CHANCE = Column(
    "mean rank of random guessing among N gallery identities: (N + 1) / 2",
    "float",
    unit="rank",
    range="1 .. n_identities",
    precision=2,
    source=CLOSED_SET,
)
NO_CLEAR_FACE = (
    "face: no face detected in the tested clear frames (detection and recognition scores undefined)"
)
ATTACKER_TRAINING = "face: attacker training material, not face-evaluated (the attack trains on it)"


def face_video_columns(submission) -> pd.DataFrame:
    """One row per evaluated masked video (index: source-video name), one ``face_<metric>`` column per metric.

    Attacker training videos have no row (``VideoScore.objects.reported``).

    Units as ``face_eval.VideoEvaluation``: rates, IoU and SSIM are fractions, ranks
    count identities (1 = best), distances are L2 between embeddings, PSNR is in dB.
    Undefined values (no face in the tested clear frames) are empty (NaN). An empty
    ``face_psnr_db`` with ``face_psnr_identical_frames == face_frames_tested`` means
    +inf (every tested frame identical to its source): +inf itself is kept out because
    the JSON exports and the REST API must stay strict JSON.
    """
    import pandas as pd

    run = AutomatedRun.objects.latest_completed_for(submission)
    columns = video_column_names()
    if run is None:
        return pd.DataFrame(columns=columns)
    setup = recognition_setup(run)
    # Not of a replaced (superseded) masked video, nor of attacker training material.
    rows = VideoScore.objects.filter(run=run).reported().select_related("masked_video__source_video")
    frame = pd.DataFrame(
        [
            {
                "video": s.masked_video.source_video.name,
                **{f"face_{n}": getattr(s, n) for n in METRIC_FIELDS},
                **{f"face_{k}": v for k, v in setup.items()},
                "face_mean_rank_chance": mean_rank_chance(s.n_identities),
            }
            for s in rows
        ],
        columns=["video", *columns],
    )
    return frame.set_index("video")


def video_column_names() -> list[str]:
    """The per-video columns, in report order."""
    return (
        [f"face_{n}" for n in METRIC_FIELDS]
        + ["face_mean_rank_chance"]
        + [f"face_{k}" for k in SETUP_ENTRIES]
    )


def mean_rank_chance(n_identities) -> float:
    """``(N + 1) / 2``: the expected rank of the true identity under random guessing among N (NaN if unknown)."""
    if n_identities is None or (isinstance(n_identities, float) and math.isnan(n_identities)):
        return math.nan
    return (int(n_identities) + 1) / 2


def recognition_setup(run: AutomatedRun) -> dict:
    """``detector``, ``embedder``, ``distance``, ``threshold`` the run used (its config; registry defaults)."""
    config = run.config or {}
    embedder = str(config.get("embedder", LEGACY_EMBEDDER))
    try:
        spec = embedder_spec(embedder)
        distance, default_threshold = spec.distance, spec.threshold
    except ValueError:  # an embedder no longer in the registry: say what the run recorded
        distance, default_threshold = "", MATCH_THRESHOLD
    return {
        "detector": str(config.get("detector", "")),
        "embedder": embedder,
        "distance": distance,
        "threshold": float(config.get("threshold", default_threshold)),
    }


def face_summary(submission) -> dict | None:
    """``services.run_summary`` of the latest completed run with the recognition set-up
    (``distance`` added) and ``mean_rank_chance``, or None if there is no completed run."""
    run = AutomatedRun.objects.latest_completed_for(submission)
    if run is None:
        return None
    summary = {**run_summary(run), **recognition_setup(run)}
    summary["mean_rank_chance"] = mean_rank_chance(summary.get("n_identities"))
    return summary


def face_caveats(submission) -> dict[str, list[str]]:
    """Videos of the shown run whose tested clear frames had no face (scores undefined)."""
    run = AutomatedRun.objects.latest_completed_for(submission)
    if run is None:
        return {}
    names = (
        VideoScore.objects.filter(run=run, clear_faces=0)
        .reported()
        .values_list("masked_video__source_video__name", flat=True)
    )
    return {name: [NO_CLEAR_FACE] for name in names}


def attacker_training_caveats(submission) -> dict[str, list[str]]:
    """The attacker training videos the face evaluation leaves out (no face scores), once a
    run is shown. A video's role: registered organizers-only (never in a team's view)."""
    if AutomatedRun.objects.latest_completed_for(submission) is None:
        return {}
    attacker = submission.campaign.source_videos.filter(attacker_train=True).values_list("name", flat=True)
    return {name: [ATTACKER_TRAINING] for name in attacker}


def dictionary_entries() -> tuple[dict, dict]:
    """(per-video entries, ``face_evaluation`` summary entries) of this module's columns."""
    metrics = {n: METRIC_ENTRIES[n] for n in METRIC_FIELDS if n in METRIC_ENTRIES}
    video = {
        f"face_{n}": c for n, c in {**metrics, "mean_rank_chance": MEAN_RANK_CHANCE, **SETUP_ENTRIES}.items()
    }
    summary = {
        "n_videos": Column(
            "videos the run scored (current masked videos; attacker training material is not scored)",
            "int",
            unit="videos",
        ),
        "stride": Column("every stride-th frame was tested", "int", unit="frames", range=">= 1"),
        "behaviour": Column("the run also measured behaviour preservation", "bool"),
        **SETUP_ENTRIES,
        **{
            n: c if c.dtype != "float" or n in ("chance_level", "n_identities") else _mean_of(c)
            for n, c in metrics.items()
        },
        "mean_rank_chance": MEAN_RANK_CHANCE,
        "masking_success_rank1": Column(
            "clear_rank1_rate - rank1_rate: how much masking lowered closed-set identification",
            "float",
            unit="fraction",
            range="[-1, 1]",
            ideal="clear_rank1_rate - chance_level",
            precision=4,
            source=MEDIAEVAL + " (clear - masked, as the human masking success)",
            **_IDENTIFICATION,
        ),
        "masking_success_match": Column(
            "clear_match_rate - match_rate: how much masking lowered verification matches",
            "float",
            unit="fraction",
            range="[-1, 1]",
            ideal="clear_match_rate",
            precision=4,
            source=MEDIAEVAL,
            **_RECOGNITION,
        ),
    }
    return video, summary


def _mean_of(column: Column) -> Column:
    return Column(**{**column.__dict__, "meaning": f"mean over videos of: {column.meaning}"})


def register() -> None:
    """Register this module's video columns, summary section, caveats and dictionary entries."""
    video, summary = dictionary_entries()
    dictionary.register("face", video)
    dictionary.register("face_evaluation", summary, level="summary")
    reports.register_video_columns("face", face_video_columns)
    reports.register_summary_section("face_evaluation", face_summary)
    reports.register_video_caveats("face", face_caveats)
    reports.register_video_caveats("face_role", attacker_training_caveats, organizers_only=True)
