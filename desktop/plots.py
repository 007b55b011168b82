"""Small matplotlib plots inside Qt, created on first use (matplotlib loads lazily).

Each plot function takes an ``Axes`` and the numbers of an engine result (or the engine's typed
partial results, while a run goes on); it computes nothing new. The privacy curve is the
engine's own drawing function, shared with the PDF report. :class:`PlotWidget` holds one figure
and redraws on request.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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


LossSeries = Mapping[str, Sequence[Any]]  # model name -> its EpochDone results, in order
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


def kept_round(points: Sequence[Any]) -> Any:
    """The round (:class:`engine.EpochDone`) whose model early stopping keeps: the engine's own
    ``best_epoch`` where it is among ``points``, else the lowest held-back error.

    Example:
        >>> from engine import EpochDone
        >>> pts = [EpochDone(e, 300, 2.0, v, 0.1, 1, 21) for e, v in [(1, 2.0), (2, 2.1)]]
        >>> kept_round(pts).epoch
        1
    """
    best = min(points, key=lambda p: p.val_loss)
    engine_best = [p for p in points if p.epoch == getattr(points[-1], "best_epoch", 0)]
    return engine_best[0] if engine_best else best


def loss_curve(series: LossSeries) -> Drawer:
    """One validation-loss line per model (its training loss dashed, same colour), from the
    engine's :class:`engine.EpochDone` results; each model's epochs count from 1.

    The models of one run (the audit's flows, then the final model) are separate lines, never
    one line joined across models. Each line has a dot on the round whose model is kept (early
    stopping keeps the lowest held-back error, issue 44: a line rising from the first round
    looked like a failure), and the latest model's dot says so in words.
    """

    def draw(ax: Any) -> None:
        ax.set_title("Model training: error per round (lower is better)", fontsize=9)
        ax.set_xlabel("training round (epoch)", fontsize=8)
        ax.set_ylabel("error (negative log-likelihood)", fontsize=8)
        ax.tick_params(labelsize=7)
        drawn = [(name, list(points)) for name, points in series.items() if points]
        if not drawn:
            _placeholder(ax, "waiting for the first training round", y=0.5)
            return
        for k, (name, points) in enumerate(drawn):
            color = COLORS[k % len(COLORS)]
            xs = [p.epoch for p in points]
            ax.plot(xs, [p.val_loss for p in points], color=color, lw=1.3, label=name or "model")
            ax.plot(xs, [p.train_loss for p in points], color=color, lw=0.8, ls="--", alpha=0.6)
            kept = kept_round(points)
            ax.plot([kept.epoch], [kept.val_loss], ls="none", marker="o", ms=5, color=color)
        kept = kept_round(drawn[-1][1])
        ax.annotate(
            f"kept: round {kept.epoch}",
            (kept.epoch, kept.val_loss),
            xytext=(4, 6),
            textcoords="offset points",
            fontsize=7,
        )
        ax.plot([], [], color="grey", lw=0.8, ls="--", label="(dashed: on training rows)")
        ax.plot(
            [],
            [],
            color="grey",
            ls="none",
            marker="o",
            ms=5,
            label="(dot: the round kept, lowest error on held-back rows)",
        )
        ax.legend(fontsize=6, title="error on held-back rows of", title_fontsize=6)

    return draw


def privacy_curve(
    curve: Any,
    limit: float,
    chosen: float | None = None,
    candidate: float | None = None,
    chosen_label: str = "chosen w",
) -> Drawer:
    """The engine's privacy curve (:func:`engine.draw_privacy_curve`, the report draws the same):
    ``curve`` is an audit result or its points (also the live :class:`engine.AuditPointDone`)."""

    def draw(ax: Any) -> None:
        from engine import draw_privacy_curve

        draw_privacy_curve(
            ax,
            curve,
            threshold=limit,
            chosen_w=chosen,
            chosen_label=chosen_label,
            candidate_w=candidate,
            compact=True,
        )

    return draw


def km_curves(km: Any) -> Drawer:
    """Kaplan-Meier survival, real vs synthetic, from the fidelity result's Kaplan-Meier
    comparison (``engine.stats.models.KMComparison``, or its ``to_dict()``)."""

    def draw(ax: Any) -> None:
        ax.set_title("Kaplan-Meier survival: real vs synthetic", fontsize=9)
        ax.set_xlabel(_km_time_label(km), fontsize=8)
        ax.set_ylabel("survival probability", fontsize=8)
        ax.tick_params(labelsize=7)
        series = _km_series(km)
        if not series:
            _placeholder(ax, "no survival columns in this analysis", y=0.5)
            return
        colors = {"real": "#1f77b4", "synthetic": "#ff7f0e"}
        for label, (t, s) in series.items():
            ax.step(t, s, where="post", lw=1.2, label=label, color=colors.get(label))
        end = max(max(t, default=0.0) for t, _ in series.values())
        if end > 0:  # the grid's end: where 10 real records are still followed up
            ax.set_xlim(0.0, end * 1.03)
        ax.legend(fontsize=7)

    return draw


def _km_time_label(km: Any) -> str:
    """The x axis: the time column's name (its own units), else "time"."""
    name = km.get("time_column") if isinstance(km, dict) else getattr(km, "time_column", "")
    return str(name) if name else "time"


def _km_series(km: Any) -> dict[str, tuple[list[float], list[float]]]:
    """(times, survival) for real and synthetic from a KMComparison or its ``to_dict()``."""
    if hasattr(km, "to_dict"):
        km = km.to_dict()
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
