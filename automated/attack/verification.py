"""Verification and identification curves: genuine/impostor scores, DET/ROC, EER, FNMR@FMR, CMC.

seeds/000_0b74979cb8a3f1c3.txt, section 2: DeCann and Ross (2013) find "that both ROC and
CMC curves should be reported for biometric recognition". Terms follow ISO/IEC 19795-1:

- a *comparison* scores one probe against one gallery sample; *genuine* comparisons are of
  the same identity, *impostor* comparisons of different identities;
- scores are similarities (higher = more alike; pass ``-distance`` for an embedding
  distance); a comparison is a *match* when its score is >= the threshold;
- FMR(t) = share of impostor comparisons that match; FNMR(t) = share of genuine
  comparisons that do not;
- the DET curve plots FNMR against FMR on normal-deviate axes (Martin et al. 1997), the
  ROC curve here the true match rate 1 - FNMR against FMR (log axis);
- EER: where FMR = FNMR on the curve through the operating points (linear between two
  neighbouring thresholds, i.e. achievable by choosing between them at random);
- FNMR @ FMR = x: the lowest FNMR of a threshold whose FMR is <= x (no interpolation);
  with n impostor comparisons FMRs below 1/n exist only as 0 (``fmr_resolved``);
- CMC(r): share of probes whose identity is among the r best-scoring gallery identities
  (closed set; an identity scores its best gallery sample; ties broken uniformly at
  random, in expectation, so a constant score gives chance level r / N).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

FMR_TARGETS = (1e-2, 1e-3)
MAX_RANK = 5


def _labels(values, name: str) -> np.ndarray:
    values = np.asarray(values)
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array, got shape {values.shape}")
    return values


def _check_scores(scores, probe_labels, gallery_labels):
    scores = np.asarray(scores, dtype=np.float64)
    probes, gallery = _labels(probe_labels, "probe_labels"), _labels(gallery_labels, "gallery_labels")
    if scores.shape != (len(probes), len(gallery)):
        raise ValueError(
            f"scores must have shape (n_probes, n_gallery) = ({len(probes)}, {len(gallery)}), "
            f"got {scores.shape}"
        )
    if not np.isfinite(scores).all():
        raise ValueError("scores must be finite")
    return scores, probes, gallery


def genuine_impostor_scores(scores, probe_labels, gallery_labels) -> tuple[np.ndarray, np.ndarray]:
    """Split a probe x gallery score matrix into genuine and impostor comparisons.

    Parameters
    ----------
    scores : array-like of float, shape (n_probes, n_gallery)
        Similarity of each probe to each gallery sample.
    probe_labels : array-like of shape (n_probes,)
    gallery_labels : array-like of shape (n_gallery,)

    Returns
    -------
    genuine : ndarray of float64 of shape (n_genuine,)
    impostor : ndarray of float64 of shape (n_impostor,)

    Raises
    ------
    ValueError
        On a shape mismatch, non-finite scores, or no genuine or no impostor comparison.
    """
    scores, probes, gallery = _check_scores(scores, probe_labels, gallery_labels)
    same = probes[:, None] == gallery[None, :]
    genuine, impostor = scores[same], scores[~same]
    if genuine.size == 0 or impostor.size == 0:
        raise ValueError(
            f"need genuine and impostor comparisons, got {genuine.size} genuine and {impostor.size} impostor"
        )
    return genuine, impostor


@dataclass(frozen=True)
class OperatingPoints:
    """FMR and FNMR at every threshold, thresholds decreasing (FMR rising, FNMR falling).

    Attributes
    ----------
    thresholds : ndarray of float64 of shape (n_points,)
        ``+inf`` (nothing matches: FMR 0, FNMR 1), then every distinct score descending
        (the last one matches everything: FMR 1, FNMR 0).
    fmr, fnmr : ndarray of float64 of shape (n_points,)
    """

    thresholds: np.ndarray
    fmr: np.ndarray
    fnmr: np.ndarray


def operating_points(genuine, impostor) -> OperatingPoints:
    """FMR and FNMR at each distinct score used as threshold (match: score >= threshold).

    Parameters
    ----------
    genuine, impostor : array-like of float, 1-D, non-empty

    Returns
    -------
    OperatingPoints
    """
    genuine = _labels(np.asarray(genuine, dtype=np.float64), "genuine")
    impostor = _labels(np.asarray(impostor, dtype=np.float64), "impostor")
    thresholds = np.concatenate([[np.inf], np.unique(np.concatenate([genuine, impostor]))[::-1]])
    g, i = np.sort(genuine), np.sort(impostor)
    fnmr = np.searchsorted(g, thresholds, side="left") / len(g)  # genuine < t
    fmr = (len(i) - np.searchsorted(i, thresholds, side="left")) / len(i)  # impostor >= t (exact counts)
    return OperatingPoints(thresholds, fmr, fnmr)


def equal_error_rate(genuine, impostor) -> float:
    """EER: the rate where FMR = FNMR, linear between neighbouring operating points.

    Returns
    -------
    float in [0, 1]
        0 when genuine and impostor scores are separated, 0.5 or more when they overlap
        completely.
    """
    points = operating_points(genuine, impostor)
    diff = points.fnmr - points.fmr  # +1 at threshold +inf, -1 at the lowest score
    j = int(np.argmax(diff <= 0))
    if diff[j] == 0:
        return float(points.fmr[j])
    t = diff[j - 1] / (diff[j - 1] - diff[j])
    return float(points.fmr[j - 1] + t * (points.fmr[j] - points.fmr[j - 1]))


def fnmr_at_fmr(genuine, impostor, fmr: float) -> tuple[float, float]:
    """Lowest FNMR of a threshold with FMR <= ``fmr``, and that threshold.

    Returns
    -------
    (fnmr, threshold) : tuple of float
        ``threshold`` is the smallest score meeting the target (``inf`` when only
        rejecting everything does).

    Raises
    ------
    ValueError
        If ``fmr`` is outside [0, 1].
    """
    if not 0.0 <= fmr <= 1.0:
        raise ValueError(f"fmr must be in [0, 1], got {fmr}")
    points = operating_points(genuine, impostor)
    allowed = np.flatnonzero(points.fmr <= fmr)  # a prefix: FMR rises as the threshold falls
    best = allowed[-1]
    return float(points.fnmr[best]), float(points.thresholds[best])


def cmc_curve(scores, probe_labels, gallery_labels, *, max_rank: int = MAX_RANK) -> np.ndarray:
    """Cumulative match characteristic at ranks 1 .. ``max_rank`` (closed set).

    Each gallery identity scores its best gallery sample. A probe whose identity is beaten
    by ``g`` identities and tied with ``t`` others has rank ``g + U`` with ``U`` uniform on
    1 .. t+1, so P(rank <= r) = clip((r - g) / (t + 1), 0, 1); the curve is its mean over
    probes. CMC(1) is rank-1 identification accuracy.

    Parameters
    ----------
    scores : array-like of float, shape (n_probes, n_gallery)
    probe_labels : array-like of shape (n_probes,)
        Every probe identity must be in the gallery.
    gallery_labels : array-like of shape (n_gallery,)
    max_rank : int, default=5

    Returns
    -------
    ndarray of float64 of shape (max_rank,), non-decreasing, in [0, 1]

    Raises
    ------
    ValueError
        On a shape mismatch, ``max_rank`` < 1 or a probe identity missing from the gallery.
    """
    scores, probes, gallery = _check_scores(scores, probe_labels, gallery_labels)
    if max_rank < 1:
        raise ValueError(f"max_rank must be >= 1, got {max_rank}")
    identities = sorted(set(gallery.tolist()))
    missing = sorted(set(probes.tolist()) - set(identities))
    if missing:
        raise ValueError(f"probe identities {missing[:5]} have no gallery sample (closed set)")
    best = np.stack([scores[:, gallery == identity].max(axis=1) for identity in identities], axis=1)
    own = best[np.arange(len(probes)), [identities.index(p) for p in probes.tolist()]]
    beaten = (best > own[:, None]).sum(axis=1)
    tied = (best == own[:, None]).sum(axis=1) - 1
    ranks = np.arange(1, max_rank + 1)
    return np.clip((ranks[None, :] - beaten[:, None]) / (tied[:, None] + 1), 0.0, 1.0).mean(axis=0)


@dataclass(frozen=True)
class VerificationResult:
    """Verification and identification figures of one probe set against a gallery.

    Attributes
    ----------
    genuine, impostor : ndarray of float64
        Comparison scores.
    points : OperatingPoints
    eer : float
    fnmr_at : dict float -> float
        FNMR at each FMR target (``FMR_TARGETS``: 1e-2, 1e-3).
    fmr_resolved : dict float -> bool
        Whether there are at least 1 / target impostor comparisons (else the target is
        met only at FMR 0 and the FNMR there is an upper bound).
    cmc : ndarray of float64 of shape (max_rank,)
    n_probes, n_gallery : int
    genuine_probes, impostor_probes : ndarray of shape (n_genuine,) / (n_impostor,)
        The probe identity of each genuine / impostor comparison (empty when unknown):
        what ``identity_bootstrap`` resamples and ``verification_by_group`` splits by.
    """

    genuine: np.ndarray
    impostor: np.ndarray
    points: OperatingPoints
    eer: float
    fnmr_at: dict = field(default_factory=dict)
    fmr_resolved: dict = field(default_factory=dict)
    cmc: np.ndarray = field(default_factory=lambda: np.zeros(0))
    n_probes: int = 0
    n_gallery: int = 0
    genuine_probes: np.ndarray = field(default_factory=lambda: np.zeros(0))
    impostor_probes: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def as_dict(self) -> dict:
        """JSON-ready summary: ``eer``, ``fnmr_at_fmr_<target>``, ``cmc_rank_<r>``, counts."""
        out = {
            "eer": self.eer,
            "n_genuine": int(self.genuine.size),
            "n_impostor": int(self.impostor.size),
            "n_probes": self.n_probes,
            "n_gallery": self.n_gallery,
        }
        for target, value in self.fnmr_at.items():
            out[f"fnmr_at_fmr_{target:g}"] = value
            out[f"fmr_{target:g}_resolved"] = self.fmr_resolved[target]
        out.update({f"cmc_rank_{r}": float(v) for r, v in enumerate(self.cmc, start=1)})
        return out


def evaluate_verification(
    scores,
    probe_labels,
    gallery_labels,
    *,
    fmr_targets: Sequence[float] = FMR_TARGETS,
    max_rank: int = MAX_RANK,
) -> VerificationResult:
    """EER, FNMR at each FMR target, and the CMC of a probe x gallery score matrix.

    Parameters
    ----------
    scores : array-like of float, shape (n_probes, n_gallery)
        Similarities (e.g. ``similarity_from_embeddings``).
    probe_labels, gallery_labels : array-like
    fmr_targets : sequence of float, default (1e-2, 1e-3)
    max_rank : int, default=5

    Returns
    -------
    VerificationResult
    """
    genuine, impostor = genuine_impostor_scores(scores, probe_labels, gallery_labels)
    probes = np.asarray(probe_labels)
    same = probes[:, None] == np.asarray(gallery_labels)[None, :]
    probe_of = np.broadcast_to(probes[:, None], same.shape)
    fnmr_at = {float(t): fnmr_at_fmr(genuine, impostor, t)[0] for t in fmr_targets}
    return VerificationResult(
        genuine,
        impostor,
        operating_points(genuine, impostor),
        equal_error_rate(genuine, impostor),
        fnmr_at,
        {float(t): impostor.size * t >= 1.0 for t in fmr_targets},
        cmc_curve(scores, probe_labels, gallery_labels, max_rank=max_rank),
        len(probes),
        len(np.asarray(gallery_labels)),
        probe_of[same],
        probe_of[~same],
    )


def similarity_from_embeddings(probe_embeddings, gallery_embeddings) -> np.ndarray:
    """Negative Euclidean distance between embeddings: (n_probes, n_gallery) float64.

    dlib's face ResNet compares 128-D embeddings by L2 distance (threshold 0.6); its
    negation is a similarity for the match rule score >= threshold.
    """
    probes = np.asarray(probe_embeddings, dtype=np.float64)
    gallery = np.asarray(gallery_embeddings, dtype=np.float64)
    if probes.ndim != 2 or gallery.ndim != 2 or probes.shape[1] != gallery.shape[1]:
        raise ValueError(f"embeddings must be (n, d) with one d, got {probes.shape} and {gallery.shape}")
    return -np.linalg.norm(probes[:, None, :] - gallery[None, :, :], axis=2)


def verify_masked_probes(
    data, train_idx, test_idx, embed, *, fmr_targets: Sequence[float] = FMR_TARGETS, max_rank: int = MAX_RANK
) -> VerificationResult:
    """A pretrained recognizer's verification of masked probes against the clear gallery.

    The gallery is the clear samples ``train_idx`` of ``data`` (``AttackData``), the
    probes the masked samples ``test_idx`` (a split or fold of the attack protocol);
    ``embed`` maps crops to embeddings (e.g. ``recognizers.DlibEmbedding().transform``).

    Returns
    -------
    VerificationResult
    """
    train_idx, test_idx = np.asarray(train_idx), np.asarray(test_idx)
    scores = similarity_from_embeddings(embed(data.masked[test_idx]), embed(data.clear[train_idx]))
    return evaluate_verification(
        scores,
        data.identities[test_idx],
        data.identities[train_idx],
        fmr_targets=fmr_targets,
        max_rank=max_rank,
    )


def verify_folds(data, folds, embed, *, fmr_targets: Sequence[float] = FMR_TARGETS, max_rank: int = MAX_RANK):
    """Masked probes vs the clear gallery over cross-video folds, pooled (``crossvideo.VideoFold``).

    In each fold the probes are the masked samples of the tested videos and the gallery the
    clear samples of every other video (``verify_masked_probes``); the genuine and impostor
    scores of all folds are pooled (one embedder, so one score scale) and the CMC is the
    mean over folds weighted by their probes. Folds without probes are skipped.

    Parameters
    ----------
    data : AttackData
    folds : sequence of VideoFold
    embed : callable, crops -> ndarray (n, d)
        E.g. ``recognizers.DlibEmbedding().transform`` (cached per crop content).

    Returns
    -------
    VerificationResult

    Raises
    ------
    ValueError
        If no fold has both probes and a gallery.
    """
    parts = [
        verify_masked_probes(data, f.train_idx, f.test_idx, embed, fmr_targets=fmr_targets, max_rank=max_rank)
        for f in folds
        if len(f.test_idx) and len(f.train_idx)
    ]
    if not parts:
        raise ValueError("no fold has probes and a gallery")
    genuine = np.concatenate([p.genuine for p in parts])
    impostor = np.concatenate([p.impostor for p in parts])
    n_probes = sum(p.n_probes for p in parts)
    cmc = sum(p.cmc * p.n_probes for p in parts) / n_probes
    return VerificationResult(
        genuine,
        impostor,
        operating_points(genuine, impostor),
        equal_error_rate(genuine, impostor),
        {float(t): fnmr_at_fmr(genuine, impostor, t)[0] for t in fmr_targets},
        {float(t): impostor.size * t >= 1.0 for t in fmr_targets},
        cmc,
        n_probes,
        int(np.mean([p.n_gallery for p in parts])),
        np.concatenate([p.genuine_probes for p in parts]),
        np.concatenate([p.impostor_probes for p in parts]),
    )


#: Resamples of the bootstrap intervals over probe identities stored with a run's verification.
N_RESAMPLES = 200
#: About this many genuine and impostor scores enter each bootstrap resample (``identity_bootstrap``).
MAX_BOOTSTRAP_SCORES = 20_000


def identity_bootstrap(
    genuine,
    genuine_probes,
    impostor,
    impostor_probes,
    statistic: Callable[[np.ndarray, np.ndarray], float],
    *,
    n_resamples: int = N_RESAMPLES,
    confidence: float = 0.95,
    random_state: int = 0,
    max_scores: int | None = MAX_BOOTSTRAP_SCORES,
) -> tuple[float, float, float]:
    """A statistic of genuine and impostor scores with a percentile bootstrap over probe identities.

    Each resample draws the probe identities with replacement; a drawn identity brings
    every genuine and impostor comparison of its probes, once per draw (the gallery stays
    fixed), so the interval reflects the spread between people, not between
    near-duplicate frames (as ``declared.bootstrap_eer``, there on a score matrix).
    Resamples without a genuine or an impostor score are skipped.

    Parameters
    ----------
    genuine, impostor : array-like of float, shape (n_genuine,) / (n_impostor,)
    genuine_probes, impostor_probes : array-like, same shapes
        Probe identity of each comparison (``VerificationResult.genuine_probes``).
    statistic : callable ``(genuine, impostor) -> float``
        E.g. ``equal_error_rate`` or ``lambda g, i: linkability(g, i).d_sys``.
    n_resamples : int, default=200
    confidence : float in (0, 1), default=0.95
    random_state : int, default=0
    max_scores : int or None, default=20_000
        Each resample keeps a fresh random subset of about this many of its genuine and of
        its impostor scores (each score kept with one probability, so every identity keeps
        its share): a campaign's million impostor comparisons would cost seconds per
        resample; the subsets' own noise widens the interval a little, centred on the
        value. None: every score. The value itself is always from every score.

    Returns
    -------
    (value, low, high) : tuple of float
        The statistic on all scores and the interval (NaN, NaN when every resample was
        skipped, e.g. a single probe identity that has no impostor comparison).

    Raises
    ------
    ValueError
        If a probe-label array does not match its scores, a score array is empty,
        ``n_resamples`` < 1 or ``confidence`` is outside (0, 1).
    """
    genuine, impostor = np.asarray(genuine, np.float64), np.asarray(impostor, np.float64)
    genuine_probes, impostor_probes = np.asarray(genuine_probes), np.asarray(impostor_probes)
    if genuine.shape != genuine_probes.shape or impostor.shape != impostor_probes.shape:
        raise ValueError(
            "each score needs its probe identity: got "
            f"{genuine.shape} genuine scores and {genuine_probes.shape} labels, "
            f"{impostor.shape} impostor scores and {impostor_probes.shape} labels"
        )
    if genuine.size == 0 or impostor.size == 0:
        raise ValueError(f"need genuine and impostor scores, got {genuine.size} and {impostor.size}")
    if n_resamples < 1 or not 0.0 < confidence < 1.0:
        raise ValueError(f"need n_resamples >= 1 and confidence in (0, 1), got {n_resamples}, {confidence}")
    value = float(statistic(genuine, impostor))
    rng = np.random.default_rng(random_state)
    labels, codes = np.unique(
        np.concatenate([genuine_probes, impostor_probes]).astype(str), return_inverse=True
    )
    g_code, i_code = codes[: genuine.size], codes[genuine.size :]
    g_order, i_order = np.argsort(g_code, kind="stable"), np.argsort(i_code, kind="stable")
    g_bounds = np.searchsorted(g_code[g_order], np.arange(len(labels) + 1))
    i_bounds = np.searchsorted(i_code[i_order], np.arange(len(labels) + 1))
    values = []
    for _ in range(int(n_resamples)):
        drawn = rng.integers(0, len(labels), len(labels))
        g = np.concatenate([genuine[g_order[g_bounds[k] : g_bounds[k + 1]]] for k in drawn])
        i = np.concatenate([impostor[i_order[i_bounds[k] : i_bounds[k + 1]]] for k in drawn])
        if max_scores is not None:  # a fresh thinning per resample: its noise stays centred
            g = g[rng.random(g.size) < max_scores / max(g.size, 1)] if g.size > max_scores else g
            i = i[rng.random(i.size) < max_scores / max(i.size, 1)] if i.size > max_scores else i
        if g.size and i.size:
            values.append(statistic(g, i))
    if not values:
        return value, float("nan"), float("nan")
    tail = 50.0 * (1.0 - confidence)
    low, high = np.percentile(values, [tail, 100.0 - tail])
    return value, float(low), float(high)


def _d_sys(genuine, impostor) -> float:
    from .linkability import linkability

    return linkability(genuine, impostor).d_sys


def verification_intervals(
    result: VerificationResult, *, n_resamples: int = N_RESAMPLES, random_state: int = 0
) -> dict:
    """EER and linkability D<->sys with 95 % bootstrap intervals over probe identities.

    ``identity_bootstrap`` of ``equal_error_rate`` (ISO/IEC 19795-1) and of D<->sys
    (Gomez-Barrero et al. 2018, eq. 7, ``linkability.linkability``).

    Returns
    -------
    dict
        ``eer``, ``eer_ci_low``, ``eer_ci_high``, ``linkability``, ``linkability_ci_low``,
        ``linkability_ci_high``, ``n_probe_identities``; ``{}`` when the result has no
        probe labels.
    """
    if result.genuine_probes.size != result.genuine.size or result.genuine.size == 0:
        return {}
    args = (result.genuine, result.genuine_probes, result.impostor, result.impostor_probes)
    options = {"n_resamples": n_resamples, "random_state": random_state}
    eer = identity_bootstrap(*args, equal_error_rate, **options)
    d_sys = identity_bootstrap(*args, _d_sys, **options)
    return {
        "eer": eer[0],
        "eer_ci_low": eer[1],
        "eer_ci_high": eer[2],
        "linkability": d_sys[0],
        "linkability_ci_low": d_sys[1],
        "linkability_ci_high": d_sys[2],
        "n_probe_identities": int(
            np.unique(np.concatenate([result.genuine_probes, result.impostor_probes]).astype(str)).size
        ),
    }


def verification_by_group(
    result: VerificationResult, group_of: Mapping, *, n_resamples: int = N_RESAMPLES, random_state: int = 0
) -> dict:
    """EER and linkability of the comparisons of each demographic group's probes.

    The probes of a group are compared with the whole gallery (as in the pooled figures);
    each group's EER and D<->sys get their bootstrap interval over the group's probe
    identities (``verification_intervals``) and D<->sys its chance level (the median of
    ``linkability.linkability_chance``, 100 relabellings, impostors thinned to about
    ``MAX_BOOTSTRAP_SCORES``: the histogram estimate rises as mated scores get fewer, so
    smaller groups read higher by chance). Privacy fairness of
    linkability (ISO/IEC 19795-10 differential performance, here for the attacker).

    Parameters
    ----------
    result : VerificationResult
        With probe labels (``genuine_probes``, ``impostor_probes``).
    group_of : mapping identity -> str
        The group of each probe identity (e.g. self-reported gender); identities missing
        from it or labelled "" / "unknown" are left out.

    Returns
    -------
    dict
        group label -> ``{"n_identities", "n_genuine", "n_impostor", "eer", "eer_ci_low",
        "eer_ci_high", "linkability", "linkability_ci_low", "linkability_ci_high",
        "linkability_chance"}``, for groups with both genuine and impostor comparisons,
        sorted by label. No identity is named.
    """
    from .linkability import linkability_chance

    if result.genuine_probes.size != result.genuine.size:
        return {}
    labels = {
        str(k): str(v) for k, v in group_of.items() if str(v).strip().lower() not in ("", "unknown", "nan")
    }
    g_group = np.array([labels.get(str(p), "") for p in result.genuine_probes])
    i_group = np.array([labels.get(str(p), "") for p in result.impostor_probes])
    out = {}
    for name in sorted(set(labels.values())):
        g, i = g_group == name, i_group == name
        if not g.any() or not i.any():
            continue
        part = VerificationResult(
            result.genuine[g],
            result.impostor[i],
            result.points,
            float("nan"),
            genuine_probes=result.genuine_probes[g],
            impostor_probes=result.impostor_probes[i],
        )
        figures = verification_intervals(part, n_resamples=n_resamples, random_state=random_state)
        # the chance level depends on the mated count; impostors thinned to MAX_BOOTSTRAP_SCORES
        stride = max(1, part.impostor.size // MAX_BOOTSTRAP_SCORES)
        chance_impostor = part.impostor[::stride]
        out[name] = {
            "n_identities": figures.pop("n_probe_identities"),
            "n_genuine": int(g.sum()),
            "n_impostor": int(i.sum()),
            **figures,
            "linkability_chance": float(
                np.median(linkability_chance(part.genuine, chance_impostor, n_permutations=100))
            ),
        }
    return out


def curve_record(result: VerificationResult, *, n_points: int = 200, n_resamples: int = N_RESAMPLES) -> dict:
    """A JSON-ready copy of ``result`` for storing and plotting later (``plot_verification``).

    ``as_dict()`` plus ``cmc`` (list) and ``fmr``/``fnmr`` lists of at most ``n_points``
    operating points (evenly spaced along the curve, the first and last kept, every point
    where FMR crosses a power of ten kept too, so the log-axis ROC keeps its shape); and
    the linkability of the genuine (mated) and impostor (non-mated) scores
    (``linkability.linkability``, Gomez-Barrero et al. 2018 eq. 6-7, the reference's 100
    bins and omega 1): ``linkability`` (D<->sys), ``linkability_chance`` (median D<->sys of
    200 random relabellings, ``linkability.linkability_chance``: the histogram estimate's
    level when the scores carry no identity) and ``linkability_curve`` (``bin_centres``,
    ``d_local``, ``mated_density``, ``non_mated_density`` lists, for the plot); with probe
    labels, ``verification_intervals`` (95 % bootstrap intervals over probe identities of
    the EER and D<->sys, ``n_resamples`` resamples).
    """
    from .linkability import linkability, linkability_chance

    points = result.points
    keep = np.unique(np.linspace(0, len(points.fmr) - 1, n_points).round().astype(int))
    decades = [int(np.argmax(points.fmr >= 10.0**-k)) for k in range(1, 6) if (points.fmr >= 10.0**-k).any()]
    keep = np.unique(np.concatenate([keep, decades, np.maximum(np.asarray(decades, int) - 1, 0)]))
    linked = linkability(result.genuine, result.impostor)
    curve = linked.as_dict()
    return {
        **result.as_dict(),
        "cmc": [float(v) for v in result.cmc],
        "fmr": [float(v) for v in points.fmr[keep]],
        "fnmr": [float(v) for v in points.fnmr[keep]],
        "linkability": linked.d_sys,
        "linkability_chance": float(np.median(linkability_chance(result.genuine, result.impostor))),
        "linkability_curve": {
            key: curve[key] for key in ("bin_centres", "d_local", "mated_density", "non_mated_density")
        },
        **verification_intervals(result, n_resamples=n_resamples),
    }


def _curves(result):
    """(cmc, fmr, fnmr, eer) of a VerificationResult or a ``curve_record`` dict."""
    if isinstance(result, Mapping):
        return (
            np.asarray(result["cmc"]),
            np.asarray(result["fmr"]),
            np.asarray(result["fnmr"]),
            result["eer"],
        )
    return result.cmc, result.points.fmr, result.points.fnmr, result.eer


def _plot_local_linkability(ax, label: str, result) -> None:
    """D<->(s) where genuine scores lie, labelled with D<->sys (and its chance level)."""
    from .linkability import linkability

    if isinstance(result, Mapping):
        curve = result.get("linkability_curve")
        if curve is None:
            ax.text(
                0.5,
                0.5,
                f"{label}: not recorded (older run)",
                ha="center",
                transform=ax.transAxes,
                fontsize=8,
            )
            return
        centres, local, mated = (np.asarray(curve[k]) for k in ("bin_centres", "d_local", "mated_density"))
        text = f"{label} (D<->sys {result['linkability']:.2f}, chance {result['linkability_chance']:.2f})"
    else:
        linked = linkability(result.genuine, result.impostor)
        centres, local, mated = linked.bin_centres, linked.d_local, linked.mated_density
        text = f"{label} (D<->sys {linked.d_sys:.2f})"
    ax.plot(centres, np.where(mated > 0, local, np.nan), marker=".", label=text)


def plot_verification(results: Mapping[str, VerificationResult], *, title: str = "") -> bytes:
    """CMC, ROC, DET and linkability panels of several results as PNG bytes (matplotlib, Agg).

    The fourth panel is the local linkability D<->(s) over the score bins that hold genuine
    scores (Gomez-Barrero et al. 2018, eq. 6; ``linkability.linkability``), labelled with
    D<->sys and, for stored records, its chance level; records stored before linkability
    was recorded leave it empty with a note.

    Parameters
    ----------
    results : mapping label -> VerificationResult or ``curve_record`` dict
        E.g. ``{"clear": ..., "blur_face": ...}`` or one entry per recognizer.
    title : str, optional

    Returns
    -------
    bytes
        A PNG image (2000 x 450 pixels).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from sklearn.metrics import DetCurveDisplay

    if not results:
        raise ValueError("results is empty")
    figure = Figure(figsize=(20, 4.5), dpi=100)
    FigureCanvasAgg(figure)
    cmc_ax, roc_ax, det_ax, link_ax = figure.subplots(1, 4)
    for label, result in results.items():
        _plot_local_linkability(link_ax, label, result)
        cmc, fmr_points, fnmr_points, eer = _curves(result)
        ranks = np.arange(1, len(cmc) + 1)
        cmc_ax.plot(ranks, cmc, marker="o", label=label)
        fmr = np.clip(fmr_points, 1e-4, 1.0)
        roc_ax.step(fmr, 1.0 - fnmr_points, where="post", label=f"{label} (EER {eer:.3f})")
        DetCurveDisplay(fpr=fmr_points, fnr=fnmr_points, estimator_name=label).plot(ax=det_ax)
    cmc_ax.set(xlabel="rank", ylabel="identification rate", title="CMC", ylim=(0, 1.02), xticks=ranks)
    roc_ax.set(xscale="log", xlim=(1e-4, 1.0), ylim=(0, 1.02), xlabel="FMR", ylabel="1 - FNMR", title="ROC")
    det_ax.set(xlabel="FMR", ylabel="FNMR", title="DET")
    link_ax.set(xlabel="score", ylabel="D<->(s)", title="Linkability (Gomez-Barrero 2018)", ylim=(0, 1.05))
    for ax in (cmc_ax, roc_ax, det_ax, link_ax):
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()
