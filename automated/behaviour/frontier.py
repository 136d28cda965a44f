"""The privacy-utility frontier of a campaign as a figure (PNG and SVG bytes).

One point per submission or baseline: x = worst-case re-identification of its masked
videos by the attack suite, chance-normalised (``automated.attack.protocol.
chance_normalised_accuracy``: 0 = chance level, 1 = every probe identified; the
strongest recognizer x attacker pair, ``attack.suite.worst_case``), y = behaviour
preservation (``score``; 1 = identical behaviour). The ideal masking sits at the top
left (0, 1); the unmasked identity baseline near (1, 1). The frontier line joins the
points no other point beats on both axes (Pareto-optimal: nothing has lower
re-identification and higher preservation).

Pure function: matplotlib's object API with the Agg canvas (no pyplot state, safe in
a web worker); fixed metadata so that equal inputs give equal bytes.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Real

KINDS = ("submission", "baseline")


@dataclass(frozen=True)
class FrontierPoint:
    """One masking method on the frontier plot.

    Attributes
    ----------
    label : str
        Shown beside the point (a submission or baseline name).
    reidentification : float
        Worst-case chance-normalised re-identification, <= 1 (below 0 = below chance);
        NaN when not measured.
    behaviour : float
        Behaviour-preservation score in [0, 1]; NaN when not measured.
    kind : {"submission", "baseline"}
    """

    label: str
    reidentification: float
    behaviour: float
    kind: str = "submission"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"{self.label}: kind must be one of {KINDS}, got {self.kind!r}")
        for name in ("reidentification", "behaviour"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, Real):
                raise ValueError(f"{self.label}: {name} must be a number, got {value!r}")
        if math.isfinite(self.reidentification) and not -1.0 <= self.reidentification <= 1.0:
            raise ValueError(
                f"{self.label}: reidentification must be in [-1, 1], got {self.reidentification}"
            )
        if math.isfinite(self.behaviour) and not 0.0 <= self.behaviour <= 1.0:
            raise ValueError(f"{self.label}: behaviour must be in [0, 1], got {self.behaviour}")

    @property
    def placed(self) -> bool:
        return math.isfinite(self.reidentification) and math.isfinite(self.behaviour)


def pareto_front(points: Sequence[FrontierPoint]) -> list[FrontierPoint]:
    """Placed points not dominated by another (lower-or-equal x and higher-or-equal y, one strictly), by x."""
    placed = [p for p in points if p.placed]
    front = [
        p
        for p in placed
        if not any(
            q.reidentification <= p.reidentification
            and q.behaviour >= p.behaviour
            and (q.reidentification < p.reidentification or q.behaviour > p.behaviour)
            for q in placed
        )
    ]
    return sorted(front, key=lambda p: (p.reidentification, -p.behaviour))


def spread_labels(figure, labels, step_points: float = 9.0, max_steps: int = 80) -> None:
    """Move point labels (matplotlib ``Annotation``) down, then up, until no two overlap.

    Top labels first: each keeps its place unless its box (display pixels) overlaps one
    already placed; then it moves ``step_points`` at a time (alternately below and above)
    and a thin line joins it to its point. Methods with equal scores (e.g. baselines at
    the same worst case) otherwise print on top of each other (issue 21).
    """
    renderer = figure.canvas.get_renderer()
    placed = []
    for label in sorted(labels, key=lambda a: (-a.xy[1], a.xy[0])):
        x, y = label.xyann
        for step in range(max_steps):
            box = label.get_window_extent(renderer)
            if not any(box.overlaps(other) for other in placed):
                break
            offset = (step // 2 + 1) * step_points * (-1 if step % 2 == 0 else 1)
            label.xyann = (x, y + offset)
        placed.append(label.get_window_extent(renderer))


def frontier_figure(
    points: Sequence[FrontierPoint], *, title: str = "Privacy-utility frontier"
) -> dict[str, bytes]:
    """Draw the frontier (module docstring).

    Parameters
    ----------
    points : sequence of FrontierPoint
        Points with a NaN coordinate are not placed; their labels are listed under the
        axes ("not measured: ...") so that none disappears silently.
    title : str

    Returns
    -------
    dict with ``"png"`` (bytes, 150 dpi) and ``"svg"`` (bytes, UTF-8 XML)

    Raises
    ------
    ValueError
        If ``points`` is empty.
    """
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    points = list(points)
    if not points:
        raise ValueError("no submissions or baselines to plot")
    figure = Figure(figsize=(6.4, 4.8))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    styles = {
        "submission": dict(marker="o", color="tab:blue"),
        "baseline": dict(marker="s", color="tab:gray"),
    }
    labels = []
    for kind in KINDS:
        chosen = [p for p in points if p.kind == kind and p.placed]
        if chosen:
            axes.scatter(
                [p.reidentification for p in chosen],
                [p.behaviour for p in chosen],
                s=40,
                zorder=3,
                label=f"{kind}s",
                **styles[kind],
            )
            for p in chosen:
                labels.append(
                    axes.annotate(
                        p.label,
                        (p.reidentification, p.behaviour),
                        textcoords="offset points",
                        xytext=(5, 4),
                        fontsize=8,
                        arrowprops={"arrowstyle": "-", "color": "#999", "linewidth": 0.5, "shrinkA": 0},
                    )
                )
    front = pareto_front(points)
    if len(front) > 1:
        axes.step(
            [p.reidentification for p in front],
            [p.behaviour for p in front],
            where="post",
            color="tab:orange",
            linewidth=1.2,
            zorder=2,
            label="frontier",
        )
    axes.scatter(
        [0.0], [1.0], marker="*", s=120, color="tab:green", zorder=3, label="ideal (chance, identical)"
    )
    low = min([0.0] + [p.reidentification for p in points if p.placed])
    axes.set_xlim(low - 0.05, 1.05)
    axes.set_ylim(-0.05, 1.05)
    axes.set_xlabel("worst-case re-identification (chance-normalised; 0 = chance, 1 = all identified)")
    axes.set_ylabel("behaviour preservation (1 = identical)")
    axes.set_title(title)
    axes.grid(True, linewidth=0.4, alpha=0.5)
    axes.legend(loc="lower left", fontsize=8)
    missing = [p.label for p in points if not p.placed]
    if missing:
        figure.text(0.01, 0.01, "not measured: " + ", ".join(missing), fontsize=7, color="tab:red")
    figure.tight_layout(rect=(0, 0.03 if missing else 0, 1, 1))
    spread_labels(figure, labels)
    result = {}
    for fmt, metadata in (("png", {"Software": None}), ("svg", {"Date": None, "Creator": None})):
        buffer = io.BytesIO()
        with matplotlib.rc_context({"svg.hashsalt": "deid-eval-frontier"}):  # stable SVG element ids
            figure.savefig(buffer, format=fmt, dpi=150, metadata=metadata)
        result[fmt] = buffer.getvalue()
    return result
