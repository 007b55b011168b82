"""Benchmark the hand-written MAF against zuko's ``zuko.flows.MAF`` (prints a table).

Each case runs in its own subprocess so its peak resident memory (``ru_maxrss``) is its own.
Same data (n = 15,000, d = 7), 5 flows, one hidden layer of 64, batch 512, one CPU thread
(on this shared 2-core machine two threads were 10-40x slower for these small matrices).

* training: seconds per epoch (median of 5 epochs after one warm-up epoch), this engine with
  and without masked spectral norm, zuko without and with ``torch.nn.utils.parametrizations
  .spectral_norm`` on every ``MaskedLinear`` (which normalizes ``W``, not ``W * M``);
* generating pass: latent -> data for 100,000 rows in 16,384-row chunks, d = 7 and d = 50
  (this engine's incremental pass vs zuko ``flow().transform.inv``).

Run: ``.venv/bin/python benchmarks/bench_flow.py`` (about 2 minutes).

References: Papamakarios et al. 2017; Germain et al. 2015; Miyato et al. 2018.

Example:
    >>> callable(main)
    True
"""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
N_TRAIN, D_TRAIN, BATCH, FLOWS, HIDDEN = 15_000, 7, 512, 5, 64
N_GEN, CHUNK = 100_000, 16_384


def _data(n: int, d: int) -> torch.Tensor:
    rng = np.random.default_rng(0)
    G = rng.multivariate_normal(np.zeros(d), 0.5 * np.ones((d, d)) + 0.5 * np.eye(d), size=n)
    G[:, 1] = np.exp(0.7 * G[:, 1])
    G = (G - G.mean(0)) / G.std(0)
    return torch.as_tensor(G, dtype=torch.float32)


def _zuko(d: int, spectral: bool) -> torch.nn.Module:
    import zuko

    flow = zuko.flows.MAF(d, transforms=FLOWS, hidden_features=[HIDDEN])
    if spectral:
        for mod in list(flow.modules()):
            if isinstance(mod, zuko.nn.MaskedLinear):
                torch.nn.utils.parametrizations.spectral_norm(mod)
    return flow


def _epoch_seconds(step, X: torch.Tensor) -> float:  # type: ignore[no-untyped-def]
    times = []
    for epoch in range(6):
        t0 = time.perf_counter()
        for xb in X[torch.randperm(len(X))].split(BATCH):
            step(xb)
        if epoch:
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _train_case(engine: str, spectral: bool) -> float:
    from engine.flows.maf import MAF

    X = _data(N_TRAIN, D_TRAIN)[: int(0.8 * N_TRAIN)]
    if engine == "ours":
        model = MAF(D_TRAIN, FLOWS, HIDDEN, 1, spectral_norm=spectral).train()

        def loss_of(xb: torch.Tensor) -> torch.Tensor:
            model.power_iteration_()
            return -model.log_prob(xb).mean()
    else:
        model = _zuko(D_TRAIN, spectral).train()

        def loss_of(xb: torch.Tensor) -> torch.Tensor:
            return -model().log_prob(xb).mean()

    opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True)

    def step(xb: torch.Tensor) -> None:
        loss = loss_of(xb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return _epoch_seconds(step, X)


def _gen_case(engine: str, d: int) -> float:
    from engine.flows.maf import MAF

    torch.manual_seed(0)
    z = torch.randn(N_GEN, d)
    if engine == "ours":
        model = MAF(d, FLOWS, HIDDEN, 1).eval()
        run = model.from_latent
    else:
        zf = _zuko(d, False).eval()
        run = zf().transform.inv
    reps = 3 if engine == "ours" or d < 20 else 1
    best = float("inf")
    with torch.no_grad():
        for c in z[:CHUNK].split(CHUNK):
            run(c)  # warm-up
        for _ in range(reps):
            t0 = time.perf_counter()
            for c in z.split(CHUNK):
                out = run(c)
            best = min(best, time.perf_counter() - t0)
    assert torch.isfinite(out).all()
    return best


def _child(args: list[str]) -> None:
    torch.set_num_threads(1)
    kind, engine, arg = args
    value = _train_case(engine, arg == "sn") if kind == "train" else _gen_case(engine, int(arg))
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": value, "peak_rss_mib": rss_mib}))


def _run(*args: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    """Run every case and print the table."""
    rows = [
        ("train s/epoch (n=15k, d=7)", "latent-synth MAF, masked SN", ("train", "ours", "sn")),
        ("train s/epoch (n=15k, d=7)", "latent-synth MAF, no SN", ("train", "ours", "plain")),
        ("train s/epoch (n=15k, d=7)", "zuko MAF, no SN", ("train", "zuko", "plain")),
        ("train s/epoch (n=15k, d=7)", "zuko MAF + torch spectral_norm", ("train", "zuko", "sn")),
        ("generate 100k rows, d=7 (s)", "latent-synth MAF, incremental", ("gen", "ours", "7")),
        ("generate 100k rows, d=7 (s)", "zuko MAF transform.inv", ("gen", "zuko", "7")),
        ("generate 100k rows, d=50 (s)", "latent-synth MAF, incremental", ("gen", "ours", "50")),
        ("generate 100k rows, d=50 (s)", "zuko MAF transform.inv", ("gen", "zuko", "50")),
    ]
    print(f"{'measure':30} {'engine':34} {'seconds':>9} {'peak RSS MiB':>13}")
    results = {}
    for measure, name, args in rows:
        r = _run(*args)
        results[args] = r["seconds"]
        print(f"{measure:30} {name:34} {r['seconds']:9.3f} {r['peak_rss_mib']:13.0f}", flush=True)
    print(
        f"training, ours with SN vs zuko without: "
        f"{results[('train', 'zuko', 'plain')] / results[('train', 'ours', 'sn')]:.2f}x faster"
    )
    for d in ("7", "50"):
        print(
            f"generating pass d={d}: "
            f"{results[('gen', 'zuko', d)] / results[('gen', 'ours', d)]:.1f}x faster than zuko"
        )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(sys.argv[2:])
    else:
        main()
