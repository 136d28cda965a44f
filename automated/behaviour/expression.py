"""Expression accuracy against acted emotion labels (CREMA-D), clear or masked.

CREMA-D's six acted emotions (Cao et al. 2014; ``../shared/data/videos/cremad/``) map
one-to-one onto six of the expression classifier's seven FER-2013 classes
(``face_classifier.EXPRESSION_LABELS``); FER's "surprise" has no CREMA-D counterpart and
is simply a wrong answer for every clip.
"""

from __future__ import annotations

import math

import numpy as np

from .face_classifier import EXPRESSION_LABELS
from .features import BehaviourFeatures
from .shapes import check_same_length

EMOTION_TO_EXPRESSION = {
    "anger": "angry",
    "angry": "angry",
    "ang": "angry",
    "disgust": "disgust",
    "dis": "disgust",
    "fear": "fear",
    "fea": "fear",
    "happy": "happy",
    "happiness": "happy",
    "hap": "happy",
    "neutral": "neutral",
    "neu": "neutral",
    "sad": "sad",
    "sadness": "sad",
    "surprise": "surprise",
}


def expression_index(emotion: str) -> int:
    """Index in ``EXPRESSION_LABELS`` of an emotion label (CREMA-D names or codes, any case).

    Raises
    ------
    ValueError
        Listing the accepted names, if the label is not an emotion the classifier knows.
    """
    key = str(emotion).strip().lower()
    if key not in EMOTION_TO_EXPRESSION:
        raise ValueError(
            f"unknown emotion label {emotion!r}; accepted: {', '.join(sorted(EMOTION_TO_EXPRESSION))}"
        )
    return EXPRESSION_LABELS.index(EMOTION_TO_EXPRESSION[key])


def expression_accuracy(
    features: BehaviourFeatures, emotion: str, *, reference: np.ndarray | None = None
) -> dict:
    """How often the classifier reads the acted emotion in a video's tested frames.

    Parameters
    ----------
    features : BehaviourFeatures
        With expression probabilities.
    emotion : str
        The video's acted emotion (``expression_index``).
    reference : ndarray of shape (n,), bool, optional
        Frames that count, e.g. the clear video's face frames when scoring a masked
        video, so that frames where the masked face is lost count as wrong; default:
        this video's own frames with an expression.

    Returns
    -------
    dict
        ``frame_accuracy`` (share of reference frames whose top-1 class is the emotion,
        NaN without reference frames), ``video_prediction`` (top-1 of the mean
        probabilities over the frames with an expression, None if there is none),
        ``video_correct`` (bool or None), ``frames``.

    Raises
    ------
    ValueError
        For an emotion ``expression_index`` does not know, or a ``reference`` with
        another number of frames (``"features.expression and reference differ in
        length: 4 vs 3"``).
    """
    target = expression_index(emotion)
    probabilities = features.expression
    found = np.isfinite(probabilities[:, 0])
    reference = found if reference is None else np.asarray(reference, bool)
    check_same_length("features.expression", probabilities, "reference", reference)
    top1 = np.where(found, np.nan_to_num(probabilities).argmax(axis=1), -1)
    frames = int(reference.sum())
    result = {
        "frame_accuracy": float(np.mean(top1[reference] == target)) if frames else math.nan,
        "frames": frames,
    }
    if found.any():
        predicted = int(probabilities[found].mean(axis=0).argmax())
        result.update(video_prediction=EXPRESSION_LABELS[predicted], video_correct=predicted == target)
    else:
        result.update(video_prediction=None, video_correct=None)
    return result
