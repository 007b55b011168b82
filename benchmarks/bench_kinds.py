"""How well the coded-category rule (``engine.columns.codes.code_kind``) reads real columns.

Issue 32: measured on the whole-number columns with 3 to 12 values of SurvSet's 76 public
survival tables (the ``survset`` package ships them; install it into a bench venv). SurvSet's
curators typed every feature: ``fac_*`` (a factor) or ``num_*`` (a number). Codes: ``fac_``
columns whose values are whole numbers ("1", "2", ...): numeric codes in the source table.
Numbers: ``num_`` whole-number columns with 3-12 values. A column the curators put under both
prefixes (ova's karn, Z243's Charls, ...) is ambiguous and left out of both. The rule sees the
name without its prefix.

Results: docs/bench.md ("Speed history", ``bench_kinds.py``). Run::

    /work/main/.venv-bench/bin/python benchmarks/bench_kinds.py
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from engine.columns.codes import code_kind  # noqa: E402

# Second source (2026-11-25): kinds_truth.csv types 45 few-valued whole-number columns of the
# tables lifelines, statsmodels and scikit-learn ship (13 codes, 32 numbers), read from each
# dataset's documentation. A column both sources hold (lung's ph.ecog) is counted once.


def columns() -> list[tuple[str, str, str, pd.Series]]:
    """(table, column, truth 'code' or 'number', values) of SurvSet's few-valued whole columns."""
    from SurvSet.data import SurvLoader

    warnings.simplefilter("ignore")
    loader = SurvLoader()
    found: dict[tuple[str, str], list[tuple[str, pd.Series]]] = {}
    for ds in loader.df_ds["ds"]:
        try:
            frame = loader.load_dataset(ds_name=ds)["df"]
        except Exception:  # noqa: BLE001 - a table SurvSet cannot load is skipped
            continue
        for c in frame.columns:
            prefix, _, name = str(c).partition("_")
            if prefix not in ("fac", "num"):
                continue
            s = pd.to_numeric(frame[c].dropna().astype(str), errors="coerce").dropna()
            if len(s) < len(frame[c].dropna()) or len(s) == 0:
                continue
            if not np.all(s == np.round(s)) or not 3 <= s.nunique() <= 12 or s.min() < 0:
                continue
            truth = "code" if prefix == "fac" else "number"
            found.setdefault((ds, name), []).append((truth, s))
    out = []
    for (ds, name), kinds in found.items():
        if len({t for t, _ in kinds}) == 1:  # typed both ways by the curators: ambiguous
            out.append((ds, name, kinds[0][0], kinds[0][1]))
    return out


def public_columns() -> list[tuple[str, str, str, pd.Series]]:
    """(table, column, truth, values) of the hand-typed columns of ``kinds_truth.csv``: the
    few-valued whole-number columns of the tables that lifelines, statsmodels and scikit-learn
    ship, each typed from the dataset's documentation (the ``why`` column)."""
    import importlib

    truth = pd.read_csv(Path(__file__).with_name("kinds_truth.csv"))
    frames: dict[tuple[str, str], pd.DataFrame] = {}
    out = []
    for src, table, column, kind in truth[["source", "table", "column", "truth"]].itertuples(
        index=False
    ):
        if (src, table) not in frames:
            if src == "lifelines":
                frames[src, table] = getattr(
                    importlib.import_module("lifelines.datasets"), f"load_{table}"
                )()
            elif src == "statsmodels":
                module = importlib.import_module(f"statsmodels.datasets.{table}")
                frames[src, table] = module.load_pandas().data
            else:
                module = importlib.import_module("sklearn.datasets")
                frames[src, table] = getattr(module, f"load_{table}")(as_frame=True).frame
        values = pd.to_numeric(frames[src, table][column], errors="coerce").dropna()
        out.append((f"{src}:{table}", column, kind, values[np.isfinite(values)]))
    return out


def main() -> None:
    survset = columns()
    named = {(t.split(":")[1], c.lower()) for t, c, _, _ in public_columns()}
    rows = [r for r in survset if (r[0], r[1].lower()) not in named] + public_columns()
    table = pd.DataFrame(
        [
            (ds, name, truth, "code" if code_kind(name, s) is not None else "number")
            for ds, name, truth, s in rows
        ],
        columns=["table", "column", "truth", "rule"],
    )
    print(pd.crosstab(table["truth"], table["rule"], margins=True))
    wrong = table[table["truth"] != table["rule"]]
    print(f"\nmisread {len(wrong)} of {len(table)}:")
    print(wrong.to_string(index=False))


if __name__ == "__main__":
    main()
