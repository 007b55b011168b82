"""The range rule's tails before and after issue 44: piled on the bound vs spread inside it.

Every numeric column is kept inside its 10th smallest to 10th largest real value. Before issue
44 a synthetic value drawn beyond a bound was decoded *at* the bound; now the draws beyond it and
the real tail just inside it are squeezed together over that tail (the soft top-coding of
:meth:`engine.encoding.marginals.NormalScores.squeeze`). This script trains one flow per table
(the pipeline's encoder, ``fast`` budget, seed 1), draws the release's latent step at w = 0.5
``DRAWS`` times and decodes every draw twice, with the old hard clip and with the squeeze, so
the two differ only in the decode. Per table it prints:

* per numeric column: real and synthetic rows at each bound value (per 1,000 rows), KS
  distance to the real column (before / after);
* per Cox covariate: mean z-gap ``(beta_synth - beta_real) / se_real`` over the draws (before /
  after), and the z-gap of the real table limited to the same bounds (the rule's own cost,
  :mod:`engine.stats.topcoded`): a gap the limited real table shares is the rule's.

Tables: a generated breast-cancer-like table of 1,491 rows (positive nodes from a lognormal,
real maximum in the 30s, 10th largest about 20; a Cox outcome whose log hazard rises 0.06 per
node) and the demo cohort's Framingham M study (1,608 rows).

Run: ``.venv/bin/python benchmarks/bench_tails.py`` (about 20 s on 2 shared cores).

Results: docs/bench.md ("Speed history", ``bench_tails.py``).
"""

from __future__ import annotations

import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import ks_2samp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.flows.generate import latent_noise_injection  # noqa: E402
from engine.flows.select import select_flow  # noqa: E402
from engine.pipeline.config import RunConfig  # noqa: E402
from engine.pipeline.demo import demo_input  # noqa: E402
from engine.pipeline.prepare_step import prepare  # noqa: E402
from engine.stats.models import ModelSpec, fit_model  # noqa: E402
from engine.stats.topcoded import limited_table, schema_bounds  # noqa: E402

W, DRAWS, SEED = 0.5, 10, 1


def skewed_table(n: int = 1491, seed: int = 0) -> pd.DataFrame:
    """Breast-cancer-like: age, tumour size, positive nodes (long tail), time to recurrence."""
    rng = np.random.default_rng(seed)
    age = rng.normal(56.0, 11.0, n).round(0)
    size = rng.gamma(2.5, 9.0, n).round(0) + 1.0
    nodes = np.floor(rng.lognormal(0.4, 1.2, n)).astype(int)
    hazard = 0.02 * np.exp(0.06 * nodes + 0.012 * (size - 22.0) + 0.01 * (age - 56.0))
    t = rng.exponential(1.0 / hazard)
    censor = rng.uniform(10.0, 120.0, n)
    time_ = np.minimum(t, censor).round(1) + 0.1
    event = (t <= censor).astype(int)
    return pd.DataFrame({"age": age, "size": size, "nodes": nodes, "time": time_, "event": event})


def demo_table() -> pd.DataFrame:
    frame = pd.read_csv(demo_input())
    keep = ["time_cvd_years", "cvd", "age", "totchol", "hdl", "sbp"]
    return frame.loc[frame["study"] == "Framingham M", keep].reset_index(drop=True)


def hard(encoder: object) -> list[object]:
    """Swap the inner encoder's marginals for their hard-clipped versions; returns the old."""
    inner = getattr(encoder, "inner", encoder)
    old = list(inner.columns_)  # type: ignore[attr-defined]
    inner.columns_ = [replace(c, marginal=c.marginal.hard_clipped()) for c in old]  # type: ignore[attr-defined]
    return old


def bench(name: str, frame: pd.DataFrame, time_col: str, event: str) -> None:
    covariates = tuple(c for c in frame.columns if c not in (time_col, event))
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / f"{name}.csv"
        frame.to_csv(src, index=False)
        cfg = RunConfig(
            input=src, time=time_col, event=event, analysis="cox", covariates=covariates, seed=SEED
        )
        prep = prepare(cfg)
    t0 = time.perf_counter()
    rng = np.random.default_rng(SEED)
    X = prep.encoder.transform(prep.real, rng)
    flow = select_flow(X, budget="fast", device="cpu", seed=SEED)
    train_s = time.perf_counter() - t0
    spec = ModelSpec("cox", time=time_col, event=event, covariates=covariates)
    real = prep.real
    real_fit = fit_model(real, spec)
    bounds = schema_bounds(prep.schema)
    limited_fit = fit_model(limited_table(real, bounds), spec)
    draws = {"before": [], "after": []}
    for _ in range(DRAWS):
        Xs = latent_noise_injection(flow, X, W, rng)
        draws["after"].append(prep.encoder.inverse_transform(Xs).frame)
        old = hard(prep.encoder)
        try:
            draws["before"].append(prep.encoder.inverse_transform(Xs).frame)
        finally:
            getattr(prep.encoder, "inner", prep.encoder).columns_ = old
    print(f"\n== {name}: {len(real)} rows, flow trained in {train_s:.0f} s, w = {W}, {DRAWS} draws")
    print(
        f"{'column':>15} {'bounds':>15} | per 1,000 rows at lower / upper bound: real, before, "
        "after | KS before, after"
    )
    for col, (lo, hi) in bounds.items():
        r = real[col].to_numpy(float)
        at = {k: pd.concat([d[col] for d in v]).to_numpy(float) for k, v in draws.items()}

        def per_k(v: np.ndarray, x: float) -> str:
            return f"{1000 * np.mean(v == x):5.1f}"

        ks = {k: np.mean([ks_2samp(r, d[col]).statistic for d in v]) for k, v in draws.items()}
        print(
            f"{col:>15} {f'{lo:g}-{hi:g}':>15} | lower {per_k(r, lo)} {per_k(at['before'], lo)} "
            f"{per_k(at['after'], lo)} upper {per_k(r, hi)} {per_k(at['before'], hi)} "
            f"{per_k(at['after'], hi)} | {ks['before']:.4f} {ks['after']:.4f}"
        )
    print(
        f"{'covariate':>15} | Cox z-gap (synthetic - real) / SE_real: before, after | limited real"
    )
    for c in covariates:
        r = real_fit.coefficient(c)
        gaps = {
            k: np.mean(
                [(fit_model(d, spec).coefficient(c).estimate - r.estimate) / r.se for d in v]
            )
            for k, v in draws.items()
        }
        lim = (limited_fit.coefficient(c).estimate - r.estimate) / r.se
        print(
            f"{c:>15} | {gaps['before']:+.2f} {gaps['after']:+.2f} | {lim:+.2f} (HR real "
            f"{np.exp(r.estimate):.4f}, limited {np.exp(limited_fit.coefficient(c).estimate):.4f})"
        )


def main() -> None:
    bench("skewed (nodes-like)", skewed_table(), "time", "event")
    bench("demo Framingham M", demo_table(), "time_cvd_years", "cvd")


if __name__ == "__main__":
    main()
