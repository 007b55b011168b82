"""Same answers on real clinical tables? latent-synth vs a Gaussian copula vs the real holdout.

Issue 13, item 8. (Issue 27's wider bench, 12 tables with SDV's copula, sequential CART and
MOSTLY AI's engine as peers and an independent distance attack on every file, is
``bench_family.py``; see ``docs/bench.md``. It reuses this file's tables and metrics.) Each table
(public clinical data shipped inside installed packages, plus the demo cohort) is split 50/50 into
members and holdout; every generator is fitted on the members only and compared with them:

* ``latent-synth``: the real pipeline (``prepare`` + ``synthesize``: audit over the w grid,
  w chosen by the audit, final flow on all members, release) at its audited w, ``fast`` budget;
* ``copula``: SDV's ``GaussianCopulaSynthesizer`` (default settings, metadata given: numbers
  numerical, text categorical) when SDV is installed (``pip install .[bench]``; CI has none and
  the rows are skipped with a note);
* ``holdout``: the real holdout half, the reference for sampling noise ("as good as a fresh
  sample of the same size");
* ``resample``: the members drawn with replacement, the floor of a release of n fresh rows: a
  perfect copy of the members' distribution still leaves each coefficient about one SE away
  (mean |z-gap| about 0.8 for a Gaussian estimate; more on small Cox fits). Only
  latent-synth's LNI at w > 0 can go below it, because its rows are tied to the members.

Columns of the table: model mean / max |z-gap| = |beta_S - beta_M| / se_M over the model's
coefficients (Cox for survival tables, OLS / logistic otherwise), share of signs that agree,
mean CI overlap (Karr et al.), mean KS over numeric columns, mean total variation over
categorical / binary columns, mean |correlation difference| over all pairs, largest missing-rate
difference (percentage points), the distance attack's AUC (members vs holdout, nearest distance to
the generator's rows in the encoder's distance space: the audit's attack, eq. 24-25), the
audit's density and distance attack AUCs at w = 0 (``dens0``, ``dist0``: the leak of pure
sampling, shown for refused runs too), the w the audit chose and the generator's seconds, and
``z_paired``: each generator's mean z-gap over the seeds latent-synth released only (the plain
mean of a generator that is never refused covers splits that latent-synth's does not).

Results: docs/bench.md ("Speed history", ``bench_fidelity.py``).

Rossi, GBSG2 / lymph_node and ACTG175 are never used here: they are kept back for an independent
check.

Run (2 shared cores: be nice)::

    nice -n 10 python benchmarks/bench_fidelity.py --quick
    nice -n 10 .venv-bench/bin/python benchmarks/bench_fidelity.py --out /tmp/fid   # with SDV

(``.venv-bench``: a venv with ``sdv==2.0.0`` and a ``.pth`` line naming the main venv's
site-packages, created before installing SDV so that pip reuses the local torch.)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import ks_2samp

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from engine.errors import InputError  # noqa: E402
from engine.pipeline.config import RunConfig  # noqa: E402
from engine.pipeline.prepare_step import prepare  # noqa: E402
from engine.pipeline.synthesize_step import synthesize  # noqa: E402
from engine.privacy.audit import membership_auc  # noqa: E402
from engine.search.neighbours import nearest_distances  # noqa: E402
from engine.stats.models import ModelSpec, compare_fits  # noqa: E402

LABEL_KINDS = ("binary", "event", "categorical")
NUMERIC_KINDS = ("continuous", "integer", "time")


@dataclass(frozen=True)
class Table:
    """One benchmark table: its rows and the model a recipient would fit."""

    name: str
    frame: pd.DataFrame
    spec: ModelSpec


def _lung() -> Table:
    from lifelines.datasets import load_lung

    d = load_lung().drop(columns=["inst"]).dropna().reset_index(drop=True)  # inst: site code
    d["sex"] = d["sex"].map({1: "male", 2: "female"})
    cov = ("age", "sex", "ph.ecog", "ph.karno", "wt.loss")
    return Table("lung", d, ModelSpec("cox", time="time", event="status", covariates=cov))


def _kidney() -> Table:
    from lifelines.datasets import load_kidney_transplant

    d = load_kidney_transplant()
    group = np.select(
        [d["black_male"] == 1, d["white_male"] == 1, d["black_female"] == 1],
        ["black male", "white male", "black female"],
        "white female",
    )
    d = d[["time", "death", "age"]].assign(group=group)
    return Table(
        "kidney", d, ModelSpec("cox", time="time", event="death", covariates=("age", "group"))
    )


def _larynx() -> Table:
    from lifelines.datasets import load_larynx

    d = load_larynx()
    stage = np.select(
        [d["Stage_II"] == 1, d["Stage_III"] == 1, d["Stage_IV"] == 1], ["II", "III", "IV"], "I"
    )
    d = d[["time", "death", "age"]].assign(stage=stage)
    return Table(
        "larynx", d, ModelSpec("cox", time="time", event="death", covariates=("age", "stage"))
    )


def _heart() -> Table:
    """Stanford heart transplant, one row per patient (last interval's stop time and event)."""
    from lifelines.datasets import load_stanford_heart_transplants

    d = load_stanford_heart_transplants().sort_values(["id", "stop"])
    g = d.groupby("id")
    d = pd.DataFrame(
        {
            "time": g["stop"].max(),
            "event": g["event"].last().astype(int),
            "age": g["age"].first() + 48.0,  # the package centres age at 48
            "year": g["year"].first(),
            "surgery": g["surgery"].first().astype(int),
            "transplant": g["transplant"].max().astype(int),
        }
    ).reset_index(drop=True)
    cov = ("age", "year", "surgery", "transplant")
    return Table("heart", d, ModelSpec("cox", time="time", event="event", covariates=cov))


def _diabetes() -> Table:
    from sklearn.datasets import load_diabetes  # type: ignore[import-untyped]

    d = load_diabetes(as_frame=True, scaled=False).frame
    d["sex"] = d["sex"].map({1.0: "a", 2.0: "b"})
    cov = ("age", "sex", "bmi", "bp", "s1", "s5")
    return Table("diabetes", d, ModelSpec("ols", outcome="target", covariates=cov))


def _breast() -> Table:
    from sklearn.datasets import load_breast_cancer

    b = load_breast_cancer(as_frame=True).frame
    cols = ["mean radius", "mean texture", "mean smoothness", "mean concavity", "mean symmetry"]
    d = b[cols].rename(columns=lambda c: c.replace("mean ", "")).assign(malignant=1 - b["target"])
    cov = ("radius", "texture", "smoothness")
    return Table("breast", d, ModelSpec("logistic", outcome="malignant", covariates=cov))


def _demo() -> Table:
    from engine.cli import DEFAULT_DEMO_STUDY, demo_input

    d = pd.read_csv(demo_input(), dtype={"participant_id": str})
    d = d.loc[d["study"] == DEFAULT_DEMO_STUDY]
    d = d[["time_cvd_years", "cvd", "age", "totchol", "hdl", "sbp"]].reset_index(drop=True)
    cov = ("age", "totchol", "hdl", "sbp")
    return Table("demo", d, ModelSpec("cox", time="time_cvd_years", event="cvd", covariates=cov))


TABLES: dict[str, Callable[[], Table]] = {
    "lung": _lung,
    "kidney": _kidney,
    "heart": _heart,
    "diabetes": _diabetes,
    "breast": _breast,
    "demo": _demo,
    "larynx": _larynx,  # 45 members: below the app's 50-row minimum, so only on request
}
DEFAULT = ("lung", "kidney", "heart", "diabetes", "breast", "demo")
QUICK = ("kidney", "diabetes", "demo")


# ---------------------------------------------------------------------------- generators
def run_members(members: pd.DataFrame, table: Table, seed: int, tmp: Path) -> tuple[Any, Any]:
    """The real pipeline (``fast`` budget, CPU, no report) on the members: (prepared, result)."""
    src = tmp / f"{table.name}_{seed}.csv"
    members.to_csv(src, index=False)
    cfg = RunConfig(
        input=src,
        seed=seed,
        time=table.spec.time,
        event=table.spec.event,
        report=False,
        budget="fast",
        device="cpu",
    )
    prep = prepare(cfg)
    return prep, synthesize(prep)


def latent_synth(members: pd.DataFrame, table: Table, seed: int, tmp: Path) -> dict[str, Any]:
    """The real pipeline on the members; the synthetic table at the audited w (None: refused)."""
    prep, result = run_members(members, table, seed, tmp)
    w = result.release.w
    if result.synthetic is None:
        print(f"  refused: {result.refusal.reason if result.refusal else ''}", file=sys.stderr)
    out = {"synthetic": result.synthetic, "w": w, "encoder": prep.encoder, "real": prep.real}
    if result.audit is not None:  # the leak of pure sampling (w = 0), released or not
        p0 = min(result.audit.curve, key=lambda p: p.w)
        out.update(dens0=p0.density_auc, dist0=p0.auc)
    return out


def sdv_available() -> bool:
    """True when SDV's Gaussian copula can be imported (a benchmark-only extra)."""
    try:
        import sdv.single_table  # type: ignore[import-not-found]  # noqa: F401
    except Exception:  # noqa: BLE001 - any import failure means "not available"
        return False
    return True


def copula(members: pd.DataFrame, seed: int, kinds: dict[str, str]) -> pd.DataFrame:
    """SDV GaussianCopulaSynthesizer with default settings, one row per member; metadata as a
    careful user would give it: binary, event and categorical columns categorical (SDV's own
    detection does the same for 0/1 columns; as numerical, its default beta marginal turns a
    0/1 event column into all ones), the rest numerical."""
    from sdv.metadata import Metadata  # type: ignore[import-not-found]
    from sdv.single_table import GaussianCopulaSynthesizer

    columns = {
        c: {"sdtype": "categorical" if kinds.get(c) in LABEL_KINDS else "numerical"}
        for c in members.columns
    }
    meta = Metadata.load_from_dict({"tables": {"t": {"columns": columns}}})
    np.random.seed(seed)  # SDV draws from numpy's global generator
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        synth = GaussianCopulaSynthesizer(meta)
        synth.fit({"t": members} if _sdv_dict_api() else members)
        out = synth.sample(len(members))
    return out["t"] if isinstance(out, dict) else out


def _sdv_dict_api() -> bool:
    import sdv

    return int(sdv.__version__.split(".")[0]) >= 2


# ---------------------------------------------------------------------------- metrics
def total_variation(a: pd.Series, b: pd.Series) -> float:
    """0.5 * sum |p - q| over the union of levels (missing values count as a level)."""

    def text(s: pd.Series) -> pd.Series:
        return s.astype(float).astype(str) if pd.api.types.is_numeric_dtype(s) else s.astype(str)

    both = pd.concat(
        [text(a).value_counts(dropna=False), text(b).value_counts(dropna=False)], axis=1
    ).fillna(0.0)
    shares = both.to_numpy(dtype=float) / np.maximum(both.sum(axis=0).to_numpy(dtype=float), 1.0)
    return 0.5 * float(np.abs(shares[:, 0] - shares[:, 1]).sum())


def _corr_gap(real: pd.DataFrame, synth: pd.DataFrame) -> float:
    """Mean |Pearson correlation difference| over all column pairs (labels as codes)."""

    def codes(df: pd.DataFrame) -> pd.DataFrame:
        out = {}
        for c in real.columns:
            s = df[c]
            if not pd.api.types.is_numeric_dtype(real[c]):
                levels = sorted(real[c].astype(str).unique())
                s = s.astype(str).map({v: i for i, v in enumerate(levels)})
            out[c] = pd.to_numeric(s, errors="coerce")
        return pd.DataFrame(out)

    r, s = codes(real).corr().to_numpy(), codes(synth).corr().to_numpy()
    iu = np.triu_indices_from(r, k=1)
    diff = np.abs(s[iu] - r[iu])
    return float(np.nanmean(diff)) if diff.size else float("nan")


def fidelity(
    members: pd.DataFrame, synth: pd.DataFrame, table: Table, kinds: dict[str, str]
) -> dict[str, float]:
    """Model, marginal, correlation and missingness gaps of ``synth`` against the members."""
    out: dict[str, float] = {}
    try:
        rows = compare_fits(members, synth, table.spec).rows
        z = np.array([abs(r.std_difference) for r in rows])
        z = z[np.isfinite(z)]  # a merged level absent from one side has no gap (issue 32)
        out["z_mean"], out["z_max"] = float(z.mean()), float(z.max())
        out["sign"] = float(np.mean([r.sign_agrees for r in rows]))
        out["ci_overlap"] = float(np.nanmean([r.ci_overlap for r in rows]))
    except Exception as exc:  # noqa: BLE001 - a model that fails on a synthetic table is a result
        print(f"  model failed on {table.name}: {exc}", file=sys.stderr)
        out.update(z_mean=np.nan, z_max=np.nan, sign=np.nan, ci_overlap=np.nan)
    cols = [c for c in members.columns if c in kinds]
    ks = [
        ks_2samp(members[c].dropna().astype(float), synth[c].dropna().astype(float)).statistic
        for c in cols
        if kinds[c] in NUMERIC_KINDS
    ]
    tv = [total_variation(members[c], synth[c]) for c in cols if kinds[c] in LABEL_KINDS]
    out["ks"] = float(np.mean(ks)) if ks else np.nan
    out["tv"] = float(np.mean(tv)) if tv else np.nan
    out["corr"] = _corr_gap(members[cols], synth[cols])
    miss = [abs(members[c].isna().mean() - synth[c].isna().mean()) for c in cols]
    out["miss_pp"] = 100.0 * float(max(miss)) if miss else 0.0
    return out


def distance_auc(
    encoder: Any, members: pd.DataFrame, holdout: pd.DataFrame, synth: pd.DataFrame
) -> float:
    """The audit's distance attack on a released table: members vs holdout, a smaller nearest
    distance to the synthetic rows means "member" (AUC 0.5 = no leak)."""
    cols = [c.name for c in encoder.schema.synthesized()]  # the person-facing columns
    ref = encoder.distance_space(synth[cols])
    d_mem = nearest_distances(encoder.distance_space(members[cols]), ref)
    d_out = nearest_distances(encoder.distance_space(holdout[cols]), ref)
    return membership_auc(-d_mem, -d_out)


def _as_schema_reads(encoder: Any, frame: pd.DataFrame) -> pd.DataFrame:
    """Raw rows read as the schema reads them: numeric codes as text codes, rare levels merged
    (:func:`engine.columns.codes.recode`), so a holdout compares like with like (issue 32)."""
    from engine.columns.codes import recode

    specs = {c.name: c for c in encoder.schema.synthesized()}
    out = frame.assign(**{c: recode(specs[c], frame[c]) for c in frame.columns if c in specs})
    keep = pd.Series(True, index=out.index)
    for c in out.columns:  # a holdout row with a code the members lack cannot be encoded
        labels = specs[c].labels if c in specs and specs[c].kind == "categorical" else None
        if labels:
            keep &= out[c].isna() | out[c].isin(list(labels))
    return out[keep].reset_index(drop=True)


def _conform(synth: pd.DataFrame, like: pd.DataFrame) -> pd.DataFrame:
    """Synthetic values outside the encoder's known labels are mapped to the commonest label
    (a copula can only emit known labels, so this is a no-op in practice)."""
    out = synth[like.columns].copy()
    for c in like.columns:
        if not pd.api.types.is_numeric_dtype(like[c]):
            known = set(like[c].unique())
            out[c] = out[c].where(out[c].isin(known), like[c].mode().iloc[0])
        else:
            out[c] = pd.to_numeric(out[c], errors="coerce").astype(float)
    return out


# ---------------------------------------------------------------------------- driver
def run_one(table: Table, seed: int, tmp: Path, use_sdv: bool) -> list[dict[str, Any]]:
    """All generators on one 50/50 split of one table."""
    rng = np.random.default_rng(1000 + seed)
    order = rng.permutation(len(table.frame))
    half = len(order) // 2
    members = table.frame.iloc[np.sort(order[:half])].reset_index(drop=True)
    holdout = table.frame.iloc[np.sort(order[half:])].reset_index(drop=True)
    base = {"table": table.name, "seed": seed, "n_members": len(members)}
    rows: list[dict[str, Any]] = []

    t0 = time.perf_counter()
    try:
        ls = latent_synth(members, table, seed, tmp)
    except InputError as exc:
        print(f"  {table.name} seed {seed}: not run: {exc}", file=sys.stderr)
        return []
    secs = time.perf_counter() - t0
    enc, real = ls["encoder"], ls["real"]
    kinds = {c.name: c.kind for c in enc.schema.synthesized()}  # person-facing columns
    used = list(real.columns)
    members_u, holdout_u = real, holdout[used].dropna().reset_index(drop=True)
    holdout_u = _as_schema_reads(enc, holdout_u).astype(members_u.dtypes.to_dict())

    row: dict[str, Any] = {**base, "generator": "holdout", "w": np.nan, "seconds": 0.0}
    row.update(fidelity(members_u, holdout_u, table, kinds))
    row["auc"] = np.nan
    rows.append(row)

    row = {**base, "generator": "latent-synth", "w": ls["w"], "seconds": secs}
    row.update(dens0=ls.get("dens0", np.nan), dist0=ls.get("dist0", np.nan))
    if ls["synthetic"] is None:
        print(f"  {table.name} seed {seed}: latent-synth refused a release", file=sys.stderr)
        row["w"] = np.nan
    else:
        synth = _conform(ls["synthetic"], members_u)
        row.update(fidelity(members_u, synth, table, kinds))
        row["auc"] = distance_auc(enc, members_u, holdout_u, synth)
    rows.append(row)

    # The floor of sampling noise: the members themselves, drawn with replacement (the most a
    # generator that draws n fresh rows and copies the members exactly can get; no privacy).
    t0 = time.perf_counter()
    synth = members_u.sample(len(members_u), replace=True, random_state=seed)
    row = {**base, "generator": "resample", "w": np.nan, "seconds": time.perf_counter() - t0}
    row.update(fidelity(members_u, synth.reset_index(drop=True), table, kinds))
    row["auc"] = distance_auc(enc, members_u, holdout_u, synth)
    rows.append(row)

    if use_sdv:
        t0 = time.perf_counter()
        synth = _conform(copula(members_u, seed, kinds), members_u)
        row = {**base, "generator": "copula", "w": np.nan, "seconds": time.perf_counter() - t0}
        row.update(fidelity(members_u, synth, table, kinds))
        row["auc"] = distance_auc(enc, members_u, holdout_u, synth)
        rows.append(row)
    return rows


COLUMNS = [
    "z_mean",
    "z_max",
    "sign",
    "ci_overlap",
    "ks",
    "tv",
    "corr",
    "miss_pp",
    "auc",
    "dens0",
    "dist0",
    "w",
    "seconds",
]


def summarise(raw: pd.DataFrame) -> pd.DataFrame:
    """Mean over seeds per table and generator (``w`` also as its range over seeds)."""
    order = {"latent-synth": 0, "copula": 1, "holdout": 2, "resample": 3}
    g = raw.groupby(["table", "generator"], sort=False)
    table = g[[c for c in COLUMNS if c in raw.columns]].mean()
    table["n"] = g["n_members"].first()
    table["runs"] = g["seed"].count()
    w = g["w"].agg(lambda s: "" if s.isna().all() else f"{s.min():.2f}-{s.max():.2f}")
    table["w_range"] = w
    table["refused"] = g["ks"].agg(lambda s: int(s.isna().sum()))
    # Paired: each generator's mean z-gap over the seeds latent-synth released (a refused seed
    # has no latent-synth numbers, so the plain means compare different splits).
    released = raw.loc[(raw["generator"] == "latent-synth") & raw["ks"].notna(), ["table", "seed"]]
    paired = raw.merge(released, on=["table", "seed"]).groupby(["table", "generator"])["z_mean"]
    table["z_paired"] = paired.mean()
    table = table.reset_index()
    table["_o"] = table["generator"].map(order)
    return table.sort_values(["table", "_o"], kind="stable").drop(columns="_o")


def markdown(frame: pd.DataFrame) -> str:
    """A GitHub markdown table (no tabulate dependency); floats with 3 decimals."""

    def cell(v: Any) -> str:
        return f"{v:.3f}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(False)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", default=None, help=f"comma list of {', '.join(TABLES)}")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help=f"{', '.join(QUICK)}, one seed")
    parser.add_argument("--out", type=Path, default=None, help="write fidelity.csv / .md here")
    args = parser.parse_args(argv)
    names = args.tables.split(",") if args.tables else list(QUICK if args.quick else DEFAULT)
    unknown = [n for n in names if n not in TABLES]
    if unknown:
        parser.error(f"unknown table(s) {unknown}; choose from {list(TABLES)}")
    seeds = 1 if args.quick and args.seeds == 3 else args.seeds
    use_sdv = sdv_available()
    if not use_sdv:
        print("SDV is not installed: the copula rows are skipped (pip install .[bench])")
    records: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            table = TABLES[name]()
            for seed in range(1, seeds + 1):
                print(f"{name} (n={len(table.frame)}), seed {seed} ...", file=sys.stderr)
                records.extend(run_one(table, seed, Path(tmp), use_sdv))
    raw = pd.DataFrame(records)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        raw.to_csv(args.out / "fidelity_runs.csv", index=False)
    summary = summarise(raw)
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(summary.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if args.out is not None:
        summary.to_csv(args.out / "fidelity.csv", index=False)
        (args.out / "fidelity.md").write_text(markdown(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
