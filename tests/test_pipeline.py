"""The pipeline function both faces call: its progress line only moves forward (a bar that
jumps back looks broken to a user) and it reaches 100 %; its typed results serialise to the
``audit.json`` blocks of CONTRACTS.md; the curve helpers every reader of an audit uses."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from engine.disclosure import CopyCheck
from engine.pipeline import RunConfig, prepare, synthesize
from engine.pipeline.results import Fidelity, Refusal, Release, Verdict
from engine.privacy.audit import AuditResult, BindingAttack, CurvePoint
from engine.privacy.curve import above_choice, nearest_point
from engine.privacy.release import EpsilonStatement, Histogram, ReleaseMetrics


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
    # cross-fitted: rounds of five folds (up to six rounds for a table of up to 500 rows)
    assert result.audit.crossfit and result.audit.splits == 5 * result.audit.rounds


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
    assert result.release.rows == 900  # the release itself uses every row


def _point(w: float) -> CurvePoint:
    return CurvePoint(
        w=w,
        auc=0.5 + w / 10,
        auc_sd=0.01,
        auc_se=0.004,
        tpr_at_1pct_fpr=0.01,
        tpr_at_01pct_fpr=0.001,
        density_auc=0.5,
        density_auc_sd=0.01,
        density_auc_se=0.004,
        repeats=4,
        refined=False,
        roc_fpr=(0.0, 1.0),
        roc_tpr=(0.0, 1.0),
    )


def _audit(selected: float | None, grid: tuple[float, ...] = (0.0, 0.25, 0.5)) -> AuditResult:
    return AuditResult(
        threshold=0.55,
        holdout_fraction=0.2,
        repeats=4,
        splits=1,
        curve=tuple(_point(w) for w in grid),
        selected_w=selected,
        rule="",
        seconds=1.0,
        budget_exhausted=False,
    )


def test_curve_helpers_pick_the_nearest_point_and_flag_a_raised_w() -> None:
    audit = _audit(0.25)
    assert nearest_point(audit, 0.3).w == 0.25  # type: ignore[union-attr]
    assert nearest_point(audit, 0.4).w == 0.5  # type: ignore[union-attr]
    assert nearest_point(audit, None).w == 0.0  # at refusal: the smallest w  # type: ignore[union-attr]
    assert nearest_point(None, 0.3) is None and nearest_point(_audit(None, ()), 0.3) is None
    assert not above_choice(audit, 0.25) and not above_choice(audit, 0.25 + 1e-12)
    assert not above_choice(audit, 0.1) and above_choice(audit, 0.26)
    assert above_choice(_audit(None), 0.0)  # no w met the limit: any release is an override


def _release(copies: int = 1) -> Release:
    hist = Histogram((0.0, 1.0), (40,))
    metrics = ReleaseMetrics(
        rows=400,
        closer_probability=0.12,
        median_rank=31.0,
        exact=True,
        rows_evaluated=400,
        own_distance_histogram=hist,
        nearest_real_histogram=hist,
        share_within_1e6=0.0,
        k_risk=5,
        at_risk=3,
    )
    eps = EpsilonStatement(0.4, 0.0025, 9.5, "exact", 72.0, "an estimate", "")
    return Release(
        w=0.4,
        chosen_by="the audit",
        copies=copies,
        clipped={"age": 12},
        non_finite={},
        metrics=metrics,
        epsilon=eps,
        binding=BindingAttack("density", 0.4, 0.53, 0.004, 0.01, 4),
        copies_audited=copies,
        exact_copies=CopyCheck(2, 1, 1, 2, 0, 1),
    )


def test_release_block_keeps_the_audit_json_keys_order_and_values() -> None:
    import json

    block = json.loads(json.dumps(_release(copies=2).to_dict()))
    assert list(block)[:8] == [
        "w",
        "chosen_by",
        "rows",
        "copies",
        "shuffled",
        "clipped",
        "non_finite",
        "closer_probability",
    ]
    assert block["w"] == 0.4 and block["rows"] == 400 and block["median_rank"] == 31.0
    assert block["closer_probability"] == 0.12 and block["at_risk"] == 3
    assert block["epsilon"] == {
        "delta": 0.0025,
        "C": 9.5,
        "C_method": "exact",
        "value": 72.0,
        "w": 0.4,
        "nature": "an estimate",
        "sentence": "",
        "copies": 2,
    }
    assert block["metrics_over"] == "the closest of all copies per record"
    assert (block["binding_attack"], block["binding_auc"], block["copies_audited"]) == (
        "density",
        0.53,
        2,
    )
    assert block["exact_copies"]["of_any_real_row"] == "< 10"  # small counts stay suppressed
    assert list(block)[-1] == "exact_copies" and "protect_outliers" not in block


def test_refusal_and_verdict_serialise_as_before() -> None:
    import json

    refusal = Refusal("no w met the limit", "add --allow-risky", binding=None)
    assert refusal.to_dict() == {
        "w": None,
        "rows": 0,
        "refused": "no w met the limit",
        "refused_hint": "add --allow-risky",
        "binding_attack": None,
        "binding_auc": None,
        "binding_auc_se": None,
    }
    assert refusal.message == "no w met the limit; add --allow-risky"
    assert json.dumps([v.value for v in Verdict]) == (
        '["released", "refused", "released with override"]'
    )
    assert json.dumps(Verdict.RELEASED_WITH_OVERRIDE) == '"released with override"'
    assert f"{Verdict.REFUSED}" == "refused" and Verdict.REFUSED == "refused"


def test_result_blocks_are_plain_frozen_dataclasses_read_by_attribute() -> None:
    """Every caller reads attributes: the blocks answer no ``block["key"]`` / ``.get`` any more,
    cannot be changed after the run, and only their ``to_dict()`` (``audit.json``) is a dict."""
    import dataclasses

    release, refusal = _release(), Refusal("r", "h")
    for block in (release, refusal, Fidelity()):
        assert dataclasses.is_dataclass(block)
        assert not hasattr(block, "__getitem__") and not hasattr(block, "get")
        with pytest.raises(TypeError):
            block["w"]  # type: ignore[index]
        with pytest.raises(dataclasses.FrozenInstanceError):
            block.w = 0.9  # type: ignore[misc,union-attr]
    assert release.w == 0.4 and release.rows == 400 and release.to_dict()["w"] == 0.4
    assert refusal.w is None and refusal.to_dict()["w"] is None
    assert Fidelity().to_dict() == {} and Fidelity().verdict is None
