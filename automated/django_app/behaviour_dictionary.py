"""Data-dictionary entries of the behaviour and attribute-leakage report columns (``evalsite.dictionary``).

Per-video columns ``behaviour_*`` and ``pu_score_automated`` (``behaviour_report``), and
the summary sections ``behaviour`` and ``attribute_leakage``. Definitions:
``automated.behaviour.compare`` (metrics), ``automated.behaviour.score`` (score and its
components) and ``automated.behaviour.leakage`` (attackers).
"""

from __future__ import annotations

from evalsite import dictionary
from evalsite.dictionary import Column

COMPARE = "automated.behaviour.compare (issue 12; seeds/002 behaviour preservation)"
SCORE = "automated.behaviour.score"
LEAKAGE = "automated.behaviour.leakage; seeds/000 section 3.1 (attribute inference)"
FACE_MESH = "MediaPipe FaceMesh with iris refinement"
EXPRESSION = "mini-Xception FER-2013 (oarriaga/face_classification)"
GENDER = "mini-Xception IMDB-WIKI gender (oarriaga/face_classification)"
POSE = "MediaPipe Pose and Hands"


def _fraction(meaning, ideal="1", model="", source=COMPARE, range="[0, 1]") -> Column:
    return Column(
        meaning, "float", unit="fraction", range=range, ideal=ideal, precision=3, model=model, source=source
    )


def _degrees(meaning, model=FACE_MESH) -> Column:
    return Column(
        meaning, "float", unit="degrees", range=">= 0", ideal="0", precision=2, model=model, source=COMPARE
    )


def _count(meaning, unit="frames", ideal="") -> Column:
    return Column(meaning, "int", unit=unit, range=">= 0", ideal=ideal, source=COMPARE)


def _correlation(meaning) -> Column:
    return Column(meaning, "float", range="[-1, 1]", ideal="1", precision=3, model=FACE_MESH, source=COMPARE)


#: Metric keys of ``compare`` + ``behaviour_score`` (the ``behaviour_metrics`` dict).
METRICS = {
    "frames_tested": _count("tested frames (every stride-th frame)"),
    "face_frames": _count("tested frames with a face in the clear video (face reference frames)"),
    "face_lost_rate": _fraction(
        "share of face reference frames where no face mesh is found in the masked frame (lost behaviour)",
        ideal="0",
        model=FACE_MESH,
    ),
    "head_pose_error_deg": _degrees("mean absolute yaw/pitch/roll difference, clear vs masked (solvePnP)"),
    "yaw_error_deg": _degrees("mean absolute yaw difference, clear vs masked"),
    "pitch_error_deg": _degrees("mean absolute pitch difference, clear vs masked"),
    "roll_error_deg": _degrees("mean absolute roll difference, clear vs masked"),
    "gaze_error_deg": _degrees("mean angle between clear and masked gaze vectors (irises and head pose)"),
    "ear_correlation": _correlation("Pearson's r of the eye aspect ratio series, clear vs masked"),
    "mar_correlation": _correlation("Pearson's r of the mouth aspect ratio series, clear vs masked"),
    "blink_precision": _fraction(
        "eye-closure events of the masked video matching a clear one", model=FACE_MESH
    ),
    "blink_recall": _fraction("clear eye-closure events found in the masked video", model=FACE_MESH),
    "blink_f1": _fraction("F1 of eye-closure events, masked vs clear", model=FACE_MESH),
    "blink_n_clear": _count("eye-closure events in the clear video", unit="events"),
    "blink_n_masked": _count("eye-closure events in the masked video", unit="events"),
    "blink_n_matched": _count("matched eye-closure events", unit="events"),
    "mouth_precision": _fraction(
        "mouth-opening events of the masked video matching a clear one", model=FACE_MESH
    ),
    "mouth_recall": _fraction("clear mouth-opening events found in the masked video", model=FACE_MESH),
    "mouth_f1": _fraction("F1 of mouth-opening events (talking, yawning), masked vs clear", model=FACE_MESH),
    "mouth_n_clear": _count("mouth-opening events in the clear video", unit="events"),
    "mouth_n_masked": _count("mouth-opening events in the masked video", unit="events"),
    "mouth_n_matched": _count("matched mouth-opening events", unit="events"),
    "expression_frames": _count("frames with an expression reading on both sides"),
    "expression_js": _fraction(
        "mean Jensen-Shannon divergence (base 2) of the clear and masked expression distributions",
        ideal="0",
        model=EXPRESSION,
    ),
    "expression_agreement": _fraction("share of frames with the same top-1 expression", model=EXPRESSION),
    "pose_frames": _count("tested frames with a body pose in the clear video"),
    "body_lost_rate": _fraction(
        "share of body reference frames without a pose in the masked frame", ideal="0", model=POSE
    ),
    "pck_torso": _fraction("PCK@0.2 (torso size) of shoulders and hips", model=POSE),
    "pck_arms": _fraction("PCK@0.2 of elbows and wrists", model=POSE),
    "pck_hands": _fraction("PCK@0.2 of the 21 points of each clear hand", model=POSE),
    "hand_frames": _count("tested frames with a hand in the clear video"),
    "hand_presence_agreement": _fraction("share of tested frames where the same hands are found", model=POSE),
    "face_part": _fraction(
        "face part of the score: (1 - face_lost_rate) x mean face component", source=SCORE
    ),
    "body_part": _fraction(
        "body part of the score: (1 - body_lost_rate) x mean body component", source=SCORE
    ),
    "score_head_pose": _fraction("head-pose component: max(0, 1 - error / 30 degrees)", source=SCORE),
    "score_gaze": _fraction("gaze component: max(0, 1 - error / 30 degrees)", source=SCORE),
    "score_eyes": _fraction("eye component: mean of max(0, EAR r) and blink F1", source=SCORE),
    "score_mouth": _fraction("mouth component: mean of max(0, MAR r) and mouth F1", source=SCORE),
    "score_expression": _fraction("expression component: 1 - expression_js", source=SCORE),
    "score_body": _fraction("body component: mean of the PCKs and hand presence agreement", source=SCORE),
}
BEHAVIOUR_SCORE = _fraction(
    "behaviour-preservation score: mean of the face and body parts (1 = identical behaviour)", source=SCORE
)
PU_AUTOMATED = Column(
    "automated PU score: behaviour score as the utility kept x (1 - SSIM), where humans rated no action",
    "float",
    range="[0, 1]",
    ideal="1",
    precision=3,
    source="automated.behaviour.score.automated_pu_score; seeds/004",
)
GENDER_VIDEO = {
    "behaviour_gender_clear_accuracy": _fraction(
        "pretrained gender attacker's frame accuracy on the clear faces (unmasked reference)",
        ideal="",
        model=GENDER,
        source=LEAKAGE,
    ),
    "behaviour_gender_masked_accuracy": _fraction(
        "pretrained gender attacker's frame accuracy on the masked faces (at the clear face box)",
        ideal="chance",
        model=GENDER,
        source=LEAKAGE,
    ),
}
LEAKAGE_SUMMARY = {
    "run_id": Column("face run the leakage comes from", "int", source=LEAKAGE),
    "attribute": Column("the attribute attacked (gender)", "str", source=LEAKAGE),
    "n_videos": Column("videos with a known gender and a clear face", "int", unit="videos", source=LEAKAGE),
    "n_videos_without_face": Column("videos left out: no clear face", "int", unit="videos", source=LEAKAGE),
    "n_videos_unknown_gender": Column(
        "videos left out: gender unknown", "int", unit="videos", source=LEAKAGE
    ),
    "n_videos_unofficial_gender": Column(
        "of the scored videos, those whose gender is a by-eye label (gender_unofficial), not the dataset's",
        "int",
        unit="videos",
        source=LEAKAGE,
    ),
    "n_identities": Column("identities of the scored videos", "int", unit="identities", source=LEAKAGE),
    "majority_rate": _fraction(
        "share of videos with the most common gender (the label prior)", "", source=LEAKAGE
    ),
    "pretrained_clear_accuracy": _fraction(
        "pretrained attacker's accuracy on clear faces (mean over videos)", "", GENDER, source=LEAKAGE
    ),
    "pretrained_masked_accuracy": _fraction(
        "pretrained attacker's accuracy on masked faces", "majority_rate", GENDER, source=LEAKAGE
    ),
    "parrot_accuracy": _fraction(
        "parrot attacker (logistic regression on masked gender features, leave-one-identity-out) accuracy",
        "majority_rate",
        GENDER,
        source=LEAKAGE,
    ),
    "leakage_clear": _fraction("pretrained clear accuracy - majority_rate", "", GENDER, LEAKAGE, "[-1, 1]"),
    "leakage_pretrained": _fraction(
        "pretrained masked accuracy - majority_rate", "0", GENDER, LEAKAGE, "[-1, 1]"
    ),
    "leakage_parrot": _fraction("parrot accuracy - majority_rate", "0", GENDER, LEAKAGE, "[-1, 1]"),
    "leakage_worst": _fraction(
        "larger of the pretrained and parrot leakages", "0", GENDER, LEAKAGE, "[-1, 1]"
    ),
}


def register() -> None:
    """Register every column and summary key the behaviour report emits."""
    video = {f"behaviour_{key}": column for key, column in METRICS.items()}
    video.update(GENDER_VIDEO, behaviour_score=BEHAVIOUR_SCORE, pu_score_automated=PU_AUTOMATED)
    dictionary.register("behaviour", video)
    summary = dict(METRICS, behaviour_score=BEHAVIOUR_SCORE, pu_score_automated=PU_AUTOMATED)
    summary.update(
        n_videos=Column("videos with behaviour measured", "int", unit="videos", source=SCORE),
        videos_without_score=Column(
            "videos whose clear video has neither a face nor a body in a tested frame", "int", unit="videos"
        ),
        run_id=Column("face run the behaviour comes from", "int", source=SCORE),
        pu_score_automated_kind=Column(
            "label saying how pu_score_automated was computed", "str", source=SCORE
        ),
    )
    dictionary.register("behaviour", summary, level="summary")
    dictionary.register("attribute_leakage", LEAKAGE_SUMMARY, level="summary")
