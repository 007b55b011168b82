"""Both membership attacks over a w grid on tables with categorical columns (prints the curves).

Run: ``.venv/bin/python benchmarks/bench_density_attack.py [--quick] [--map identity|flow]``.

Tables: the embedded demo cohort (one sub-study; sex is constant within it, so a 4-level
age-band categorical is added to give it a one-hot block), lifelines' kidney transplant table
(the race x sex dummies collapsed into one 4-level categorical) and lifelines' lung table
(ECOG performance status as a 4-level categorical, complete cases). Each is encoded as in
the pipeline (``TableEncoder``; one-hot categoricals in the distance space).

Map: ``identity`` (default) treats the z-scored model space as the latent space, so w = 1 would
return the data and w = 0 draws N(0, I), decoded; ``flow`` trains a MAF per split with the
fast budget, as ``latent-synth run --budget fast`` does. Printed per w: the distance attack's
AUC (eq. 25) and the density-ratio attack's AUC, mean over repeats.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.columns.schema import infer_schema  # noqa: E402
from engine.encoding.encoder import TableEncoder  # noqa: E402
from engine.privacy.audit import AuditConfig, run_audit  # noqa: E402

GRID = (0.0, 0.5, 0.75, 0.9, 0.95, 0.99)


class Identity:
    """The z-scored model space taken as the latent space."""

    def to_latent(self, X: np.ndarray) -> np.ndarray:
        return X

    def from_latent(self, Z: np.ndarray) -> np.ndarray:
        return Z


def demo_table() -> tuple[pd.DataFrame, dict[str, str]]:
    path = Path(__file__).resolve().parents[1] / "resources" / "demo_cohort.csv"
    df = pd.read_csv(path, dtype={"participant_id": str})
    df = df[df["study"] == "MESA M"].drop(columns=["participant_id", "study", "cohort", "sex"])
    df["age_band"] = pd.cut(
        df["age"], [0, 55, 65, 75, 200], labels=["<55", "55-64", "65-74", "75+"]
    )
    df["age_band"] = df["age_band"].astype(str)
    return df.reset_index(drop=True), {"time": "time_cvd_years", "event": "cvd"}


def kidney_table() -> tuple[pd.DataFrame, dict[str, str]]:
    from lifelines.datasets import load_kidney_transplant

    df = load_kidney_transplant()
    dummies = df[["black_male", "white_male", "black_female"]].to_numpy()
    group = np.where(dummies.any(1), dummies.argmax(1), 3)
    names = np.array(["black male", "white male", "black female", "white female"])
    df = df.drop(columns=["black_male", "white_male", "black_female"])
    df["group"] = names[group]
    return df, {"time": "time", "event": "death"}


def lung_table() -> tuple[pd.DataFrame, dict[str, str]]:
    from lifelines.datasets import load_lung

    df = load_lung().drop(columns=["inst"]).dropna().reset_index(drop=True)
    df["ph.ecog"] = df["ph.ecog"].astype(int).astype(str)
    return df, {"time": "time", "event": "status"}


def curve(name: str, df: pd.DataFrame, roles: dict[str, str], use_flow: bool, repeats: int) -> None:
    kinds = {c: "categorical" for c in df.columns if df[c].dtype == object}
    enc = TableEncoder(infer_schema(df, kinds=kinds, **roles)).fit(df)
    rng = np.random.default_rng(0)
    X_model, X_dist = enc.transform(df, rng), enc.distance_space(df)

    def to_dist(rows: np.ndarray) -> np.ndarray:
        return enc.distance_space(enc.inverse_transform(rows).frame)

    def fit_map(rows: np.ndarray):
        if not use_flow:
            return Identity()
        from engine.flows.select import select_flow

        return select_flow(rows, budget="fast", device="cpu", seed=0)

    t = time.perf_counter()
    res = run_audit(
        X_model,
        X_dist,
        fit_map,
        to_dist=to_dist,
        config=AuditConfig(grid=GRID, repeats=repeats, refine=False),
        rng=rng,
    )
    cats = [c.spec.name for c in enc.columns_ if c.spec.kind == "categorical"]
    print(
        f"{name}: n = {len(df)}, distance space d = {X_dist.shape[1]} "
        f"(categorical: {', '.join(cats)}), {'flow' if use_flow else 'identity'} map, "
        f"{repeats} repeats, {time.perf_counter() - t:.0f} s"
    )
    print("    w   distance AUC   density AUC")
    for p in res.curve:
        print(f"{p.w:5.2f}   {p.auc:8.3f}       {p.density_auc:8.3f}")


if __name__ == "__main__":
    use_flow = "--map" in sys.argv and sys.argv[sys.argv.index("--map") + 1] == "flow"
    reps = 2 if "--quick" in sys.argv else 5
    for label, make in (
        ("demo MESA M", demo_table),
        ("kidney", kidney_table),
        ("lung", lung_table),
    ):
        frame, roles = make()
        curve(label, frame, roles, use_flow, reps)
