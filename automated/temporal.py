"""Identity over time: temporal identity consistency, flicker, and the linking attacker.

Per-frame privacy metrics score a masking that changes from frame to frame (fresh noise,
per-frame keys) and one that gives a person a stable pseudo-identity alike, though the
second lets an attacker link every frame of a recording, and recordings of one person,
to one (pseudo-)identity. Three measures over the *analysed* frames of a video (every
``stride``-th frame with a face in the clear video, ``attack.faces.VideoCrops``):

- **temporal identity consistency** (a): 1 - mean cosine distance between the face
  embeddings of consecutive analysed frames, as video face anonymization work measures
  it (e.g. the temporal consistency of identity embeddings in video de-identification,
  issue 22), reported beside the clear video's value;
- **flicker** (c): the mean absolute frame-to-frame difference of the face crop (the
  clear frame's face box), in grey levels, beside the clear video's;
- **the linking attacker** (b): masked samples of several recordings and no label; the
  attacker compares every pair of masked samples from two different recordings with a
  pretrained face embedder and must say "same person". Its EER (ISO/IEC 19795-1, as
  ``attack.verification``) and linkability D<->sys (Gomez-Barrero et al. 2018,
  ``attack.linkability``) over the mated (same person) and non-mated pairs, and, as chance
  reference, their distribution when the identities are permuted over the recordings
  (which keeps the number of mated recording pairs and every score).

A stable pseudo-identity per person fails (b) (EER near 0, D<->sys near 1) though it may
hide the person from a gallery; a per-frame random masking passes it (EER and D<->sys
within their permutation range). Read (a) with care: a pretrained face embedder maps
unrelated inputs into a narrow cone (on the GRID clip bbaf2n, every 5th frame, dlib's
ResNet gives consistency 0.995 clear, 0.999 face blur and still 0.984 for fresh uniform
noise in the face region, ``tests/automated/test_temporal_video.py``), so (a) says little
without (b). Django-free; numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .attack.linkability import N_BINS, OMEGA, linkability
from .attack.verification import equal_error_rate


def _embeddings(values, name: str, *, min_rows: int = 1) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2 or len(values) < min_rows or values.shape[1] == 0:
        raise ValueError(f"{name} must have shape (n >= {min_rows}, d >= 1), got {values.shape}")
    if not np.isfinite(values).all():
        raise ValueError(f"{name} must be finite")
    return values


def temporal_identity_consistency(embeddings) -> float:
    """1 - mean cosine distance of the embeddings of consecutive analysed frames.

    Parameters
    ----------
    embeddings : array-like of float, shape (n_frames, d), n_frames >= 2
        Face embeddings of the analysed frames of one video in time order (e.g.
        ``attack.recognizers.DlibEmbedding().transform(crops)``).

    Returns
    -------
    float in [-1, 1]
        The mean cosine similarity of frame t and t + 1 (cosine distance = 1 - cosine
        similarity); 1 when the identity vector never changes.

    Raises
    ------
    ValueError
        If there are fewer than two frames, values are not finite, or an embedding is
        the zero vector (no direction, so no cosine).
    """
    values = _embeddings(embeddings, "embeddings", min_rows=2)
    norms = np.linalg.norm(values, axis=1)
    if (norms == 0).any():
        raise ValueError(f"embeddings {np.flatnonzero(norms == 0)[:5].tolist()} are zero vectors: no cosine")
    unit = values / norms[:, None]
    return float(np.mean(np.sum(unit[1:] * unit[:-1], axis=1)))


def flicker(crops) -> float:
    """Mean absolute frame-to-frame difference of face crops, in grey levels (0-255).

    Parameters
    ----------
    crops : array-like of uint8, shape (n_frames, H, W) or (n_frames, H, W, 3)
        The face box of each analysed frame in time order, all of one size (e.g.
        ``VideoCrops.masked``); channels are averaged as they are (no colour weighting).

    Returns
    -------
    float >= 0
        Mean over consecutive pairs and pixels of |crop[t + 1] - crop[t]|.

    Raises
    ------
    ValueError
        If there are fewer than two crops or they are not uint8 of one of those shapes.
    """
    crops = np.asarray(crops)
    if crops.dtype != np.uint8 or crops.ndim not in (3, 4) or len(crops) < 2:
        raise ValueError(
            f"crops must be uint8 of shape (n >= 2, H, W[, 3]) in time order, got {crops.dtype} {crops.shape}"
        )
    steps = np.abs(np.diff(crops.astype(np.int16), axis=0))
    return float(steps.mean())


@dataclass(frozen=True)
class MaskedVsClear:
    """One temporal measure of a masked video beside its clear video's.

    Attributes
    ----------
    masked, clear : float
    relative : float
        ``masked / clear``; NaN when ``clear`` is 0 or negative (no reference scale).
    """

    masked: float
    clear: float

    @property
    def relative(self) -> float:
        return self.masked / self.clear if self.clear > 0 else float("nan")

    def as_dict(self) -> dict:
        return {"masked": self.masked, "clear": self.clear, "relative": self.relative}


def identity_over_time(clear_crops, masked_crops, embed) -> dict:
    """Temporal identity consistency and flicker of one masked video, clear as reference.

    Parameters
    ----------
    clear_crops, masked_crops : ndarray of uint8, shape (n_frames, H, W, 3)
        Aligned face crops of the analysed frames (``attack.faces.VideoCrops``).
    embed : callable, crops -> ndarray (n_frames, d)
        A pretrained face embedder (e.g. ``DlibEmbedding().transform``).

    Returns
    -------
    dict
        ``{"consistency": MaskedVsClear, "flicker": MaskedVsClear, "n_frames": int}``.

    Raises
    ------
    ValueError
        If the crops differ in shape, or as ``temporal_identity_consistency`` / ``flicker``.
    """
    clear_crops, masked_crops = np.asarray(clear_crops), np.asarray(masked_crops)
    if clear_crops.shape != masked_crops.shape:
        raise ValueError(
            f"clear and masked crops differ in shape: {clear_crops.shape} != {masked_crops.shape}"
        )
    return {
        "consistency": MaskedVsClear(
            temporal_identity_consistency(embed(masked_crops)),
            temporal_identity_consistency(embed(clear_crops)),
        ),
        "flicker": MaskedVsClear(flicker(masked_crops), flicker(clear_crops)),
        "n_frames": len(clear_crops),
    }


@dataclass(frozen=True)
class LinkingResult:
    """The linking attacker's success over masked-vs-masked pairs across recordings.

    Attributes
    ----------
    eer : float in [0, 1]
        Equal error rate of "same person" by embedding distance (0.5 = chance).
    d_sys : float in [0, 1]
        Linkability D<->sys of the mated / non-mated pair scores.
    n_mated, n_non_mated : int
        Pairs of samples of the same / different persons (different recordings always).
    null_eer, null_d_sys : ndarray of float64, shape (n_permutations,)
        The two figures with the identities permuted over the recordings (chance).
    p_eer, p_d_sys : float
        Permutation p-values, (1 + #{null at least as extreme}) / (1 + n_permutations):
        EER as low, D<->sys as high as observed.
    """

    eer: float
    d_sys: float
    n_mated: int
    n_non_mated: int
    null_eer: np.ndarray
    null_d_sys: np.ndarray
    p_eer: float
    p_d_sys: float

    def above_chance(self, alpha: float = 0.05) -> bool:
        """True when both EER and D<->sys beat the permutation null at level ``alpha``."""
        return self.p_eer < alpha and self.p_d_sys < alpha

    def as_dict(self) -> dict:
        """JSON-ready: the figures, pair counts, p-values and the null's 2.5/50/97.5 percentiles."""
        out = {
            "eer": self.eer,
            "d_sys": self.d_sys,
            "n_mated": self.n_mated,
            "n_non_mated": self.n_non_mated,
            "p_eer": self.p_eer,
            "p_d_sys": self.p_d_sys,
            "n_permutations": len(self.null_eer),
        }
        for name, null in (("eer", self.null_eer), ("d_sys", self.null_d_sys)):
            if len(null):
                low, mid, high = np.percentile(null, [2.5, 50, 97.5])
                out.update(
                    {f"chance_{name}_low": low, f"chance_{name}_median": mid, f"chance_{name}_high": high}
                )
        return out


def linking_attack(
    embeddings,
    recordings,
    identities,
    *,
    n_permutations: int = 200,
    random_state: int = 0,
    omega: float = OMEGA,
    n_bins: int = N_BINS,
) -> LinkingResult:
    """Pairwise same-person verification on masked samples across recordings.

    The attacker sees only the masked samples and which recording each comes from; every
    pair of samples of two different recordings is scored by negative Euclidean distance
    of the embeddings (as ``verification.similarity_from_embeddings``; dlib's matcher). The identities only
    grade the attacker: a pair is mated when both recordings show the same person.

    Parameters
    ----------
    embeddings : array-like of float, shape (n_samples, d)
        Embeddings of the MASKED samples (a pretrained embedder: the attacker has no
        labels to train on).
    recordings : array-like, shape (n_samples,)
        Recording (video, photo) of each sample; one identity per recording.
    identities : array-like, shape (n_samples,)
        Person shown in each sample.
    n_permutations : int, default=200
        Permutations of the identities over the recordings for the chance reference
        (0: none; p-values are then NaN).
    random_state : int, default=0
    omega, n_bins
        As ``attack.linkability.linkability``.

    Returns
    -------
    LinkingResult

    Raises
    ------
    ValueError
        If the lengths differ, a recording shows two identities, fewer than two
        recordings exist, or the pairs have no mated or no non-mated comparison (each
        person needs two recordings, and two persons are needed).
    """
    values = _embeddings(embeddings, "embeddings", min_rows=2)
    recordings, identities = np.asarray(recordings), np.asarray(identities)
    if not (len(values) == len(recordings) == len(identities)):
        raise ValueError(
            f"inconsistent numbers of samples: embeddings {len(values)}, recordings {len(recordings)}, "
            f"identities {len(identities)}"
        )
    if int(n_permutations) != n_permutations or n_permutations < 0:
        raise ValueError(f"n_permutations must be an integer >= 0, got {n_permutations}")
    record_ids, record_of = np.unique(recordings, return_inverse=True)
    person = np.empty(len(record_ids), dtype=object)
    for r in range(len(record_ids)):
        shown = set(identities[record_of == r].tolist())
        if len(shown) > 1:
            raise ValueError(
                f"recording {record_ids[r]!r} shows {len(shown)} identities: {sorted(shown)[:3]}"
            )
        person[r] = shown.pop()
    if len(record_ids) < 2:
        raise ValueError("the linking attacker needs samples of at least two recordings")
    # imported here: slow to import, and most importers never call this
    from scipy.spatial.distance import pdist

    first, second = np.triu_indices(len(values), k=1)  # the order of pdist's condensed output
    across = record_of[first] != record_of[second]
    first, second = first[across], second[across]
    scores = -pdist(values)[across]
    _, person_code = np.unique(person.astype(str), return_inverse=True)

    def figures(codes):
        mated = codes[record_of[first]] == codes[record_of[second]]
        return equal_error_rate(scores[mated], scores[~mated]), linkability(
            scores[mated], scores[~mated], omega=omega, n_bins=n_bins
        ).d_sys

    mated = person_code[record_of[first]] == person_code[record_of[second]]
    if mated.all() or not mated.any():
        raise ValueError(
            f"need mated and non-mated pairs across recordings, got {int(mated.sum())} mated and "
            f"{int((~mated).sum())} non-mated (each person needs two recordings; two persons are needed)"
        )
    eer, d_sys = figures(person_code)
    rng = np.random.default_rng(random_state)
    null = np.array([figures(rng.permutation(person_code)) for _ in range(int(n_permutations))]).reshape(
        -1, 2
    )
    n = len(null)
    return LinkingResult(
        eer=eer,
        d_sys=d_sys,
        n_mated=int(mated.sum()),
        n_non_mated=int((~mated).sum()),
        null_eer=null[:, 0],
        null_d_sys=null[:, 1],
        p_eer=float((1 + (null[:, 0] <= eer).sum()) / (1 + n)) if n else float("nan"),
        p_d_sys=float((1 + (null[:, 1] >= d_sys).sum()) / (1 + n)) if n else float("nan"),
    )


#: Samples per recording the linking attacker compares (evenly spaced in time): all pairs
#: of samples of different recordings are scored, so this bounds the cost.
LINKING_SAMPLES_PER_RECORDING = 10
#: Identity permutations of the linking attacker's chance reference in a campaign run.
LINKING_PERMUTATIONS = 100


def identity_over_time_by_recording(
    clear_crops,
    masked_crops,
    recordings,
    identities,
    embed,
    *,
    time_index=None,
    samples_per_recording: int = LINKING_SAMPLES_PER_RECORDING,
    n_permutations: int = LINKING_PERMUTATIONS,
    random_state: int = 0,
) -> dict:
    """Temporal consistency and flicker per recording, and the linking attacker across them.

    The three measures of this module over the samples of an attack run (e.g. an
    ``attack.data.AttackData``: ``clear``, ``masked``, ``groups`` as recordings,
    ``identities``, ``time_index``).

    Parameters
    ----------
    clear_crops, masked_crops : ndarray of uint8, shape (n_samples, H, W, 3)
        Aligned face crops (the clear frame's box cut from both).
    recordings : array-like, shape (n_samples,)
        Recording of each sample (a video); one identity per recording.
    identities : array-like, shape (n_samples,)
    embed : callable, crops -> ndarray (n, d)
        A pretrained face embedder.
    time_index : array-like of int, shape (n_samples,), optional
        Frame index of each sample (time order within a recording); default: the given order.
    samples_per_recording : int, default=10
        Samples per recording (evenly spaced in time) the linking attacker compares.
    n_permutations : int, default=100
        The linking attacker's chance reference (``linking_attack``).
    random_state : int, default=0

    Returns
    -------
    dict
        ``recordings``: recording -> ``identity_over_time`` as plain numbers
        (``consistency_masked``, ``consistency_clear``, ``flicker_masked``,
        ``flicker_clear``, ``flicker_relative``, ``n_frames``), for recordings of at
        least two samples; ``linking``: ``LinkingResult.as_dict()`` plus ``above_chance``,
        or ``{"unavailable": reason}`` when no person has two recordings or only one
        person is shown.

    Raises
    ------
    ValueError
        If the arrays' lengths differ or the crops differ in shape.
    """
    clear_crops, masked_crops = np.asarray(clear_crops), np.asarray(masked_crops)
    recordings, identities = np.asarray(recordings), np.asarray(identities)
    if not (len(clear_crops) == len(masked_crops) == len(recordings) == len(identities)):
        raise ValueError(
            f"inconsistent numbers of samples: {len(clear_crops)} clear, {len(masked_crops)} masked crops, "
            f"{len(recordings)} recordings, {len(identities)} identities"
        )
    order = np.arange(len(recordings)) if time_index is None else np.asarray(time_index)
    per_recording, linked = {}, []
    for recording in np.unique(recordings):
        rows = np.flatnonzero(recordings == recording)
        rows = rows[np.argsort(order[rows], kind="stable")]
        linked += rows[
            np.unique(np.linspace(0, len(rows) - 1, samples_per_recording).round().astype(int))
        ].tolist()
        if len(rows) < 2:
            continue
        figures = identity_over_time(clear_crops[rows], masked_crops[rows], embed)
        per_recording[recording.item() if hasattr(recording, "item") else recording] = {
            "consistency_masked": figures["consistency"].masked,
            "consistency_clear": figures["consistency"].clear,
            "flicker_masked": figures["flicker"].masked,
            "flicker_clear": figures["flicker"].clear,
            "flicker_relative": figures["flicker"].relative,
            "n_frames": figures["n_frames"],
        }
    linked = np.asarray(sorted(linked))
    try:
        result = linking_attack(
            embed(masked_crops[linked]),
            recordings[linked],
            identities[linked],
            n_permutations=n_permutations,
            random_state=random_state,
        )
    except ValueError as error:
        linking = {"unavailable": str(error)}
    else:
        linking = {**result.as_dict(), "above_chance": result.above_chance()}
    return {"recordings": per_recording, "linking": linking}
