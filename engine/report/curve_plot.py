"""The privacy curve, drawn once for the wizard and the report: membership AUC against w.

For a finished audit (points that carry the fitted curves, :class:`engine.privacy.audit.
CurvePoint` or a point of ``audit.json``): the attack that decides drawn as its fitted curve
with its 95 % band (fit minus z SE up to the upper bound the rule tests, the release gap
included), the other attacks' fitted curves as thin lines and every attack's measured means as
dots; the limit as a dashed line; the chosen w as a vertical line with a marker where the
band's top meets it (what the rule compared with the limit). For live partial results (the
wizard's :class:`engine.progress.AuditPointDone`, no fit yet): both attacks' means with error
bars of one SE. The function draws on a Matplotlib ``Axes`` it is given and computes nothing:
the wizard hands it its canvas's axes, the report an Agg figure's.

``curve`` is an audit result (anything with a ``curve`` attribute, its ``threshold`` is the
default limit) or a sequence of points. A point is an :class:`engine.privacy.audit.CurvePoint`,
an :class:`engine.progress.AuditPointDone` (the wizard's live partial results), a point of the
``curve`` list of ``audit.json``, or a tuple ``(w, distance AUC, SE, density AUC, SE)``.

References: docs/method.md section 5 (selection rule); matplotlib ``Axes.errorbar``.

Example:
    >>> from matplotlib.figure import Figure
    >>> ax = Figure().add_subplot()
    >>> draw_privacy_curve(ax, [(0.0, 0.50, 0.004, 0.51, 0.005), (0.5, 0.53, 0.006, 0.54, 0.007)],
    ...                    threshold=0.55, chosen_w=0.5)
    >>> "SE" in ax.get_title(), len(ax.containers)
    (True, 2)
    >>> from engine.privacy.audit import CurvePoint
    >>> pts = [CurvePoint(w, a, 0, 0.004, 0, 0, a, 0, 0.004, 5, False, (), (), auc_fit=a,
    ...                   auc_fit_se=0.004, density_fit=a, density_fit_se=0.004,
    ...                   upper_distance=a + 0.007, upper_density=a + 0.007)
    ...        for w, a in [(0.0, 0.50), (0.5, 0.52), (0.8, 0.56)]]
    >>> ax = Figure().add_subplot()
    >>> draw_privacy_curve(ax, pts, threshold=0.55, chosen_w=0.5)
    >>> "95 %" in ax.get_title(), len(ax.collections) >= 1
    (True, True)
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
TITLE_FIT = "Membership AUC by w: the deciding attack with its 95 % band"
RELEASED = "#e6550d"
COLOURS = {"distance": DISTANCE, "density": DENSITY, "released": RELEASED}
WORDS = {
    "distance": "distance attack",
    "density": "density attack",
    "released": "released-columns attack",
}
FIELDS = {
    "distance": ("auc", "auc_fit", "auc_fit_se", "upper_distance"),
    "density": ("density_auc", "density_fit", "density_fit_se", "upper_density"),
    "released": ("released_auc", "released_fit", "released_fit_se", "upper_released"),
}

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
    if points and all(math.isfinite(_field(p, "auc_fit")) for p in points):
        _draw_fitted(ax, curve, list(points), limit, chosen_w, chosen_label, candidate_w, compact)
        return
    rows = privacy_curve_rows(points or ())
    _frame(ax, TITLE, limit, compact)
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
        ax.text(
            0.5,
            0.3,
            "waiting for the audit",
            ha="center",
            va="center",
            transform=ax.transAxes,
            fontsize=8,
            color="grey",
        )
    if pending:
        ax.plot(
            sorted(pending),
            [0.5] * len(pending),
            "o",
            mfc="none",
            color="grey",
            ms=6,
            label="w being attacked",
        )
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


def _frame(ax: Any, title: str, limit: float, compact: bool) -> None:
    """Title, axis labels, the limit and the chance line (both drawings)."""
    small = {"fontsize": 8} if compact else {}
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("w (0 = pure noise, 1 = the real data unchanged)", **small)
    ax.set_ylabel("membership AUC (0.5 = guessing)", **small)
    if compact:
        ax.tick_params(labelsize=7)
    ax.axhline(limit, color=LIMIT, ls="--", lw=1, label=f"limit {limit:g}")
    ax.axhline(0.5, color="0.7", lw=0.8)


def deciding_attack(curve: Any, points: Sequence[Any], w: float | None) -> str:
    """The attack that decides at ``w`` (at a refusal, ``w`` None: at the smallest w): the
    audit's own answer where ``curve`` is an audit, else the highest stored bound there."""
    binding = getattr(curve, "binding", None)
    if callable(binding):
        found = binding(w)
        if found is not None:
            return str(found.attack)
    at = min(points, key=lambda p: abs(_field(p, "w") - (w if w is not None else -1.0)))
    bounds = {a: _field(at, FIELDS[a][3]) for a in FIELDS}
    finite = {a: b for a, b in bounds.items() if math.isfinite(b)}
    return max(finite, key=lambda a: finite[a]) if finite else "distance"


def _draw_fitted(
    ax: Any,
    curve: Any,
    points: list[Any],
    limit: float,
    chosen_w: float | None,
    chosen_label: str,
    candidate_w: float | None,
    compact: bool,
) -> None:
    """The finished audit's drawing (module docstring)."""
    z = float(getattr(curve, "z", 1.6449) or 1.6449)
    pts = sorted(points, key=lambda p: _field(p, "w"))
    ws = [_field(p, "w") for p in pts]
    _frame(ax, TITLE_FIT, limit, compact)
    deciding = deciding_attack(curve, pts, chosen_w)
    tops, lows = [limit + 0.03, 0.56], [0.47]
    for attack, (raw, fit, se, upper) in FIELDS.items():
        fits = [_field(p, fit) for p in pts]
        if not any(math.isfinite(f) for f in fits):
            continue
        colour = COLOURS[attack]
        means = [_field(p, raw) for p in pts]
        ax.plot(ws, means, ".", color=colour, ms=3, alpha=0.6)
        if attack == deciding:
            ups = [_field(p, upper) for p in pts]
            downs = [f - z * _field(p, se) for f, p in zip(fits, pts, strict=True)]
            ax.fill_between(
                ws,
                downs,
                ups,
                color=colour,
                alpha=0.22,
                lw=0,
                label=f"{WORDS[attack]}: 95 % band (decides)",
            )
            ax.plot(ws, fits, "-", color=colour, lw=1.6, label=f"{WORDS[attack]}: fitted curve")
            tops.append(max(_finite(ups), default=0.0))
            lows.append(min(_finite(downs), default=0.47))
        else:
            ax.plot(ws, fits, "-", color=colour, lw=0.9, alpha=0.7, label=WORDS[attack])
        tops.append(max(_finite(fits), default=0.0))
        lows.append(min(_finite(means), default=0.47))
    if chosen_w is not None:
        ax.axvline(chosen_w, color=CHOSEN, lw=1.2, label=f"{chosen_label} = {chosen_w:.2f}")
        at = min(pts, key=lambda p: abs(_field(p, "w") - chosen_w))
        top = _field(at, FIELDS[deciding][3])
        if math.isfinite(top):
            ax.plot(
                [_field(at, "w")],
                [top],
                "v",
                color=CHOSEN,
                ms=6,
                label=f"band's top there: {top:.3f}",
            )
    if candidate_w is not None and (chosen_w is None or abs(candidate_w - chosen_w) > 1e-9):
        ax.axvline(
            candidate_w, color=CANDIDATE, lw=1.2, ls="-.", label=f"your w = {candidate_w:.2f}"
        )
    ax.set_xlim(-0.02, 1.0)
    ax.set_ylim(max(0.3, min(lows) - 0.01), min(1.02, max(tops) + 0.02))
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=7)


def _zero(values: Sequence[float]) -> list[float]:
    """NaN standard errors (one repeat, or none recorded) drawn as no bar."""
    return [v if math.isfinite(v) else 0.0 for v in values]


def _bars(
    ax: Any, w: list[float], auc: list[float], se: list[float], color: str, marker: str, label: str
) -> None:
    ax.errorbar(
        w, auc, yerr=_zero(se), color=color, marker=marker, ms=3, capsize=2, lw=1.2, label=label
    )
