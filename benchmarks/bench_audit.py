"""Benchmark of the membership audit and its nearest-neighbour step (prints figures).

Run: ``.venv/bin/python benchmarks/bench_audit.py [--quick] [--neighbours]``.

1. A 20-value audit at n = 15,000, d = 7 with an exact Gaussian map (repeats chosen by the SE rule).
2. The neighbour step (all n real rows against the 80 % synthetic rows, exact nearest distance)
   against scikit-learn's ``NearestNeighbors(algorithm="brute", n_jobs=-1)`` (same queries):
   n = 15,000 (d = 7 and d = 50) and n = 200,000 (d = 7; sklearn timed on one chunk of queries
   and extrapolated, which is stated in the output); n = 15,000 queries against 30,000 rows at
   d = 30 and 50 (brute path), interleaved repeats, medians; ``count_closer`` (ranks) at the same d.
   ``--neighbours`` runs only these d >= 16 figures.
3. The kd-tree / brute-force crossover over d (sets ``BRUTE_FORCE_MIN_DIM``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.privacy.audit import AuditConfig, run_audit  # noqa: E402
from engine.search.neighbours import count_closer, nearest_distances  # noqa: E402


class ScaledMap:
    """Exact map of N(0, L L^T): to_latent = L^-1 x, from_latent = L z."""

    def __init__(self, chol: np.ndarray) -> None:
        self.chol = chol

    def to_latent(self, X: np.ndarray) -> np.ndarray:
        return np.linalg.solve(self.chol, X.T).T

    def from_latent(self, Z: np.ndarray) -> np.ndarray:
        return Z @ self.chol.T


def _timed(fn, *args, **kwargs):
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - t, out


def bench_audit(n: int = 15000, d: int = 7) -> None:
    sigma = 0.5 * np.eye(d) + 0.5
    chol = np.linalg.cholesky(sigma)
    X = np.random.default_rng(0).standard_normal((n, d)) @ chol.T
    secs, res = _timed(
        run_audit,
        X,
        X,
        lambda rows: ScaledMap(chol),
        config=AuditConfig(),
        rng=np.random.default_rng(1),
    )
    reps = [p.repeats for p in res.curve]
    print(
        f"audit n={n} d={d}: {len(res.curve)} w values ({sum(p.refined for p in res.curve)} "
        f"refined), repeats {min(reps)}-{max(reps)} (total {sum(reps)}), {secs:.1f} s, selected w "
        f"= {res.selected_w}"
    )


def bench_neighbours(
    n: int, d: int, sklearn_rows: int | None = None, n_ref: int | None = None, repeats: int = 1
) -> None:
    """Ours against sklearn brute (``n_jobs=-1``), interleaved ``repeats`` times; medians."""
    from sklearn.neighbors import NearestNeighbors

    rng = np.random.default_rng(2)
    real = rng.standard_normal((n, d))
    synth = rng.standard_normal((n_ref or int(0.8 * n), d))
    q = real if sklearn_rows is None else real[:sklearn_rows]
    nn = NearestNeighbors(n_neighbors=1, algorithm="brute", n_jobs=-1).fit(synth)
    ours_t, sk_t = [], []
    for _ in range(repeats):
        ours, dist = _timed(nearest_distances, real, synth)
        sk, (sk_dist, _) = _timed(nn.kneighbors, q)
        ours_t.append(ours)
        sk_t.append(sk)
    ours, sk = float(np.median(ours_t)), float(np.median(sk_t))
    scale = len(real) / len(q)
    note = "" if scale == 1 else f" (sklearn timed on {len(q)} queries, x{scale:.0f} extrapolated)"
    note += f" (median of {repeats} interleaved runs)" if repeats > 1 else ""
    err = float(np.abs(sk_dist[:, 0] - dist[: len(q)]).max())
    print(
        f"neighbours n={n} ref={len(synth)} d={d}: ours {ours:.3f} s, "
        f"sklearn brute {sk * scale:.2f} s, "
        f"speed-up {sk * scale / ours:.1f}x, max |diff| {err:.1e}{note}"
    )


def bench_count_closer(n: int = 15000, d: int = 30) -> None:
    """Ranks (eq. 26): every real row's count of real rows closer than its own distance."""
    rng = np.random.default_rng(4)
    real = rng.standard_normal((n, d))
    own = rng.uniform(0.5, 1.0, n) * np.sqrt(2 * d)
    secs, counts = _timed(count_closer, real, real, own)
    print(f"count_closer n={n} d={d}: {secs:.3f} s (mean count {counts.mean():.0f})")


def bench_crossover(n: int = 15000) -> None:
    rng = np.random.default_rng(3)
    for d in (8, 12, 16, 20, 30, 50):
        real, synth = rng.standard_normal((n, d)), rng.standard_normal((int(0.8 * n), d))
        tree = _timed(nearest_distances, real, synth, method="kdtree")[0]
        brute = _timed(nearest_distances, real, synth, method="brute")[0]
        print(f"crossover n={n} d={d}: kdtree {tree:.3f} s, brute {brute:.3f} s")


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    if "--neighbours" in sys.argv:  # only the d >= 16 brute-force figures (issue 11, item 11)
        for dim in (30, 50):
            bench_neighbours(15000, dim, n_ref=30000, repeats=5)
            bench_count_closer(15000, dim)
        sys.exit(0)
    bench_audit()
    bench_neighbours(15000, 7)
    bench_neighbours(15000, 50)
    for dim in (30, 50):  # one-hot columns make such d common (issue 11, item 11)
        bench_neighbours(15000, dim, n_ref=30000, repeats=3)
        bench_count_closer(15000, dim)
    bench_neighbours(200000, 7, sklearn_rows=20000 if quick else None)
    bench_crossover()
