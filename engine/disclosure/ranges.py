"""Where a value read from the real data may lie: bounds, quantiles and the Kaplan-Meier grid.

No shown or synthesized value may reproduce a real extreme that fewer than 10 people hold: a
column's default range is its 10th smallest to 10th largest value (:func:`safe_bounds`), a shown
quartile or whisker is pulled in likewise (:func:`safe_quantile`), and a real survival curve is
read only on :func:`coarse_km_grid`, whose every step holds 0 or at least 10 real events and which
ends (rounded down, :func:`nice_floor`) where 10 real records remain at risk. One module because
the three rules are the same rule (at least 10 rows at or beyond every value) for three readers.

References: Griffiths et al. (2019) "Handbook on Statistical Disclosure Control for Outputs",
graphs and "dominance"/extreme values; docs/contracts.md, last paragraph.

Example:
    >>> safe_bounds(range(100)), nice_floor(17.26)
    ((9.0, 90.0), 17.0)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from engine.disclosure.counts import THRESHOLD


def safe_bounds(values: Any, k: int = THRESHOLD) -> tuple[float | None, float | None]:
    """The k-th smallest and k-th largest value (k = 10), so at least k real rows lie at or
    beyond each bound. With fewer than 2k values (not reachable for a synthesized column, which
    needs 50 complete rows) the range shrinks to the middle value(s).

    Example:
        >>> safe_bounds([21] + [50] * 30 + [18]), safe_bounds([1.0, 2.0, 3.0]), safe_bounds([])
        ((50.0, 50.0), (2.0, 2.0), (None, None))
    """
    v = np.sort(pd.to_numeric(pd.Series(values), errors="coerce").dropna().to_numpy(float))
    if v.size == 0:
        return None, None
    k = min(k, (v.size + 1) // 2)
    return float(v[k - 1]), float(v[v.size - k])


def safe_quantile(values: Any, q: float, k: int = THRESHOLD) -> float | None:
    """The ``q`` quantile, pulled in to the k-th smallest / k-th largest value where fewer than
    k rows lie at or beyond it (a 5th percentile of 150 rows lies beyond only 7 of them), so at
    least k real rows lie at or beyond every value shown. None with fewer than 2k values.

    Example:
        >>> v = np.arange(150.0)
        >>> float(np.quantile(v, 0.05)), safe_quantile(v, 0.05), safe_quantile(v, 0.5)
        (7.45, 9.0, 74.5)
    """
    v = np.sort(pd.to_numeric(pd.Series(values), errors="coerce").dropna().to_numpy(float))
    if v.size < 2 * k:
        return None
    x = float(np.quantile(v, q))
    return float(min(max(x, v[k - 1]), v[v.size - k]))


def nice_floor(x: float) -> float:
    """Round ``x`` down to 2 significant digits so no plotted time equals an individual's.

    Example:
        >>> nice_floor(17.26), nice_floor(0.0)
        (17.0, 0.0)
    """
    if x <= 0 or not math.isfinite(x):
        return 0.0
    step = 10 ** (math.floor(math.log10(x)) - 1)
    return float(round(math.floor(x / step) * step, 12))


def coarse_km_grid(time: np.ndarray, event: np.ndarray, *, intervals: int = 12) -> np.ndarray:
    """Grid times from 0 to where >= 10 real records are still at risk (rounded down).

    Starts with ``intervals`` equal steps; an interval holding 1-9 real events is merged with the
    next one, so every drop of the real curve read on it reflects 0 or at least 10 events. The
    last point is the 10th largest time rounded down to 2 significant digits, not one patient's.
    A last interval with 1-9 events is merged with the one before it, so the grid still reaches
    that point (issue 44: dropping it cut a 60-row table's axis to 0-140 of 1,627 days of
    follow-up); only with fewer than 10 events before it in all is nothing left but the origin.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> t = rng.exponential(10, 500); e = rng.random(500) < 0.5
        >>> g = coarse_km_grid(t, e)
        >>> counts = np.histogram(t[e], bins=g)[0]
        >>> bool(g[0] == 0 and ((counts == 0) | (counts >= 10)).all())
        True
    """
    order = np.sort(np.asarray(time, dtype=float))
    if len(order) < THRESHOLD:
        return np.array([0.0])
    end = nice_floor(float(order[len(order) - THRESHOLD]))
    if end <= 0:
        return np.array([0.0])
    edges = list(np.linspace(0.0, end, intervals + 1))
    ev = np.sort(np.asarray(time, dtype=float)[np.asarray(event).astype(bool)])
    i = 1
    while i < len(edges):
        n = int(np.searchsorted(ev, edges[i], "right") - np.searchsorted(ev, edges[i - 1], "right"))
        if 0 < n < THRESHOLD:
            if i < len(edges) - 1:
                del edges[i]  # merge with the next interval
            elif i > 1:
                del edges[i - 1]  # the last: merge with the one before, keeping the end
                i -= 1
            else:
                del edges[i]  # one interval of 1-9 events in all: nothing can be shown
            continue
        i += 1
    return np.array(edges, dtype=float)
