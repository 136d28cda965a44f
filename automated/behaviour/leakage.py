"""Attribute leakage: how well gender is still inferred from masked faces.

seeds/000_0b74979cb8a3f1c3.txt (section 3.1) separates identity inference from
**attribute inference**, where "a specific private attribute (e.g. age, gender, medical
condition) is inferred"; an anonymization should defeat both. Two attackers, scored
against the campaign's known gender of each video's person:

- **pretrained** (naive): the IMDB-WIKI gender mini-Xception
  (``face_classifier.gender_classifier``) applied to the masked face crops, as it would
  be to clear faces. Also run on the clear crops as the unmasked reference.
- **parrot**: an attacker that trains on masked data (seeds/000, section 5.3's parrot
  attacker, applied to an attribute): logistic regression on the frozen gender network's
  128 penultimate features of masked crops, trained on the other identities' masked
  videos and tested on the held-out identity's (leave-one-identity-out, so the attacker
  never tests on a person it trained on and cannot use identity as a shortcut).

Crops of both sides are cut at the clear frame's face box (``evaluate``), frames
without a clear face give no sample. Accuracy is per video (share of its frames
classified correctly), averaged over videos so each video weighs the same. **Leakage**
= accuracy - majority-class rate (share of videos with the most common gender: what
always answering that gender scores); 0 = no more than the label prior, > 0 = the
masking leaks gender.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .features import BehaviourFeatures

GENDER_NAMES = {"female": 0, "woman": 0, "f": 0, "w": 0, "male": 1, "man": 1, "m": 1}


def gender_index(label) -> int:
    """Index in ``face_classifier.GENDER_LABELS`` (0 woman, 1 man) of a gender label (any case).

    Raises
    ------
    ValueError
        Listing the accepted names, for any other label.
    """
    key = str(label).strip().lower()
    if key not in GENDER_NAMES:
        raise ValueError(f"unknown gender label {label!r}; accepted: {', '.join(sorted(GENDER_NAMES))}")
    return GENDER_NAMES[key]


@dataclass(frozen=True)
class AttributeVideo:
    """One masked video's attribute evidence.

    Attributes
    ----------
    identity : str
        The person (groups the parrot's cross-validation).
    label : int
        Known gender, index in ``face_classifier.GENDER_LABELS``.
    clear_probabilities, masked_probabilities : ndarray of shape (m, 2)
        Gender probabilities of the m frames with a clear face.
    masked_features : ndarray of shape (m, 128), float32
    """

    identity: str
    label: int
    clear_probabilities: np.ndarray
    masked_probabilities: np.ndarray
    masked_features: np.ndarray

    @classmethod
    def from_samples(cls, samples: dict, identity, gender) -> AttributeVideo:
        """From ``attribute_samples`` output (e.g. read back from JSON).

        Raises
        ------
        ValueError
            If the gender label is unknown or the samples are inconsistent.
        """
        clear = np.asarray(samples["clear_probabilities"], np.float64).reshape(-1, 2)
        masked = np.asarray(samples["masked_probabilities"], np.float64).reshape(-1, 2)
        features = np.asarray(samples["masked_features"], np.float32)
        features = features.reshape(len(masked), -1) if len(masked) else np.zeros((0, 128), np.float32)
        if len(clear) != len(masked):
            raise ValueError(f"{len(clear)} clear and {len(masked)} masked attribute samples")
        return cls(str(identity), gender_index(gender), clear, masked, features)

    @classmethod
    def from_features(
        cls, clear: BehaviourFeatures, masked: BehaviourFeatures, identity, gender
    ) -> AttributeVideo:
        """Samples of the frames where the clear side has an attribute reading.

        Raises
        ------
        ValueError
            If the features hold no attribute readings (extracted without
            ``attribute=True``) or the gender label is unknown.
        """
        if "no-attribute" in clear.settings:
            raise ValueError("no attribute readings: extract the features with attribute=True")
        rows = np.isfinite(clear.attribute[:, 0]) & np.isfinite(masked.attribute[:, 0])
        return cls(
            str(identity),
            gender_index(gender),
            clear.attribute[rows],
            masked.attribute[rows],
            masked.attribute_features[rows],
        )


def attribute_samples(clear: BehaviourFeatures, masked: BehaviourFeatures, *, decimals: int = 4) -> dict:
    """The attacker evidence of one video pair as plain lists (for JSON storage; ``from_samples``).

    Frames where both sides have an attribute reading (the clear frame has a face).
    Values are rounded to ``decimals`` (probabilities and features of this size change no
    prediction at 1e-4).

    Returns
    -------
    dict
        ``clear_probabilities`` and ``masked_probabilities`` (m lists of 2 floats),
        ``masked_features`` (m lists of 128 floats).

    Raises
    ------
    ValueError
        If the features hold no attribute readings (extracted without ``attribute=True``).
    """
    if "no-attribute" in clear.settings:
        raise ValueError("no attribute readings: extract the features with attribute=True")
    rows = np.isfinite(clear.attribute[:, 0]) & np.isfinite(masked.attribute[:, 0])
    features = np.nan_to_num(masked.attribute_features[rows].astype(np.float64))
    return {
        "clear_probabilities": np.round(clear.attribute[rows], decimals).tolist(),
        "masked_probabilities": np.round(masked.attribute[rows], decimals).tolist(),
        "masked_features": np.round(features, decimals).tolist(),
    }


def majority_rate(labels: Sequence[int]) -> float:
    """Share of the most common label, in (0, 1]; NaN for no labels."""
    if not len(labels):
        return math.nan
    return Counter(labels).most_common(1)[0][1] / len(labels)


def _frame_accuracy(probabilities: np.ndarray, label: int) -> float:
    return float(np.mean(probabilities.argmax(axis=1) == label)) if len(probabilities) else math.nan


def pretrained_accuracy(videos: Sequence[AttributeVideo], *, side: str = "masked") -> float:
    """Mean over videos of the pretrained attacker's frame accuracy on ``side`` ("clear" or "masked")."""
    if side not in ("clear", "masked"):
        raise ValueError(f"side must be 'clear' or 'masked', got {side!r}")
    values = [_frame_accuracy(getattr(v, f"{side}_probabilities"), v.label) for v in videos]
    values = [v for v in values if np.isfinite(v)]
    return float(np.mean(values)) if values else math.nan


def parrot_accuracy(videos: Sequence[AttributeVideo], *, regularisation: float = 1.0) -> float:
    """Leave-one-identity-out accuracy of the parrot attacker (module docstring).

    Parameters
    ----------
    videos : sequence of AttributeVideo
    regularisation : float, default=1.0
        Inverse L2 strength ``C`` of the logistic regression (on standardised features).

    Returns
    -------
    float
        Mean over the held-out videos of their frame accuracy; NaN when no fold can be
        trained (fewer than two identities, or every other identity has the same gender).
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    scores = []
    for identity in sorted({v.identity for v in videos}):
        train = [v for v in videos if v.identity != identity and len(v.masked_features)]
        test = [v for v in videos if v.identity == identity and len(v.masked_features)]
        if not test or len({v.label for v in train}) < 2:
            continue
        features = np.concatenate([v.masked_features for v in train]).astype(np.float64)
        labels = np.concatenate([np.full(len(v.masked_features), v.label) for v in train])
        usable = np.isfinite(features).all(axis=1)
        model = make_pipeline(
            StandardScaler(), LogisticRegression(C=regularisation, class_weight="balanced", max_iter=2000)
        )
        model.fit(features[usable], labels[usable])
        for video in test:
            predicted = model.predict(np.nan_to_num(video.masked_features.astype(np.float64)))
            scores.append(float(np.mean(predicted == video.label)))
    return float(np.mean(scores)) if scores else math.nan


def attribute_leakage(videos: Sequence[AttributeVideo]) -> dict:
    """Gender leakage of a submission's masked videos (module docstring).

    Returns
    -------
    dict
        ``n_videos`` (with a clear face in a tested frame; the others are counted in
        ``n_videos_without_face`` and left out), ``n_identities``, ``majority_rate``, ``pretrained_clear_accuracy``,
        ``pretrained_masked_accuracy``, ``parrot_accuracy`` (fractions in [0, 1] or
        NaN) and the leakages above the majority rate ``leakage_clear``,
        ``leakage_pretrained``, ``leakage_parrot`` and ``leakage_worst`` (the larger of
        the two attackers on masked data), each in [-1, 1] or NaN.

    Raises
    ------
    ValueError
        If ``videos`` is empty.
    """
    videos = list(videos)
    if not videos:
        raise ValueError("no videos with a known gender to score attribute leakage on")
    without_face = sum(1 for v in videos if len(v.masked_probabilities) == 0)
    videos = [v for v in videos if len(v.masked_probabilities)]  # no clear face: nothing to attack
    majority = majority_rate([v.label for v in videos])
    result = {
        "n_videos": len(videos),
        "n_videos_without_face": without_face,
        "n_identities": len({v.identity for v in videos}),
        "majority_rate": majority,
        "pretrained_clear_accuracy": pretrained_accuracy(videos, side="clear"),
        "pretrained_masked_accuracy": pretrained_accuracy(videos, side="masked"),
        "parrot_accuracy": parrot_accuracy(videos),
    }
    result["leakage_clear"] = result["pretrained_clear_accuracy"] - majority
    result["leakage_pretrained"] = result["pretrained_masked_accuracy"] - majority
    result["leakage_parrot"] = result["parrot_accuracy"] - majority
    finite = [x for x in (result["leakage_pretrained"], result["leakage_parrot"]) if np.isfinite(x)]
    result["leakage_worst"] = max(finite) if finite else math.nan
    return result
