"""The choice of w from the audit's measurements: each attack's AUC fitted as one rising curve
over w, the standard error of that fit, an upper confidence bound, and the decision.

The audit (:mod:`engine.privacy.crossfit`) measures each attack's membership AUC at every w on
independent *units*: the cross-fitted split models (each real row a non-member once per round),
or, on a table audited on one split, the repeats of fresh noise. Common random numbers make a
unit's curve smooth in w (the same latent noise at every w), so its points differ by the effect
of w alone. Here:

1. **Monotone fit.** The risk rises with w (a larger w keeps more of each record), so each
   attack's mean AUC is fitted by isotonic regression over w (pool-adjacent-violators, weighted
   by the units at each w): a noisy point in a flat stretch is pooled with its neighbours
   instead of stopping the choice there.
2. **Its standard error.** A fitted value is the mean of a block of w; per unit, the block's
   AUCs are averaged, and the SE is the spread of those unit averages over sqrt(units). The SE
   of a flat stretch is therefore pooled over all its points.
3. **The bound and the choice.** ``upper(w) = fit(w) + gap + z SE(w)`` for every deciding
   attack (``gap``: the measured difference between the audit's split models and the released
   model, on the released-columns attack above the smallest w), z = 1.645 (one-sided 95 %).
   The chosen w is the largest w such that it and every smaller w have every attack's bound
   below the limit.
4. **Refusal.** Only the floor (the Gaussian copula) at the smallest w can refuse, and only when
   its bound is over the limit while its fitted AUC is not clearly at chance: a point estimate
   under ``limit - REFUSAL_MARGIN`` (0.53 for 0.55) whose bound is over the limit says the
   audit cannot tell, not that the model leaks. Such a table is released at the smallest w (a
   fresh sample from the copula) with the spread stated (``Decision.uncertain``).

Why by hand: scipy's ``isotonic_regression`` does the fit; the pooled SE of a fitted block and
the rule on top are specific to this audit.

References: METHOD.md section 5; Barlow et al. (1972) isotonic regression; Glasserman & Yao
(1992) common random numbers; Hanley & McNeil (1982) on the spread of an AUC.

Example:
    >>> ws = (0.0, 0.5, 0.7, 0.9)
    >>> units = np.array([[0.50, 0.52, 0.56, 0.70], [0.51, 0.50, 0.55, 0.72],
    ...                   [0.49, 0.51, 0.57, 0.69]])
    >>> fit = monotone_fit(ws, units)
    >>> [round(v, 3) for v in fit.fit]
    [0.5, 0.51, 0.56, 0.703]
    >>> decide({"distance": fit}, threshold=0.55).w
    0.5
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import isotonic_regression

Z_UPPER = 1.6449  # one-sided 95 % upper confidence bound on the expected AUC
SE_TARGET = 0.005  # the audit adds units until the SE at the decision is at most this
REFUSAL_MARGIN = 0.02  # the floor refuses only when its fitted AUC is at least limit - this


@dataclass(frozen=True)
class FittedCurve:
    """One attack's AUC over w: the raw mean per w, the monotone fit, its SE, units per w."""

    ws: tuple[float, ...]
    raw: tuple[float, ...]
    fit: tuple[float, ...]
    se: tuple[float, ...]
    units: tuple[int, ...]
    raw_se: tuple[float, ...] = ()  # SE of each raw mean over its units (NaN with one unit)

    def at(self, w: float) -> tuple[float, float]:
        """(fitted AUC, its SE) at the evaluated w nearest ``w``."""
        i = int(np.argmin([abs(x - w) for x in self.ws]))
        return self.fit[i], self.se[i]


def monotone_fit(ws: Sequence[float], values: np.ndarray) -> FittedCurve:
    """Isotonic fit of the unit means over ``ws`` and the pooled SE of each fitted block.

    ``values``: units x len(ws), NaN where a unit did not measure that w. A block's SE is the
    SD over units of each unit's mean over the block's w (units with at least one of them),
    over sqrt(units); NaN with fewer than two units.

    Example:
        >>> f = monotone_fit((0.0, 0.1, 0.2), np.array([[0.5, 0.54, 0.5], [0.52, 0.52, 0.52]]))
        >>> [round(v, 3) for v in f.fit], [round(s, 4) for s in f.se]
        ([0.51, 0.52, 0.52], [0.01, 0.0, 0.0])
    """
    v = np.asarray(values, dtype=np.float64).reshape(-1, len(ws))
    order = np.argsort(ws, kind="stable")
    ws_sorted = [float(ws[i]) for i in order]
    v = v[:, order]
    present = np.isfinite(v)
    counts = present.sum(axis=0)
    if (counts == 0).any():
        raise ValueError("monotone_fit: every w needs at least one measurement")
    raw = np.nanmean(v, axis=0)
    res = isotonic_regression(raw, weights=counts.astype(np.float64), increasing=True)
    fit = np.asarray(res.x, dtype=np.float64)
    se = np.empty(len(ws_sorted))
    for lo, hi in zip(res.blocks[:-1], res.blocks[1:], strict=True):
        se[lo:hi] = _block_se(v[:, lo:hi])
    raw_se = [_block_se(v[:, j : j + 1]) for j in range(len(ws_sorted))]
    return FittedCurve(
        tuple(ws_sorted),
        tuple(float(x) for x in raw),
        tuple(float(x) for x in fit),
        tuple(float(x) for x in se),
        tuple(int(c) for c in counts),
        tuple(raw_se),
    )


def _block_se(block: np.ndarray) -> float:
    """SE of the block's mean: each unit's mean over the w it measured, their SD / sqrt(n)."""
    seen = np.isfinite(block).any(axis=1)
    if seen.sum() < 2:
        return math.nan
    unit_means = np.nanmean(block[seen], axis=1)
    return float(unit_means.std(ddof=1) / math.sqrt(len(unit_means)))


@dataclass(frozen=True)
class Decision:
    """The chosen w (None: refused) and what decided it.

    ``attack``: the attack whose bound is highest at ``w`` (at a refusal: at the smallest w);
    ``fit``/``se``/``upper``: its fitted AUC, the SE of the fit and its bound there;
    ``uncertain``: released at the smallest w although the bound is over the limit, because
    the fitted AUC is under ``limit - REFUSAL_MARGIN`` (the audit cannot tell);
    ``bounds``: every evaluated w with the highest bound of any attack."""

    w: float | None
    attack: str
    fit: float
    se: float
    upper: float
    uncertain: bool = False
    bounds: tuple[tuple[float, float], ...] = ()

    def to_dict(self) -> dict:
        """JSON-safe dict for ``audit.json``'s ``decision`` block."""
        return {
            "w": self.w,
            "attack": self.attack,
            "fitted_auc": self.fit,
            "se": self.se,
            "upper_bound": self.upper,
            "uncertain": self.uncertain,
        }


def bounds_at(
    curves: Mapping[str, FittedCurve],
    w: float,
    *,
    gap: float = 0.0,
    z: float = Z_UPPER,
    smallest: float = 0.0,
) -> dict[str, float]:
    """Each attack's upper bound at ``w``: fit + z SE, plus ``gap`` on the released attack above
    ``smallest`` (there the release is a fresh sample, as in the audit). A NaN SE counts as
    infinite (a bound that cannot be computed does not pass).

    Example:
        >>> f = FittedCurve((0.0, 0.5), (0.5, 0.52), (0.5, 0.52), (0.004, 0.005), (5, 5))
        >>> {k: round(v, 4) for k, v in bounds_at({"released": f}, 0.5, gap=0.01).items()}
        {'released': 0.5382}
    """
    out = {}
    for attack, curve in curves.items():
        fit, se = curve.at(w)
        extra = gap if attack == "released" and w > smallest + 1e-12 else 0.0
        out[attack] = fit + extra + z * (se if math.isfinite(se) else math.inf)
    return out


def decide(
    curves: Mapping[str, FittedCurve],
    threshold: float,
    *,
    gap: float = 0.0,
    z: float = Z_UPPER,
    floor: bool = True,
    margin: float = REFUSAL_MARGIN,
) -> Decision:
    """The largest evaluated w whose every attack's bound, and every smaller w's, is below
    ``threshold`` (module docstring). When the smallest w fails: for the ``floor``, released
    there anyway (``uncertain``) if its highest fitted AUC is under ``threshold - margin``,
    else refused (``w`` None); a candidate that is not the floor is refused (the family then
    tries the next one).

    Example:
        >>> flat = FittedCurve((0.0,), (0.525,), (0.525,), (0.02,), (12,))
        >>> d = decide({"distance": flat}, 0.55)
        >>> d.w, d.uncertain, round(d.upper, 3)
        (0.0, True, 0.558)
        >>> decide({"distance": flat}, 0.55, floor=False).w is None
        True
    """
    ws = sorted(set().union(*(c.ws for c in curves.values())))
    smallest = ws[0]
    rows = []
    for w in ws:
        b = bounds_at(curves, w, gap=gap, z=z, smallest=smallest)
        attack = max(b, key=lambda a: b[a])
        rows.append((w, attack, b[attack]))
    chosen = None
    for w, attack, upper in rows:
        if not upper < threshold:
            break
        chosen = (w, attack, upper)
    if chosen is None:
        w, attack, upper = rows[0]
        fit, se = curves[attack].at(w)
        point = max(c.at(w)[0] for c in curves.values())
        released = floor and point < threshold - margin
        return Decision(w if released else None, attack, fit, se, upper, released, _bounds(rows))
    w, attack, upper = chosen
    fit, se = curves[attack].at(w)
    return Decision(w, attack, fit, se, upper, False, _bounds(rows))


def _bounds(rows: list[tuple[float, str, float]]) -> tuple[tuple[float, float], ...]:
    return tuple((w, upper) for w, _, upper in rows)


def se_at(curves: Mapping[str, FittedCurve], w: float) -> float:
    """The largest SE of any attack's fit at ``w`` (what the SE target is tested on)."""
    return max(c.at(w)[1] for c in curves.values())


def rule_words(threshold: float, attacks: Sequence[str], gap: float, z: float = Z_UPPER) -> str:
    """The decision rule in plain words (no symbols a reader must decode)."""
    names = {
        "distance": "the distance to the closest synthetic row",
        "density": "the density ratio synthetic/reference",
        "released": "the distance to the closest released row on the released columns",
    }
    which = ", ".join(names[a] for a in attacks)
    level = "95 %" if abs(z - Z_UPPER) < 1e-3 else f"z = {z:g}"
    text = (
        f"the largest w at which, for it and every smaller w, the {level} upper confidence bound "
        f"of each attack's expected AUC stays below {threshold:g} ({which}); each attack's AUC "
        "is fitted as one curve that rises with w, over every split and repeat"
    )
    if gap > 0 and "released" in attacks:
        text += (
            f", and {gap:g} is added to the released-columns attack above the smallest w (the "
            "gap measured between the audit's models and the released one)"
        )
    return text
