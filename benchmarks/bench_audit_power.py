"""Does the audit decide on the risk? The tool's chosen w against an oracle, on many public tables
(issue 43, item 4).

For each table of :mod:`bench_tables` (ten used for tuning, ``KEPT_BACK`` kept out of it):

**Oracle** (the true risk, as well as it can be measured offline). ``--oracle`` fresh 50/50
splits of the table (permutation ``default_rng(5000 + o)``): the real pipeline on the members
(``fast`` budget, CPU) gives the model the tool releases there (its audit's choice of model, the
final model trained on all members); that model's Latent Noise Injection of all members at every
grid w (the same noise at every w) is attacked with the audit's own attacks (distance, density
ratio, distance on the released columns: ``engine.privacy.audit.score_draw``), members against
the unseen half (the density attack's reference, as in the audit, a fifth of the members' number
of unseen rows: the attacker's reference sample is part of the threat model the audit fixes, not
of its estimate), and with the independent checker's attack (``bench_dcr``). The oracle curve of
each attack is its mean over the splits; the oracle risk is the highest of the audit's attacks,
and w* the largest grid w whose oracle risk, and every smaller w's, is below the limit.

**The tool** on seeds 1..S (permutation ``default_rng(1000 + s)``, the splits of
``bench_family.py``): members M (half), the rest R split into H (the checker's unseen rows) and
F (a fresh real sample). The real pipeline on M gives the chosen w, the SE at the decision, the
model and the floor's w = 0 estimate (or a refusal). Then:

* the independent attack on the released file: members M against H (``bench_dcr``), and the
  same measurement with F as the "released" file (a fresh sample of real people: what a checker
  reads when nothing leaks);
* the Cox (OLS, logistic) z-gap of the release against M's own fit (mean |standardised
  difference|, ``bench_fidelity.fidelity``), of the real holdout R (the reference for sampling
  noise) and of SDV's Gaussian copula fitted on M (when SDV is installed).

Printed per table and over tables, with the issue's targets: mean chosen w against w* - 0.15,
runs above w* + 0.05, the independent attack's mean and rate over 0.55 (against the fresh
sample's), the paired z-gaps (ratio to the holdout's), refusals where the floor's estimate was
under 0.53, and the SD of the chosen w on tables of 500+ rows. Per-run rows:
``<out>/power_<table>.csv``; oracle curves ``<out>/oracle_<table>.csv``; the summary
``<out>/power_summary.csv``.

Run (the bench venv: SDV, scikit-survival and SurvSet; two shared cores)::

    nice -n 10 .venv-bench/bin/python benchmarks/bench_audit_power.py --seeds 10 --oracle 10
    nice -n 10 .venv-bench/bin/python benchmarks/bench_audit_power.py --tables demo --seeds 10 \\
        --oracle 0 --demo   # the embedded demo cohort (one sub-study), the whole cohort each seed
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "benchmarks"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from bench_dcr import LIMIT, dcr_auc  # noqa: E402
from bench_fidelity import Table, _as_schema_reads, _conform, fidelity  # noqa: E402
from bench_tables import KEPT_BACK, TABLES, load  # noqa: E402

from engine.errors import InputError  # noqa: E402
from engine.pipeline.config import RunConfig  # noqa: E402
from engine.pipeline.prepare_step import prepare  # noqa: E402
from engine.pipeline.synthesize_step import synthesize  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
ATTACKS = ("distance", "density", "released")


def _run(members: pd.DataFrame, table: Table, seed: int, tmp: Path) -> tuple[Any, Any]:
    """The real pipeline (``fast`` budget, CPU, no report) on ``members``."""
    src = tmp / f"{table.name}_{seed}.csv"
    members.to_csv(src, index=False)
    cfg = RunConfig(
        input=src, seed=seed, time=table.spec.time, event=table.spec.event, report=False,
        budget="fast", device="cpu",
    )  # fmt: skip
    prep = prepare(cfg)
    return prep, synthesize(prep)


def _released_flow(prep: Any, result: Any) -> Any:
    """The final model the run released, or (a refusal) the one a release at w = 0 trains."""
    if result.flow is not None:
        return result.flow
    from engine.pipeline.release_step import release

    cfg = replace(prep.config, forced_w=0.0, allow_risky=True)
    return release(replace(prep, config=cfg), result.audit, disclosure_rule=False).flow


# ------------------------------------------------------------------------------------ oracle
def oracle_split(table: Table, o: int, grid: tuple[float, ...], tmp: Path) -> list[dict]:
    """One oracle split: the released model's attacks at every w, members vs the unseen half."""
    from engine.flows.generate import inject_latent_noise
    from engine.privacy.attacks import Split, _Draw, reference_densities
    from engine.privacy.audit import AuditConfig, score_draw
    from engine.privacy.released_space import ReleasedSpace
    from engine.search.density import principal_basis

    order = np.random.default_rng(5000 + o).permutation(len(table.frame))
    half = len(order) // 2
    members = table.frame.iloc[np.sort(order[:half])].reset_index(drop=True)
    unseen = table.frame.iloc[np.sort(order[half:])].reset_index(drop=True)
    prep, result = _run(members, table, 100 + o, tmp)
    flow = _released_flow(prep, result)
    enc = prep.encoder
    real = prep.real
    cols = list(real.columns)
    unseen = _as_schema_reads(enc, unseen[cols].dropna().reset_index(drop=True))
    unseen = unseen.astype(real.dtypes.to_dict())
    space = ReleasedSpace.fit(real)
    both = pd.concat([real, unseen], ignore_index=True)
    own = enc.distance_space(both)
    X_dist = np.hstack([own, space.transform(both)])
    train, hold = np.arange(len(real)), np.arange(len(real), len(both))
    rng = np.random.default_rng(9000 + o)
    basis = principal_basis(own)
    # the density attack's reference as the audit's: a holdout of a fifth of the members' size
    # (the attacker's reference sample is part of the threat model, not of the estimate)
    ref_rows = np.sort(rng.choice(hold, size=max(3, round(0.2 * len(train))), replace=False))
    ref_m, ref_h = reference_densities(own[train], own[ref_rows], basis, rng)
    cfg = AuditConfig(released_columns=space.width)
    Xm = enc.transform(real, rng)
    latent = np.asarray(flow.to_latent(Xm), dtype=float)
    split = Split(train, ref_rows, latent, flow, ref_m, ref_h, basis, 0)
    noise = rng.standard_normal(latent.shape)
    picks_m = rng.choice(len(train), size=min(1000, len(train)), replace=False)
    picks_h = rng.choice(len(ref_rows), size=min(1000, len(ref_rows)), replace=False)
    # the distance attacks score every unseen row (their density output is not used)
    every = Split(train, hold, latent, flow, ref_m, np.zeros(len(hold)), basis, 0)
    picks_all = rng.choice(len(hold), size=min(1000, len(hold)), replace=False)
    rows = []
    for w in grid:
        synth_model = flow.from_latent(inject_latent_noise(latent, w, noise))
        frame = enc.inverse_transform(np.asarray(synth_model)).frame
        synth = np.hstack([enc.distance_space(frame), space.transform(frame)])
        sc = score_draw(split, _Draw(synth, picks_m, picks_h), X_dist, cfg)  # the density
        wide = score_draw(every, _Draw(synth, picks_m, picks_all), X_dist, cfg)  # the distances
        dcr = dcr_auc(real, unseen, _conform(frame, real))
        rows.append({"table": table.name, "split": o, "w": w, "model": result.audit.chosen,
                     "distance": wide.distance, "density": sc.density,
                     "released": wide.released,
                     "dcr": dcr, "tool_w": result.release.w})  # fmt: skip
    return rows


def oracle_fit(curve: pd.DataFrame) -> pd.DataFrame:
    """Each attack's oracle curve fitted rising with w over the splits (the same isotonic fit
    as the audit's, :func:`engine.privacy.decision.monotone_fit`: the oracle's own noise is
    pooled where the risk is flat), its SE, and the risk: the highest attack at each w."""
    from engine.privacy.decision import monotone_fit

    ws = sorted(curve["w"].unique())
    out = pd.DataFrame({"w": ws})
    for a in (*ATTACKS, "dcr"):
        wide = curve.pivot_table(index="split", columns="w", values=a).reindex(columns=ws)
        fit = monotone_fit(ws, wide.to_numpy())
        out[a], out[f"{a}_se"] = fit.fit, fit.se
    out["risk"] = out[list(ATTACKS)].max(axis=1)
    return out


def oracle_w(curve: pd.DataFrame, limit: float = LIMIT) -> float | None:
    """w*: the largest w whose fitted oracle risk (the highest of the audit's attacks), and
    every smaller w's, is below ``limit`` (None: not even the smallest)."""
    fit = oracle_fit(curve)
    chosen = None
    for w, risk in zip(fit["w"], fit["risk"], strict=True):
        if not risk < limit:
            break
        chosen = float(w)
    return chosen


# ------------------------------------------------------------------------------------ tool runs
def tool_run(table: Table, seed: int, tmp: Path, use_sdv: bool) -> dict[str, Any]:
    """One seed: the tool on the members, the independent attack, the fresh sample, z-gaps."""
    order = np.random.default_rng(1000 + seed).permutation(len(table.frame))
    half = len(order) // 2
    quarter = half + (len(order) - half) // 2
    members = table.frame.iloc[np.sort(order[:half])].reset_index(drop=True)
    held = table.frame.iloc[np.sort(order[half:quarter])].reset_index(drop=True)
    fresh = table.frame.iloc[np.sort(order[quarter:])].reset_index(drop=True)
    rest = table.frame.iloc[np.sort(order[half:])].reset_index(drop=True)
    t0 = time.perf_counter()
    prep, result = _run(members, table, seed, tmp)
    secs = time.perf_counter() - t0
    enc = prep.encoder
    real = prep.real
    cols = list(real.columns)
    kinds = {c.name: c.kind for c in enc.schema.synthesized()}

    def reads(frame: pd.DataFrame) -> pd.DataFrame:
        out = _as_schema_reads(enc, frame[cols].dropna().reset_index(drop=True))
        return out.astype(real.dtypes.to_dict())

    held_u, fresh_u, rest_u = reads(held), reads(fresh), reads(rest)
    audit = result.audit
    d = audit.decision
    p0 = min(audit.curve, key=lambda p: p.w)
    w0_fit = max(v for v in (p0.auc_fit, p0.density_fit, p0.released_fit) if v == v)
    row: dict[str, Any] = {
        "table": table.name, "seed": seed, "n_members": len(real), "seconds": secs,
        "w": result.release.w if result.synthetic is not None else np.nan,
        "refused": int(result.synthetic is None), "model": audit.chosen,
        # a refusal by the audit (no w met the limit) or by the disclosure rule after it
        "audit_refused": int(audit.selected_w is None),
        "se_decision": d.se if d is not None else np.nan, "attack": d.attack if d else "",
        "uncertain": int(bool(d and d.uncertain)), "w0_fit": w0_fit, "rounds": audit.rounds,
        "audit_seconds": audit.seconds,
        "fresh_dcr": dcr_auc(real, held_u, _conform(fresh_u, real)),
    }  # fmt: skip
    row["curve"] = [
        (p.w, p.auc_fit, p.density_fit, p.released_fit, p.auc_fit_se, p.density_fit_se,
         p.released_fit_se) for p in audit.curve
    ]  # fmt: skip
    if result.synthetic is not None:
        synth = _conform(result.synthetic, real)
        row["dcr"] = dcr_auc(real, held_u, synth)
        row["z"] = fidelity(real, synth, table, kinds)["z_mean"]
    row["z_holdout"] = fidelity(real, _conform(rest_u, real), table, kinds)["z_mean"]
    if use_sdv:
        from bench_peers import copula

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                cop = _conform(copula(real, seed, kinds), real)
                row["z_copula"] = fidelity(real, cop, table, kinds)["z_mean"]
            except Exception as exc:  # noqa: BLE001 - a peer that fails is a result
                print(f"  copula failed on {table.name} seed {seed}: {exc}", file=sys.stderr)
    return row


# ------------------------------------------------------------------------------------ summary
def summarise(runs: pd.DataFrame, oracles: dict[str, float | None]) -> pd.DataFrame:
    """One row per table: w* and the tool's w, the attacks, the z-gaps, refusals."""
    out = []
    for name, g in runs.groupby("table", sort=False):
        ws = oracles.get(name)
        rel = g[g["refused"] == 0]
        paired = rel.dropna(subset=["z"])
        dz = (paired["z"] - paired["z_copula"]).dropna() if "z_copula" in paired else pd.Series()
        out.append({
            "table": name, "kept_back": name in KEPT_BACK, "members": int(g["n_members"].iloc[0]),
            "runs": len(g), "refused": int(g["refused"].sum()),
            "refused_under_053": int(((_audit_refused(g) == 1) & (g["w0_fit"] < 0.53)).sum()),
            "refused_by_rule": int(g["refused"].sum() - _audit_refused(g).sum()),
            "w_star": np.nan if ws is None else ws, "w_mean": rel["w"].mean(),
            "w_sd": rel["w"].std(ddof=1), "w_min": rel["w"].min(), "w_max": rel["w"].max(),
            "over_w_star": np.nan if ws is None else int((rel["w"] > ws + 0.05 + 1e-9).sum()),
            "se_decision": g["se_decision"].mean(), "dcr": rel["dcr"].mean(),
            "dcr_over": int((rel["dcr"] > LIMIT).sum()), "fresh_dcr": g["fresh_dcr"].mean(),
            "fresh_over": int((g["fresh_dcr"] > LIMIT).sum()),
            "z": paired["z"].mean(), "z_holdout": paired["z_holdout"].mean(),
            "z_copula": paired["z_copula"].mean() if "z_copula" in paired else np.nan,
            "z_minus_copula_se": dz.std(ddof=1) / np.sqrt(len(dz)) if len(dz) > 1 else np.nan,
            "seconds": g["seconds"].mean(),
        })  # fmt: skip
    return pd.DataFrame(out)


def _audit_refused(g: pd.DataFrame) -> pd.Series:
    """Refusals by the audit (older rows, without the column: every refusal)."""
    return g["audit_refused"] if "audit_refused" in g else g["refused"]


def verdicts(s: pd.DataFrame, runs: pd.DataFrame) -> list[str]:
    """The issue's Done-when items on the bench, each with its figure and met / not met."""
    lines = []

    def say(text: str, ok: bool) -> None:
        lines.append(f"{'met    ' if ok else 'NOT MET'}  {text}")

    for kept in (False, True):
        part = s[s["kept_back"] == kept]
        if part.empty:
            continue
        tag = "kept-back tables" if kept else "tuning tables"
        with_star = part.dropna(subset=["w_star"])
        gap = (with_star["w_mean"] - (with_star["w_star"] - 0.15)).min()
        say(f"{tag}: mean chosen w >= w* - 0.15 on every table (worst margin {gap:+.3f})",
            bool(gap >= 0) if len(with_star) else False)  # fmt: skip
        over = with_star["over_w_star"].sum() / max(with_star["runs"].sum(), 1)
        say(f"{tag}: runs above w* + 0.05: {over:.1%} (at most 10 %)", over <= 0.10)
        big = part[part["members"] >= 200]
        worst = big["dcr"].max()
        say(f"{tag}: independent attack's mean AUC on released files, 200+ members: worst "
            f"{worst:.3f} (at most 0.55)", bool(worst <= LIMIT))  # fmt: skip
        rate = big["dcr_over"].sum() / max(big["runs"].sum() - big["refused"].sum(), 1)
        fresh = big["fresh_over"].sum() / max(big["runs"].sum(), 1)
        say(f"{tag}: rate over 0.55 {rate:.1%} against the fresh sample's {fresh:.1%} "
            "(at most + 10 points)", rate <= fresh + 0.10)  # fmt: skip
        mid = part[(part["members"] >= 200) & (part["members"] <= 2000)]
        r = runs[runs["table"].isin(mid["table"]) & (runs["refused"] == 0)].dropna(subset=["z"])
        ratio = r["z"].mean() / r["z_holdout"].mean()
        say(f"{tag}: pooled paired z-gap, 200-2,000 members: {r['z'].mean():.3f} against the "
            f"holdout's {r['z_holdout'].mean():.3f} (ratio {ratio:.2f}; at most 1, aim 0.8)",
            ratio <= 1.0)  # fmt: skip
        if mid["z_copula"].notna().any():
            worse = mid[mid["z"] > mid["z_copula"] + mid["z_minus_copula_se"].fillna(0)]
            say(
                f"{tag}: z-gap at most the copula's + one paired SE on every 200-2,000 table "
                f"({len(worse)} over: {', '.join(worse['table']) or 'none'})",
                worse.empty,
            )
        say(
            f"{tag}: refusals where the floor's w = 0 estimate was under 0.53: "
            f"{int(part['refused_under_053'].sum())}",
            part["refused_under_053"].sum() == 0,
        )
        large = part[2 * part["members"] >= 500]  # the table's rows: members are half of them
        if len(large):
            worst = large.loc[large["w_sd"].idxmax()]
            say(f"{tag}: SD of the chosen w on tables of 500+ rows: worst "
                f"{worst['w_sd']:.3f} ({worst['table']}; at most 0.1)",
                bool(large["w_sd"].max() <= 0.1))  # fmt: skip
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", default=",".join(TABLES), help="comma list")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--oracle", type=int, default=10, help="oracle splits per table (0: none)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--no-sdv", action="store_true", help="leave SDV's copula out")
    parser.add_argument("--summary-only", action="store_true", help="re-read the CSVs in --out")
    args = parser.parse_args(argv)
    names = [n for n in args.tables.split(",") if n]
    unknown = [n for n in names if n not in TABLES]
    if unknown:
        parser.error(f"unknown table(s) {unknown}; choose from {list(TABLES)}")
    use_sdv = not args.no_sdv and _sdv()
    args.out.mkdir(parents=True, exist_ok=True)
    from engine.privacy.audit_result import DEFAULT_GRID

    start = time.perf_counter()
    oracles: dict[str, float | None] = {}
    all_runs = []
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        for name in names:
            table = load(name)
            ofile, rfile = args.out / f"oracle_{name}.csv", args.out / f"power_{name}.csv"
            if args.summary_only or args.oracle == 0:
                curve = pd.read_csv(ofile) if ofile.exists() else pd.DataFrame()
            else:
                rows = []
                for o in range(1, args.oracle + 1):
                    try:
                        rows += oracle_split(table, o, DEFAULT_GRID, tmp)
                    except InputError as exc:
                        print(f"  {name} oracle split {o}: not run: {exc}", file=sys.stderr)
                curve = pd.DataFrame(rows)
                curve.to_csv(ofile, index=False)
            oracles[name] = oracle_w(curve) if len(curve) else None
            if len(curve):
                m = oracle_fit(curve).set_index("w")
                print(f"\n{name}: oracle over {curve['split'].nunique()} splits (fitted rising "
                      f"with w), w* = {oracles[name]}")  # fmt: skip
                print(m[[*ATTACKS, "dcr", "risk", "distance_se"]].round(3).T.to_string())
            if args.summary_only:
                runs = pd.read_csv(rfile)
            else:
                recs = []
                for seed in range(args.first_seed, args.first_seed + args.seeds):
                    try:
                        recs.append(tool_run(table, seed, tmp, use_sdv))
                    except InputError as exc:
                        print(f"  {name} seed {seed}: not run: {exc}", file=sys.stderr)
                        continue
                    r = recs[-1]
                    print(f"  {name} seed {seed}: w {r['w']:.2f} (w* {oracles[name]}), SE "
                          f"{r['se_decision']:.4f}, dcr {r.get('dcr', np.nan):.3f}, fresh "
                          f"{r['fresh_dcr']:.3f}, z {r.get('z', np.nan):.2f} (holdout "
                          f"{r['z_holdout']:.2f}, copula {r.get('z_copula', np.nan):.2f}), "
                          f"{r['model']}, {r['seconds']:.1f} s", flush=True)  # fmt: skip
                curves = [
                    {"table": name, "seed": r["seed"], "w": c[0], "distance": c[1],
                     "density": c[2], "released": c[3], "distance_se": c[4],
                     "density_se": c[5], "released_se": c[6]}
                    for r in recs for c in r.pop("curve")
                ]  # fmt: skip
                pd.DataFrame(curves).to_csv(args.out / f"power_curves_{name}.csv", index=False)
                runs = pd.DataFrame(recs)
                runs.to_csv(rfile, index=False)
            all_runs.append(runs)
            print(f"  ({time.perf_counter() - start:.0f} s so far)", flush=True)
    runs = pd.concat(all_runs, ignore_index=True)
    summary = summarise(runs, oracles)
    summary.to_csv(args.out / "power_summary.csv", index=False)
    with pd.option_context("display.width", 250, "display.max_columns", 40):
        print("\n" + summary.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print("\n" + "\n".join(verdicts(summary, runs)))
    print(f"\nall tables: {time.perf_counter() - start:.0f} s")
    return 0


def _sdv() -> bool:
    try:
        from bench_peers import sdv_available

        return bool(sdv_available())
    except Exception:  # noqa: BLE001 - SDV is optional
        return False


if __name__ == "__main__":
    raise SystemExit(main())
