"""How far the audit's AUC at the chosen w sits below an independent attack on the released file
(issue 27 item 3): the gap a correction must cover.

Per table and seed: the rows are split 50/50 into members (given to the tool) and rows the tool
never sees (as ``bench_fidelity.py`` does); the pipeline runs on the members; then the checker's
attack (:mod:`engine.privacy.released_space`: numbers z-scored, categories and yes/no one-hot,
distance to the closest released row, members vs never-seen rows) is run on the released file,
and on files released from the same final model at a few fixed w. Printed per row: the audit's
released-attack mean (and SE, SD over repeats) at each w, and the independent AUC there.

Run: ``nice python benchmarks/bench_release_gap.py --tables gbsg2,diabetes --seeds 6``
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.pipeline import RunConfig, prepare, release, synthesize  # noqa: E402
from engine.privacy.audit import membership_auc  # noqa: E402
from engine.privacy.audit_result import AuditConfig  # noqa: E402
from engine.privacy.neighbours import nearest_distances  # noqa: E402
from engine.privacy.one_release import select_release_w  # noqa: E402
from engine.privacy.released_space import ReleasedSpace  # noqa: E402


def _gbsg2() -> tuple[pd.DataFrame, str, str]:
    from lifelines.datasets import load_gbsg2

    return load_gbsg2(), "time", "cens"


def _rossi() -> tuple[pd.DataFrame, str, str]:
    from lifelines.datasets import load_rossi

    return load_rossi(), "week", "arrest"


def _diabetes() -> tuple[pd.DataFrame, str | None, str | None]:
    from sklearn.datasets import load_diabetes  # type: ignore[import-untyped]

    d = load_diabetes(as_frame=True, scaled=False).frame
    d["sex"] = d["sex"].map({1.0: "a", 2.0: "b"})
    return d, None, None


def _kidney() -> tuple[pd.DataFrame, str, str]:
    from lifelines.datasets import load_kidney_transplant

    return load_kidney_transplant(), "time", "death"


def _demo() -> tuple[pd.DataFrame, str, str]:
    from engine.cli import DEFAULT_DEMO_STUDY, demo_input

    d = pd.read_csv(demo_input(), dtype={"participant_id": str})
    d = d.loc[d["study"] == DEFAULT_DEMO_STUDY]
    d = d[["time_cvd_years", "cvd", "age", "totchol", "hdl", "sbp"]].reset_index(drop=True)
    return d, "time_cvd_years", "cvd"


TABLES = {"gbsg2": _gbsg2, "rossi": _rossi, "diabetes": _diabetes, "kidney": _kidney, "demo": _demo}


def checker_auc(members: pd.DataFrame, unseen: pd.DataFrame, synth: pd.DataFrame) -> float:
    """The plain distance attack on a released file (members vs rows never seen)."""
    space = ReleasedSpace.fit(members)
    ref = space.transform(synth[members.columns])
    d_in = nearest_distances(space.transform(members), ref)
    d_out = nearest_distances(space.transform(unseen), ref)
    return membership_auc(-d_in, -d_out)


def run(
    name: str, seed: int, fixed: tuple[float, ...], tmp: Path, zs: tuple[float, ...] = ()
) -> list[dict]:
    frame, time, event = TABLES[name]()
    frame = frame.dropna().reset_index(drop=True)
    order = np.random.default_rng(1000 + seed).permutation(len(frame))
    half = len(order) // 2
    members = frame.iloc[np.sort(order[:half])].reset_index(drop=True)
    unseen = frame.iloc[np.sort(order[half:])].reset_index(drop=True)
    src = tmp / f"{name}_{seed}.csv"
    members.to_csv(src, index=False)
    cfg = RunConfig(input=src, seed=seed, time=time, event=event, report=False, device="cpu")
    prep = prepare(cfg)
    result = synthesize(prep)
    audit = result.audit
    used = list(prep.real.columns)
    mem_u, unseen_u = prep.real, unseen[used].astype(prep.real.dtypes.to_dict())
    rows = []
    chosen = result.release.w if result.synthetic is not None else None
    for w in ([chosen] if chosen is not None else []) + list(fixed):
        if w == chosen and result.synthetic is not None:
            synth = result.synthetic
        else:
            forced = replace(prep, config=replace(cfg, forced_w=w, risk_acknowledged=True))
            rel = release(forced, audit, flow=result.flow, rng=np.random.default_rng(seed + 7))
            if rel.synthetic is None:
                continue
            synth = rel.synthetic
        point = min(audit.curve, key=lambda p: abs(p.w - w))
        rows.append({
            "table": name, "seed": seed, "n": len(mem_u), "model": audit.chosen,
            "chosen": w == chosen, "w": w, "audit_w": point.w,
            "dist": point.auc, "dist_se": point.auc_se, "dens": point.density_auc,
            "dens_se": point.density_auc_se, "rel": point.released_auc,
            "rel_se": point.released_auc_se, "rel_sd": point.released_auc_sd,
            "indep": checker_auc(mem_u, unseen_u, synth),
        })  # fmt: skip
    if chosen is None:
        rows.append({"table": name, "seed": seed, "n": len(mem_u), "model": audit.chosen,
                     "chosen": True, "w": np.nan})  # fmt: skip
    # the same audit curve, w chosen with other z of the one-release bound (0: mean + SE only)
    for z in zs:
        acfg = AuditConfig(threshold=audit.threshold, select_on=audit.select_on, one_release_z=z)
        w = select_release_w(audit.curve, acfg)
        row = {"table": name, "seed": seed, "n": len(mem_u), "z": z, "w": w, "indep": np.nan}
        if w is not None:
            forced = replace(prep, config=replace(cfg, forced_w=w, risk_acknowledged=True))
            rel = release(forced, audit, flow=result.flow, rng=np.random.default_rng(seed + 11))
            if rel.synthetic is not None:
                row["indep"] = checker_auc(mem_u, unseen_u, rel.synthetic)
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tables", default="gbsg2,diabetes")
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--fixed", default="0,0.5", help="extra w to release at (comma list)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--z", default="", help="z values of the one-release bound to compare")
    args = parser.parse_args(argv)
    fixed = tuple(float(x) for x in args.fixed.split(",") if x)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.tables.split(","):
            for seed in range(1, args.seeds + 1):
                zs = tuple(float(x) for x in args.z.split(",") if x)
                got = run(name, seed, fixed, Path(tmp), zs)
                rows += got
                for r in got:
                    print(
                        {k: round(v, 3) if isinstance(v, float) else v for k, v in r.items()},
                        flush=True,
                    )
    out = pd.DataFrame(rows)
    if args.out:
        out.to_csv(args.out, index=False)
    if "z" in out:
        sweep = out[out["z"].notna()]
        print(sweep.groupby(["table", "z"]).agg(
            w=("w", "mean"), refused=("w", lambda v: int(v.isna().sum())),
            indep=("indep", "mean"), over=("indep", lambda v: int((v > 0.55).sum())),
        ).round(3))  # fmt: skip
        out = out[out["z"].isna()]
    chosen = out[out["chosen"] == True]  # noqa: E712
    print(chosen.groupby("table")[["w", "rel", "indep"]].mean().round(3))
    print(chosen.assign(gap=chosen["indep"] - chosen["rel"]).groupby("table")["gap"]
           .agg(["mean", "std", "count"]).round(3))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
