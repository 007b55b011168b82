"""The pipeline function both faces call: its progress line only moves forward (a bar that
jumps back looks broken to a user) and it reaches 100 %."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from engine.pipeline import RunConfig, prepare, synthesize


def test_progress_moves_forward_to_one(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    n = 400
    frame = pd.DataFrame({"a": rng.normal(size=n).round(2), "b": rng.integers(0, 5, n)})
    frame["c"] = (frame["a"] + rng.normal(size=n)).round(2)
    src = tmp_path / "t.csv"
    frame.to_csv(src, index=False)
    seen: list[tuple[float, str]] = []
    config = RunConfig(input=src, w_grid=(0.0, 0.5, 0.8), repeats=2, seed=1, allow_risky=True)
    result = synthesize(prepare(config), lambda f, t: seen.append((f, t)))
    fractions = [f for f, _ in seen]
    assert all(b >= a for a, b in zip(fractions, fractions[1:], strict=False)), (
        "progress went backwards"
    )
    assert fractions[-1] == 1.0 and all(text for _, text in seen)
    assert any("audit: w = 0.5" in text and "AUC" in text for _, text in seen)
    assert result.audit.splits == 2  # two fresh splits for a small table
