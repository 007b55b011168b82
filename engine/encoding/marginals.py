"""Per-column monotone maps to normal scores, so the flow spends its capacity on dependence.

A column's values ``x`` go to ``y = Phi^-1(F(x))`` before the flow and come back as
``x = F^-1(Phi(y))`` after it, with ``F`` a smoothed, piecewise-linear empirical CDF. A
column whose marginal is right in ``F`` is right in every synthetic copy, whatever the flow
does to the margin of its latent.

How ``F`` is built (and why it does not leak individual values):

* the sorted values are cut into consecutive bins of at least ``MIN_BIN`` = 10 rows (more when
  the column is long: at most ``MAX_KNOTS`` bins); each bin gives one knot at (its *median*,
  the share of rows up to its middle). A knot is a quantile with >= 5 real rows on each side
  inside its bin (for an even bin, the mean of its two middle values), the same rule as the
  report's quartiles (:func:`engine.disclosure.safe_quantile`); a run of fewer than 10 rows
  between two point masses gives no knot at all (its share is spread over the segment);
* the two end knots are the column's bounds (``ColumnSpec.lower`` / ``upper``: by default the
  10th smallest and 10th largest value, :func:`engine.disclosure.safe_bounds`, or the user's
  clinical range), so synthetic values stay inside the range and the real minimum and maximum
  are never shown. The share of real rows beyond a bound stays in ``F`` (a real value there is
  drawn inside that share); a score drawn there is counted as before (the release's "clipped"
  count) but no longer decoded *at* the bound: see the soft top-coding below;
* soft top-coding (issue 44): the shares from ``spread_hi`` to 1 (the share beyond the upper
  bound and at least twice as much just inside it, at least 20 real rows' worth) are squeezed
  linearly onto ``spread_hi .. F(upper)`` before ``F^-1`` (likewise at the lower end). Why:
  decoding every draw beyond the bound *at* the bound piled them there (the share of the 9 real
  rows beyond a default bound, and any overshoot of the model, on one value: positive nodes at
  20 on a breast-cancer table). The squeeze is monotone (ranks, and so regression slopes, are kept
  as far as the rule allows), needs no random draws (a seeded run stays byte-identical), never gives
  a value beyond the bound and never reads a real value beyond it (``F`` has no knot there); inside
  the region every value keeps the shape of the real tail just inside the bound with its frequency
  raised by the same factor, at most 1.5 with the default bounds (20 real rows inside for 9 beyond:
  29 / 20), instead of one value holding all the tail;
* between knots ``F`` is linear on an ``asinh`` axis centred at the median and scaled by the
  IQR: linear near the centre, logarithmic in long tails (values near 1e200 still get even
  normal scores);
* point masses are kept: a value held by >= 10 rows (administrative censoring at exactly week
  52, a zero count, a lab floor) is a vertical step of ``F`` of exactly its share. A real
  value on the step is drawn uniformly inside it (randomized probability integral transform)
  and every ``Phi(y)`` inside the step decodes to exactly that value, so the value's frequency
  comes back exactly in expectation;
* discrete codes (binary, event, categorical levels in order: ``exact``, every level its own
  step; integers: every value held by >= 10 rows its own step) are dequantized: code ``k``
  spans ``[k, k + 1)``, is drawn uniformly in its step ``[F(k-), F(k))`` and decodes by
  ``floor`` (an ordered probit), so its frequency comes back exactly in expectation. Integer
  values held by fewer than 10 rows are pooled into bins as above (never a knot of their own).

References: issue 13 item 1; Kaufman et al. / the "normal scores" of copula models (a Gaussian
copula is this map followed by a linear, not a flow, dependence model); Uria et al. (2013) and
Ho et al. (2019) for dequantization of discrete data.

Example:
    >>> import numpy as np
    >>> x = np.r_[np.linspace(0.0, 51.0, 26), np.full(74, 52.0)]  # 74 % at exactly 52
    >>> m = NormalScores.fit(x, lower=2.0, upper=52.0)
    >>> y = m.forward(x, np.random.default_rng(0))
    >>> back = m.inverse(np.random.default_rng(1).standard_normal(100_000))
    >>> round(float(np.mean(back == 52.0)), 2), float(back.min()) >= 2.0
    (0.74, True)
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import numpy as np
from scipy.special import ndtr, ndtri

MIN_BIN = 10  # rows behind every knot
SPREAD = 2.0  # the soft top-coding's region inside a bound holds >= 2x the share beyond it
SPREAD_ROWS = 2 * MIN_BIN  # ... and at least 20 real rows
MAX_KNOTS = 200
P_FLOOR = 1e-6  # shares kept inside (P_FLOOR, 1 - P_FLOOR): finite normal scores


@dataclass(frozen=True)
class NormalScores:
    """A fitted monotone map ``x <-> y`` with ``y`` standard normal for the fitted column.

    ``xs`` / ``ps``: knots of the piecewise-linear CDF (non-decreasing; equal ``xs`` make a
    point mass). ``discrete``: the column holds codes (decode gives whole numbers).
    """

    xs: np.ndarray
    ps: np.ndarray
    discrete: bool = False
    p_floor: float = P_FLOOR  # shares are kept in (p_floor, 1 - p_floor): finite scores
    center: float = 0.0  # interpolation runs on asinh((x - center) / scale): heavy tails
    scale: float = 1.0  # between two knots are spread as on a log scale, not piled at one end
    # soft top-coding: shares below spread_lo / above spread_hi are squeezed inside the bounds
    # (:meth:`squeeze`); 0 and 1: none, every draw beyond a bound decodes at it (a hard clip)
    spread_lo: float = 0.0
    spread_hi: float = 1.0

    def _axis(self, x: np.ndarray) -> np.ndarray:
        return x if self.discrete else np.arcsinh((x - self.center) / self.scale)

    # -------------------------------------------------------------------- fitting
    @classmethod
    def fit(
        cls,
        values: np.ndarray,
        *,
        lower: float | None = None,
        upper: float | None = None,
        discrete: bool = False,
        exact: bool = False,
    ) -> NormalScores:
        """Knots from ``values`` (finite floats); ``lower`` / ``upper``: the released range
        (None: the 10th smallest / largest value). ``discrete``: whole-number codes (code c
        spans [c, c+1) on a dequantized axis). ``exact``: every code gets its own step, however
        rare (category labels, whose counts are shown anyway)."""
        v = np.sort(np.asarray(values, dtype="float64"))
        if v.size == 0:
            raise ValueError("no values to fit the marginal on")
        if discrete:
            v = np.floor(v)
        k = min(MIN_BIN, (v.size + 1) // 2)
        lo = float(v[k - 1]) if lower is None else float(lower)
        hi = float(v[v.size - k]) if upper is None else float(upper)
        lo, hi = min(lo, hi), max(lo, hi)
        if discrete:
            lo, hi = float(np.floor(lo)), float(np.floor(hi))
        xs, ps = _knots(v, lo, hi, discrete=discrete, exact=exact)
        top = hi + 1.0 if discrete else hi
        # the share beyond each bound stays in the CDF (drawn there, decoded at the bound)
        xs = np.concatenate([[lo], xs, [top]])
        ps = np.concatenate([[float(np.mean(v < lo))], ps, [1.0 - float(np.mean(v > hi))]])
        q1, med, q3 = np.percentile(v, [25, 50, 75])
        scale = float(q3 - q1) / 1.349 or float(np.std(v)) or 1.0
        xs, ps = _monotone(xs, ps)
        spread_lo, spread_hi = spread_starts(float(ps[0]), float(ps[-1]), v.size)
        tails = {"spread_lo": spread_lo, "spread_hi": spread_hi}
        return cls(xs, ps, discrete=discrete, center=float(med), scale=scale, **tails)

    def hard_clipped(self) -> NormalScores:
        """The same map with every draw beyond a bound decoded at the bound (the release before
        issue 44; for benchmarks and tests that compare the two)."""
        return replace(self, spread_lo=0.0, spread_hi=1.0)

    # -------------------------------------------------------------------- maps
    def forward(self, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Normal scores of ``values``; a value on a point mass (or a discrete code) is drawn
        uniformly inside its step of the CDF, from ``rng``."""
        raw = np.asarray(values, dtype="float64")
        x = raw
        if self.discrete:
            x = np.floor(x) + rng.uniform(0.0, 1.0, size=x.shape)
            x = np.clip(x, self.xs[0], np.nextafter(self.xs[-1], -np.inf))
        x = np.clip(x, self.xs[0], self.xs[-1])
        p_left, p_right = _step_ends(self._axis(x), self._axis(self.xs), self.ps)
        p_lo, p_hi = self._with_tails(raw, p_left, p_right)
        return self._score(p_lo + (p_hi - p_lo) * rng.uniform(0.0, 1.0, size=x.shape))

    def interval(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The normal scores ``[lo, hi]`` between which :meth:`forward` draws each value (equal
        ends: the value has one exact score). Every score in it decodes to the value.

        Example:
            >>> m = NormalScores.fit(np.r_[np.zeros(50), np.ones(50)], discrete=True, exact=True)
            >>> lo, hi = m.interval(np.array([0.0, 1.0]))
            >>> float(lo[0]) < -4, abs(float(hi[0])) < 1e-9, float(hi[1]) > 4
            (True, True, True)
        """
        x = np.asarray(values, dtype="float64")
        knots = self._axis(self.xs)
        if self.discrete:
            a = np.clip(np.floor(x), self.xs[0], np.nextafter(self.xs[-1], -np.inf))
            p_lo, _ = _step_ends(self._axis(a), knots, self.ps)
            p_hi, _ = _step_ends(self._axis(np.minimum(a + 1.0, self.xs[-1])), knots, self.ps)
        else:
            p_lo, p_hi = _step_ends(self._axis(np.clip(x, self.xs[0], self.xs[-1])), knots, self.ps)
        p_lo, p_hi = self._with_tails(x, p_lo, p_hi)
        return self._score(p_lo), self._score(p_hi)

    def _with_tails(
        self, values: np.ndarray, p_lo: np.ndarray, p_hi: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """A real value beyond a bound is drawn in the share beyond it (decoded at the bound):
        its range of shares is [0, F(lower)] or [F(upper), 1]; other values keep theirs."""
        below = values < self.xs[0]
        above = values > (self.xs[-1] - (1.0 if self.discrete else 0.0))
        p_lo = np.where(below, 0.0, np.where(above, self.ps[-1], p_lo))
        p_hi = np.where(below, self.ps[0], np.where(above, 1.0, p_hi))
        return p_lo, p_hi

    def _score(self, p: np.ndarray) -> np.ndarray:
        """Normal score of a share, kept inside (p_floor, 1 - p_floor): finite (|y| < 4.8)."""
        return ndtri(self.p_floor + (1.0 - 2.0 * self.p_floor) * p)

    def beyond(self, scores: np.ndarray) -> np.ndarray:
        """True where a score lies beyond the fitted range (its value is placed inside the bound
        by the soft top-coding; the release counts these as clipped)."""
        return self.decode(scores)[1]

    def inverse(self, scores: np.ndarray) -> np.ndarray:
        """Values for normal scores (NaN stays NaN); discrete columns give whole numbers."""
        return self.decode(scores)[0]

    def decode(self, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`inverse` and :meth:`beyond` of ``scores`` from one normal CDF (a decode
        needs both: 40,000 rows x 7 columns, 6 ms of the audit's 63 ms inverse transform)."""
        y = np.asarray(scores, dtype="float64")
        share = (ndtr(y) - self.p_floor) / (1.0 - 2.0 * self.p_floor)
        tail = np.isfinite(y) & ((share < self.ps[0] - 1e-12) | (share > self.ps[-1] + 1e-12))
        p = self.squeeze(np.clip(share, 0.0, 1.0))
        x = np.interp(p, self.ps, self._axis(self.xs))
        if not self.discrete:
            x = np.clip(self.center + self.scale * np.sinh(x), self.xs[0], self.xs[-1])
            x = np.where(p <= self.ps[0], self.xs[0], np.where(p >= self.ps[-1], self.xs[-1], x))
        if self.discrete:
            x = np.minimum(np.floor(x), np.floor(np.nextafter(self.xs[-1], -np.inf)))
        return np.where(np.isnan(y), np.nan, x), tail

    def squeeze(self, p: np.ndarray) -> np.ndarray:
        """Shares in [0, 1] onto [F(lower), F(upper)] (the soft top-coding): linear from
        ``spread_hi`` to 1 onto ``spread_hi`` to ``F(upper)``, likewise at the lower end, the
        identity in between; monotone, so ranks are kept.

        Example:
            >>> m = NormalScores(np.array([0.0, 10.0]), np.array([0.1, 0.9]), spread_lo=0.3,
            ...                  spread_hi=0.7)
            >>> m.squeeze(np.array([0.0, 0.5, 0.7, 0.85, 1.0])).round(3).tolist()
            [0.1, 0.5, 0.7, 0.8, 0.9]
        """
        lo, hi, p0, p1 = self.spread_lo, self.spread_hi, float(self.ps[0]), float(self.ps[-1])
        if hi < 1.0:
            p = np.where(p > hi, hi + (p - hi) * ((p1 - hi) / (1.0 - hi)), p)
        if lo > 0.0:
            p = np.where(p < lo, lo - (lo - p) * ((lo - p0) / lo), p)
        return p


def spread_starts(p0: float, p1: float, n: int) -> tuple[float, float]:
    """Where the soft top-coding begins, as shares: ``F(lower)`` plus the larger of twice the
    share below the lower bound and ``SPREAD_ROWS`` real rows (likewise below ``F(upper)``), never
    past the middle of the range. 0 (1) when no real row lies beyond the bound: nothing to
    squeeze.

    Example:
        >>> [round(x, 4) for x in spread_starts(9 / 1000, 1 - 9 / 1000, 1000)]
        [0.029, 0.971]
    """
    mid = (p0 + p1) / 2.0
    lo = min(p0 + max(SPREAD * p0, SPREAD_ROWS / n), mid) if p0 > 0.0 else 0.0
    hi = max(p1 - max(SPREAD * (1.0 - p1), SPREAD_ROWS / n), mid) if p1 < 1.0 else 1.0
    return lo, hi


def _knots(
    v: np.ndarray, lo: float, hi: float, *, discrete: bool, exact: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Inner knots for sorted ``v``: a step for each value held by >= MIN_BIN rows (every code
    when ``exact``), bin means of >= MIN_BIN rows for the values between such steps, nothing
    for a run of fewer than MIN_BIN rows (their share is spread over the neighbouring segment).
    Values outside [lo, hi] give no knot; their share stays in the end segments."""
    n = v.size
    size = max(MIN_BIN, int(np.ceil(n / MAX_KNOTS)))
    vals, first, counts = np.unique(v, return_index=True, return_counts=True)
    xs: list[np.ndarray] = []
    ps: list[np.ndarray] = []
    run: list[int] = []  # indices into vals of the current run of rare values

    def flush() -> None:
        if not run:
            return
        s0 = int(first[run[0]])
        seg = v[s0 : int(first[run[-1]] + counts[run[-1]])]
        if discrete:  # deterministic spread of each code over [c, c+1)
            seg = np.concatenate(
                [
                    np.full(counts[i], vals[i]) + (np.arange(counts[i]) + 0.5) / counts[i]
                    for i in run
                ]
            )
        keep = (seg >= lo) & (seg <= (hi + 1.0 if discrete else hi))
        pos = s0 + np.flatnonzero(keep)
        seg = seg[keep]
        bins = seg.size // size
        if bins >= 1:
            edges = np.linspace(0, seg.size, bins + 1).round().astype(int)
            widths = np.diff(edges)
            # median of each bin: the mean of its two middle values when the bin is even
            xs.append(np.array([np.median(seg[a:b]) for a, b in itertools.pairwise(edges)]))
            ps.append((pos[edges[:-1]] + widths / 2.0) / n)
        run.clear()

    for i, (x, m) in enumerate(zip(vals, counts, strict=True)):
        if (m >= MIN_BIN or exact) and lo <= x <= hi:
            flush()
            s0 = float(first[i])
            xs.append(np.array([x, x + 1.0 if discrete else x]))
            ps.append(np.array([s0 / n, (s0 + m) / n]))
        else:
            run.append(i)
    flush()
    if not xs:
        return np.empty(0), np.empty(0)
    return np.concatenate(xs), np.concatenate(ps)


def _step_ends(x: np.ndarray, xs: np.ndarray, ps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """F(x-) and F(x) of the piecewise-linear CDF with knots (xs, ps), xs non-decreasing with
    repeats (a repeated x is a vertical step). ``x`` must lie in [xs[0], xs[-1]]."""
    last = len(xs) - 1
    out = []
    for side in ("left", "right"):
        j = np.searchsorted(xs, x, side=side)  # type: ignore[call-overload,unused-ignore]
        if side == "right":
            j = j - 1  # last knot with xs <= x
            hit = xs[np.clip(j, 0, last)] == x
            a, b = np.clip(j, 0, last), np.clip(j + 1, 0, last)
        else:  # first knot with xs >= x
            hit = xs[np.clip(j, 0, last)] == x
            a, b = np.clip(j - 1, 0, last), np.clip(j, 0, last)
        dx = xs[b] - xs[a]
        t = np.where(dx > 0, (x - xs[a]) / np.where(dx > 0, dx, 1.0), 0.0)
        p = ps[a] + t * (ps[b] - ps[a])
        out.append(np.where(hit, ps[np.clip(j, 0, last)], p))
    return out[0], out[1]


def _monotone(xs: np.ndarray, ps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Make both knot arrays non-decreasing (float round-off in bin means)."""
    return np.maximum.accumulate(xs), np.maximum.accumulate(ps)
