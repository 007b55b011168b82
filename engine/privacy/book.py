"""The audit's measurements of one candidate (:class:`Book`: its splits and every score by
(split, repeat, w)), their decoding (:func:`decoded`: one pass for a small split, the next point
on a thread for a large one), the progress of each point (:func:`report_point`) and the curve
they make (:func:`curve_points`: raw means, the fitted curves, their SEs and the bounds). The
driver that fills a book is :mod:`engine.privacy.crossfit`.

References: METHOD.md section 5.

Example:
    >>> b = Book("model", True)
    >>> b.round_count, b.ws()
    (0, [])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.privacy.attacks import ROC_FPR, Split, draw_common
from engine.privacy.decision import FittedCurve, bounds_at, monotone_fit
from engine.privacy.measure import CurvePoint, Score
from engine.progress import AuditPointDone, CancelToken, ProgressFn, report

BATCH_ROWS = 16_384  # synthetic rows decoded in one pass (a larger split: one point a pass)


@dataclass
class Book:
    """One candidate's measurements: its splits (``rounds[i]``: the round of ``splits[i]``),
    the repeats each split gets on the deciding range, and every :class:`Score` by (split,
    repeat, w)."""

    label: str
    floor: bool
    splits: list[Split] = field(default_factory=list)
    rounds: list[int] = field(default_factory=list)
    reps: int = 1
    scores: dict[tuple[int, int, float], Score] = field(default_factory=dict)
    refined: set[float] = field(default_factory=set)

    @property
    def round_count(self) -> int:
        return max(self.rounds) + 1 if self.rounds else 0

    def ws(self) -> list[float]:
        return sorted({w for _, _, w in self.scores})

    def values(self, attack: str, ws: Sequence[float]) -> np.ndarray:
        """Units x ws of ``attack``'s AUC: the splits (each its mean over repeats) when there
        are two or more, else the repeats of the one split; NaN where not measured."""
        col = {w: j for j, w in enumerate(ws)}
        if len(self.splits) >= 2:
            sums = np.zeros((len(self.splits), len(ws)))
            counts = np.zeros_like(sums)
            for (s, _, w), sc in self.scores.items():
                if w in col:
                    sums[s, col[w]] += getattr(sc, attack)
                    counts[s, col[w]] += 1
            with np.errstate(invalid="ignore"):
                return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
        reps = 1 + max((r for _, r, _ in self.scores), default=0)
        out = np.full((reps, len(ws)), np.nan)
        for (_, r, w), sc in self.scores.items():
            if w in col:
                out[r, col[w]] = getattr(sc, attack)
        return out

    def curves(self, attacks: Sequence[str], ws: Sequence[float] | None = None) -> dict:
        ws = list(ws) if ws is not None else self.ws()
        return {a: monotone_fit(ws, self.values(a, ws)) for a in attacks}


def decoded(
    split: Split,
    todo: list[tuple[float, int]],
    per_pass: int,
    pool: Any,
    to_dist: Any,
    config: Any,
    cancel: CancelToken,
) -> list:
    """A getter per point: small splits decode ``per_pass`` points in one pass; a large
    split decodes each point on the decode thread while the one before is scored."""
    if per_pass > 1:
        out: list = []
        for i in range(0, len(todo), per_pass):
            chunk = todo[i : i + per_pass]
            cancel.raise_if_cancelled()
            draws = draw_common(split, chunk, to_dist, config)
            out += [lambda d=d: d for d in draws]
        return out
    futures: list = [None] * len(todo)

    def submit(i: int) -> None:
        if i < len(todo) and futures[i] is None:
            futures[i] = pool.submit(lambda p=todo[i]: draw_common(split, [p], to_dist, config)[0])

    def getter(i: int):
        def get():
            submit(i)
            submit(i + 1)  # the next point decodes while this one is scored
            return futures[i].result()

        return get

    return [getter(i) for i in range(len(todo))]


@dataclass
class Meter:
    """The audit's progress as a user watches it (issue 44: the round counter went backwards
    and the bar stood still when rounds were added, so the time left jumped up).

    ``planned`` points may grow (:meth:`add`: a round added); the part of the bar not yet
    covered is then spread over the points still to do, so the fraction never steps back.
    The round shown is the highest round started so far, "of up to" the most the audit may
    use, so it never goes backwards either (the splits of a round are measured w by w, and a
    later candidate starts again on the first round's splits).

    Example:
        >>> m = Meter(planned=4, most_rounds=3)
        >>> [round(m.step(), 3) for _ in range(2)]
        [0.247, 0.495]
        >>> m.add(4); round(m.step(), 3)  # four more points: the rest is spread, never back
        0.578
        >>> m.round_words(1), m.round_words(0)
        ('round 2 of up to 3', 'round 2 of up to 3')
    """

    planned: int
    most_rounds: int = 1
    done: int = 0
    fraction: float = 0.0
    round_seen: int = 1
    top: float = 0.99  # the audit's last step ("done") takes the bar to 1

    def add(self, points: int) -> None:
        """``points`` more measurements planned (a round added, another candidate)."""
        self.planned += max(int(points), 0)

    def step(self) -> float:
        """One point measured: the new fraction (never lower than the last)."""
        if self.done >= self.planned:  # more than planned: a point's worth more of work
            self.planned = self.done + 1
        self.fraction += (self.top - self.fraction) / (self.planned - self.done)
        self.done += 1
        return self.fraction

    def round_words(self, r: int) -> str:
        """ "round N of up to M" for a point on round ``r`` (0-based); "" with one round."""
        self.round_seen = max(self.round_seen, r + 1)
        most = max(self.most_rounds, self.round_seen)
        return f"round {self.round_seen} of up to {most}" if most > 1 else ""


def report_point(book: Book, s: int, w: float, meter: Meter, progress: ProgressFn) -> None:
    """One (split, w) done: the progress line and the partial result (every measurement
    at w so far: mean and SE of each attack)."""
    at = [sc for (_, _, ww), sc in book.scores.items() if ww == w]
    dist = [sc.distance for sc in at]
    dens = [sc.density for sc in at]
    se = _se(dist), _se(dens)
    fraction = meter.step()
    where = ", ".join(x for x in (book.label, meter.round_words(book.rounds[s])) if x)
    text = f"audit: w = {w:g} ({where}), AUC {np.mean(dist):.3f}, density AUC {np.mean(dens):.3f}"
    partial = AuditPointDone(
        w,
        s + 1,
        float(np.mean(dist)),
        se[0],
        float(np.mean(dens)),
        se[1],
        len(at),
        w in book.refined,
    )
    report(progress, fraction, text, partial)


def curve_points(book: Book, cap: float, smallest: float, gap: float, z: float) -> list[CurvePoint]:
    """Every measured w as a :class:`CurvePoint`: raw means, the fits and the bounds (``cap``:
    the top of the deciding range; ``smallest``: the grid's smallest w, where no gap is
    charged)."""
    ws = book.ws()
    all_fits = book.curves(_measured(book), ws)  # bounds of every attack, deciding or not
    points = []
    for w in ws:
        at = [sc for (_, _, ww), sc in book.scores.items() if ww == w]
        bounds = bounds_at(all_fits, w, gap=gap, z=z, smallest=smallest)
        points.append(_point(w, at, all_fits, bounds, w in book.refined, w <= cap + 1e-12))
    return points


def _measured(book: Book) -> list[str]:
    """The attacks with a finite AUC in the book (the released one only where it ran)."""
    first = next(iter(book.scores.values()))
    return [a for a in ("distance", "density", "released") if math.isfinite(getattr(first, a))]


def _se(values: list[float]) -> float:
    return float(np.std(values, ddof=1) / math.sqrt(len(values))) if len(values) > 1 else math.nan


def _point(
    w: float,
    at: list[Score],
    fits: dict[str, FittedCurve],
    bounds: dict[str, float],
    refined: bool,
    decides: bool,
) -> CurvePoint:
    """One curve point from its measurements ``at``, the fitted curves and the bounds at w."""
    nan = math.nan

    def raw(attack: str) -> tuple[float, float]:
        v = np.array([getattr(sc, attack) for sc in at], dtype=float)
        if not np.isfinite(v).all():
            return nan, nan
        return float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else 0.0

    def fitted(attack: str) -> tuple[float, float]:
        fit = fits.get(attack)
        return (nan, nan) if fit is None else fit.at(w)

    (auc, auc_sd), (dens, dens_sd), (rel, rel_sd) = (
        raw(a) for a in ("distance", "density", "released")
    )
    tpr = np.mean([sc.tpr for sc in at], axis=0)
    at_fpr = dict(zip(ROC_FPR, tpr, strict=False))
    step = max(1, len(ROC_FPR) // 50)
    unit_se = {a: _unit_se(fits.get(a), w) for a in ("distance", "density", "released")}
    return CurvePoint(
        w=float(w),
        auc=auc,
        auc_sd=auc_sd,
        auc_se=unit_se["distance"],
        tpr_at_1pct_fpr=float(at_fpr[0.01]),
        tpr_at_01pct_fpr=float(at_fpr[0.001]),
        density_auc=dens,
        density_auc_sd=dens_sd,
        density_auc_se=unit_se["density"],
        repeats=len(at),
        refined=refined,
        roc_fpr=tuple(float(x) for x in ROC_FPR[::step]),
        roc_tpr=tuple(float(x) for x in tpr[::step]),
        released_auc=rel,
        released_auc_sd=rel_sd,
        released_auc_se=unit_se["released"],
        decides=decides,
        auc_fit=fitted("distance")[0],
        auc_fit_se=fitted("distance")[1],
        density_fit=fitted("density")[0],
        density_fit_se=fitted("density")[1],
        released_fit=fitted("released")[0],
        released_fit_se=fitted("released")[1],
        upper_distance=bounds.get("distance", nan),
        upper_density=bounds.get("density", nan),
        upper_released=bounds.get("released", nan),
        units=fits["distance"].units[fits["distance"].ws.index(w)] if "distance" in fits else 0,
    )


def _unit_se(fit: FittedCurve | None, w: float) -> float:
    """The SE of the raw mean at ``w`` over units (NaN without a fit or with one unit)."""
    if fit is None:
        return math.nan
    return fit.raw_se[fit.ws.index(w)]
