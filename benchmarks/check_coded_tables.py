"""Issue 32, "Done when": on public tables with coded categories, no synthetic value of a coded
column is a real code its source row did not have because of clipping, and a merged level
appears under its own name in the synthetic file, ``audit.json`` and the report.

Tables (all public, shipped inside packages): ACTG 320 (SurvSet ``actg``; the issue's trial:
a half of it, as the bench's members, with race/ethnicity 1-5, treatment group 1-4 and IV drug
use 1-3 coded as numbers), lifelines' ``lung`` (ECOG 0-3, one patient with 3) and statsmodels'
``fair`` (occupation 1-6 of wife and husband, religiousness 1-4, a 400-row sample).

Per coded column (a column the schema reads as numeric codes), two numbers:

* ``relabelled``: rows whose own value does not come back from the encoder without noise (the
  model's input and output, w = 1), a merged value counted right when it comes back as the
  merged level. Before issue 32 these columns were integers bounded at their 10th extremes, so
  the rare top codes came back as the neighbouring real code; run this script on a checkout of
  main before issue 32 (``c847b2c``) to see that number.
* ``outside``: values of the released synthetic file outside the column's levels (after) -
  with ``merged_in_file``, ``merged_in_audit`` and ``merged_in_report``: the merged level
  written under its own name.

Results: docs/bench.md ("Speed history", ``check_coded_tables.py``). Run::

    PYTHONPATH=. /work/main/.venv-bench/bin/python benchmarks/check_coded_tables.py
"""

from __future__ import annotations

import json
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

OTHER = "other (fewer than 10)"


def tables() -> dict[str, tuple[pd.DataFrame, dict[str, Any]]]:
    """name -> (frame, RunConfig roles)."""
    from lifelines.datasets import load_lung
    from statsmodels.datasets import fair

    out: dict[str, tuple[pd.DataFrame, dict[str, Any]]] = {}
    try:
        from SurvSet.data import SurvLoader

        actg = SurvLoader().load_dataset(ds_name="actg")["df"].drop(columns=["pid"])
        actg = actg.rename(columns=lambda c: c.split("_", 1)[1] if c[:4] in ("fac_", "num_") else c)
        actg = actg.apply(lambda s: pd.to_numeric(s.astype(str)) if s.dtype == "category" else s)
        half = np.random.default_rng(1001).permutation(len(actg))[: len(actg) // 2]
        out["actg (half)"] = (
            actg.iloc[np.sort(half)].reset_index(drop=True),
            {"time": "time", "event": "event"},
        )
    except ImportError:
        print("SurvSet is not installed: ACTG is skipped", file=sys.stderr)
    lung = load_lung().drop(columns=["inst"]).dropna().reset_index(drop=True)
    out["lung"] = (lung, {"time": "time", "event": "status"})
    f = fair.load_pandas().data.sample(400, random_state=0).reset_index(drop=True)
    f = f[["rate_marriage", "age", "religious", "occupation", "occupation_husb", "affairs"]]
    out["fair (400 rows)"] = (f, {})
    return out


def roundtrip(prep: Any, frame: pd.DataFrame, coded: list[str]) -> dict[str, int]:
    """Rows whose own code does not come back from the encoder without noise, per column."""
    enc = prep.encoder
    X = enc.transform(prep.real, np.random.default_rng(0))
    back = enc.inverse_transform(X).frame
    out = {}
    for c in coded:
        spec = prep.schema.by_name(c)
        labels = {str(v) for v in spec.labels or ()}
        own = frame.loc[prep.real.index, c].astype(object).map(_text)
        if labels:  # merged: counted right when it comes back as OTHER
            own = own.where(own.isin(labels) | own.isna(), OTHER)
        out[c] = int((back[c].map(_text).to_numpy() != own.to_numpy()).sum())
    return out


def _text(v: Any) -> str:
    if isinstance(v, (int, np.integer)) or (isinstance(v, float) and float(v).is_integer()):
        return str(int(v))
    return str(v)


def main() -> None:
    from engine.pipeline import RunConfig, prepare, run_pipeline

    warnings.simplefilter("ignore")
    rows = []
    for name, (frame, roles) in tables().items():
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "t.csv"
            frame.to_csv(src, index=False)
            cfg = RunConfig(
                input=src, out=Path(tmp) / "out", forced_w=0.5, w_grid=(0.0, 0.5), repeats=2,
                seed=1, allow_risky=True, device="cpu", **roles,
            )  # fmt: skip
            prep = prepare(cfg)
            coded = [
                c.name for c in prep.schema.synthesized()
                if getattr(c, "ordered", None) is not None or (
                    c.kind == "integer" and c.name in {
                        "raceth", "txgrp", "ivdrug", "ph.ecog", "religious", "occupation",
                        "occupation_husb", "rate_marriage",
                    }
                )
            ]  # fmt: skip
            lost = roundtrip(prep, frame, coded)
            after = hasattr(prep.schema.columns[0], "merged")
            written: dict[str, Any] = {}
            if after:
                run_pipeline(cfg)
                out = Path(tmp) / "out"
                synth = pd.read_csv(out / "synthetic.csv", dtype=str)
                audit = json.loads((out / "audit.json").read_text(encoding="utf-8"))
                from pypdf import PdfReader

                pdf = " ".join(p.extract_text() or "" for p in PdfReader(out / "report.pdf").pages)
                written = {"synth": synth, "audit": audit, "pdf": " ".join(pdf.split())}
            for c in coded:
                spec = prep.schema.by_name(c)
                real_counts = frame[c].value_counts()
                row = {
                    "table": name, "column": c, "kind": spec.kind,
                    "ordered": getattr(spec, "ordered", None), "levels": int(len(real_counts)),
                    "rare_levels": int((real_counts < 10).sum()),
                    "merged": int(getattr(spec, "merged", 0)), "relabelled": lost[c],
                }  # fmt: skip
                if written and spec.kind == "categorical":
                    labels = {str(v) for v in spec.labels or ()}
                    vals = written["synth"][c].dropna()
                    col = next(x for x in written["audit"]["columns"] if x["name"] == c)
                    row.update(
                        outside=int((~vals.isin(labels)).sum()),
                        merged_rows=int((vals == OTHER).sum()),
                        merged_in_audit=col.get("merged_into") == OTHER if spec.merged else None,
                        merged_in_report=OTHER in written["pdf"] if spec.merged else None,
                    )
                rows.append(row)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
