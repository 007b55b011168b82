"""What the PDF report may show: small-count suppression and aggregates of the real table.

The report goes through an output checker, so everything in it that derives from real records
follows the ACRO defaults (threshold 10):

* a count below 10 (zero included) is printed as ``"< 10"`` (:func:`safe_count`);
* no statistic describes fewer than 10 records (level shares, Kaplan-Meier steps, TPR at a
  false-positive rate that fewer than 10 non-members reach are suppressed);
* figures of real data are drawn from aggregates computed here (box-plot quantiles, Kaplan-Meier
  survival on a coarse grid whose every step holds 0 or at least 10 real events), never from
  individual rows, and are embedded as raster images by :mod:`engine.report.figures`.

A number that is missing or not finite prints as "not available" (:func:`decimals`).

References:
    ACRO (AI-SDC/ACRO) default rules: threshold 10, zeros suppressed; Griffiths et al. (2019)
    "Handbook on Statistical Disclosure Control for Outputs" (SDC Handbook), sections on
    frequency tables and graphs; Kaplan & Meier (1958).

Example:
    >>> safe_count(3), safe_count(0), safe_count(12345)
    ('< 10', '< 10', '12,345')
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from engine.disclosure import (  # noqa: F401  # the one set of disclosure rules, re-exported here
    NOT_AVAILABLE,
    THRESHOLD,
    coarse_km_grid,
    finite,
    nice_floor,
    safe_count,
    safe_quantile,
    safe_roc,
    suppressed_levels,
)

BOX_QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)


def decimals(value: Any, digits: int = 3, default: str = NOT_AVAILABLE) -> str:
    """A number with ``digits`` decimals, or ``default`` when it is missing or not finite.

    Example:
        >>> decimals(0.51234), decimals(None), decimals(2, 2)
        ('0.512', 'not available', '2.00')
    """
    value = finite(value)
    return default if value is None else f"{value:.{digits}f}"


def percent(share: Any, digits: int = 1) -> str:
    """A share in [0, 1] as a percentage (``"97.0 %"``), or "not available".

    Example:
        >>> percent(0.0234), percent(None)
        ('2.3 %', 'not available')
    """
    value = finite(share)
    return NOT_AVAILABLE if value is None else f"{100 * value:.{digits}f} %"


def plain(value: Any, digits: int = 3) -> str:
    """A number to ``digits`` significant figures as a reader writes it, never in scientific
    notation (issue 33: "1.01e+03" or "6.22 × 10⁻⁶" mean nothing to a checker who has not read
    the paper): thousands separated, millions and billions in words, tiny values as "in a
    million" (or "in a billion").

    Example:
        >>> plain(1010.4), plain(107.72), plain(0.5), plain(0.00333), plain(6.22e-6)
        ('1,010', '108', '0.5', '0.00333', '6.22 in a million')
        >>> plain(2.5e7), plain(3e-11), plain(0)
        ('25.0 million', 'less than 1 in a billion', '0')
    """
    v = finite(value)
    if v is None:
        return NOT_AVAILABLE
    if v == 0:
        return "0"
    sign, a = ("-" if v < 0 else ""), abs(v)
    if a >= 1e9:
        return f"{sign}{a / 1e9:,.{max(digits - 2, 0)}f} billion"
    if a >= 1e6:
        return f"{sign}{a / 1e6:,.{max(digits - 2, 0)}f} million"
    if a < 1e-9:
        return f"{sign}less than 1 in a billion"
    if a < 1e-6:
        return f"{sign}{a * 1e9:.{digits}g} in a billion"
    if a < 1e-4:
        return f"{sign}{a * 1e6:.{digits}g} in a million"
    exp = math.floor(math.log10(a))
    places = max(digits - 1 - exp, 0)
    shown = f"{round(a, places):,.{places}f}"
    return sign + (shown.rstrip("0").rstrip(".") if "." in shown else shown)


# ------------------------------------------------------------------------------ box plots


@dataclass(frozen=True)
class BoxStats:
    """Quantiles for one box (5th, 25th, 50th, 75th, 95th percentile) of one table's column."""

    label: str
    q05: float
    q25: float
    median: float
    q75: float
    q95: float

    def to_bxp(self) -> dict[str, Any]:
        """The dict ``matplotlib.axes.Axes.bxp`` draws (whiskers at the 5th/95th percentile)."""
        return {
            "label": self.label,
            "whislo": self.q05,
            "q1": self.q25,
            "med": self.median,
            "q3": self.q75,
            "whishi": self.q95,
            "fliers": [],
        }


def box_stats(values: Any, label: str) -> BoxStats | None:
    """Box quantiles of ``values`` (missing left out); None with fewer than 20 values. Each is
    :func:`engine.disclosure.safe_quantile`: a whisker is pulled in to the 10th smallest
    (largest) value where fewer than 10 rows lie beyond the 5th (95th) percentile (n < 200).

    Example:
        >>> b = box_stats(np.arange(101.0), "real")
        >>> b.q05, b.median, b.q95
        (9.0, 50.0, 91.0)
    """
    q = [safe_quantile(values, p) for p in BOX_QUANTILES]
    if any(x is None for x in q):
        return None
    return BoxStats(label, *(float(x) for x in q if x is not None))


# ------------------------------------------------------------------------------ level shares


def level_shares(real: pd.Series, synth: pd.Series | None) -> list[tuple[str, str, str]]:
    """(level, real share, synthetic share) per level; shares of fewer than 10 rows suppressed.

    A level's real share is shown only when at least 10 real rows have it, and not when 100 %
    minus the shown shares would reveal the hidden ones
    (:func:`engine.disclosure.suppressed_levels`: the next smallest level is hidden too); the
    synthetic side follows the same rules.

    Example:
        >>> level_shares(pd.Series(["a"] * 95 + ["b"] * 5), pd.Series(["a"] * 90 + ["b"] * 10))
        [('a', 'not shown', '90.0 %'), ('b', '< 10 rows', '10.0 %')]
        >>> level_shares(pd.Series(["a"] * 50 + ["b"] * 45 + ["c"] * 5), None)[1:]
        [('b', 'not shown', 'not available'), ('c', '< 10 rows', 'not available')]
    """
    rows = []
    r = real.dropna().astype(str)
    s = synth.dropna().astype(str) if synth is not None else pd.Series([], dtype=str)
    rc, sc = r.value_counts(), s.value_counts()
    hide_r = suppressed_levels({k: int(v) for k, v in rc.items()})
    hide_s = suppressed_levels({k: int(v) for k, v in sc.items()})
    for level in sorted(set(rc.index) | set(sc.index)):
        rows.append(
            (
                level,
                _share(rc.get(level, 0), len(r), level in hide_r),
                _share(sc.get(level, 0), len(s), level in hide_s),
            )
        )
    return rows


def _share(count: int, total: int, hidden: bool = False) -> str:
    if total == 0:
        return NOT_AVAILABLE
    if hidden or count < THRESHOLD:
        return f"< {THRESHOLD} rows" if count < THRESHOLD else "not shown"
    return percent(count / total)


# ------------------------------------------------------------------------------ Kaplan-Meier


@dataclass(frozen=True)
class KMCurves:
    """Survival of both tables at the same coarse times (step function, right-continuous)."""

    times: tuple[float, ...]
    real: tuple[float, ...]
    synthetic: tuple[float, ...]
    note: str


def km_curves(
    real: pd.DataFrame, synth: pd.DataFrame | None, time: str, event: str
) -> KMCurves | None:
    """Kaplan-Meier survival of real and synthetic on :func:`coarse_km_grid` of the real table.

    Example:
        >>> rng = np.random.default_rng(1)
        >>> t = rng.exponential(10, 400)
        >>> d = pd.DataFrame({"t": t, "e": (rng.random(400) < .6).astype(int)})
        >>> km = km_curves(d, d, "t", "e")
        >>> km.real == km.synthetic, km.real[0]
        (True, 1.0)
    """
    from lifelines import KaplanMeierFitter

    if real is None or time not in real.columns or event not in real.columns:
        return None
    r = real[[time, event]].dropna().astype(float)
    grid = coarse_km_grid(r[time].to_numpy(), r[event].to_numpy())
    if len(grid) < 2:
        return None
    curves = []
    for df in (r, synth):
        if df is None or time not in df.columns or event not in df.columns:
            curves.append(tuple(float("nan") for _ in grid))
            continue
        d = df[[time, event]].dropna().astype(float)
        km = KaplanMeierFitter().fit(d[time].to_numpy(), d[event].to_numpy())
        curves.append(tuple(float(v) for v in km.survival_function_at_times(grid).to_numpy()))
    note = (
        f"Survival read at {len(grid)} times from 0 to {grid[-1]:g} (where at least "
        f"{THRESHOLD} real records are still followed up); every drop of the real curve "
        f"reflects no event or at least {THRESHOLD} events."
    )
    return KMCurves(tuple(float(g) for g in grid), curves[0], curves[1], note)


def roc_on_grid(
    fpr: Sequence[float],
    tpr: Sequence[float],
    non_members: int | None,
    points: int = 50,
    members: int | None = None,
) -> tuple[np.ndarray, np.ndarray] | None:
    """An ROC curve re-read on a false-positive-rate grid whose steps hold >= 10 non-members
    (and, with ``members`` known, whose every rise holds 0 or >= 10 members:
    :func:`engine.disclosure.safe_roc`, the rule ``audit.json`` follows). None when the curve
    is not usable.

    Example:
        >>> f, t = roc_on_grid([0, .5, 1], [0, .7, 1], non_members=100, points=10)
        >>> len(f), float(t[-1])
        (11, 1.0)
    """
    try:
        f = np.asarray(fpr, dtype=float)
        t = np.asarray(tpr, dtype=float)
    except (TypeError, ValueError):
        return None
    if f.ndim != 1 or f.shape != t.shape or len(f) < 2:
        return None
    if members and non_members:
        safe_fpr, safe_tpr = safe_roc(f, t, members, non_members, points)
        return np.asarray(safe_fpr), np.asarray(safe_tpr)
    order = np.argsort(f, kind="stable")
    step = 1.0 / points
    if non_members:
        step = max(step, THRESHOLD / non_members)
    grid = np.unique(np.append(np.arange(0.0, 1.0, step), 1.0))
    return grid, np.interp(grid, f[order], t[order])


def low_fpr_tpr(tpr: Any, fpr_level: float, non_members: int | None) -> str:
    """TPR at a false-positive rate, or why it is not shown (fewer than 10 non-members there,
    or withheld in ``audit.json`` already).

    Example:
        >>> low_fpr_tpr(0.031, 0.01, 2000), low_fpr_tpr(0.031, 0.001, 2000)
        ('0.031', 'n < 10')
    """
    if non_members is not None and fpr_level * non_members < THRESHOLD:
        return f"n < {THRESHOLD}"
    if isinstance(tpr, str) and tpr.startswith("not shown"):
        return f"n < {THRESHOLD}"
    return decimals(tpr)
