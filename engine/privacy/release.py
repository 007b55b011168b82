"""Release metrics, record-level protection of outliers, and the local-DP statement.

Why by hand: no library computes the paper's closer probability (eq. 22) or ranks (eq. 26),
and the output checker's rules (no individual distances; small counts merged) are ours. Library
parts used: scipy ``cKDTree`` via :mod:`engine.search.neighbours` (ball counts, k-NN distances).

Definitions (real row X_i, its own synthetic row X~_i, distances in the standardized space):
    rank r_i = #{j != i : ||X_i - X_j|| < ||X_i - X~_i||}          (eq. 26)
    closer probability = sum_i r_i / (n (n - 1))                     (eq. 22, ordered pairs)
    at risk: r_i < k, i.e. fewer than k real rows lie closer than the record's own synthetic row.

References:
    Latent Noise Injection paper, eqs. 22 and 26, Theorem 2; METHOD.md sections 5 and 6.

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> real = rng.standard_normal((400, 3))
    >>> m = release_metrics(real, rng.standard_normal((400, 3)), rng=rng)
    >>> 0.4 < m.closer_probability < 0.6
    True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Protocol

import numpy as np

from engine.flows.generate import perturb_latent
from engine.search.neighbours import count_closer, kth_neighbour_distances, neighbour_distances

K_RISK = 5  # a record is at risk when its synthetic partner is nearer than its 5th real neighbour


class LatentMap(Protocol):
    """A fitted invertible map between model space and the standard-normal latent space."""

    def to_latent(self, X: np.ndarray) -> np.ndarray: ...

    def from_latent(self, Z: np.ndarray) -> np.ndarray: ...


def identity(X: np.ndarray) -> np.ndarray:
    """The identity map (model space = distance space)."""
    return X


@dataclass(frozen=True)
class Histogram:
    """Bin edges and counts; bins with fewer than ``min_count`` rows merged into a neighbour."""

    edges: tuple[float, ...]
    counts: tuple[int, ...]

    def to_dict(self) -> dict:
        return {"edges": list(self.edges), "counts": list(self.counts)}


def safe_histogram(values: np.ndarray, *, bins: int = 30, min_count: int = 10) -> Histogram:
    """Histogram on rounded edges with every bin holding >= ``min_count`` rows (or one bin).

    Edges are multiples of a "nice" width from 0, so no edge equals an individual value.

    Example:
        >>> h = safe_histogram(np.linspace(0.0, 1.0, 200), bins=10)
        >>> sum(h.counts), min(h.counts) >= 10
        (200, True)
    """
    v = np.asarray(values, dtype=np.float64)
    top = float(np.quantile(v, 0.99)) if len(v) else 1.0
    raw = max(top, 1e-12) / bins
    width = 10 ** math.floor(math.log10(raw))
    width *= next(m for m in (1, 2, 2.5, 5, 10) if m * width >= raw)
    n_edges = int(math.ceil(float(v.max(initial=0.0)) / width)) + 1
    edges = [round(i * width, 12) for i in range(max(n_edges, 2) + 1)]
    counts = list(np.histogram(v, bins=edges)[0])
    edges, counts = _merge_small(edges, counts, min_count)
    return Histogram(tuple(float(e) for e in edges), tuple(int(c) for c in counts))


def _merge_small(edges: list, counts: list, min_count: int) -> tuple[list, list]:
    """Merge bins below ``min_count`` into their right (last bin: left) neighbour."""
    i = 0
    while i < len(counts) and len(counts) > 1:
        if counts[i] >= min_count:
            i += 1
            continue
        j = i + 1 if i + 1 < len(counts) else i - 1
        lo, hi = min(i, j), max(i, j)
        counts[lo : hi + 1] = [counts[lo] + counts[hi]]
        del edges[hi]
        i = lo
    return edges, counts


@dataclass(frozen=True)
class ReleaseMetrics:
    """Privacy metrics of a released table against the real one (distance space)."""

    rows: int
    closer_probability: float
    median_rank: float
    exact: bool
    rows_evaluated: int
    own_distance_histogram: Histogram
    nearest_real_histogram: Histogram
    share_within_1e6: float
    k_risk: int
    at_risk: int

    def to_dict(self) -> dict:
        """JSON-safe dict for ``audit.json``'s ``release`` block (the fields, in order)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        hists = ("own_distance_histogram", "nearest_real_histogram")
        return out | {name: out[name].to_dict() for name in hists}


def record_ranks(real: np.ndarray, own: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """Eq. 26 ranks r_i for ``rows`` (default all), given own distances ``own`` (all rows).

    Example:
        >>> record_ranks(np.array([[0.0], [1.0], [5.0]]), np.array([1.5, 0.1, 4.5])).tolist()
        [1, 0, 1]
    """
    idx = np.arange(len(real)) if rows is None else rows
    counts = count_closer(real, real[idx], own[idx])
    return np.where(own[idx] > 0, counts - 1, 0)  # the row itself lies at distance 0 < own


def release_metrics(
    real_dist: np.ndarray,
    synth_dist_paired: np.ndarray,
    *,
    rng: np.random.Generator,
    exact_limit: int = 20000,
    sample_rows: int = 20000,
    k: int = K_RISK,
    device: str = "cpu",
    near: np.ndarray | None = None,
    rows: np.ndarray | None = None,
) -> ReleaseMetrics:
    """Closer probability, median rank, distance histograms, exact copies and records at risk.

    ``synth_dist_paired[i]`` is the synthetic row made from ``real_dist[i]``. Ranks are exact
    for n <= ``exact_limit``; above, they are exact for ``sample_rows`` rows drawn at random
    without replacement (each compared with all n real rows), and the closer probability and
    median are estimated from them (``exact`` = False). Records at risk are always exact.
    ``device``: the run's resolved device (kept for callers; the one nearest-neighbour search
    that used it, for exact copies, is now a k-d tree search bounded at 2e-6, issue 31).
    ``near``: :func:`real_neighbours` of ``real_dist``, when already computed (the pipeline
    does it beside the audit; it depends on the real rows alone). ``rows``: the sample that
    :func:`metric_rows` drew beforehand (then ``rng`` is not used: the pipeline draws it before
    the shuffles and measures on a thread, issue 31).

    Example:
        >>> x = np.arange(20.0).reshape(-1, 1)
        >>> release_metrics(x, x + 0.1, rng=np.random.default_rng(0)).at_risk
        20
    """
    real = np.asarray(real_dist, dtype=np.float64)
    synth = np.asarray(synth_dist_paired, dtype=np.float64)
    if real.shape != synth.shape or real.ndim != 2 or len(real) < 2:
        raise ValueError("real and paired synthetic rows must have the same 2-D shape, n >= 2")
    n, n_cols = real.shape
    own = np.sqrt(((real - synth) ** 2).sum(1))
    exact = n <= exact_limit
    if exact:
        rows = None
    elif rows is None:
        rows = metric_rows(n, rng, exact_limit=exact_limit, sample_rows=sample_rows)
    ranks = record_ranks(real, own, rows)
    k_eff = min(k, n - 1)
    near = real_neighbours(real, k) if near is None else near
    at_risk = int((own <= near[:, 1]).sum()) if k_eff > 0 else 0
    return ReleaseMetrics(
        rows=n,
        closer_probability=float(ranks.sum() / (len(ranks) * (n - 1))),
        median_rank=float(np.median(ranks)),
        exact=exact,
        rows_evaluated=len(ranks),
        own_distance_histogram=safe_histogram(own),
        nearest_real_histogram=safe_histogram(near[:, 0]),
        share_within_1e6=_share_within(synth, real, 1e-6),
        k_risk=k,
        at_risk=at_risk,
    )


def metric_rows(
    n: int, rng: np.random.Generator, *, exact_limit: int = 20000, sample_rows: int = 20000
) -> np.ndarray | None:
    """The records :func:`release_metrics` ranks: None (all) up to ``exact_limit``, else
    ``sample_rows`` drawn without replacement, sorted (its one draw from ``rng``)."""
    return None if n <= exact_limit else np.sort(rng.choice(n, min(sample_rows, n), replace=False))


def real_neighbours(real_dist: np.ndarray, k: int = K_RISK) -> np.ndarray:
    """The 1st and k-th (at most n - 1) nearest other real row of every real row, from one
    search: the release metrics' nearest-real histogram and records at risk.

    Example:
        >>> real_neighbours(np.array([[0.0], [1.0], [3.0]]), k=5).tolist()
        [[1.0, 3.0], [1.0, 2.0], [2.0, 3.0]]
    """
    real = np.asarray(real_dist, dtype=np.float64)
    return neighbour_distances(real, (1, max(min(k, len(real) - 1), 1)))


def _share_within(queries: np.ndarray, reference: np.ndarray, radius: float) -> float:
    """Share of ``queries`` rows with a ``reference`` row at distance <= ``radius``: a k-d tree
    search bounded at twice the radius (exact; it stops at once for the rows with nothing that
    close, 10x quicker than the full nearest-neighbour search on a million rows).

    Example:
        >>> _share_within(np.array([[0.0], [1.0]]), np.array([[1e-7], [5.0]]), 1e-6)
        0.5
    """
    from scipy.spatial import cKDTree

    dist = cKDTree(reference).query(queries, k=1, distance_upper_bound=2 * radius, workers=-1)[0]
    return float((dist <= radius).mean())


@dataclass(frozen=True)
class ProtectResult:
    """Record-level perturbation weights that keep every record's rank at least k."""

    synthetic_model_rows: np.ndarray
    w_per_record: np.ndarray
    at_risk_before: int
    at_risk_after: int
    rounds: int

    def to_dict(self) -> dict:
        """JSON-safe summary (no rows, no per-record weights)."""
        lowered = self.w_per_record < self.w_per_record.max(initial=0.0)
        return {
            "at_risk_before": self.at_risk_before,
            "at_risk_after": self.at_risk_after,
            "rounds": self.rounds,
            "records_with_lowered_w": int(lowered.sum()),
            "min_w": float(self.w_per_record.min(initial=1.0)),
        }


def protect_outliers(
    latent_map: LatentMap,
    X_model: np.ndarray,
    X_dist: np.ndarray,
    w: float,
    *,
    to_dist: Callable[[np.ndarray], np.ndarray] = identity,
    k: int = 5,
    rng: np.random.Generator,
    max_rounds: int = 8,
) -> ProtectResult:
    """Latent Noise Injection with w lowered, record by record, until no record's rank is < k.

    Each round halves w_i of the records still at risk (the last round sets it to 0, i.e. an
    independent draw from the flow) and re-draws only their noise. Records are at risk when
    their own synthetic row is closer than their k-th nearest other real row. Every round
    checks the whole table through ``to_dist``, because decoding is by batch (a category's
    levels are given by rank within the batch), so re-drawing some rows can move others: on a
    500-row cohort at w = 0.9 a check of the re-drawn rows alone left 12 records at risk in the
    released table, the whole-table check none (and lowered w for 314 records instead of 300).

    References:
        LNI paper, section 5 (extreme observations, first limitation); eq. 26.

    Example:
        >>> class Id:
        ...     def to_latent(self, X): return X
        ...     def from_latent(self, Z): return Z
        >>> x = np.random.default_rng(1).standard_normal((300, 2))
        >>> r = protect_outliers(Id(), x, x, 0.99, rng=np.random.default_rng(2))
        >>> r.at_risk_before > 0, r.at_risk_after
        (True, 0)
    """
    Z = np.asarray(latent_map.to_latent(X_model), dtype=np.float64)
    real = np.asarray(X_dist, dtype=np.float64)
    kth = kth_neighbour_distances(real, min(k, len(real) - 1))
    w_i = np.full(len(Z), float(w))
    synth = np.asarray(latent_map.from_latent(perturb_latent(Z, w_i, rng)), dtype=np.float64)
    risky = _at_risk(real, to_dist(synth), kth, np.arange(len(Z)))
    before, rounds = len(risky), 0
    while len(risky) and rounds < max_rounds:
        rounds += 1
        w_i[risky] = 0.0 if rounds == max_rounds else w_i[risky] * 0.5
        synth[risky] = latent_map.from_latent(perturb_latent(Z[risky], w_i[risky], rng))
        # the whole table again: ``to_dist`` decodes a batch, and a category's level can depend
        # on the other rows of the batch (frequencies by rank), so a row can move with others
        risky = _at_risk(real, to_dist(synth), kth, np.arange(len(Z)))
    return ProtectResult(synth, w_i, before, len(risky), rounds)


def _at_risk(real, synth, kth, rows) -> np.ndarray:
    """Indices (into the given rows) whose own distance is <= the k-th real-neighbour distance."""
    own = np.sqrt(((np.asarray(real) - np.asarray(synth)) ** 2).sum(1))
    hit = np.flatnonzero(own <= kth)
    return hit if rows is None else rows[hit]


@dataclass(frozen=True)
class EpsilonStatement:
    """Theorem 2's epsilon for one w and delta, with C and how it was obtained."""

    w: float
    delta: float
    C: float
    C_method: str
    value: float
    nature: str
    sentence: str

    def to_dict(self) -> dict:
        """JSON-safe; an infinite epsilon (w = 1) is written as null."""
        value = self.value if math.isfinite(self.value) else None
        return {
            "delta": self.delta,
            "C": self.C,
            "C_method": self.C_method,
            "value": value,
            "w": self.w,
            "nature": self.nature,
            "sentence": self.sentence,
        }


NATURE = (
    "an estimate from the data, not a proven bound: holds only under the theorem's assumptions "
    "(spectrally normalized network, compact domain, converged flow)"
)


def latent_diameter(codes: np.ndarray, *, exact_limit: int = 5000) -> tuple[float, str]:
    """Largest distance between two rows, exact for n <= ``exact_limit``.

    Above, the exact diameter of the ``exact_limit`` rows farthest from the centroid is taken;
    it is certified exact when it reaches r_cut + r_max (r_cut: largest centroid distance left
    out, r_max: the largest overall), otherwise that sum is returned as an upper bound.

    Example:
        >>> latent_diameter(np.array([[0.0, 0.0], [3.0, 4.0], [1.0, 1.0]]))
        (5.0, 'exact')
    """
    z = np.asarray(codes, dtype=np.float64)
    radius = np.sqrt(((z - z.mean(0)) ** 2).sum(1))
    if len(z) <= exact_limit:
        return _blocked_diameter(z), "exact"
    order = np.argsort(radius)[::-1]
    diam = _blocked_diameter(z[order[:exact_limit]])
    bound = float(radius[order[exact_limit]] + radius[order[0]])
    if diam >= bound:
        return diam, "exact"
    return bound, "upper bound"


def _blocked_diameter(z: np.ndarray, block: int = 1024) -> float:
    """max ||z_a - z_b|| by blocks of rows (memory ~ block x n)."""
    best = 0.0
    norm2 = (z * z).sum(1)
    for s in range(0, len(z), block):
        zb = z[s : s + block]
        d2 = (zb * zb).sum(1)[:, None] + norm2[None, :] - 2.0 * zb @ z.T
        a, b = np.unravel_index(int(np.argmax(d2)), d2.shape)
        best = max(best, float(np.sqrt(((zb[a] - z[b]) ** 2).sum())))
    return best


def epsilon_statement(latent_codes: np.ndarray, w: float, delta: float) -> EpsilonStatement:
    """Theorem 2: eps* = w C^2 / (2 (1 - w)) + C sqrt(2 w log(1/delta)) / sqrt(1 - w).

    References:
        LNI paper, Lemma 1 and Theorem 2; METHOD.md section 6.

    Example:
        >>> s = epsilon_statement(np.array([[0.0], [2.0]]), 0.5, 0.01)
        >>> round(s.value, 4) == round(2.0 + 2 * math.sqrt(2 * math.log(100.0)), 4)
        True
    """
    if not (0.0 <= w <= 1.0) or not (0.0 < delta < 1.0):
        raise ValueError("w must lie in [0, 1] and delta in (0, 1)")
    C, method = latent_diameter(latent_codes)
    if w >= 1.0:
        value = math.inf
    else:
        value = w * C**2 / (2 * (1 - w)) + C * math.sqrt(2 * w * math.log(1 / delta)) / math.sqrt(
            1 - w
        )
    text = (
        f"At w = {w:g} the injected noise gives local ({value:.3g}, {delta:.2g})-differential "
        f"privacy per record if the flow's latent codes of any two records lie at most "
        f"C = {C:.3g} apart ({method}, from the data); this is {NATURE}."
    )
    return EpsilonStatement(float(w), float(delta), float(C), method, float(value), NATURE, text)
