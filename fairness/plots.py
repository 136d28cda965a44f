"""Per-group score distributions as PNG (violin + every sample), matplotlib Agg, no Django.

The paper shows group distributions as KDE plots (seeds/003, Figures 2-5) and NIST FATE
SIDD as violin plots (section 2); a violin is a mirrored KDE, so groups sit side by side.
Small groups are common here (a handful of videos), so every sample is drawn as a dot
too, and groups with fewer than two distinct values get dots only (no KDE exists).
"""

from __future__ import annotations

import io

import numpy as np


def _pyplot():
    """matplotlib's pyplot on the Agg backend (no display: render to memory only).

    Imported on first use, not with this module: the site imports it at start-up (the
    fairness pages' URLs) and matplotlib costs about 0.6 CPU s to import, paid by every
    server, worker and command process that never draws a plot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def violin_png(per_group: dict, *, title: str, ylabel: str, dpi: int = 100) -> bytes:
    """Render one violin per group (label -> scores) with jittered sample dots.

    Parameters
    ----------
    per_group : dict
        Group label -> array-like of shape (n_group_samples,) of finite floats.
    title, ylabel : str
        Axis texts (no identity codes: only group labels are drawn).
    dpi : int, default=100

    Returns
    -------
    bytes
        A PNG image (starts with ``b"\\x89PNG"``).

    Raises
    ------
    ValueError
        If there is no group.
    """
    if not per_group:
        raise ValueError("nothing to plot: no group has scores")
    labels = [str(label) for label in per_group]
    arrays = [np.asarray(values, dtype=np.float64) for values in per_group.values()]
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(1.6 + 1.3 * len(arrays), 3.6), dpi=dpi)
    try:
        positions = np.arange(1, len(arrays) + 1)
        kde = [i for i, values in enumerate(arrays) if np.unique(values).size >= 2]
        if kde:
            axes.violinplot(
                [arrays[i] for i in kde], positions=positions[kde], showmedians=True, showextrema=False
            )
        rng = np.random.default_rng(0)  # fixed jitter: the same data gives the same image
        for position, values in zip(positions, arrays):
            axes.scatter(
                position + rng.uniform(-0.08, 0.08, values.size),
                values,
                s=14,
                color="black",
                alpha=0.7,
                zorder=3,
            )
        axes.set_xticks(positions, [f"{label}\n(n={values.size})" for label, values in zip(labels, arrays)])
        axes.set_title(title, fontsize=10)
        axes.set_ylabel(ylabel)
        axes.grid(axis="y", alpha=0.3)
        figure.tight_layout()
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", metadata={"Software": None})
    finally:
        plt.close(figure)
    return buffer.getvalue()
