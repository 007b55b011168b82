"""Public clinical tables for the family bench (issue 27, item 4), all available offline from
installed packages, each with the model a recipient would fit.

Sources: lifelines' datasets (lung, kidney, heart, gbsg2, rossi), scikit-learn's (diabetes,
breast), scikit-survival's (whas500, actg), SurvSet's (colon, pbc) and the engine's demo cohort.
``statsmodels.datasets`` was looked at and not used: its only clinical survival table is the
Stanford heart transplant (69 rows), a smaller copy of ``heart``; the rest need a download.

``KEPT_BACK`` (colon, pbc): never used to tune anything; the bench reports them separately.
Tables of more than ``ROW_LIMIT`` rows are cut to a fixed random ``ROW_LIMIT`` rows (none of the
current ones is), to keep a run on two shared cores under an hour.

SurvSet and scikit-survival are bench-only packages (``.venv-bench``, see ``docs/bench.md``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "benchmarks"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from bench_fidelity import TABLES as FIDELITY_TABLES  # noqa: E402
from bench_fidelity import Table  # noqa: E402

from engine.stats.models import ModelSpec  # noqa: E402

ROW_LIMIT = 5000


def _gbsg2() -> Table:
    """German Breast Cancer Study Group 2 (686 rows; lifelines)."""
    from lifelines.datasets import load_gbsg2

    d = load_gbsg2().dropna().reset_index(drop=True)
    cov = ("horTh", "age", "menostat", "tsize", "tgrade", "pnodes", "progrec", "estrec")
    return Table("gbsg2", d, ModelSpec("cox", time="time", event="cens", covariates=cov))


def _rossi() -> Table:
    """Recidivism after release from prison (432 rows; lifelines). Not clinical, but the
    standard Cox teaching table with binary and count covariates."""
    from lifelines.datasets import load_rossi

    d = load_rossi().dropna().reset_index(drop=True)
    cov = ("fin", "age", "race", "wexp", "mar", "paro", "prio")
    return Table("rossi", d, ModelSpec("cox", time="week", event="arrest", covariates=cov))


def _whas500() -> Table:
    """Worcester Heart Attack Study (500 rows; scikit-survival): a cardiology cohort."""
    from sksurv.datasets import load_whas500

    x, y = load_whas500()
    d = pd.DataFrame({"lenfol": y["lenfol"].astype(float), "fstat": y["fstat"].astype(int)})
    for c in ("age", "hr", "sysbp", "diasbp", "bmi"):
        d[c] = x[c].astype(float)
    for c in ("gender", "cvd", "afb", "sho", "chf"):
        d[c] = x[c].astype(str).astype(float).astype(int)
    cov = ("age", "gender", "hr", "sysbp", "bmi", "chf", "afb", "sho")
    return Table("whas500", d, ModelSpec("cox", time="lenfol", event="fstat", covariates=cov))


def _actg() -> Table:
    """AIDS Clinical Trials Group 320 (1,151 rows; scikit-survival), time to AIDS or death."""
    from sksurv.datasets import load_aids

    x, y = load_aids(endpoint="aids")
    d = pd.DataFrame({"time": y["time"].astype(float), "event": y["censor"].astype(int)})
    d["tx"] = x["tx"].astype(str).astype(float).astype(int)  # 1: indinavir added
    d["age"] = x["age"].astype(float)
    d["cd4"] = x["cd4"].astype(float)
    d["karnof"] = x["karnof"].astype(str).astype(float)
    d["priorzdv"] = x["priorzdv"].astype(float)
    d["ivdrug"] = np.where(x["ivdrug"].astype(str) == "1", "never", "ever")
    d["sex"] = np.where(x["sex"].astype(str) == "1", "male", "female")
    cov = ("tx", "age", "cd4", "karnof", "ivdrug", "sex")
    return Table("actg", d, ModelSpec("cox", time="time", event="event", covariates=cov))


def _survset(name: str) -> pd.DataFrame:
    from SurvSet.data import SurvLoader  # type: ignore[import-not-found]

    d = SurvLoader().load_dataset(name)["df"].drop(columns=["pid"])
    facs = [c for c in d.columns if c.startswith("fac_")]
    d[facs] = d[facs].astype(str)  # SurvSet's factors: categoricals with a "missing" level
    keep = ~d[facs].isin(["missing", "nan"]).any(axis=1)
    d = d.loc[keep].rename(columns=lambda c: c.removeprefix("num_").removeprefix("fac_"))
    return d.dropna().reset_index(drop=True)


def _colon() -> Table:
    """Adjuvant chemotherapy for colon cancer, death endpoint (888 complete rows; SurvSet).
    Kept back."""
    d = _survset("colon")
    for c in ("sex", "obstruct", "perfor", "adhere", "node4", "differ"):
        d[c] = d[c].astype(int)
    cov = ("rx", "age", "sex", "nodes", "obstruct", "differ", "node4")
    return Table("colon", d, ModelSpec("cox", time="time", event="event", covariates=cov))


def _pbc() -> Table:
    """Mayo primary biliary cholangitis trial (312 rows; SurvSet's columns). Kept back."""
    d = _survset("pbc")
    for c in ("trt", "ascites", "hepato", "spiders"):
        d[c] = d[c].astype(int)
    cov = ("age", "sex", "trt", "hepato", "spiders")  # ascites: all 9-12 deaths in a half
    return Table("pbc", d, ModelSpec("cox", time="time", event="event", covariates=cov))


TABLES: dict[str, Callable[[], Table]] = {
    **{k: v for k, v in FIDELITY_TABLES.items() if k != "larynx"},  # the first six
    "gbsg2": _gbsg2,
    "rossi": _rossi,
    "whas500": _whas500,
    "actg": _actg,
    "colon": _colon,
    "pbc": _pbc,
}
KEPT_BACK = ("colon", "pbc")
SOURCES = {
    "lung": "lifelines",
    "kidney": "lifelines",
    "heart": "lifelines",
    "diabetes": "scikit-learn",
    "breast": "scikit-learn",
    "demo": "engine demo",
    "gbsg2": "lifelines",
    "rossi": "lifelines",
    "whas500": "scikit-survival",
    "actg": "scikit-survival",
    "colon": "SurvSet",
    "pbc": "SurvSet",
}


def load(name: str) -> Table:
    """The named table, cut to ``ROW_LIMIT`` rows (a fixed draw) when larger."""
    table = TABLES[name]()
    if len(table.frame) > ROW_LIMIT:
        keep = np.sort(np.random.default_rng(0).choice(len(table.frame), ROW_LIMIT, False))
        table = Table(table.name, table.frame.iloc[keep].reset_index(drop=True), table.spec)
    return table


if __name__ == "__main__":  # list the registry
    for n in TABLES:
        t = load(n)
        tag = " (kept back)" if n in KEPT_BACK else ""
        print(f"{n:9s} {SOURCES[n]:16s} {t.frame.shape} {t.spec.analysis}{tag}")
