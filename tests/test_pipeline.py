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


def test_auditing_a_subsample_errs_on_the_safe_side() -> None:
    """Why large tables may be audited on a subsample: with the exact Gaussian map, the same w
    leaks more (higher AUC) on fewer rows, so a w chosen on a subsample is never too high."""
    from engine.privacy.audit import AuditConfig, run_audit

    d = 5
    chol = np.linalg.cholesky(np.full((d, d), 0.9) + 0.1 * np.eye(d))

    class ExactMap:
        def to_latent(self, X: np.ndarray) -> np.ndarray:
            return np.linalg.solve(chol, X.T).T

        def from_latent(self, Z: np.ndarray) -> np.ndarray:
            return Z @ chol.T

    aucs = {}
    for n in (2000, 8000):
        X = np.random.default_rng(n).standard_normal((n, d)) @ chol.T
        cfg = AuditConfig(grid=(0.9,), refine=False, repeats=3)
        point = run_audit(
            X, X, lambda rows: ExactMap(), config=cfg, rng=np.random.default_rng(1)
        ).curve[0]
        aucs[n] = (point.auc, point.density_auc)
    assert aucs[2000][0] > aucs[8000][0] + 0.02 and aucs[2000][1] > aucs[8000][1] + 0.02, aucs


def test_large_tables_are_audited_on_a_recorded_subsample(tmp_path: Path) -> None:
    from engine.pipeline import build_audit_json

    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"a": rng.normal(size=900).round(2), "b": rng.normal(size=900).round(2)})
    src = tmp_path / "t.csv"
    frame.to_csv(src, index=False)
    config = RunConfig(
        input=src, w_grid=(0.0, 0.5), repeats=2, seed=1, audit_max_rows=300, allow_risky=True
    )
    result = synthesize(prepare(config))
    record = build_audit_json(result)["audit"]
    assert record["rows_audited"] == 300 and record["subsampled"] is True
    assert result.release["rows"] == 900  # the release itself uses every row
