"""Forest plot of a meta-analysis (vector PDF) and Kaplan-Meier real vs synthetic (raster PNG).

Uses matplotlib's object API (``Figure`` + Agg/PDF canvases), never pyplot, so it sets no global
backend and is safe in worker threads. Summary estimates are not individual data, so the forest
plot may be vector; the Kaplan-Meier plot shows real data and is rendered as a raster image
(PITFALLS, Report). PDF bytes are reproducible (no creation date).

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
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Polygon
from matplotlib.ticker import FuncFormatter, MaxNLocator, NullLocator

if TYPE_CHECKING:
    from engine.stats.meta import MetaResult
    from engine.stats.models import KMComparison

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


def _fmt(value: float, exp: bool) -> str:
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
        >>> fig = forest_figure([("studies", pool([0.0, 0.2], [0.1, 0.1]))], exponentiate=False, xlabel="Estimate")
        >>> len(fig.axes)
        1
    """
    labels = _rows(sets)
    n_sets = len(sets)
    fig = Figure(figsize=(9.0, 1.8 + 0.32 * (len(labels) + 2) * max(1, n_sets * 0.7)))
    ax = fig.add_subplot(1, 1, 1)
    tr = (lambda v: np.exp(v)) if exponentiate else (lambda v: v)
    offsets = np.linspace(0.18, -0.18, n_sets) if n_sets > 1 else np.zeros(1)
    max_w = max(s.weight for _, r in sets for s in r.studies)
    ypos = {lab: len(labels) + 1 - i for i, lab in enumerate(labels)}
    for j, (name, res) in enumerate(sets):
        color = COLORS.get(name, "#333333")
        for i, s in enumerate(res.studies):
            lab = s.study if s.study in ypos else labels[i]
            y = ypos[lab] + offsets[j]
            ax.plot(tr([s.ci_low, s.ci_high]), [y, y], color=color, lw=1.0)
            ax.scatter(
                [tr(s.estimate)],
                [y],
                marker="s",
                s=12 + 110 * s.weight / max_w,
                color=color,
                zorder=3,
            )
            ax.text(
                1.02,
                y,
                f"{_fmt(s.estimate, exponentiate)} ({_fmt(s.ci_low, exponentiate)} to "
                f"{_fmt(s.ci_high, exponentiate)})  {s.weight:.1f}%",
                transform=ax.get_yaxis_transform(),
                va="center",
                fontsize=7,
                color=color,
            )
        y = 0.0 + offsets[j] * 2
        h = 0.25 if n_sets == 1 else 0.15
        lo, est, hi = tr(res.ci_low), tr(res.estimate), tr(res.ci_high)
        ax.add_patch(
            Polygon(
                [(lo, y), (est, y + h), (hi, y), (est, y - h)],
                closed=True,
                color=color,
                zorder=3,
                label=f"{SET_NAMES.get(name, name)}: {_fmt(res.estimate, exponentiate)} "
                f"({_fmt(res.ci_low, exponentiate)} to {_fmt(res.ci_high, exponentiate)}), "
                f"I² {res.I2:.0f}%, τ² {res.tau2:.3g}",
            )
        )
    ax.axvline(1.0 if exponentiate else 0.0, color="#777777", lw=0.8, ls="--")
    if exponentiate:
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(MaxNLocator(6))
        ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.text(
        1.02,
        len(labels) + 1.6,
        "estimate (95% CI)  weight",
        transform=ax.get_yaxis_transform(),
        va="center",
        fontsize=7,
    )
    ax.set_yticks([0.0, *ypos.values()], [POOLED[sets[0][1].method], *ypos.keys()])
    ax.set_ylim(-0.8, len(labels) + 1.8)
    ax.set_xlabel(xlabel)
    ax.spines[["top", "right", "left"]].set_visible(False)
    ax.tick_params(axis="y", length=0)
    ax.legend(
        loc="upper center",
        bbox_to_anchor=(0.5, -0.18 if len(labels) < 6 else -0.08),
        frameon=False,
        fontsize=8,
    )
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig


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


def km_png_bytes(km: KMComparison, *, dpi: int = 150, title: str | None = None) -> bytes:
    """Kaplan-Meier real vs synthetic as a PNG (raster: the real curve is real data).

    Example:
        >>> from lifelines.datasets import load_rossi
        >>> from engine.stats.models import km_comparison
        >>> d = load_rossi()
        >>> km_png_bytes(km_comparison(d, d, "week", "arrest"))[:4]
        b'\\x89PNG'
    """
    fig = Figure(figsize=(6.0, 4.0))
    ax = fig.add_subplot(1, 1, 1)
    ax.step(km.grid, km.real_survival, where="post", color=COLORS["real"], label="Real data")
    ax.step(
        km.grid,
        km.synth_survival,
        where="post",
        color=COLORS["synthetic"],
        ls="--",
        label="Synthetic data",
    )
    ax.set_xlabel("Time")
    ax.set_ylabel("Share without the event")
    ax.set_ylim(0, 1.02)
    ax.set_title(title or f"Kaplan-Meier, log-rank p = {km.logrank_p:.3g}")
    ax.legend(frameon=False)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()
