"""A merged rare level keeps a numeric code column numeric in the written file (issue 44:
"other (fewer than 10)" in ``txgrp`` turned the column into text, so ``txgrp == 3`` in the
user's code silently matched nothing)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from engine.columns.codes import written_codes
from engine.columns.schema import infer_schema
from engine.files.values import OTHER, numeric_codes, other_code, with_other_labels


def _trial(n: int = 400, seed: int = 0) -> pd.DataFrame:
    """Treatment groups 1-3 and a group 4 of 6 people (fewer than 10: merged)."""
    rng = np.random.default_rng(seed)
    txgrp = np.r_[np.repeat([1, 2, 3], (n - 6) // 3), np.repeat(4, 6)]
    txgrp = np.r_[txgrp, np.repeat(1, n - len(txgrp))]
    rng.shuffle(txgrp)
    age = rng.normal(60, 9, n).round()
    time = rng.exponential(400 * np.exp(-0.3 * (txgrp == 2)), n).round() + 1
    return pd.DataFrame(
        {"time": time, "died": (rng.random(n) < 0.6).astype(int), "age": age, "txgrp": txgrp}
    )


def test_the_written_file_keeps_txgrp_numeric(tmp_path: Path) -> None:
    from engine.pipeline import RunConfig, run_pipeline

    path = tmp_path / "trial.csv"
    _trial().to_csv(path, index=False)
    roles = {"time": "time", "event": "died"}
    run = {"forced_w": 0.5, "w_grid": (0.0, 0.5), "repeats": 2, "seed": 3, "allow_risky": True}
    cfg = RunConfig(input=path, out=tmp_path / "out", device="cpu", **roles, **run)
    result = run_pipeline(cfg)
    assert result.prepared.schema.by_name("txgrp").merged == 1
    synth = pd.read_csv(tmp_path / "out" / "synthetic.csv")
    assert pd.api.types.is_numeric_dtype(synth["txgrp"])
    assert (synth["txgrp"] == 3).sum() > 50  # the user's filter matches rows
    values = set(synth["txgrp"].dropna().astype(int))
    assert values <= {1, 2, 3, 9} and 4 not in values  # the rare real code is never shown
    readme = (tmp_path / "out" / "README.txt").read_text(encoding="utf-8")
    flat = " ".join(readme.split())
    assert f"In txgrp, the code 9 means '{OTHER}'" in flat


def test_the_code_lies_above_every_real_code_even_a_merged_one() -> None:
    # codes 1-8 and a rare 9: the merged group must not read as the real code 9
    s = pd.Series(np.r_[np.repeat(np.arange(1, 9), 20), np.repeat(9, 5)], name="site")
    frame = pd.DataFrame({"site": s, "x": np.arange(len(s), dtype=float)})
    schema = infer_schema(frame)
    assert schema.by_name("site").merged == 1
    assert written_codes(schema, frame) == {"site": 99}
    assert other_code([1, 2, 3, 4]) == 9 and other_code([101, 112, 120]) == 999


def test_unmerged_text_codes_are_numbers_and_other_columns_stay() -> None:
    f = pd.DataFrame({"arm": ["1", "2", None], "name": ["a", "b", "c"], "zip": ["1", "x", "2"]})
    out = numeric_codes(f, {"arm": None, "zip": None})
    assert out["arm"].tolist()[:2] == [1, 2] and pd.isna(out["arm"].iloc[2])
    assert out["name"].tolist() == ["a", "b", "c"] and out["zip"].tolist() == ["1", "x", "2"]


@pytest.mark.parametrize("fmt", ["parquet", "xlsx", "sav"])
def test_other_formats_read_back_numeric_with_the_label(tmp_path: Path, fmt: str) -> None:
    pytest.importorskip("pyreadstat" if fmt == "sav" else "openpyxl")
    from engine.files.write import write_table

    frame = pd.DataFrame({"txgrp": ["1", "3", OTHER, "3", None], "age": [50.0, 61, 70, 45, 52]})
    codes = {"txgrp": 9}
    meta = with_other_labels({}, codes)
    written = numeric_codes(frame, codes, nullable=fmt != "sav")
    path = write_table(written, tmp_path / f"s.{fmt}", fmt, meta)
    if fmt == "sav":
        import pyreadstat

        back, info = pyreadstat.read_sav(str(path))
        assert info.variable_value_labels["txgrp"] == {9.0: OTHER}
    else:
        back = pd.read_parquet(path) if fmt == "parquet" else pd.read_excel(path)
    assert pd.api.types.is_numeric_dtype(back["txgrp"])
    assert (back["txgrp"] == 3).sum() == 2 and (back["txgrp"] == 9).sum() == 1
