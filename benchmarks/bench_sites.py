"""Multi-site meta-analysis of latent-synth releases: does pooling the sites' synthetic tables
reproduce the real pooled answer, each site released at the w its own audit chooses?

Every site goes through the real pipeline (``prepare`` + ``synthesize``, ``fast`` budget, CPU, no
report): the audit over the w grid, the model and w it chooses, the release at that w (not a
fixed w, unlike ``bench_meta_simulation.py``). A refusal is a result: it is counted and that site
is left out of the synthetic pooling for that seed (the real pooling keeps every site; the
``paired`` figures pool the real tables of the released sites only). Pooling is
DerSimonian-Laird (:func:`engine.stats.meta.pool`).

Part ``meta``: the paper's meta-analysis simulation (section 3.1.2, docs/method.md section 8; the
data as in ``bench_meta_simulation.py``). Seed s draws K = 10 studies from
``default_rng(2024 + s)``: n_k ~ U[750, 1000], X ~ N(0, I4), Y = b0k + b1k X1 + ... + b4k X4 + e,
var(e) = 0.5, (b0k..b4k) ~ N((0,1,1,1,1), SIGMA_BETA); study k runs with ``seed = s * 100 + k``
(columns y, x1..x4; no survival columns). Target: the OLS coefficient of x2 (true value 1).
Per seed: |pooled real - pooled synthetic|, |pooled synthetic - 1|, |pooled real - 1|, the
chosen w per study (mean, min, max), refusals. Done when the mean |real - synthetic| over seeds
is at most 0.006 (the paper: 0.0042 at w = 0.8, 0.0089 at w = 0).

Part ``trial``: a four-arm trial split into sites. Seed s draws, from ``default_rng(7000 + s)``,
2,200 patients in four arms of 550 (the arm is the site; the site table has no arm column):
age ~ N(35, 9) in 18..70, weight ~ N(75, 13) kg in 40..150, karnofsky in {70, 80, 90, 100}
(.05, .15, .35, .45), cd4 ~ N(350, 120) in 20..1200; Weibull proportional hazards (shape 1.3,
scale 0.15 per year) with log hazard ratios -0.35 per 100 cd4 cells, +0.15 per 10 years of age,
-0.05 per 10 kg, -0.30 per 10 Karnofsky points, arms 0 / -0.25 / -0.35 / -0.45; censoring at
3 years and uniform dropout on 0..8 years (about 30 % have the event, 19-38 % by arm); time in
whole days (at least 1). Per site: the Cox fit time, event ~ cd4 + age + weight + karnofsky
(lifelines) on the real and on the synthetic table, the cd4 log hazard ratio (shown per 100
cells) and its SE, the chosen w. Per seed: the pooled gap in standard errors,
|pooled synthetic - pooled real| / se of the pooled real estimate, and each site's own gap.
Done when the mean pooled gap over seeds is at most 1.25 (aim 0.5).

Per-seed rows: ``<out>/sites_meta.csv`` and ``<out>/sites_trial.csv`` (rewritten after every
seed).

Run (two shared cores; a meta seed is 10 pipeline runs on ~900 rows, a trial seed 4 on 550)::

    nice -n 10 .venv/bin/python benchmarks/bench_sites.py                  # both, 10 + 6 seeds
    nice -n 10 .venv/bin/python benchmarks/bench_sites.py --part trial --seeds 6
    nice -n 10 .venv/bin/python benchmarks/bench_sites.py --part meta --seeds 10
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import statsmodels.api as sm

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "benchmarks"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from engine.pipeline.config import RunConfig  # noqa: E402
from engine.pipeline.prepare_step import prepare  # noqa: E402
from engine.pipeline.synthesize_step import synthesize  # noqa: E402
from engine.stats.meta import pool  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"

# Part "meta": as bench_meta_simulation.py
K = 10
SIGMA_BETA = np.full((5, 5), 5e-5)
np.fill_diagonal(SIGMA_BETA, 1e-4)
SIGMA_BETA[1, 1] = 5e-3
BETA = np.array([0.0, 1.0, 1.0, 1.0, 1.0])
META_TARGET = 0.006  # Done-when: mean |pooled real - pooled synthetic| at most this
PAPER = {"w=0.8": 0.0042, "w=0": 0.0089}

# Part "trial"
ARMS = 4
PER_ARM = 550
ARM_EFFECT = np.array([0.0, -0.25, -0.35, -0.45])
SHAPE = 1.3
SCALE = 0.15  # Weibull scale per year at the reference covariates (about 30 % events)
ADMIN_YEARS = 3.0
DROPOUT_YEARS = 8.0  # dropout time ~ U(0, 8) years
COVARIATES = ["cd4", "age", "weight", "karnofsky"]
TRIAL_TARGET = 1.25  # Done-when: mean pooled gap (in SEs of the pooled real estimate) at most
TRIAL_AIM = 0.5


# --------------------------------------------------------------------------------------------
# The real pipeline on one site
# --------------------------------------------------------------------------------------------


def run_site(
    table: pd.DataFrame, name: str, seed: int, tmp: Path, survival: bool
) -> dict[str, Any]:
    """The real pipeline (``fast``, CPU, no report) on one site's table: release and audit."""
    src = tmp / f"{name}.csv"
    table.to_csv(src, index=False)
    if survival:
        cfg = RunConfig(
            input=src,
            seed=seed,
            time="time",
            event="event",
            report=False,
            budget="fast",
            device="cpu",
        )
    else:
        cfg = RunConfig(input=src, seed=seed, report=False, budget="fast", device="cpu")
    t0 = time.perf_counter()
    result = synthesize(prepare(cfg))
    out: dict[str, Any] = {
        "synthetic": result.synthetic,
        "w": result.release.w,
        "seconds": time.perf_counter() - t0,
        "model": "",
        "se_decision": None,
        "reason": "",
    }
    audit = result.audit
    if audit is not None:
        out["model"] = str(audit.chosen or "")
        out["se_decision"] = audit.se_at_decision
    if result.synthetic is None and result.refusal is not None:
        out["reason"] = result.refusal.reason
    return out


def pooled(est: list[float], ses: list[float]) -> tuple[float, float]:
    """DerSimonian-Laird pooled estimate and SE; NaN when fewer than 2 usable sites."""
    pairs = [(e, s) for e, s in zip(est, ses, strict=True) if np.isfinite(e) and np.isfinite(s)]
    if len(pairs) < 2:
        return float("nan"), float("nan")
    b, s = np.array(pairs).T
    res = pool(b, s, method="dl")
    return float(res.estimate), float(res.se)


def numeric(frame: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    """The columns as numbers, rows with a missing value left out."""
    return frame[cols].apply(pd.to_numeric, errors="coerce").dropna().reset_index(drop=True)


# --------------------------------------------------------------------------------------------
# Part "meta"
# --------------------------------------------------------------------------------------------


def ols_beta2(frame: pd.DataFrame) -> tuple[float, float]:
    """OLS y ~ x1..x4: the coefficient of x2 and its SE (NaN when the fit fails)."""
    data = numeric(frame, ["y", "x1", "x2", "x3", "x4"])
    try:
        fit = sm.OLS(data["y"], sm.add_constant(data[["x1", "x2", "x3", "x4"]])).fit()
        return float(fit.params["x2"]), float(fit.bse["x2"])
    except Exception as exc:  # noqa: BLE001 - a failed fit is a result, shown as NaN
        print(f"    OLS failed: {exc}", file=sys.stderr)
        return float("nan"), float("nan")


def meta_studies(seed: int) -> list[pd.DataFrame]:
    """Seed s's K studies, drawn as bench_meta_simulation.py draws them."""
    rng = np.random.default_rng(2024 + seed)
    studies = []
    for _ in range(K):
        n = int(rng.integers(750, 1001))
        beta = rng.multivariate_normal(BETA, SIGMA_BETA)
        x = rng.standard_normal((n, 4))
        y = beta[0] + x @ beta[1:] + rng.normal(0, np.sqrt(0.5), n)
        frame = pd.DataFrame(x, columns=["x1", "x2", "x3", "x4"])
        frame.insert(0, "y", y)
        studies.append(frame)
    return studies


def meta_seed(seed: int, tmp: Path) -> dict[str, Any]:
    """One replicate of the meta simulation, each study at its own audited w."""
    t0 = time.perf_counter()
    real_b, real_s, syn_b, syn_s, ws, models, n_rows = [], [], [], [], [], [], []
    refused: list[int] = []
    for k, study in enumerate(meta_studies(seed)):
        b, s = ols_beta2(study)
        real_b.append(b)
        real_s.append(s)
        n_rows.append(len(study))
        site = run_site(study, f"meta_{seed}_{k}", seed * 100 + k, tmp, survival=False)
        models.append(site["model"] or "-")
        if site["synthetic"] is None:
            refused.append(k)
            syn_b.append(float("nan"))
            syn_s.append(float("nan"))
            print(f"    study {k}: refused ({site['reason']})", flush=True)
            continue
        ws.append(float(site["w"]))
        sb, ss = ols_beta2(site["synthetic"])
        syn_b.append(sb)
        syn_s.append(ss)
    pr, pr_se = pooled(real_b, real_s)
    ps, ps_se = pooled(syn_b, syn_s)
    kept = [i for i in range(K) if i not in refused]
    paired, _ = pooled([real_b[i] for i in kept], [real_s[i] for i in kept])
    wa = np.array(ws) if ws else np.array([np.nan])
    return {
        "seed": seed,
        "studies": K,
        "rows_mean": float(np.mean(n_rows)),
        "released": len(kept),
        "refused": len(refused),
        "refused_studies": ";".join(str(i) for i in refused),
        "pooled_real": pr,
        "se_real": pr_se,
        "pooled_synth": ps,
        "se_synth": ps_se,
        "abs_real_synth": abs(pr - ps),
        "abs_synth_truth": abs(ps - 1.0),
        "abs_real_truth": abs(pr - 1.0),
        "abs_real_synth_paired": abs(paired - ps),
        "w_mean": float(np.mean(wa)),
        "w_min": float(np.min(wa)),
        "w_max": float(np.max(wa)),
        "w_studies": ";".join(f"{w:.3f}" for w in ws),
        "models": ";".join(models),
        "seconds": time.perf_counter() - t0,
    }


def meta_part(seeds: int, out: Path, tmp: Path) -> list[dict[str, Any]]:
    """Seeds 1..N of the meta simulation; prints one line per seed, writes sites_meta.csv."""
    print(f"== meta: {seeds} seeds x {K} studies, each at its own audited w", flush=True)
    rows = []
    t0 = time.perf_counter()
    for s in range(1, seeds + 1):
        r = meta_seed(s, tmp)
        rows.append(r)
        pd.DataFrame(rows).to_csv(out / "sites_meta.csv", index=False)
        print(
            f"meta seed {s}: pooled beta2 real {r['pooled_real']:.4f} synth "
            f"{r['pooled_synth']:.4f} |real-synth| {r['abs_real_synth']:.4f} "
            f"|synth-1| {r['abs_synth_truth']:.4f} |real-1| {r['abs_real_truth']:.4f}; "
            f"w mean {r['w_mean']:.2f} (min {r['w_min']:.2f}, max {r['w_max']:.2f}); "
            f"refused {r['refused']}/{K}; {r['seconds']:.0f} s",
            flush=True,
        )
    seconds = time.perf_counter() - t0
    frame = pd.DataFrame(rows)
    mad = float(frame["abs_real_synth"].mean())
    refused = int(frame["refused"].sum())
    ws = [float(w) for v in frame["w_studies"] for w in str(v).split(";") if v and w]
    print(f"\n-- meta summary ({seeds} seeds x {K} studies, {seconds:.0f} s)")
    print(
        f"mean |pooled real - pooled synth| beta2   {mad:.4f}   target <= {META_TARGET}: "
        f"{'met' if mad <= META_TARGET else 'not met'}   (paper: {PAPER['w=0.8']} at w = 0.8, "
        f"{PAPER['w=0']} at w = 0)"
    )
    print(f"  same, real pooled over released studies {frame['abs_real_synth_paired'].mean():.4f}")
    print(f"mean |pooled synth - 1|                   {frame['abs_synth_truth'].mean():.4f}")
    print(f"mean |pooled real - 1|                    {frame['abs_real_truth'].mean():.4f}")
    if ws:
        print(
            f"chosen w: mean {np.mean(ws):.3f} (min {np.min(ws):.2f}, max {np.max(ws):.2f}) "
            f"over {len(ws)} released studies"
        )
    print(
        f"refused: {refused} of {seeds * K} studies (left out of the synthetic pooling of "
        "their seed)"
    )
    print(f"meta part: {seconds:.1f} s", flush=True)
    return rows


# --------------------------------------------------------------------------------------------
# Part "trial"
# --------------------------------------------------------------------------------------------


def trial_table(seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    """One four-arm trial (2,200 patients) and its arm per row."""
    rng = np.random.default_rng(7000 + seed)
    n = ARMS * PER_ARM
    arm = rng.permutation(np.repeat(np.arange(ARMS), PER_ARM))
    age = np.clip(rng.normal(35, 9, n), 18, 70)
    weight = np.clip(rng.normal(75, 13, n), 40, 150)
    karnofsky = rng.choice([70, 80, 90, 100], size=n, p=[0.05, 0.15, 0.35, 0.45])
    cd4 = np.clip(rng.normal(350, 120, n), 20, 1200)
    lp = (
        -0.35 * (cd4 - 350) / 100
        + 0.15 * (age - 35) / 10
        - 0.05 * (weight - 75) / 10
        - 0.30 * (karnofsky - 90) / 10
        + ARM_EFFECT[arm]
    )
    u = rng.uniform(size=n)
    t_event = (-np.log(u) / (SCALE * np.exp(lp))) ** (1 / SHAPE)  # years
    t_cens = np.minimum(ADMIN_YEARS, rng.uniform(0, DROPOUT_YEARS, n))
    event = (t_event <= t_cens).astype(int)
    days = np.maximum(1.0, np.round(np.minimum(t_event, t_cens) * 365.25))
    frame = pd.DataFrame(
        {
            "time": days,
            "event": event,
            "age": np.round(age, 1),
            "weight": np.round(weight, 1),
            "karnofsky": karnofsky,
            "cd4": np.round(cd4),
        }
    )
    return frame, arm


def cox_cd4(frame: pd.DataFrame) -> tuple[float, float]:
    """Cox time, event ~ cd4 + age + weight + karnofsky: cd4's log HR per cell and its SE."""
    from lifelines import CoxPHFitter

    data = numeric(frame, ["time", "event", *COVARIATES])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = CoxPHFitter().fit(data, duration_col="time", event_col="event")
        return float(fit.params_["cd4"]), float(fit.standard_errors_["cd4"])
    except Exception as exc:  # noqa: BLE001 - a failed fit is a result, shown as NaN
        print(f"    Cox fit failed: {exc}", file=sys.stderr)
        return float("nan"), float("nan")


def trial_seed(seed: int, tmp: Path) -> dict[str, Any]:
    """One trial: four sites through the pipeline, pooled cd4 log HR real vs synthetic."""
    t0 = time.perf_counter()
    frame, arm = trial_table(seed)
    row: dict[str, Any] = {
        "seed": seed,
        "patients": len(frame),
        "events": int(frame["event"].sum()),
    }
    real_b, real_s, syn_b, syn_s, ws, lines = [], [], [], [], [], []
    refused = 0
    for a in range(ARMS):
        site = frame[arm == a].reset_index(drop=True)
        b, s = cox_cd4(site)
        real_b.append(b)
        real_s.append(s)
        run = run_site(site, f"trial_{seed}_{a}", seed * 100 + a, tmp, survival=True)
        prefix = f"site{a}_"
        row.update(
            {
                prefix + "n": len(site),
                prefix + "events": int(site["event"].sum()),
                prefix + "real": 100 * b,
                prefix + "se_real": 100 * s,
                prefix + "model": run["model"],
                prefix + "se_decision": run["se_decision"],
                prefix + "seconds": run["seconds"],
            }
        )
        if run["synthetic"] is None:
            refused += 1
            syn_b.append(float("nan"))
            syn_s.append(float("nan"))
            row.update({prefix + "w": None, prefix + "synth": None, prefix + "gap_se": None})
            lines.append(f"    site {a}: refused ({run['reason']})")
            continue
        sb, ss = cox_cd4(run["synthetic"])
        syn_b.append(sb)
        syn_s.append(ss)
        ws.append(float(run["w"]))
        gap = abs(sb - b) / s
        row.update(
            {prefix + "w": float(run["w"]), prefix + "synth": 100 * sb, prefix + "gap_se": gap}
        )
        lines.append(
            f"    site {a}: n {len(site)}, events {int(site['event'].sum())}, cd4 log HR/100 "
            f"real {100 * b:+.3f} (se {100 * s:.3f}) synth {100 * sb:+.3f}, gap {gap:.2f} se, "
            f"w {run['w']:.2f} ({run['model']}), {run['seconds']:.0f} s"
        )
    pr, pr_se = pooled(real_b, real_s)
    ps, ps_se = pooled(syn_b, syn_s)
    kept = [i for i in range(ARMS) if np.isfinite(syn_b[i])]
    paired, paired_se = pooled([real_b[i] for i in kept], [real_s[i] for i in kept])
    site_gaps = [row[f"site{a}_gap_se"] for a in range(ARMS) if row[f"site{a}_gap_se"] is not None]
    row.update(
        {
            "released": ARMS - refused,
            "refused": refused,
            "pooled_real": 100 * pr,
            "se_real": 100 * pr_se,
            "pooled_synth": 100 * ps,
            "se_synth": 100 * ps_se,
            "gap_se": abs(ps - pr) / pr_se,
            "gap_se_paired": abs(ps - paired) / paired_se,
            "site_gap_mean": float(np.mean(site_gaps)) if site_gaps else float("nan"),
            "w_mean": float(np.mean(ws)) if ws else float("nan"),
            "seconds": time.perf_counter() - t0,
        }
    )
    row["lines"] = lines
    return row


def trial_part(seeds: int, out: Path, tmp: Path) -> list[dict[str, Any]]:
    """Seeds 1..N of the four-site trial; prints one line per seed, writes sites_trial.csv."""
    print(
        f"== trial: {seeds} seeds, {ARMS} sites of {PER_ARM}, each at its own audited w",
        flush=True,
    )
    rows = []
    t0 = time.perf_counter()
    for s in range(1, seeds + 1):
        r = trial_seed(s, tmp)
        lines = r.pop("lines")
        rows.append(r)
        pd.DataFrame(rows).to_csv(out / "sites_trial.csv", index=False)
        print(
            f"trial seed {s}: events {r['events']}/{r['patients']}; pooled cd4 log HR per 100 "
            f"real {r['pooled_real']:+.4f} (se {r['se_real']:.4f}) synth "
            f"{r['pooled_synth']:+.4f}; gap {r['gap_se']:.2f} se; site gaps mean "
            f"{r['site_gap_mean']:.2f} se; w mean {r['w_mean']:.2f}; refused "
            f"{r['refused']}/{ARMS}; {r['seconds']:.0f} s",
            flush=True,
        )
        print("\n".join(lines), flush=True)
    seconds = time.perf_counter() - t0
    frame = pd.DataFrame(rows)
    gap = float(frame["gap_se"].mean())
    ws = [
        float(w)
        for a in range(ARMS)
        for w in frame[f"site{a}_w"]
        if w is not None and np.isfinite(float(w))
    ]
    print(f"\n-- trial summary ({seeds} seeds x {ARMS} sites, {seconds:.0f} s)")
    verdict = "met" if gap <= TRIAL_TARGET else "not met"
    aim = "met" if gap <= TRIAL_AIM else "not met"
    print(
        f"mean pooled gap |synth - real| / se_real  {gap:.3f}   target <= {TRIAL_TARGET}: "
        f"{verdict}; aim <= {TRIAL_AIM}: {aim}"
    )
    print("  each seed: " + ", ".join(f"{g:.2f}" for g in frame["gap_se"]))
    print(f"  same, real pooled over released sites  {frame['gap_se_paired'].mean():.3f}")
    print(f"mean site gap (in the site's own se)     {frame['site_gap_mean'].mean():.3f}")
    if ws:
        print(
            f"chosen w: mean {np.mean(ws):.3f} (min {np.min(ws):.2f}, max {np.max(ws):.2f}) "
            f"over {len(ws)} released sites"
        )
    print(
        f"refused: {int(frame['refused'].sum())} of {seeds * ARMS} sites (left out of the "
        "synthetic pooling of their seed)"
    )
    print(f"trial part: {seconds:.1f} s", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("trial", "meta", "both"), default="both")
    parser.add_argument(
        "--seeds", type=int, default=None, help="seeds per part (default: 10 meta, 6 trial)"
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if args.part in ("trial", "both"):
            trial_part(args.seeds or 6, args.out, tmp)
        if args.part in ("meta", "both"):
            if args.part == "both":
                print()
            meta_part(args.seeds or 10, args.out, tmp)
    print(f"\ntotal: {time.perf_counter() - start:.1f} s; rows in {args.out}", flush=True)


if __name__ == "__main__":
    main()
