"""The audit's heavy kernels: the CPU path against the torch block kernels (issue 45, item 2).

For 20,000 and 100,000 query rows x 10 and 34 columns (a mixed table like the audit's distance
space: correlated numbers, a 0/1 flag, one-hot blocks, some duplicated rows) against a reference
of 40,000 rows (the synthetic set of a 50,000-row table's split), prints the wall seconds of

* ``nearest``: ``nearest_distances(queries, reference)`` (the distance attack);
* ``kth``: ``neighbour_distances(reference, (1, 5))`` (1st and 5th other row, leave-one-out;
  once per column count, it does not depend on the queries);
* ``kde``: ``GaussianKDE(basis).fit(reference).log_density(queries)`` (the density attack's
  kernel sums, here at every query row; the audit evaluates 2,000 a repeat);
* ``refits``: ``leave_one_out_refits`` of 2,000 holdout rows (the density reference);

on the CPU path (``auto``) and on the torch path (``--device cuda``: the GPU; ``cpu``: the same
torch code on the CPU device), the speed-up and the largest difference between the two paths
(distances: absolute; log-densities: nats). The GPU is warmed up first (context, cuBLAS).

Usage: ``python benchmarks/bench_device_kernels.py [--device cuda|cpu] [--queries 20000 100000]
[--dims 10 34] [--reference 40000] [--skip-cpu-path]``

Results: docs/bench.md ("Speed history", ``bench_device_kernels.py``).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from functools import partial

import numpy as np
import torch

from engine.search.density import GaussianKDE, leave_one_out_refits, principal_basis
from engine.search.neighbours import nearest_distances, neighbour_distances


def table(n: int, d: int, rng: np.random.Generator, jitter: float = 0.0) -> np.ndarray:
    """``n`` rows, ``d`` columns: numbers, a flag, one-hot blocks of 3 levels; 5 % duplicated.
    ``jitter``: normal noise of that SD on the numbers (the discrete columns keep their levels,
    as decoded rows do: noise there sends the CPU's cell search one query at a time)."""
    hot_blocks = max(1, (d - 1) // 6)
    numeric = d - 1 - 3 * hot_blocks
    cov = 0.5 * np.eye(numeric) + 0.5
    numbers = rng.multivariate_normal(np.zeros(numeric), cov, n)
    parts = [numbers, rng.integers(0, 2, (n, 1))]
    parts += [np.eye(3)[rng.integers(0, 3, n)] / np.sqrt(2.0) for _ in range(hot_blocks)]
    x = np.hstack(parts).astype(np.float64)
    dup = n // 20
    x[n - dup :] = x[:dup]
    x[:, :numeric] += jitter * rng.standard_normal((n, numeric))
    return x


def compare(name: str, shape: str, cpu: Callable[[], np.ndarray] | None, dev: Callable) -> None:
    """Time ``cpu`` (None: skipped) and ``dev``; print seconds, speed-up, largest difference."""
    start = time.perf_counter()
    got = dev()
    dev_s = time.perf_counter() - start
    if cpu is None:
        print(f"{name:8s} {shape:>20s} {'-':>9s} {dev_s:9.3f} {'-':>8s} {'-':>9s}", flush=True)
        return
    start = time.perf_counter()
    want = cpu()
    cpu_s = time.perf_counter() - start
    diff = float(np.max(np.abs(np.where(np.isinf(want), 0, want - got)), initial=0.0))
    speed = cpu_s / max(dev_s, 1e-9)
    print(f"{name:8s} {shape:>20s} {cpu_s:9.3f} {dev_s:9.3f} {speed:7.1f}x {diff:9.1e}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--queries", type=int, nargs="+", default=[20_000, 100_000])
    parser.add_argument("--dims", type=int, nargs="+", default=[10, 34])
    parser.add_argument("--reference", type=int, default=40_000)
    parser.add_argument("--holdout", type=int, default=2_000)
    parser.add_argument("--skip-cpu-path", action="store_true", help="time the torch path only")
    args = parser.parse_args()
    method = "cuda" if args.device == "cuda" else "torch"
    skip = args.skip_cpu_path
    if method == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit("no usable CUDA GPU: run with --device cpu")
        print(f"GPU: {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    warm = np.random.default_rng(0).normal(size=(500, 8))  # CUDA context, cuBLAS, first calls
    nearest_distances(warm, warm, method=method)
    neighbour_distances(warm, (1, 5), method=method)
    GaussianKDE(method=method).fit(warm).log_density(warm)
    leave_one_out_refits(warm, np.eye(8), method=method)
    print(f"CPU threads (torch): {torch.get_num_threads()}; torch path on {args.device}")
    head = ("kernel", "rows x cols", "CPU s", "torch s", "speed", "max diff")
    print("{:8s} {:>20s} {:>9s} {:>9s} {:>8s} {:>9s}".format(*head))
    total = time.perf_counter()
    for d in args.dims:
        rng = np.random.default_rng(d)
        ref = table(args.reference, d, rng)
        basis = principal_basis(ref)
        for n in args.queries:
            q = table(n, d, rng, jitter=0.05)
            shape = f"{n} x {args.reference} x {d}"
            cpu = None if skip else partial(nearest_distances, q, ref)
            compare("nearest", shape, cpu, partial(nearest_distances, q, ref, method=method))
            cpu_kde = GaussianKDE(basis=basis).fit(ref)
            dev_kde = GaussianKDE(basis=basis, method=method).fit(ref)
            cpu = None if skip else partial(cpu_kde.log_density, q)
            compare("kde", shape, cpu, partial(dev_kde.log_density, q))
        shape = f"{args.reference} self x {d}"
        cpu = None if skip else partial(neighbour_distances, ref, (1, 5))
        compare("kth", shape, cpu, partial(neighbour_distances, ref, (1, 5), method=method))
        hold = ref[: args.holdout]
        shape = f"{args.holdout} refits x {d}"
        cpu = None if skip else partial(leave_one_out_refits, hold, basis)
        compare("refits", shape, cpu, partial(leave_one_out_refits, hold, basis, method=method))
    print(f"total {time.perf_counter() - total:.1f} s")


if __name__ == "__main__":
    main()
