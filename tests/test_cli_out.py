"""`latent-synth run` without --out: a new dated folder in the current folder, never reused."""

from __future__ import annotations

from datetime import date

import numpy as np
import pandas as pd
import pytest

from engine.cli import main

FAST = ["--w-grid", "0,0.5", "--repeats", "1", "--budget", "fast", "--quiet", "--no-report"]


def _table(n: int = 300) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    age = rng.normal(55, 8, n).round().astype(int)
    return pd.DataFrame({"age": age, "sbp": (110 + 0.5 * age + rng.normal(0, 12, n)).round()})


@pytest.mark.slow
def test_run_without_out_writes_a_new_dated_folder_and_never_overwrites(
    tmp_path, monkeypatch, capsys
):
    src = tmp_path / "data" / "clinic_a.csv"
    src.parent.mkdir()
    _table().to_csv(src, index=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    args = ["run", str(src), "--seed", "5", "--auc-max", "0.7", *FAST]

    assert main(args) == 0
    first = work / f"clinic_a-synthetic-{date.today().isoformat()}"
    written = pd.read_csv(first / "synthetic.csv")
    assert len(written) == 300 and list(written.columns) == ["age", "sbp"]
    assert (first / "audit.json").is_file()
    out = capsys.readouterr().out
    assert f"Wrote the synthetic copy to {first}" in out
    stamp = (first / "synthetic.csv").stat().st_mtime_ns

    assert main(args) == 0
    second = first.with_name(first.name + "-2")
    assert len(pd.read_csv(second / "synthetic.csv")) == 300
    assert (first / "synthetic.csv").stat().st_mtime_ns == stamp  # the first one untouched
    assert f"Wrote the synthetic copy to {second}" in capsys.readouterr().out
    assert sorted(p.name for p in work.iterdir()) == [first.name, second.name]


def test_demo_still_requires_out(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", "--quiet"])
    assert exit_info.value.code == 2
    assert "--out" in capsys.readouterr().err
