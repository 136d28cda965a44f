"""Linkability of mated and non-mated comparison scores (Gomez-Barrero et al. 2018).

M. Gomez-Barrero, J. Galbally, C. Rathgeb, C. Busch, "General Framework to Evaluate
Unlinkability in Biometric Template Protection Systems", IEEE Transactions on Information
Forensics and Security 13(6), 1406-1420, 2018 (published online 2017;
doi:10.1109/TIFS.2017.2788000), section III; reference code ``dasec/unlinkability-metric``,
``evaluateUnlinkability.py`` (version 2.0), re-implemented here from its description (the
VoicePrivacy Challenge reports the same D<->sys beside the EER).

An attacker compares two templates (here: two face samples) and gets a score ``s``. Mated
comparisons are of the same subject, non-mated ones of different subjects. With the
score densities p(s | H_m) and p(s | H_nm), the likelihood ratio LR(s) = p(s | H_m) /
p(s | H_nm) and the prior ratio omega = P(H_m) / P(H_nm):

- local linkability (eq. 6): D<->(s) = 2 * omega LR(s) / (1 + omega LR(s)) - 1 where
  omega LR(s) > 1, and 0 elsewhere (the attacker cannot do better than guess there);
- global linkability (eq. 7): D<->sys = integral of p(s | H_m) D<->(s) ds, in [0, 1]:
  0 = fully unlinkable, 1 = fully linkable.

The reference estimates the densities by histograms of ``n_bins`` equal bins over the
joint range [min, max] of all scores (numpy ``density=True``: count / (n * bin width),
the last bin closed); sets LR = 1 where the non-mated density is 0 and then D<->(s) = 1
there (LR is infinite, and the same rule also marks bins where both densities are 0);
and integrates with the trapezoidal rule over the bin centres. That last choice means a
fully separated pair of distributions gives D<->sys = 1 only when no mated score lies in
the first or last bin; otherwise D<->sys = 1 - (m_first + m_last) / (2 n_mated), where
m_first, m_last are the mated counts in those bins (the trapezoid's half-weight at the
ends). The numbers here follow the reference exactly, so they compare with published
ones.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np

#: The reference's number of density bins and prior ratio (``evaluateUnlinkability.py``).
N_BINS = 100
OMEGA = 1.0


@dataclass(frozen=True)
class LinkabilityResult:
    """Global and local linkability of one set of mated / non-mated scores.

    Attributes
    ----------
    d_sys : float
        Global linkability D<->sys in [0, 1] (Gomez-Barrero et al. 2018, eq. 7).
    bin_centres : ndarray of float64 of shape (n_bins,)
        Centre of each score bin (score units).
    d_local : ndarray of float64 of shape (n_bins,)
        Local linkability D<->(s) in [0, 1] at each bin (eq. 6; 1 where the non-mated
        density is 0, as in the reference).
    mated_density, non_mated_density : ndarray of float64 of shape (n_bins,)
        Histogram densities (1 / score units; each integrates to 1 over the bins).
    bin_edges : ndarray of float64 of shape (n_bins + 1,)
    omega : float
    n_mated, n_non_mated : int
    """

    d_sys: float
    bin_centres: np.ndarray
    d_local: np.ndarray
    mated_density: np.ndarray
    non_mated_density: np.ndarray
    bin_edges: np.ndarray
    omega: float
    n_mated: int
    n_non_mated: int

    def as_dict(self) -> dict:
        """JSON-ready copy: ``d_sys``, ``omega``, counts and the curves as lists."""
        return {
            "d_sys": self.d_sys,
            "omega": self.omega,
            "n_bins": len(self.bin_centres),
            "n_mated": self.n_mated,
            "n_non_mated": self.n_non_mated,
            "bin_centres": self.bin_centres.tolist(),
            "d_local": self.d_local.tolist(),
            "mated_density": self.mated_density.tolist(),
            "non_mated_density": self.non_mated_density.tolist(),
        }


def _scores(values, name: str) -> np.ndarray:
    try:
        values = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numbers, got {type(values).__name__}") from None
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array of scores, got shape {values.shape}")
    if not np.isfinite(values).all():
        raise ValueError(f"{name} must be finite, got {int((~np.isfinite(values)).sum())} NaN/inf value(s)")
    return values


def linkability(
    mated_scores, non_mated_scores, *, omega: float = OMEGA, n_bins: int = N_BINS
) -> LinkabilityResult:
    """Global D<->sys and local D<->(s) linkability (Gomez-Barrero et al. 2018, eq. 6-7).

    Parameters
    ----------
    mated_scores : array-like of float, shape (n_mated,)
        Scores of comparisons of the same subject (similarities or distances: any
        scale; only the two distributions matter).
    non_mated_scores : array-like of float, shape (n_non_mated,)
        Scores of comparisons of different subjects, on the same scale.
    omega : float, default=1.0
        Prior ratio P(mated) / P(non-mated) (the reference's default, 1).
    n_bins : int, default=100
        Equal-width density bins over the joint score range (the reference's 100).

    Returns
    -------
    LinkabilityResult
        ``d_sys`` and the local curve ``d_local`` over ``bin_centres``. When every score
        is equal the range is widened to that score +- 0.5 (equal edges are no bins):
        both densities then sit in one bin, LR = 1 and D<->sys = 0.

    Raises
    ------
    ValueError
        If a score array is empty, not 1-D or not finite, ``omega`` is not a positive
        finite number, or ``n_bins`` is not an integer >= 1.

    Examples
    --------
    >>> linkability([0.0, 1.0], [0.0, 1.0]).d_sys  # identical distributions
    0.0
    >>> round(linkability([0.85, 1.0], [0.0, 0.15], n_bins=10).d_sys, 6)  # separated, 1.0 in the last bin
    0.75
    """
    mated = _scores(mated_scores, "mated_scores")
    non_mated = _scores(non_mated_scores, "non_mated_scores")
    if not (np.isfinite(omega) and omega > 0):
        raise ValueError(f"omega (prior ratio P(mated)/P(non-mated)) must be a positive number, got {omega}")
    if isinstance(n_bins, bool) or int(n_bins) != n_bins or n_bins < 1:
        raise ValueError(f"n_bins must be an integer >= 1, got {n_bins!r}")
    low = min(mated.min(), non_mated.min())
    high = max(mated.max(), non_mated.max())
    if low == high:
        low, high = low - 0.5, high + 0.5
    edges = np.linspace(low, high, int(n_bins) + 1)
    centres = (edges[1:] + edges[:-1]) / 2
    mated_density = np.histogram(mated, bins=edges, density=True)[0]
    non_mated_density = np.histogram(non_mated, bins=edges, density=True)[0]
    seen = non_mated_density > 0
    ratio = np.ones_like(mated_density)
    ratio[seen] = mated_density[seen] / non_mated_density[seen]
    weighted = omega * ratio
    d_local = np.where(weighted > 1.0, 2.0 * weighted / (1.0 + weighted) - 1.0, 0.0)
    d_local[~seen] = 1.0
    from scipy.integrate import trapezoid  # imported here: slow to import, and most importers never call this

    return LinkabilityResult(
        d_sys=float(trapezoid(d_local * mated_density, centres)),
        bin_centres=centres,
        d_local=d_local,
        mated_density=mated_density,
        non_mated_density=non_mated_density,
        bin_edges=edges,
        omega=float(omega),
        n_mated=int(mated.size),
        n_non_mated=int(non_mated.size),
    )


def plot_linkability(result: LinkabilityResult, *, title: str = "") -> bytes:
    """Mated and non-mated score densities with D<->(s) on a second axis, as PNG bytes.

    The figure of the reference code (histogram densities here, not kernel estimates),
    with D<->sys in the title.

    Parameters
    ----------
    result : LinkabilityResult
    title : str, optional

    Returns
    -------
    bytes
        A PNG image (700 x 450 pixels).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, 4.5), dpi=100)
    FigureCanvasAgg(figure)
    ax = figure.subplots()
    ax.stairs(result.mated_density, result.bin_edges, label="mated", color="tab:green")
    ax.stairs(result.non_mated_density, result.bin_edges, label="non-mated", color="tab:red", linestyle="--")
    ax.set(xlabel="score", ylabel="probability density")
    local = ax.twinx()
    local.plot(result.bin_centres, result.d_local, color="tab:blue", label="D<->(s)")
    local.set(ylim=(0, 1.1), ylabel="D<->(s)")
    handles = ax.get_legend_handles_labels()[0] + local.get_legend_handles_labels()[0]
    ax.legend(handles, [h.get_label() for h in handles], loc="upper right", fontsize=8)
    ax.set_title(f"{title + ', ' if title else ''}D<->sys = {result.d_sys:.3f}")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def linkability_chance(
    mated_scores,
    non_mated_scores,
    *,
    n_permutations: int = 200,
    random_state: int = 0,
    omega: float = OMEGA,
    n_bins: int = N_BINS,
) -> np.ndarray:
    """D<->sys of random relabellings: the chance reference of a linkability figure.

    The histogram estimate of D<->sys is biased upwards when a class has few scores
    (sampling noise makes some bins' LR exceed 1/omega even for identical
    distributions), so a value says little without the value chance gives on as many
    scores. Here the pooled scores are split at random into sets of the two sizes,
    ``n_permutations`` times (a permutation test of "mated and non-mated scores have one
    distribution").

    Parameters
    ----------
    mated_scores, non_mated_scores : array-like of float, 1-D
    n_permutations : int, default=200
    random_state : int, default=0
    omega, n_bins
        As ``linkability``.

    Returns
    -------
    ndarray of float64 of shape (n_permutations,)
        The p-value of an observed ``d`` is ``(1 + (null >= d).sum()) / (1 + n_permutations)``.

    Raises
    ------
    ValueError
        As ``linkability``, or ``n_permutations`` < 1.
    """
    mated = _scores(mated_scores, "mated_scores")
    non_mated = _scores(non_mated_scores, "non_mated_scores")
    if int(n_permutations) != n_permutations or n_permutations < 1:
        raise ValueError(f"n_permutations must be an integer >= 1, got {n_permutations}")
    pooled = np.concatenate([mated, non_mated])
    rng = np.random.default_rng(random_state)
    null = np.empty(int(n_permutations))
    for k in range(len(null)):
        shuffled = rng.permutation(pooled)
        null[k] = linkability(
            shuffled[: mated.size], shuffled[mated.size :], omega=omega, n_bins=n_bins
        ).d_sys
    return null


def result_from_record(record: dict) -> LinkabilityResult:
    """A ``LinkabilityResult`` back from a stored verification record, for ``plot_linkability``.

    Parameters
    ----------
    record : dict
        ``verification.curve_record`` output: ``linkability`` (D<->sys),
        ``linkability_curve`` (``bin_centres``, ``d_local``, ``mated_density``,
        ``non_mated_density`` lists), ``n_genuine``, ``n_impostor``.

    Returns
    -------
    LinkabilityResult
        The bin edges are rebuilt from the (equal-width) bin centres.

    Raises
    ------
    ValueError
        If the record has no linkability curve (runs stored before it was recorded).
    """
    curve = record.get("linkability_curve")
    if not curve or record.get("linkability") is None:
        raise ValueError("this verification record has no linkability curve (stored before it was recorded)")
    centres = np.asarray(curve["bin_centres"], dtype=np.float64)
    width = float(centres[1] - centres[0]) if len(centres) > 1 else 1.0
    edges = np.concatenate([centres - width / 2, [centres[-1] + width / 2]])
    return LinkabilityResult(
        d_sys=float(record["linkability"]),
        bin_centres=centres,
        d_local=np.asarray(curve["d_local"], dtype=np.float64),
        mated_density=np.asarray(curve["mated_density"], dtype=np.float64),
        non_mated_density=np.asarray(curve["non_mated_density"], dtype=np.float64),
        bin_edges=edges,
        omega=OMEGA,
        n_mated=int(record.get("n_genuine", 0)),
        n_non_mated=int(record.get("n_impostor", 0)),
    )
