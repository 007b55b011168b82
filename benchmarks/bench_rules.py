"""Rules between columns (issue 30): broken synthetic rows and the Cox z-gap, with and without.

Three public tables whose rules are real (loaded from scikit-survival's bundled datasets, so
the bench venv is needed: ``.venv-bench``) and the generated table of ``tests/test_rules.py``:

* ``whas500`` (Worcester Heart Attack Study, 500 rows): ``los <= lenfol`` (hospital stay within
  the follow-up), ``diasbp < sysbp``;
* ``actg320`` (AIDS trial, 1,151 rows): ``txgrp determines tx`` (the group code and the
  treatment indicator), ``cd4 >= 0``;
* ``flchain`` (serum free light chain cohort, 7,874 rows; 3,000 drawn per seed to keep the run
  short): ``chapter only when death = 1`` (a cause of death only for those who died);
* ``generated`` (600 rows): one rule of each kind.

For each table and seed the real pipeline (``fast`` budget, the audit's own w) runs twice on
the same rows and seed: with the rules found (the default) and with all of them removed. Printed
per table: the synthetic rows breaking any found rule (mean over seeds), the Cox model's mean
|z-gap| (|beta_S - beta_R| / se_R over the coefficients), the chosen w and the seconds.

Run: ``nice -n 10 .venv-bench/bin/python benchmarks/bench_rules.py --seeds 6``

Results: docs/bench.md ("Speed history", ``bench_rules.py``).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from engine.columns.rules import broken  # noqa: E402
from engine.pipeline.config import RunConfig  # noqa: E402
from engine.pipeline.prepare_step import prepare  # noqa: E402
from engine.pipeline.synthesize_step import synthesize  # noqa: E402
from engine.stats.models import ModelSpec, compare_fits  # noqa: E402


def _sksurv(loader: str, time_col: str, event_col: str, **kw: object) -> pd.DataFrame:
    import sksurv.datasets as ds

    X, y = getattr(ds, loader)(**kw)
    df = X.copy()
    names = y.dtype.names
    df[time_col], df[event_col] = y[names[1]], y[names[0]].astype(int)
    for c in df.columns:
        if str(df[c].dtype) == "category":
            df[c] = df[c].astype(object)
    return df


def tables() -> dict[str, tuple[pd.DataFrame, str, str, tuple[str, ...]]]:
    """name -> (rows, time, event, Cox covariates)."""
    from tests.test_rules import rules_table

    out = {}
    whas = _sksurv("load_whas500", "lenfol", "fstat")
    out["whas500"] = (whas, "lenfol", "fstat", ("age", "gender", "sysbp", "diasbp", "los"))
    aids = _sksurv("load_aids", "time", "censor", endpoint="aids")
    out["actg320"] = (aids, "time", "censor", ("tx", "cd4", "age", "karnof"))
    fl = _sksurv("load_flchain", "futime", "death")
    out["flchain"] = (fl, "futime", "death", ("age", "sex", "kappa", "lambda", "creatinine"))
    gen = rules_table().drop(columns="id")
    out["generated"] = (gen, "futime", "status", ("age", "sysbp", "trt", "nodes"))
    return out


def one(frame: pd.DataFrame, t: str, e: str, cov: tuple[str, ...], seed: int, tmp: Path,
        rules_on: bool) -> dict[str, float]:  # fmt: skip
    src = tmp / f"t{seed}.csv"
    frame.to_csv(src, index=False)
    base = RunConfig(input=src, time=t, event=e, seed=seed, report=False, budget="fast",
                     device="cpu", allow_risky=True)  # fmt: skip
    found = prepare(base).encoder.rules
    texts = tuple(r.text for r in found.kept)
    cfg = base if rules_on else replace(base, rules_off=texts)
    t0 = time.perf_counter()
    prep = prepare(cfg)
    result = synthesize(prep)
    secs = time.perf_counter() - t0
    synth = result.synthetic
    bad = sum(int(broken(r, synth).sum()) for r in found.kept) if synth is not None else np.nan
    spec = ModelSpec("cox", time=t, event=e, covariates=cov)
    try:
        rows = compare_fits(prep.real, synth, spec).rows
        z = np.array([abs(r.std_difference) for r in rows])
        z_gap = float(np.nanmean(z))
    except Exception as exc:  # noqa: BLE001 - a failed fit is a result
        print(f"  cox failed: {exc}", file=sys.stderr)
        z_gap = np.nan
    return {"broken": bad, "broken_share": bad / len(synth), "z_gap": z_gap,
            "w": result.release.w, "seconds": secs, "n_rules": len(texts)}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--tables", nargs="*", default=None)
    ap.add_argument("--flchain-rows", type=int, default=3000)
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for name, (frame, t, e, cov) in tables().items():
            if args.tables and name not in args.tables:
                continue
            for seed in range(1, args.seeds + 1):
                data = frame
                if len(frame) > args.flchain_rows:
                    data = frame.sample(args.flchain_rows, random_state=seed)
                for on in (True, False):
                    r = one(data.reset_index(drop=True), t, e, cov, seed, Path(d), on)
                    rows.append(
                        {"table": name, "seed": seed, "rules": "kept" if on else "off", **r}
                    )
                    print(rows[-1], flush=True)
    raw = pd.DataFrame(rows)
    summary = raw.groupby(["table", "rules"]).agg(
        broken=("broken", "mean"), broken_pct=("broken_share", lambda s: 100 * s.mean()),
        z_gap=("z_gap", "mean"), w=("w", "mean"), seconds=("seconds", "mean"), n=("seed", "size"),
    )  # fmt: skip
    print(summary.round(3).to_string())
    paired = raw.pivot_table(index=["table", "seed"], columns="rules", values="z_gap")
    diff = (paired["kept"] - paired["off"]).groupby("table").agg(["mean", "std", "size"])
    print("\nz-gap, kept minus off (paired seeds):")
    print(diff.round(3).to_string())
    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    raw.to_csv(out / "bench_rules.csv", index=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
