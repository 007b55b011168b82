"""latent-synth against its peers on many public tables (issue 27, item 4).

Each table of :mod:`bench_tables` is split 50/50 (the same split for every generator: seed s
draws permutation ``default_rng(1000 + s)``, as ``bench_fidelity.py`` does) into members and a
holdout the generators never see. Fitted on the members:

* ``latent-synth``: the real pipeline (``prepare`` + ``synthesize``, ``fast`` budget, CPU): the
  audit over the w grid, the model and w it chooses, the release at that w; a refusal is counted
  and its seed has no latent-synth numbers;
* ``copula``, ``cart``, ``mostly``: :mod:`bench_peers`;
* ``holdout``: the real holdout, the reference for sampling noise (no DCR: it *is* the holdout).

Per generator and seed: mean / max |Cox (or OLS / logistic) z-gap| against the members' fit,
mean KS over numbers, mean TV over labels, the independent DCR attack's AUC on the file
(:mod:`bench_dcr`), seconds. Per table the summary gives the means, the paired z-gap (each
generator on the seeds latent-synth released), the DCR AUC's mean and max and the count of
seeds above 0.55, and latent-synth's refusals. Per-seed rows: ``benchmarks/results/<table>.csv``;
the summary: ``benchmarks/results/summary.csv`` and ``summary.md`` (the verdict table).

Run (the bench venv; two shared cores)::

    nice -n 10 /work/main/.venv-bench/bin/python benchmarks/bench_family.py --seeds 6
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

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "benchmarks"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from bench_dcr import LIMIT, dcr_auc  # noqa: E402
from bench_fidelity import Table, _as_schema_reads, _conform, fidelity, run_members  # noqa: E402
from bench_peers import cart, copula, mostly, mostly_available, sdv_available  # noqa: E402
from bench_tables import KEPT_BACK, TABLES, load  # noqa: E402

from engine.errors import InputError  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
ORDER = ("latent-synth", "copula", "cart", "mostly", "holdout")


def latent(members: pd.DataFrame, table: Table, seed: int, tmp: Path) -> dict[str, Any]:
    """The real pipeline on the members; its release (None: refused) and audit figures."""
    prep, result = run_members(members, table, seed, tmp)
    out: dict[str, Any] = {"synthetic": result.synthetic, "prep": prep, "w": result.release.w}
    audit = result.audit
    if audit is not None:
        out["model"] = str(getattr(audit, "chosen", ""))
        p0 = min(audit.curve, key=lambda p: p.w)
        out.update(dens0=p0.density_auc, dist0=p0.auc, rel0=p0.released_auc)
        if result.synthetic is not None:
            pw = min(audit.curve, key=lambda p: abs(p.w - result.release.w))
            out.update(audit_dist=pw.auc, audit_dens=pw.density_auc, audit_rel=pw.released_auc)
    if result.synthetic is None and result.refusal is not None:
        out["reason"] = result.refusal.reason
    return out


def run_one(table: Table, seed: int, tmp: Path, gens: tuple[str, ...]) -> list[dict[str, Any]]:
    """Every generator on one split of one table."""
    order = np.random.default_rng(1000 + seed).permutation(len(table.frame))
    half = len(order) // 2
    members = table.frame.iloc[np.sort(order[:half])].reset_index(drop=True)
    holdout = table.frame.iloc[np.sort(order[half:])].reset_index(drop=True)
    base = {"table": table.name, "seed": seed, "n_members": len(members)}

    t0 = time.perf_counter()
    try:
        ls = latent(members, table, seed, tmp)
    except InputError as exc:
        print(f"  {table.name} seed {seed}: not run: {exc}", file=sys.stderr)
        return []
    secs = time.perf_counter() - t0
    prep = ls["prep"]
    kinds = {c.name: c.kind for c in prep.encoder.schema.synthesized()}
    members_u = prep.real
    holdout_u = holdout[list(members_u.columns)].dropna().reset_index(drop=True)
    holdout_u = _as_schema_reads(prep.encoder, holdout_u).astype(members_u.dtypes.to_dict())

    def score(name: str, synth: pd.DataFrame | None, seconds: float, **extra: Any) -> dict:
        row: dict[str, Any] = {**base, "generator": name, "seconds": seconds, **extra}
        if synth is None:
            return row
        synth = _conform(synth, members_u)
        row.update(fidelity(members_u, synth, table, kinds))
        if name != "holdout":
            row["dcr_auc"] = dcr_auc(members_u, holdout_u, synth)
        return row

    keys = ("w", "model", "dens0", "dist0", "rel0", "audit_dist", "audit_dens", "audit_rel")
    extra = {k: ls[k] for k in keys if k in ls}
    extra["refused"] = int(ls["synthetic"] is None)
    if ls["synthetic"] is None:
        extra["w"] = np.nan
        extra["reason"] = ls.get("reason", "")[:240]  # the binding attack and its AUC +- SE
        print(f"  refused: {extra['reason'][:160]}", file=sys.stderr)
    rows = [score("latent-synth", ls["synthetic"], secs, **extra)]
    rows.append(score("holdout", holdout_u, 0.0))
    peers = {"copula": copula, "cart": cart, "mostly": mostly}
    for name in gens:
        if name not in peers:
            continue
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                synth = peers[name](members_u, seed, kinds)
            except Exception as exc:  # noqa: BLE001 - a peer that fails is a result, not a stop
                print(f"  {name} failed on {table.name} seed {seed}: {exc}", file=sys.stderr)
                synth = None
        rows.append(score(name, synth, time.perf_counter() - t0, failed=int(synth is None)))
    return rows


def summarise(raw: pd.DataFrame) -> pd.DataFrame:
    """Per table and generator: means over seeds, the paired z-gap, DCR exceedances."""
    g = raw.groupby(["table", "generator"], sort=False)
    out = g[["z_mean", "z_max", "ks", "tv", "dcr_auc", "seconds"]].mean()
    out["dcr_max"] = g["dcr_auc"].max()
    out["dcr_over"] = g["dcr_auc"].agg(lambda s: int((s > LIMIT).sum()))
    out["dcr_n"] = g["dcr_auc"].count()  # seeds with a file (latent-synth: released ones)
    out["seeds"] = g["seed"].count()
    out["n"] = g["n_members"].first()
    ls = raw[raw["generator"] == "latent-synth"]
    refused = ls.groupby("table")["refused"].sum()
    out["refused"] = [
        int(refused.get(t, 0)) if gen == "latent-synth" else 0 for t, gen in out.index
    ]
    released = ls.loc[ls["refused"] == 0, ["table", "seed"]]
    paired = raw.merge(released, on=["table", "seed"]).groupby(["table", "generator"])["z_mean"]
    out["z_paired"] = paired.mean()
    if "w" in raw:
        out["w"] = g["w"].mean()
    out = out.reset_index()
    out["kept_back"] = out["table"].isin(KEPT_BACK)
    out["_o"] = out["generator"].map({n: i for i, n in enumerate(ORDER)})
    return out.sort_values(["kept_back", "table", "_o"], kind="stable").drop(columns="_o")


def print_table(summary: pd.DataFrame, name: str) -> None:
    """One table per dataset: generators as rows."""
    s = summary[summary["table"] == name]
    cols = ["generator", "z_mean", "z_paired", "z_max", "ks", "tv", "dcr_auc", "dcr_max",
            "dcr_over", "seeds", "refused", "w", "seconds"]  # fmt: skip
    tag = " (kept back)" if name in KEPT_BACK else ""
    print(f"\n{name}{tag}: {int(s['n'].iloc[0])} members")
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(s[cols].to_string(index=False, float_format=lambda v: f"{v:.3f}"))


def verdict(summary: pd.DataFrame) -> str:
    """A markdown table, one row per table: latent-synth's paired z-gap against each peer's on
    the same seeds and the holdout's, the DCR AUC mean (seeds above the limit / seeds), refusals;
    the kept-back tables last."""
    gens = [g for g in ORDER if g in set(summary["generator"])]
    head = ["table", "n"] + [f"z {g}" for g in gens] + [f"DCR {g}" for g in gens if g != "holdout"]
    lines = ["| " + " | ".join(head + ["refused"]) + " |", "|" + "---|" * (len(head) + 1)]
    for kept in (False, True):
        for name, s in summary[summary["kept_back"] == kept].groupby("table", sort=False):
            by = s.set_index("generator")
            cells = [name + (" (kept back)" if kept else ""), str(int(s["n"].iloc[0]))]
            cells += [f"{by.loc[g, 'z_paired']:.2f}" for g in gens]
            cells += [
                f"{by.loc[g, 'dcr_auc']:.3f} "
                f"({int(by.loc[g, 'dcr_over'])}/{int(by.loc[g, 'dcr_n'])})"
                for g in gens
                if g != "holdout"
            ]
            ls = by.loc["latent-synth"]
            cells.append(f"{int(ls['refused'])}/{int(ls['seeds'])}")
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _earlier_peers(path: Path) -> pd.DataFrame:
    """The peers' rows of an earlier run (``--reuse-peers``): the splits depend on the seed
    only, so a peer's figures on a seed do not change while the peer and the table do not."""
    if not path.exists():
        return pd.DataFrame()
    old = pd.read_csv(path)
    return old[~old["generator"].isin(["latent-synth", "holdout"])]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", default=",".join(TABLES), help="comma list")
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--generators", default="copula,cart,mostly", help="peers to run")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--reuse-peers",
        action="store_true",
        help="take the peers' rows of seeds already in --out's CSVs (same splits) instead of "
        "running them again; latent-synth and the holdout always run",
    )
    parser.add_argument(
        "--summary-only", action="store_true", help="re-read the per-table CSVs under --out"
    )
    args = parser.parse_args(argv)
    names = args.tables.split(",")
    unknown = [n for n in names if n not in TABLES]
    if unknown:
        parser.error(f"unknown table(s) {unknown}; choose from {list(TABLES)}")
    if args.summary_only:
        raw = pd.concat([pd.read_csv(args.out / f"{n}.csv") for n in names], ignore_index=True)
        summary = summarise(raw)
        for name in names:
            print_table(summary, name)
        summary.to_csv(args.out / "summary.csv", index=False)
        (args.out / "summary.md").write_text(verdict(summary))
        print("\n" + verdict(summary))
        return 0
    gens = tuple(args.generators.split(",")) if args.generators else ()
    if "copula" in gens and not sdv_available():
        print("SDV is not installed: no copula rows")
        gens = tuple(g for g in gens if g != "copula")
    if "mostly" in gens and not mostly_available():
        print("mostlyai-engine cannot be imported: no mostly rows")
        gens = tuple(g for g in gens if g != "mostly")
    args.out.mkdir(parents=True, exist_ok=True)
    records: list[dict[str, Any]] = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            table = load(name)
            rows: list[dict[str, Any]] = []
            old = _earlier_peers(args.out / f"{name}.csv") if args.reuse_peers else pd.DataFrame()
            for seed in range(1, args.seeds + 1):
                print(f"{name} (n={len(table.frame)}), seed {seed} ...", file=sys.stderr)
                had = old[old["seed"] == seed] if len(old) else old
                todo = tuple(g for g in gens if not len(had) or g not in set(had["generator"]))
                rows.extend(run_one(table, seed, Path(tmp), todo))
                rows.extend(had.to_dict("records") if len(had) else [])
            pd.DataFrame(rows).to_csv(args.out / f"{name}.csv", index=False)
            records.extend(rows)
            print_table(summarise(pd.DataFrame(rows)), name)
            print(f"  ({time.perf_counter() - start:.0f} s so far)", flush=True)
    summary = summarise(pd.DataFrame(records))
    summary.to_csv(args.out / "summary.csv", index=False)
    (args.out / "summary.md").write_text(verdict(summary))
    print("\n" + verdict(summary))
    print(f"\nall tables: {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
