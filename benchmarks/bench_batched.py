"""Five fold models trained one by one against trained together (issue 45 item 1), and the
demo's audit with the folds trained one by one against together.

    .venv/bin/python benchmarks/bench_batched.py                  # CPU, both tables, the demo
    .venv/bin/python benchmarks/bench_batched.py --device cuda    # on a lent GPU
    .venv/bin/python benchmarks/bench_batched.py --rows 2000 --no-demo

Tables: n x 10 (skewed, correlated, a binary and a sine dependence; seed 0), five folds as the
audit draws them (each model trains on 4/5 of the rows, its own seed). Architectures: the
family's 5-layer flow (``FlowConfig()``, 5 x 64) and its small one (3 x 32). Printed per case:
seconds one by one (``train_flow`` in a loop), seconds together (``train_flows_together``),
the speed-up, each model's epochs both ways, the five models' mean validation NLL both ways and
the largest difference between a model's two validation NLLs. (On these 10-column tables
training amplifies the rounding gap of the batched products, 1e-8 at first, tenfold every few
epochs after about 20: the two trainings of a model part ways and stop at other epochs, as a
single training does on another BLAS or thread count; compare the means.)
The demo: ``prepare`` + ``synthesize`` on the default sub-study (Framingham M, 1,608 rows,
seed 1), the audit's seconds (``timings["audit_seconds"]``) with the run's family fitting a
round's folds one by one (its ``fit_many`` hidden: the path its unequal folds took before)
and together; with ``--device cuda`` the demo runs on that device too.

Measured (the project's shared 2-core machine, CPU, torch 2.13, one training thread, loaded by
other work; seconds one by one -> together): 2,000 x 10: 5 x 64 21.1 -> 8.9 (x2.4), 3 x 32
23.5 -> 14.8 (x1.6); 20,000 x 10: 5 x 64 311 -> 96.5 (x3.2), 3 x 32 129 -> 42.5 (x3.0; most
models ran all 300 epochs). The demo's audit (Framingham M, 15 split models, two runs each):
13.1 and 11.4 s one by one, 9.6 and 6.8 s together; the same model chosen, the same w (0.77)
and AUC at the smallest w (0.5071).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.flows.batched import train_flows_together  # noqa: E402
from engine.flows.train import FlowConfig, train_flow  # noqa: E402

CONFIGS = {"5 x 64 (FlowConfig())": FlowConfig(), "3 x 32": FlowConfig(flows=3, hidden=32)}


def table(n: int, d: int = 10, seed: int = 0) -> np.ndarray:
    """A skewed, correlated n x d table with a binary column and a sine dependence."""
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, d)) @ np.linalg.cholesky(0.5 * np.eye(d) + 0.5).T
    Z[:, 1] = np.exp(0.5 * Z[:, 1])
    Z[:, 2] = (Z[:, 2] > 0.3).astype(float)
    Z[:, 3] = np.sin(2 * Z[:, 0]) + 0.3 * Z[:, 3]
    return (Z - Z.mean(0)) / Z.std(0)


def folds(n: int, k: int = 5, seed: int = 1) -> list[np.ndarray]:
    """Each fold's training rows (the audit's cross-fitting, engine.privacy.attacks)."""
    perm = np.random.default_rng(seed).permutation(n)
    return [np.sort(np.setdiff1d(perm, perm[i::k])) for i in range(k)]


def compare(n: int, label: str, config: FlowConfig, device: str) -> None:
    X = table(n)
    tables = [X[rows] for rows in folds(n)]
    seeds = [1, 2, 3, 4, 5]
    t0 = time.perf_counter()
    alone = [
        train_flow(T, config, seed=s, device=device) for T, s in zip(tables, seeds, strict=True)
    ]
    t_alone = time.perf_counter() - t0
    t0 = time.perf_counter()
    together = train_flows_together(tables, config, seeds=seeds, device=device)
    t_together = time.perf_counter() - t0
    gap = max(abs(a.val_nll - b.val_nll) for a, b in zip(alone, together, strict=True))
    mean_a, mean_b = np.mean([f.val_nll for f in alone]), np.mean([f.val_nll for f in together])
    print(
        f"{n:>7,} x 10  {label:<22} one by one {t_alone:7.2f} s  together {t_together:7.2f} s  "
        f"x{t_alone / t_together:4.2f}   epochs {[f.epochs for f in alone]} / "
        f"{[f.epochs for f in together]}   mean val NLL {mean_a:.4f} / {mean_b:.4f}, "
        f"max |d| {gap:.1e}",
        flush=True,
    )


def demo_audit(device: str) -> None:
    """The demo's audit seconds, folds one by one (fit_many hidden) against together."""
    from engine import prepare, synthesize
    from engine.cli import DEFAULT_DEMO_STUDY
    from engine.pipeline import synthesize_step
    from engine.pipeline.config import RunConfig
    from engine.pipeline.demo import DEMO_EVENT, DEMO_TIME, demo_input

    config = RunConfig(
        input=demo_input(),
        time=DEMO_TIME,
        event=DEMO_EVENT,
        seed=1,
        report=False,
        subset=("study", DEFAULT_DEMO_STUDY),
        device=device,
    )
    fitter = synthesize_step._FamilyFitter
    many = fitter.fit_many
    for mode in ("one by one", "together", "one by one", "together"):
        if mode == "one by one":
            del fitter.fit_many
        try:
            t0 = time.perf_counter()
            result = synthesize(prepare(config))
            wall = time.perf_counter() - t0
        finally:
            fitter.fit_many = many
        audit = result.audit
        print(
            f"demo ({DEFAULT_DEMO_STUDY}, seed 1) {mode:<10}: audit "
            f"{result.timings['audit_seconds']:6.2f} s, prepare + synthesize {wall:6.2f} s; "
            f"{audit.splits} split models, chosen {audit.chosen!r}, w {audit.selected_w}, "
            f"AUC at the smallest w {audit.curve[0].auc:.4f}",
            flush=True,
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    ap.add_argument("--rows", type=int, nargs="*", default=[2_000, 20_000])
    ap.add_argument("--no-demo", action="store_true", help="skip the demo's audit")
    args = ap.parse_args(argv)
    import torch

    print(f"torch {torch.__version__}, device {args.device}, {torch.get_num_threads()} threads")
    for n in args.rows:
        for label, config in CONFIGS.items():
            compare(n, label, config, args.device)
    if not args.no_demo:
        demo_audit(args.device)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
