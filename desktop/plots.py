"""Small matplotlib plots inside Qt, created on first use (matplotlib loads lazily).

Each plot function takes an ``Axes`` and plain numbers from an engine result; it computes
nothing new. :class:`PlotWidget` holds one figure and redraws on request.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from desktop.qt import QtWidgets

Drawer = Callable[[Any], None]


class PlotWidget(QtWidgets.QWidget):
    """A lazily created matplotlib canvas; ``draw(fn)`` clears the axes and calls ``fn(ax)``."""

    def __init__(
        self, accessible_name: str, parent: QtWidgets.QWidget | None = None, height: float = 2.6
    ) -> None:
        super().__init__(parent)
        self.setAccessibleName(accessible_name)
        self._height = height
        self._canvas: Any = None
        self._figure: Any = None
        self._layout = QtWidgets.QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self.setMinimumHeight(int(height * 60))

    def _ensure(self) -> None:
        if self._canvas is not None:
            return
        from matplotlib.backends.backend_qtagg import FigureCanvasQTAgg
        from matplotlib.figure import Figure

        self._figure = Figure(figsize=(5, self._height), layout="constrained")
        self._canvas = FigureCanvasQTAgg(self._figure)
        self._canvas.setAccessibleName(self.accessibleName())
        self._layout.addWidget(self._canvas)

    @property
    def figure(self) -> Any:
        self._ensure()
        return self._figure

    def draw(self, fn: Drawer) -> None:
        """Redraw: one Axes, cleared, handed to ``fn``."""
        self._ensure()
        self._figure.clear()
        ax = self._figure.add_subplot(1, 1, 1)
        fn(ax)
        self._canvas.draw_idle()

    def draw_figure(self, fn: Callable[[Any], None]) -> None:
        """Redraw with free use of the figure (several axes)."""
        self._ensure()
        self._figure.clear()
        fn(self._figure)
        self._canvas.draw_idle()


def _placeholder(ax: Any, message: str, y: float = 0.5) -> None:
    """A grey note in an empty plot (e.g. before the first epoch)."""
    ax.text(
        0.5, y, message, ha="center", va="center", transform=ax.transAxes, fontsize=8, color="grey"
    )


def loss_curve(points: Sequence[tuple[int, float | None, float | None]]) -> Drawer:
    """Training and validation loss per epoch; ``points`` are (epoch, train, val), either may be None.

    Epochs of successive models (the audit's, then the final one) are drawn one after another.
    """

    def draw(ax: Any) -> None:
        ax.set_title("Model training: loss per epoch (lower is better)", fontsize=9)
        ax.set_xlabel("epoch (all models in order)", fontsize=8)
        ax.set_ylabel("negative log-likelihood", fontsize=8)
        ax.tick_params(labelsize=7)
        if not points:
            _placeholder(ax, "waiting for the first epoch", y=0.5)
            return
        xs = list(range(1, len(points) + 1))
        for index, label, color in ((1, "training", "#1f77b4"), (2, "validation", "#ff7f0e")):
            ys = [float("nan") if p[index] is None else float(p[index]) for p in points]
            if any(y == y for y in ys):
                ax.plot(xs, ys, color=color, lw=1.2, label=label)
        ax.legend(fontsize=7)

    return draw


def auc_curve(
    points: Sequence[tuple[float, float, float]],
    limit: float,
    chosen: float | None = None,
    candidate: float | None = None,
    density: Sequence[tuple[float, float, float]] = (),
) -> Drawer:
    """Membership AUC against w with its limit; ``points`` (distance attack) and ``density``
    (density-ratio attack) are (w, auc, sd)."""

    def draw(ax: Any) -> None:
        ax.set_title("Privacy audit: membership AUC by perturbation weight w", fontsize=9)
        ax.set_xlabel("w (higher = closer to the real data)", fontsize=8)
        ax.set_ylabel("membership AUC", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.set_xlim(-0.02, 1.0)
        ax.axhline(limit, color="#d62728", ls="--", lw=1, label=f"limit {limit:.2f}")
        ax.axhline(0.5, color="grey", ls=":", lw=0.8)
        if points:
            pts = sorted(points)
            ws, aucs, sds = zip(*pts, strict=True)
            ax.errorbar(
                ws,
                aucs,
                yerr=sds,
                marker="o",
                ms=3,
                lw=1.2,
                capsize=2,
                color="#1f77b4",
                label="distance attack (mean ± sd)",
            )
            top = max(max(a + s for a, s in zip(aucs, sds, strict=True)), limit) + 0.02
            if density:
                dws, daucs, dsds = zip(*sorted(density), strict=True)
                ax.errorbar(
                    dws, daucs, yerr=dsds, marker="s", ms=3, lw=1.2, capsize=2,
                    color="#ff7f0e", label="density attack (mean ± sd)",
                )  # fmt: skip
                top = max(top, max(daucs) + 0.02)
            ax.set_ylim(min(0.45, min(aucs) - 0.02), top)
        else:
            ax.set_ylim(0.45, limit + 0.1)
            _placeholder(ax, "waiting for the audit", y=0.3)
        if chosen is not None:
            ax.axvline(chosen, color="#2ca02c", lw=1.2, label=f"chosen w = {chosen:.2f}")
        if candidate is not None and chosen is not None and abs(candidate - chosen) > 1e-9:
            ax.axvline(
                candidate, color="#9467bd", lw=1.2, ls="-.", label=f"your w = {candidate:.2f}"
            )
        ax.legend(fontsize=7, loc="upper left")

    return draw


def km_curves(km: dict[str, Any]) -> Drawer:
    """Kaplan-Meier survival, real vs synthetic, from ``fidelity['km']``-like data."""

    def draw(ax: Any) -> None:
        ax.set_title("Kaplan-Meier survival: real vs synthetic", fontsize=9)
        ax.set_xlabel("time", fontsize=8)
        ax.set_ylabel("survival probability", fontsize=8)
        ax.tick_params(labelsize=7)
        series = _km_series(km)
        if not series:
            _placeholder(ax, "no survival columns in this analysis", y=0.5)
            return
        colors = {"real": "#1f77b4", "synthetic": "#ff7f0e"}
        for label, (t, s) in series.items():
            ax.step(t, s, where="post", lw=1.2, label=label, color=colors.get(label))
        ax.legend(fontsize=7)

    return draw


def _km_series(km: Any) -> dict[str, tuple[list[float], list[float]]]:
    """(times, survival) for real and synthetic from ``fidelity['km']`` (engine.stats.models KMComparison)."""
    if not isinstance(km, dict):
        return {}
    grid = km.get("grid") or km.get("time") or []
    out: dict[str, tuple[list[float], list[float]]] = {}
    for label, key in (("real", "real_survival"), ("synthetic", "synth_survival")):
        values = km.get(key) or km.get(label)
        if values and len(values) == len(grid):
            pairs = [
                (float(t), float(v)) for t, v in zip(grid, values, strict=True) if v is not None
            ]
            out[label] = ([p[0] for p in pairs], [p[1] for p in pairs])
    return out
