"""Issue 45's device check in one call: the GPU against the same machine's CPU, all cores
against two, on the same tables and seeds; every figure printed, then "met" / "not met" per
target.

Targets (issue 45, Done when):

* GPU end to end at least 4x faster than the machine's CPU alone on 50,000 x 34, at least 3x on
  1,000,000 x 10; the same chosen model and a w within the audit's SE; a seeded GPU re-run
  byte-identical (the synthetic file's SHA-256);
* all cores at least 3x faster than two (``taskset``) on the 100,000-row tables, with less total
  CPU time than before (324 s on 16 cores for 100,000 x 12).

Each run is ``latent-synth run`` in a child process (its wall time, CPU time and peak memory from
``os.wait4``), so a run's threads and memory never leak into the next. Cases run in order of
importance while the time budget (``--budget``, default 470 s) allows; a case that would not fit
is printed as "not run (time)". ``--scale 0.02`` makes every table 50 times smaller, to try the
script on a laptop or in CI.

Run: ``python benchmarks/device_check.py [--budget 470] [--scale 1.0] [--cases a,b]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]


def nongaussian(rows: int, cols: int, seed: int = 0) -> pd.DataFrame:
    """A survival table whose columns are not Gaussian: skewed (log-normal, gamma), bimodal,
    heavy-tailed, counts, categories and flags, linked to each other and to the hazard."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(rows, 4))
    out: dict[str, Any] = {}
    makers = [
        lambda i: np.exp(0.6 * base[:, i % 4] + rng.normal(0, 0.4, rows)).round(2),
        lambda i: rng.gamma(1.5 + i % 3, 1.0, rows).round(2) + (base[:, i % 4] > 0),
        lambda i: (
            np.where(
                rng.random(rows) < 0.3, rng.normal(-2, 0.5, rows), rng.normal(1.5, 0.8, rows)
            ).round(2)
            + 0.3 * base[:, i % 4]
        ),
        lambda i: rng.standard_t(3, rows).round(2) + 0.5 * base[:, i % 4],
        lambda i: rng.poisson(np.exp(0.5 + 0.4 * base[:, i % 4])),
        lambda i: rng.choice(list("abcde"), rows, p=[0.4, 0.25, 0.2, 0.1, 0.05]),
        lambda i: (base[:, i % 4] + rng.normal(0, 1, rows) > 0.5).astype(int),
    ]
    for i in range(cols - 2):
        out[f"c{i:02d}"] = makers[i % len(makers)](i)
    hazard = 0.05 * np.exp(0.4 * base[:, 0] - 0.3 * base[:, 1])
    t_event, t_cens = rng.exponential(1 / hazard), rng.uniform(2, 20, rows)
    out["time"] = np.minimum(t_event, t_cens).round(2)
    out["event"] = (t_event <= t_cens).astype(int)
    return pd.DataFrame(out)


def plain(rows: int, cols: int, seed: int = 0) -> pd.DataFrame:
    """A near-Gaussian survival table (the shape where small flows win)."""
    rng = np.random.default_rng(seed)
    X = rng.multivariate_normal(np.zeros(cols - 2), 0.5 * np.eye(cols - 2) + 0.5, rows)
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(cols - 2)]).round(2)
    hazard = 0.05 * np.exp(0.3 * X[:, 0])
    t_event, t_cens = rng.exponential(1 / hazard), rng.uniform(2, 20, rows)
    frame["time"] = np.minimum(t_event, t_cens).round(2)
    frame["event"] = (t_event <= t_cens).astype(int)
    return frame


# name: (table maker, rows, columns, runs as (label, device, cpus or None for all))
CASES: dict[str, tuple[Any, int, int, list[tuple[str, str, int | None]]]] = {
    "wide50k": (
        nongaussian,
        50_000,
        34,
        [("gpu", "cuda", None), ("cpu", "cpu", None), ("gpu again", "cuda", None)],
    ),
    "cores100k": (plain, 100_000, 10, [("2 cores", "cpu", 2), ("all cores", "cpu", None)]),
    "cores100k12": (nongaussian, 100_000, 12, [("2 cores", "cpu", 2), ("all cores", "cpu", None)]),
    "rows1m": (plain, 1_000_000, 10, [("gpu", "cuda", None), ("cpu", "cpu", None)]),
}


def run_once(table: Path, device: str, cpus: int | None, out: Path, seed: int) -> dict[str, Any]:
    """One ``latent-synth run`` in a child process: wall, CPU seconds, peak MB and its record."""
    cmd = [
        sys.executable,
        "-m",
        "engine",
        "run",
        str(table),
        "--time",
        "time",
        "--event",
        "event",
        "--seed",
        str(seed),
        "--device",
        device,
        "--out",
        str(out),
        "--quiet",
        "--no-report",
    ]
    if cpus is not None and shutil.which("taskset"):
        cmd = ["taskset", "-c", ",".join(str(c) for c in range(cpus)), *cmd]
    start = time.perf_counter()
    child = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    text = child.stdout.read().decode(errors="replace") if child.stdout else ""
    record: dict[str, Any] = {}
    if (out / "audit.json").is_file():
        record = json.loads((out / "audit.json").read_text(encoding="utf-8"))
    synth = next(iter(sorted(out.glob("synthetic.*"))), None)
    digest = hashlib.sha256(synth.read_bytes()).hexdigest()[:16] if synth else None
    return {
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "peak_mb": usage.ru_maxrss / 1024,
        "status": os.waitstatus_to_exitcode(status),
        "record": record,
        "sha": digest,
        "tail": text.strip().splitlines()[-2:],
    }


def _chosen(record: dict[str, Any]) -> tuple[Any, Any, Any]:
    """(the model chosen, the w released, the audit's SE at the decision)."""
    release, model = record.get("release") or {}, record.get("model") or {}
    label = model.get("label") or f"{model.get('flows')} x {model.get('hidden')}"
    return label, release.get("w"), (record.get("audit") or {}).get("se_at_decision")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=float, default=470.0, help="seconds for all runs")
    ap.add_argument("--scale", type=float, default=1.0, help="rows multiplier (0.02 to try)")
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated case names")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    import torch

    gpu = torch.cuda.is_available()
    print(
        f"machine: {os.cpu_count()} CPUs, GPU: "
        f"{torch.cuda.get_device_name(0) if gpu else 'none'}; torch {torch.__version__}"
    )
    began, results = time.perf_counter(), {}
    work = Path(tempfile.mkdtemp(prefix="device-check-"))
    for name in args.cases.split(","):
        maker, rows, cols, runs = CASES[name]
        rows = max(500, int(rows * args.scale))
        table = work / f"{name}.csv"
        maker(rows, cols).to_csv(table, index=False)
        for label, device, cpus in runs:
            if device == "cuda" and not gpu:
                print(f"{name} {rows:,} x {cols} {label}: not run (no GPU)")
                continue
            spent = time.perf_counter() - began
            guess = max((r["wall"] for (n, _), r in results.items() if n == name), default=0.0)
            if spent + guess > args.budget:
                print(f"{name} {rows:,} x {cols} {label}: not run (time)")
                continue
            r = run_once(table, device, cpus, work / f"{name}-{label.replace(' ', '-')}", args.seed)
            results[(name, label)] = r
            chosen, w, se = _chosen(r["record"])
            timings = r["record"].get("timings") or {}
            print(
                f"{name} {rows:,} x {cols} {label}: {r['wall']:.1f} s wall, {r['cpu']:.0f} s CPU, "
                f"{r['peak_mb']:.0f} MB peak; exit {r['status']}; model {chosen}; w {w} (SE {se}); "
                f"sha {r['sha']}; timings {json.dumps(timings)[:300]}"
            )
            if r["status"] != 0:
                print("   " + " | ".join(r["tail"]))
    _verdicts(results)
    shutil.rmtree(work, ignore_errors=True)


def _verdicts(results: dict[tuple[str, str], dict[str, Any]]) -> None:
    """Each target with its figure and "met" / "not met" (or "not measured")."""

    def ratio(case: str, slow: str, fast: str) -> float | None:
        a, b = results.get((case, slow)), results.get((case, fast))
        return None if a is None or b is None else a["wall"] / b["wall"]

    def say(target: str, value: float | None, need: float) -> None:
        if value is None:
            print(f"{target}: not measured")
        else:
            print(
                f"{target}: {value:.2f}x (need {need:g}x) {'met' if value >= need else 'not met'}"
            )

    say("GPU vs CPU, 50,000 x 34", ratio("wide50k", "cpu", "gpu"), 4)
    say("GPU vs CPU, 1,000,000 x 10", ratio("rows1m", "cpu", "gpu"), 3)
    say("all cores vs 2, 100,000 x 10", ratio("cores100k", "2 cores", "all cores"), 3)
    say("all cores vs 2, 100,000 x 12", ratio("cores100k12", "2 cores", "all cores"), 3)
    a, b = results.get(("wide50k", "gpu")), results.get(("wide50k", "gpu again"))
    if a and b:
        same = a["sha"] == b["sha"] and a["sha"] is not None
        print(f"seeded GPU re-run byte-identical: {'met' if same else 'not met'}")
    a, b = results.get(("wide50k", "gpu")), results.get(("wide50k", "cpu"))
    if a and b:
        (ma, wa, sa), (mb, wb, _) = _chosen(a["record"]), _chosen(b["record"])
        close = wa is not None and wb is not None and abs(wa - wb) <= 2 * float(sa or 0.05)
        print(
            f"same model on GPU and CPU ({ma} / {mb}) and w within the SE ({wa} / {wb}): "
            f"{'met' if ma == mb and close else 'not met'}"
        )
    c = results.get(("cores100k12", "all cores"))
    if c:
        print(
            f"CPU time, 100,000 x 12 on all cores: {c['cpu']:.0f} s (before: 324 s) "
            f"{'met' if c['cpu'] < 324 else 'not met'}"
        )


if __name__ == "__main__":
    main()
