"""The report's figures as PNG bytes: raster, aggregated, byte-for-byte reproducible.

Why raster: a vector plot of real data embeds every plotted coordinate in the PDF, which an
output checker must treat as raw data (docs/pitfalls.md, Report). Every figure here is drawn from
aggregates (:mod:`engine.report.data`) and saved as PNG at a fixed resolution with no
``Software`` metadata, using matplotlib's object API (``Figure`` + Agg canvas, no ``pyplot``
state, so it is safe in a worker thread) under matplotlib's default style, so two runs give the
same bytes.

References:
    matplotlib ``Figure.savefig(metadata=...)`` (PNG text chunks); ``Axes.bxp`` (box plots from
    precomputed statistics); Shen & Tian (2025), Figures 11 and 14 (distance distributions, box
    plots real vs synthetic).

Example:
    >>> points = [(0.0, 0.50, 0.01, 0.49, 0.01), (0.5, 0.53, 0.01, 0.52, 0.01)]
    >>> png = auc_curve_png(points, 0.55, 0.5)
    >>> png[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
    True
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.report.data import BoxStats, KMCurves

if TYPE_CHECKING:
    from engine.privacy.release import Histogram

DPI = 150
REAL = "#1f4e79"
SYNTH = "#e07b00"
DENSITY = "#7b3294"
LIMIT = "#c00000"
MAX_BOXES = 30  # wider tables: the columns whose real and synthetic boxes differ most
MAX_HEATMAP = 30  # wider tables: the columns with the largest correlation differences


def _figure(width: float, height: float) -> Any:
    """A fresh Figure on an Agg canvas (no global pyplot state)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI)
    FigureCanvasAgg(fig)
    return fig


def figure_png(draw: Any, width: float, height: float, *args: Any) -> bytes:
    """Run ``draw(fig, *args)`` under the default style and return the PNG bytes."""
    import matplotlib

    with matplotlib.rc_context(rc=matplotlib.rcParamsDefault):
        matplotlib.rcParams.update(
            {
                "font.family": "DejaVu Sans",
                "font.size": 8,
                "axes.titlesize": 9,
                "legend.frameon": True,
                "legend.framealpha": 1.0,
                "legend.edgecolor": "white",
            }
        )
        fig = _figure(width, height)
        fig.patch.set_facecolor("white")
        draw(fig, *args)
        fig.canvas.draw()
        rgba = np.asarray(fig.canvas.buffer_rgba())
    return _opaque(rgba)


def _opaque(rgba: np.ndarray) -> bytes:
    """PNG bytes of the rendered canvas without its alpha channel (an SMask in the PDF, drawn
    with edge artefacts by some viewers). Straight from the Agg buffer: the same pixels as
    ``savefig`` to PNG and back, without encoding and decoding a PNG per figure."""
    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(rgba, "RGBA").convert("RGB").save(out, format="PNG", optimize=False)
    return out.getvalue()


def auc_curve_png(curve: Any, threshold: float, chosen_w: float | None) -> bytes:
    """Membership AUC against w, with the limit and the chosen w: ``curve`` an audit result
    (the deciding attack's fitted curve and 95 % band) or its points, or tuples (w, distance
    AUC, its SE, density AUC or NaN, its SE or NaN); drawn by
    :func:`engine.report.curve_plot.draw_privacy_curve`, as in the wizard.
    """
    from engine.report.curve_plot import draw_privacy_curve

    def draw(fig: Any) -> None:
        ax = fig.add_subplot(1, 1, 1)
        shown = curve if hasattr(curve, "curve") else list(curve)
        draw_privacy_curve(ax, shown, threshold=threshold, chosen_w=chosen_w)
        set_margins(fig, 0.78, 0.15, 0.45, 0.3)

    return figure_png(draw, 6.4, 3.0)


def roc_png(curves: Sequence[tuple[str, np.ndarray, np.ndarray]]) -> bytes:
    """ROC curves of the distance attack at a few w (each already on a coarse FPR grid)."""

    def draw(fig: Any) -> None:
        ax = fig.add_subplot(1, 1, 1)
        colours = ["#9ecae1", "#4292c6", REAL, "#08306b", "#000000"]
        for i, (label, f, t) in enumerate(curves):
            ax.plot(f, t, color=colours[i % len(colours)], lw=1.4, label=label)
        ax.plot([0, 1], [0, 1], color="0.6", lw=0.8, ls="--", label="guessing")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_aspect("equal")
        ax.set_xlabel("false-positive rate (non-members called members)")
        ax.set_ylabel("true-positive rate")
        ax.legend(loc="lower right", fontsize=7)
        ax.grid(alpha=0.3)
        set_margins(fig, 0.5, 0.1, 0.45, 0.1)

    return figure_png(draw, 3.4, 3.2)


def distance_hist_png(own: Histogram, nearest: Histogram) -> bytes:
    """Figure 11: distance real -> own synthetic row vs real -> nearest other real row.

    Both histograms arrive with every bin holding at least 10 rows; drawn as densities.
    """

    def draw(fig: Any) -> None:
        ax = fig.add_subplot(1, 1, 1)
        for hist, colour, label in (
            (own, SYNTH, "real row to its own synthetic row"),
            (nearest, REAL, "real row to the nearest other real row"),
        ):
            edges = np.asarray(hist.edges, dtype=float)
            counts = np.asarray(hist.counts, dtype=float)
            if len(edges) != len(counts) + 1 or counts.sum() <= 0:
                continue
            density = counts / counts.sum() / np.diff(edges)
            ax.stairs(density, edges, color=colour, lw=1.4, label=label, fill=False)
            ax.stairs(density, edges, color=colour, alpha=0.15, fill=True)
        ax.set_xlabel("distance on the standardized scale")
        ax.set_ylabel("share of records (density)")
        ax.legend(loc="upper right", fontsize=7)
        ax.grid(alpha=0.3)
        set_margins(fig, 0.55, 0.15, 0.42, 0.1)

    return figure_png(draw, 6.4, 2.6)


def boxplots_png(rows: Sequence[tuple[str, BoxStats | None, BoxStats | None]]) -> bytes:
    """Figure 14: per variable, a real and a synthetic box (quartiles; whiskers 5th-95th).

    More than ``MAX_BOXES`` variables: only those whose medians differ most (in real IQRs) are
    drawn, in input order, and the title says how many more are in ``audit.json``.
    """
    total = len(rows)
    rows = _top_boxes(rows, MAX_BOXES)
    nrows = max(1, math.ceil(len(rows) / 5))
    cols = max(1, math.ceil(len(rows) / nrows))

    def draw(fig: Any) -> None:
        for i, (name, real, synth) in enumerate(rows):
            ax = fig.add_subplot(nrows, cols, i + 1)
            pairs = [
                (b.to_bxp(), colour)
                for b, colour in ((real, REAL), (synth, SYNTH))
                if b is not None
            ]
            if pairs:
                art = ax.bxp(
                    [p[0] for p in pairs],
                    showfliers=False,
                    patch_artist=True,
                    widths=0.55,
                    medianprops={"color": "black", "lw": 1.2},
                )
                for patch, (_, colour) in zip(art["boxes"], pairs, strict=True):
                    patch.set_facecolor(colour)
                    patch.set_alpha(0.55)
            ax.set_title(short_label(name, 24))
            ax.tick_params(labelsize=7)
            ax.grid(axis="y", alpha=0.3)
        top = 0.22
        if total > len(rows):
            top = 0.5
            fig.suptitle(
                f"The {len(rows)} of {total} columns whose real and synthetic medians differ most; "
                f"{total - len(rows)} more columns in audit.json (fidelity, marginal)",
                fontsize=8,
            )
        set_margins(fig, 0.35, 0.1, top, 0.22, wspace=0.45, hspace=0.55)

    return figure_png(draw, 6.6, 1.9 * nrows + (0.5 if total > len(rows) else 0.2))


def _top_boxes(
    rows: Sequence[tuple[str, BoxStats | None, BoxStats | None]], k: int
) -> list[tuple[str, BoxStats | None, BoxStats | None]]:
    """The ``k`` rows with the largest |median difference| / real IQR, kept in input order.

    Example:
        >>> b = lambda m: BoxStats("x", m - 2, m - 1, m, m + 1, m + 2)
        >>> [r[0] for r in _top_boxes([("a", b(0), b(0)), ("b", b(0), b(3)), ("c", None, b(1))], 2)]
        ['b', 'c']
    """
    if len(rows) <= k:
        return list(rows)

    def gap(row: tuple[str, BoxStats | None, BoxStats | None]) -> float:
        _, real, synth = row
        if real is None or synth is None:
            return math.inf
        iqr = real.q75 - real.q25
        d = abs(synth.median - real.median) / (iqr if iqr > 0 else 1.0)
        return d if math.isfinite(d) else math.inf

    keep = set(sorted(range(len(rows)), key=lambda i: -gap(rows[i]))[:k])
    return [r for i, r in enumerate(rows) if i in keep]


def km_png(km: KMCurves, time_label: str) -> bytes:
    """Kaplan-Meier survival, real vs synthetic, as steps on the coarse grid."""

    def draw(fig: Any) -> None:
        ax = fig.add_subplot(1, 1, 1)
        # a marker at every grid time, so the value at the last one (a zero-width step) shows
        ax.step(km.times, km.real, where="post", color=REAL, lw=1.6, label="real", marker="o", ms=3)
        if np.isfinite(np.asarray(km.synthetic, dtype=float)).any():
            ax.step(
                km.times,
                km.synthetic,
                where="post",
                color=SYNTH,
                lw=1.6,
                ls="--",
                marker="o",
                ms=3,
                label="synthetic",
            )
        low = min(np.nanmin(np.asarray(km.real + km.synthetic, dtype=float)), 1.0)
        ax.set_ylim(max(0.0, low - 0.05), 1.01)
        ax.set_xlim(0, km.times[-1] * 1.03)
        ax.set_xlabel(short_label(time_label, 40))
        ax.set_ylabel("share without the event")
        ax.legend(loc="lower left", fontsize=7)
        ax.grid(alpha=0.3)
        set_margins(fig, 0.62, 0.12, 0.45, 0.1)

    return figure_png(draw, 3.3, 2.8)


def corr_diff_png(columns: Sequence[str], diff: Sequence[Sequence[float]]) -> bytes:
    """Heat map of synthetic minus real Pearson correlations, each cell annotated.

    More than ``MAX_HEATMAP`` columns: the columns with the largest absolute differences only,
    and the title says how many more are in ``audit.json``.
    """
    m = np.asarray(diff, dtype=float)
    total = len(columns)
    if total > MAX_HEATMAP:
        worst = np.nan_to_num(np.abs(m), nan=np.inf)
        np.fill_diagonal(worst, 0.0)
        keep = np.sort(np.argsort(-worst.max(axis=1), kind="stable")[:MAX_HEATMAP])
        m = m[np.ix_(keep, keep)]
        columns = [columns[i] for i in keep]
    k = len(columns)

    # readable when the page shrinks the image: few columns get large numbers, labels are
    # kept whole up to 18 characters and the margins fit them
    cell_font = 10.0 if k <= 6 else 8.5 if k <= 9 else 7.0
    label_len = 18

    from matplotlib.ticker import MaxNLocator

    def draw(fig: Any) -> None:
        ax = fig.add_subplot(1, 1, 1)
        lim = max(0.1, float(np.nanmax(np.abs(m))) if m.size else 0.1)
        image = ax.imshow(m, cmap="RdBu_r", vmin=-lim, vmax=lim)
        labels = [short_label(c, label_len) for c in columns]
        ax.set_xticks(range(k), labels, rotation=45, ha="right", fontsize=9)
        ax.set_yticks(range(k), labels, fontsize=9)
        if k <= 12:
            for i in range(k):
                for j in range(k):
                    if np.isfinite(m[i, j]):
                        light = abs(m[i, j]) > 0.6 * lim
                        ax.text(
                            j,
                            i,
                            _cell(m[i, j]),
                            ha="center",
                            va="center",
                            fontsize=cell_font,
                            color="white" if light else "black",
                        )
        longest = max((len(label) for label in labels), default=4)
        margin = 0.25 + 0.062 * longest  # inches for the longest (rotated) label
        set_margins(fig, margin, 1.05, margin, 0.15 if total <= k else 0.45)
        box = ax.get_position()
        cax = fig.add_axes((box.x1 + 0.03, box.y0, 0.04, box.height))
        bar = fig.colorbar(image, cax=cax, label="synthetic − real")
        bar.locator = MaxNLocator(5)
        bar.update_ticks()
        bar.ax.tick_params(labelsize=7)
        if total > k:
            ax.set_title(
                f"{k} of {total} columns (largest differences);\n"
                f"all {total} in audit.json (fidelity, correlation)",
                fontsize=7,
            )

    longest = max((len(short_label(c, label_len)) for c in columns), default=4)
    side = min(4.4, 1.4 + 0.3 * k + 0.055 * longest)
    return figure_png(draw, side + 0.5, side)


def _cell(value: float) -> str:
    """A heat-map cell: two decimals without the leading zero, a plain 0 for a rounded zero.

    Example:
        >>> _cell(0.1234), _cell(-0.004), _cell(-0.25)
        ('+.12', '0', '-.25')
    """
    text = f"{value:+.2f}".replace("0.", ".")
    return "0" if text in ("+.00", "-.00") else text


def set_margins(
    fig: Any, left: float, right: float, bottom: float, top: float, **space: float
) -> None:
    """Fixed margins in inches (``tight_layout`` costs ~0.3 s a figure and is not needed)."""
    w, h = fig.get_size_inches()
    fig.subplots_adjust(
        left=left / w, right=1 - right / w, bottom=bottom / h, top=1 - top / h, **space
    )


def short_label(text: str, n: int) -> str:
    text = str(text)
    return text if len(text) <= n else text[: n - 1] + "…"
