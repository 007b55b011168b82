"""Exact nearest-neighbour search: certified float32 brute force against the k-d tree.

Prints, per data kind and dimension, the median wall and CPU seconds of
``nearest_distances(queries, reference, method=...)`` for ``kdtree`` and ``brute`` and checks
that both give the same float64 distances. Data kinds: ``gauss`` (standard normal), ``clusters``
(a mixture of 20 tight clusters), ``onehot`` (half the columns standardised numbers, the rest
one-hot blocks of 3-4 levels as the encoder makes them, centred and scaled like the encoder).

Usage: ``python benchmarks/bench_neighbours.py [--n 20000] [--dims 8 10 12 14] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from collections.abc import Callable

import numpy as np

from engine.search.neighbours import nearest_distances


def make(kind: str, n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` rows of ``d`` columns of the named kind."""
    if kind == "gauss":
        return rng.standard_normal((n, d))
    if kind == "clusters":
        centres = rng.standard_normal((20, d)) * 3.0
        return centres[rng.integers(0, 20, n)] + 0.05 * rng.standard_normal((n, d))
    numeric = d // 2
    parts = [rng.standard_normal((n, numeric))]
    left = d - numeric
    while left > 0:
        levels = min(left, 3 if left != 4 else 4)
        share = np.linspace(1, 2, levels)
        hot = np.eye(levels)[rng.choice(levels, n, p=share / share.sum())]
        parts.append((hot - hot.mean(0)) / hot.std(0))
        left -= levels
    return np.hstack(parts)


def timed(func: Callable[[], np.ndarray], repeats: int) -> tuple[float, float, np.ndarray]:
    """Median wall and CPU seconds of ``repeats`` calls, and the last result."""
    walls: list[float] = []
    cpus: list[float] = []
    out = np.empty(0)
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        out = func()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus), out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--dims", type=int, nargs="+", default=[8, 10, 12, 14])
    parser.add_argument("--kinds", nargs="+", default=["gauss", "clusters", "onehot"])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(
        f"{'kind':9} {'d':>3} {'tree wall':>9} {'tree cpu':>9} {'brute wall':>10} {'brute cpu':>9}"
    )
    for kind in args.kinds:
        for d in args.dims:
            rng = np.random.default_rng(d)
            data = make(kind, 2 * args.n, d, rng)
            q, r = data[: args.n], data[args.n :]
            tw, tc, t_out = timed(
                functools.partial(nearest_distances, q, r, method="kdtree"), args.repeats
            )
            bw, bc, b_out = timed(
                functools.partial(nearest_distances, q, r, method="brute"), args.repeats
            )
            gap = float(np.abs(t_out - b_out).max())
            assert gap < 1e-9, f"{kind} d={d}: brute and tree differ by {gap}"
            print(f"{kind:9} {d:3d} {tw:9.2f} {tc:9.2f} {bw:10.2f} {bc:9.2f}", flush=True)


if __name__ == "__main__":
    main()
