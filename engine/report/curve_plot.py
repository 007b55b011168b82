"""The privacy curve, drawn once for the wizard and the report: membership AUC against w.

Both attacks' mean AUC with error bars of one standard error of the mean (the selection rule
tests mean + one SE against the limit, so the bars show exactly what the rule compares), the
limit as a dashed line, and the chosen w (and, in the wizard, the w a person is trying) as
vertical lines. The function draws on a Matplotlib ``Axes`` it is given and computes nothing:
the wizard hands it its canvas's axes, the report an Agg figure's.

``curve`` is an audit result (anything with a ``curve`` attribute, its ``threshold`` is the
default limit) or a sequence of points. A point is an :class:`engine.privacy.audit.CurvePoint`,
an :class:`engine.progress.AuditPointDone` (the wizard's live partial results), a point of the
``curve`` list of ``audit.json``, or a tuple ``(w, distance AUC, SE, density AUC, SE)``.

References: METHOD.md section 5 (selection rule); matplotlib ``Axes.errorbar``.

Example:
    >>> from matplotlib.figure import Figure
    >>> ax = Figure().add_subplot()
    >>> draw_privacy_curve(ax, [(0.0, 0.50, 0.004, 0.51, 0.005), (0.5, 0.53, 0.006, 0.54, 0.007)],
    ...                    threshold=0.55, chosen_w=0.5)
    >>> "SE" in ax.get_title(), len(ax.containers)
    (True, 2)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["draw_privacy_curve", "privacy_curve_rows"]

DISTANCE = "#1f4e79"
DENSITY = "#7b3294"
LIMIT = "#c00000"
CHOSEN = "#2ca02c"
CANDIDATE = "#9467bd"
TITLE = "Membership AUC by w (mean ± SE)"

Row = tuple[float, float, float, float, float]


def _field(point: Any, *names: str) -> float:
    """The first of ``names`` the point has, as a float (NaN when it has none or it is None)."""
    for name in names:
        value = point.get(name) if isinstance(point, Mapping) else getattr(point, name, None)
        if value is not None:
            return float(value)
    return math.nan


def privacy_curve_rows(points: Iterable[Any]) -> list[Row]:
    """(w, distance AUC, its SE, density AUC, its SE) per point, sorted by w.

    Example:
        >>> from engine.progress import AuditPointDone
        >>> privacy_curve_rows([{"w": 0.5, "auc": 0.52, "auc_se": 0.01},
        ...                     AuditPointDone(0.0, 1, 0.5, 0.002, 0.51, 0.003, 3)])
        [(0.0, 0.5, 0.002, 0.51, 0.003), (0.5, 0.52, 0.01, nan, nan)]
    """
    rows: list[Row] = []
    for p in points:
        if isinstance(p, tuple):
            w, auc, se, dens, dens_se = (float(v) for v in (tuple(p) + (math.nan,) * 5)[:5])
        else:
            w, auc = _field(p, "w"), _field(p, "auc", "distance_auc")
            se = _field(p, "auc_se", "distance_se")
            dens, dens_se = _field(p, "density_auc"), _field(p, "density_auc_se", "density_se")
        rows.append((w, auc, se, dens, dens_se))
    return sorted(rows, key=lambda r: r[0])


def _finite(values: Sequence[float]) -> list[float]:
    return [v for v in values if math.isfinite(v)]


def draw_privacy_curve(
    ax: Any,
    curve: Any,
    *,
    threshold: float | None = None,
    chosen_w: float | None = None,
    chosen_label: str = "chosen w",
    candidate_w: float | None = None,
    pending: Sequence[float] = (),
    compact: bool = False,
) -> None:
    """Draw the privacy curve on ``ax`` (see the module docstring for ``curve``).

    ``threshold``: the AUC limit (default: ``curve.threshold``). ``chosen_w``: a vertical line
    labelled ``chosen_label``. ``candidate_w``: the w a person is trying, when it differs.
    ``pending``: w values attacked but not yet summarised (hollow markers at 0.5).
    ``compact``: small fonts for a wizard panel.
    """
    points = getattr(curve, "curve", curve)
    limit = threshold if threshold is not None else float(getattr(curve, "threshold", 0.55))
    rows = privacy_curve_rows(points or ())
    small = {"fontsize": 8} if compact else {}
    ax.set_title(TITLE, fontsize=9)
    ax.set_xlabel("w (0 = pure noise, 1 = the real data unchanged)", **small)
    ax.set_ylabel("membership AUC (0.5 = guessing)", **small)
    if compact:
        ax.tick_params(labelsize=7)
    ax.axhline(limit, color=LIMIT, ls="--", lw=1, label=f"limit {limit:g}")
    ax.axhline(0.5, color="0.7", lw=0.8)
    tops = [limit + 0.05, 0.6]
    lows = [0.45]
    if rows:
        w, auc, se, dens, dens_se = (list(col) for col in zip(*rows, strict=True))
        _bars(ax, w, auc, se, DISTANCE, "o", "distance attack (mean ± SE)")
        tops.append(max(_finite([a + s for a, s in zip(auc, _zero(se), strict=True)]), default=0))
        lows.append(min(_finite(auc), default=0.45) - 0.02)
        if _finite(dens):
            _bars(ax, w, dens, dens_se, DENSITY, "s", "density attack (mean ± SE)")
            top = max(_finite([a + s for a, s in zip(dens, _zero(dens_se), strict=True)]))
            tops.append(top)
            lows.append(min(_finite(dens)) - 0.02)
    else:
        ax.text(0.5, 0.3, "waiting for the audit", ha="center", va="center",
                transform=ax.transAxes, fontsize=8, color="grey")  # fmt: skip
    if pending:
        ax.plot(sorted(pending), [0.5] * len(pending), "o", mfc="none", color="grey", ms=6,
                label="w being attacked")  # fmt: skip
    if chosen_w is not None:
        ax.axvline(chosen_w, color=CHOSEN, lw=1.2, label=f"{chosen_label} = {chosen_w:.2f}")
    if candidate_w is not None and (chosen_w is None or abs(candidate_w - chosen_w) > 1e-9):
        ax.axvline(
            candidate_w, color=CANDIDATE, lw=1.2, ls="-.", label=f"your w = {candidate_w:.2f}"
        )
    ax.set_xlim(-0.02, 1.0)
    ax.set_ylim(min(lows), min(1.02, max(tops) + 0.02))
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=7)


def _zero(values: Sequence[float]) -> list[float]:
    """NaN standard errors (one repeat, or none recorded) drawn as no bar."""
    return [v if math.isfinite(v) else 0.0 for v in values]


def _bars(
    ax: Any, w: list[float], auc: list[float], se: list[float], color: str, marker: str, label: str
) -> None:
    ax.errorbar(w, auc, yerr=_zero(se), color=color, marker=marker, ms=3, capsize=2, lw=1.2,
                label=label)  # fmt: skip
