"""Forest plots: of a meta-analysis (vector PDF) and, for the report, of each model term fitted
on the real and on the synthetic table (raster PNG, :func:`forest_png`).

Uses matplotlib's object API (``Figure`` + Agg/PDF canvases), never pyplot, so it sets no global
backend and is safe in worker threads. Summary estimates are not individual data, so the
meta-analysis forest plot may be vector; the report's figures are raster like every other
report figure (PITFALLS, Report). PDF bytes are reproducible (no creation date).

References: Lewis & Clarke (2001) BMJ 322:1479 (forest plots); paper Figure 15 (real and
synthetic side by side).

Example:
    >>> from engine.stats.meta import pool
    >>> res = pool([0.1, 0.3, 0.2], [0.1, 0.12, 0.1], labels=["A", "B", "C"])
    >>> forest_pdf_bytes([("studies", res)], exponentiate=True, xlabel="Hazard ratio")[:5]
    b'%PDF-'
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Polygon
from matplotlib.ticker import FuncFormatter, MaxNLocator, NullLocator

from engine.report.figures import REAL, SYNTH, figure_png, set_margins, short_label

if TYPE_CHECKING:
    from engine.stats.meta import MetaResult

COLORS = {"real": "#1f4e79", "synthetic": "#d9822b", "studies": "#1f4e79"}
SET_NAMES = {"real": "Real data", "synthetic": "Synthetic data", "studies": "Studies"}
POOLED = {
    "dl": "Pooled, random effects (DerSimonian-Laird)",
    "fe": "Pooled, fixed effect",
    "hksj": "Pooled, random effects (Hartung-Knapp)",
}


def _rows(sets: Sequence[tuple[str, MetaResult]]) -> list[str]:
    """Study labels in order; paired sets with different labels are matched by position."""
    labels: list[str] = []
    for _, res in sets:
        for s in res.studies:
            if s.study not in labels:
                labels.append(s.study)
    if (
        len(sets) == 2
        and len(labels) == sets[0][1].k + sets[1][1].k
        and sets[0][1].k == sets[1][1].k
    ):
        return [s.study for s in sets[0][1].studies]
    return labels


def _estimate_text(value: float, exp: bool) -> str:
    return f"{math.exp(value) if exp else value:.3f}" if math.isfinite(value) else "-"


def forest_figure(
    sets: Sequence[tuple[str, MetaResult]],
    *,
    exponentiate: bool,
    xlabel: str,
    title: str | None = None,
) -> Figure:
    """One row per study (squares sized by weight, 95 % CI lines), pooled diamonds, a null line.

    Several sets (``("real", r), ("synthetic", s)``) are drawn side by side within each row.

    Example:
        >>> from engine.stats.meta import pool
        >>> studies = [("studies", pool([0.0, 0.2], [0.1, 0.1]))]
        >>> fig = forest_figure(studies, exponentiate=False, xlabel="Estimate")
        >>> len(fig.axes)
        1
    """
    labels = _rows(sets)
    n_sets = len(sets)
    fig = Figure(figsize=(9.0, 1.8 + 0.32 * (len(labels) + 2) * max(1, n_sets * 0.7)))
    ax = fig.add_subplot(1, 1, 1)
    offsets = np.linspace(0.18, -0.18, n_sets) if n_sets > 1 else np.zeros(1)
    max_weight = max(s.weight for _, r in sets for s in r.studies)
    ypos = {lab: len(labels) + 1 - i for i, lab in enumerate(labels)}
    for j, (name, res) in enumerate(sets):
        color = COLORS.get(name, "#333333")
        for i, s in enumerate(res.studies):
            y = ypos[s.study if s.study in ypos else labels[i]] + offsets[j]
            _draw_study(ax, s, y, color, s.weight / max_weight, exponentiate)
        height = 0.25 if n_sets == 1 else 0.15
        _draw_pooled(ax, name, res, offsets[j] * 2, height, color, exponentiate)
    _finish_axes(ax, sets, ypos, exponentiate=exponentiate, xlabel=xlabel, title=title)
    fig.tight_layout()
    return fig


def _on_scale(value: Any, exponentiate: bool) -> Any:
    return np.exp(value) if exponentiate else value


def _draw_study(
    ax: Any, study: Any, y: float, color: str, relative_weight: float, exponentiate: bool
) -> None:
    """One study's 95 % CI line, a square sized by its weight, and its numbers on the right."""
    ax.plot(_on_scale([study.ci_low, study.ci_high], exponentiate), [y, y], color=color, lw=1.0)
    ax.scatter(
        [_on_scale(study.estimate, exponentiate)],
        [y],
        marker="s",
        s=12 + 110 * relative_weight,
        color=color,
        zorder=3,
    )
    ax.text(
        1.02,
        y,
        f"{_estimate_text(study.estimate, exponentiate)} "
        f"({_estimate_text(study.ci_low, exponentiate)} to "
        f"{_estimate_text(study.ci_high, exponentiate)})  {study.weight:.1f}%",
        transform=ax.get_yaxis_transform(),
        va="center",
        fontsize=7,
        color=color,
    )


def _draw_pooled(
    ax: Any, name: str, res: MetaResult, y: float, height: float, color: str, exponentiate: bool
) -> None:
    """The pooled estimate as a diamond spanning its 95 % CI, labelled with I² and τ²."""
    lo, est, hi = (_on_scale(v, exponentiate) for v in (res.ci_low, res.estimate, res.ci_high))
    ax.add_patch(
        Polygon(
            [(lo, y), (est, y + height), (hi, y), (est, y - height)],
            closed=True,
            color=color,
            zorder=3,
            label=f"{SET_NAMES.get(name, name)}: {_estimate_text(res.estimate, exponentiate)} "
            f"({_estimate_text(res.ci_low, exponentiate)} to "
            f"{_estimate_text(res.ci_high, exponentiate)}), "
            f"I² {res.I2:.0f}%, τ² {res.tau2:.3g}",
        )
    )


def _finish_axes(
    ax: Any,
    sets: Sequence[tuple[str, MetaResult]],
    ypos: Mapping[str, float],
    *,
    exponentiate: bool,
    xlabel: str,
    title: str | None,
) -> None:
    """Null line, (log) x axis with plain labels, study labels, column heading and legend."""
    rows = len(ypos)
    ax.axvline(1.0 if exponentiate else 0.0, color="#777777", lw=0.8, ls="--")
    if exponentiate:
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(MaxNLocator(6))
        ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.text(
        1.02,
        rows + 1.6,
        "estimate (95% CI)  weight",
        transform=ax.get_yaxis_transform(),
        va="center",
        fontsize=7,
    )
    ax.set_yticks([0.0, *ypos.values()], [POOLED[sets[0][1].method], *ypos.keys()])
    ax.set_ylim(-0.8, rows + 1.8)
    ax.set_xlabel(xlabel)
    ax.spines[["top", "right", "left"]].set_visible(False)
    ax.tick_params(axis="y", length=0)
    ax.legend(
        loc="upper center",
        bbox_to_anchor=(0.5, -0.18 if rows < 6 else -0.08),
        frameon=False,
        fontsize=8,
    )
    if title:
        ax.set_title(title)


def forest_pdf_bytes(
    sets: Sequence[tuple[str, MetaResult]],
    *,
    exponentiate: bool,
    xlabel: str,
    title: str | None = None,
) -> bytes:
    """The forest plot as reproducible vector PDF bytes (fonts embedded as TrueType)."""
    import matplotlib

    fig = forest_figure(sets, exponentiate=exponentiate, xlabel=xlabel, title=title)
    buf = io.BytesIO()
    with matplotlib.rc_context({"pdf.fonttype": 42}):
        fig.savefig(
            buf,
            format="pdf",
            metadata={"CreationDate": None, "Creator": "latent-synth"},
            bbox_inches="tight",
        )
    return buf.getvalue()


# ------------------------------------------------------------------------------ report: real vs
# synthetic


MARKER_SIZE = 6.5


def forest_png(
    rows: Sequence[tuple[str, float, float, float, float, float, float]], label: str, log: bool
) -> bytes:
    """Forest plot: per coefficient the real and the synthetic estimate with 95 % CI."""

    def draw(fig: Any) -> None:
        ax = fig.add_subplot(1, 1, 1)
        n = len(rows)
        for i, (_, re, rl, rh, se, sl, sh) in enumerate(rows):
            y = n - i
            _dot(ax, re, y + 0.15, rl, rh, "o", REAL, "real" if i == 0 else None)
            if np.isfinite(se):
                _dot(ax, se, y - 0.15, sl, sh, "s", SYNTH, "synthetic" if i == 0 else None)
        ax.axvline(1.0 if log else 0.0, color="0.5", lw=0.8)
        if log:
            _ratio_axis(ax, [v for r in rows for v in r[1:] if np.isfinite(v) and v > 0])
        ax.set_yticks([n - i for i in range(n)], [short_label(r[0], 22) for r in rows], fontsize=7)
        ax.set_ylim(0.4, n + 0.6)
        ax.set_xlabel(label)
        ax.legend(loc="best", fontsize=7)
        ax.grid(axis="x", alpha=0.3)
        set_margins(fig, 1.6, 0.15, 0.45, 0.1)

    return figure_png(draw, 6.4, 0.9 + 0.42 * max(1, len(rows)))


NICE_RATIOS = (
    0.1,
    0.2,
    0.25,
    0.33,
    0.5,
    0.67,
    0.8,
    0.9,
    1.0,
    1.1,
    1.25,
    1.5,
    2.0,
    3.0,
    4.0,
    5.0,
    10.0,
)


def _ratio_axis(ax: Any, values: list[float]) -> None:
    """Log scale with plain tick labels (0.8, 1, 1.25) instead of powers of ten."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    ax.set_xscale("log")
    lo, hi = (min(values), max(values)) if values else (0.5, 2.0)
    ticks = [t for t in NICE_RATIOS if lo / 1.05 <= t <= hi * 1.05] or [1.0]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_locator(NullLocator())


def _dot(
    ax: Any,
    x: float,
    y: float,
    low: float,
    high: float,
    marker: str,
    color: str,
    label: str | None,
) -> None:
    """One estimate with its interval; the dot stays visible where the interval is narrower."""
    ax.errorbar(
        [x],
        [y],
        xerr=[[x - low], [high - x]],
        fmt=marker,
        color=color,
        ms=MARKER_SIZE,
        mec="white",
        mew=0.6,
        capsize=2,
        zorder=3,
        label=label,
    )
