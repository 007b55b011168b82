"""Issue 11 items 2, 7 and 8: what is audited is what is released.

* Several copies per record (``copies``): the audit attacks the union of all M copies, epsilon
  composes over them, outlier protection and the release metrics cover every copy.
* The flow architecture chosen in the audit is the one released (no second search).
* Every headline names the attack that decided, with mean ± SE.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from engine.privacy.audit import AuditConfig, run_audit


class _Identity:
    """The exact Gaussian map for standard-normal data: latent code = the row itself."""

    def to_latent(self, X: np.ndarray) -> np.ndarray:
        return X

    def from_latent(self, Z: np.ndarray) -> np.ndarray:
        return Z


def _audit(copies: int, seed: int = 0) -> object:
    X = np.random.default_rng(seed).standard_normal((1000, 6))
    cfg = AuditConfig(
        grid=(0.0, 0.5, 0.6, 0.7, 0.75, 0.85),
        refine=False,
        repeats=3,
        copies=copies,
        density_max_eval=500,
    )
    return run_audit(X, X, lambda rows: _Identity(), config=cfg, rng=np.random.default_rng(1))


def test_audit_of_many_copies_sees_their_union_and_picks_a_lower_w() -> None:
    """Exact Gaussian map: twenty copies per record leak clearly more than one at the same w,
    so the w chosen for twenty copies is lower."""
    one, twenty = _audit(1), _audit(20)
    at = {c: {p.w: p for p in a.curve} for c, a in ((1, one), (20, twenty))}
    for w in (0.75, 0.85):
        assert at[20][w].density_auc > at[1][w].density_auc + 0.03, (w, at[1][w], at[20][w])
    assert at[20][0.85].auc > at[1][0.85].auc + 0.04, (at[1][0.85].auc, at[20][0.85].auc)
    assert one.selected_w is not None and one.selected_w >= 0.5
    assert twenty.selected_w is None or twenty.selected_w < one.selected_w
    assert twenty.to_dict()["copies_audited"] == 20 and one.to_dict()["copies_audited"] == 1


@pytest.mark.parametrize("copies", [1, 5, 20])
def test_epsilon_composes_over_copies_like_dp_accounting(copies: int) -> None:
    """Our closed form for M copies against dp-accounting's RDP accountant with M self-composed
    Gaussian events of the same noise multiplier (sigma = sqrt(1 - w) / (sqrt(w) C))."""
    dp_accounting = pytest.importorskip("dp_accounting")
    from engine.privacy.audit import epsilon_for_copies, epsilon_statement

    codes = np.array([[0.0], [1.5]])  # latent diameter C = 1.5
    w, delta = 0.5, 1e-5
    one = epsilon_statement(codes, w, delta)
    ours = epsilon_for_copies(one, copies).value
    sigma = math.sqrt(1 - w) / (math.sqrt(w) * one.C)
    acc = dp_accounting.rdp.RdpAccountant(
        orders=[1 + x / 10 for x in range(1, 100)] + list(range(12, 400))
    )
    acc.compose(dp_accounting.GaussianDpEvent(sigma), copies)
    reference = acc.get_epsilon(delta)
    # the same bound family: ours uses the plain RDP conversion, the accountant a tighter one
    assert reference <= ours <= 1.25 * reference, (ours, reference)
    if copies == 1:
        assert ours == one.value
    else:
        assert ours > 2.0 * one.value  # M copies cost far more than one


def _table(tmp_path: Path, n: int = 300) -> Path:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(size=n).round(3), "b": rng.normal(size=n).round(3)})
    frame["c"] = (frame["a"] + 0.5 * rng.normal(size=n)).round(3)
    src = tmp_path / "t.csv"
    frame.to_csv(src, index=False)
    return src


@pytest.fixture
def short_training(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep every flow fit to a few epochs (the tests check bookkeeping, not model quality)."""
    from engine.flows import select as flow_mod

    real_train = flow_mod.train_flow

    def quick(X, cfg, **kw):  # type: ignore[no-untyped-def]
        return real_train(X, replace(cfg, max_epochs=4, patience=2), **kw)

    monkeypatch.setattr(flow_mod, "train_flow", quick)


def test_copies_run_records_the_audit_of_all_copies(tmp_path: Path, short_training: None) -> None:
    from engine.pipeline import RunConfig, run_pipeline

    out = tmp_path / "out"
    cfg = RunConfig(
        input=_table(tmp_path),
        out=out,
        w_grid=(0.0, 0.3, 0.6),
        repeats=2,
        seed=3,
        copies=3,
        protect_outliers=True,
        allow_risky=True,
    )
    result = run_pipeline(cfg)
    record = json.loads((out / "audit.json").read_text(encoding="utf-8"))
    rel = record["release"]
    assert record["audit"]["copies_audited"] == 3 and rel["copies_audited"] == 3
    assert rel["epsilon"]["copies"] == 3
    C, w, delta = rel["epsilon"]["C"], rel["w"], rel["epsilon"]["delta"]
    if w > 0:
        rho = 3 * w * C**2 / (2 * (1 - w))
        assert rel["epsilon"]["value"] == pytest.approx(
            rho + 2 * math.sqrt(rho * math.log(1 / delta))
        )
        assert rel["protect_outliers"]["copies_protected"] == 3
    assert len(result.copies) == 3
    readme = (out / "README.txt").read_text(encoding="utf-8")
    assert "the audit attacked all 3 together" in readme
    words = {"distance": "distance attack", "density": "density attack"}[rel["binding_attack"]]
    assert (
        f"the {words} gave an AUC of {rel['binding_auc']:.3f} ± {rel['binding_auc_se']:.3f}"
        in readme
    )


def test_release_metrics_take_the_closest_copy_per_record() -> None:
    """With M copies the per-record risk counts the copy nearest each record: never fewer
    records at risk than any single copy gives."""
    from engine.pipeline.release_step import _closest_copy
    from engine.privacy.audit import release_metrics

    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 3))
    copies = [np.sqrt(0.75) * X + 0.5 * rng.standard_normal(X.shape) for _ in range(10)]
    single = [release_metrics(X, c, rng=rng).at_risk for c in copies]
    union = release_metrics(X, _closest_copy(X, copies), rng=rng).at_risk
    assert union > 2 * max(single), (single, union)


def test_released_model_has_the_audited_architecture(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, short_training: None
) -> None:
    """budget 'default': the architecture is searched once (audit, first split) and reused for
    the second split and for the final model. The search is rigged to prefer a different
    candidate on every call, so any second search would change the architecture."""
    from engine.flows import select as flow_mod
    from engine.pipeline import RunConfig, run_pipeline

    searches: list[tuple[int, int, int]] = []

    def rigged(X, configs, a, b, progress, kw):  # type: ignore[no-untyped-def]
        cfg = configs[len(searches) % len(configs)]
        searches.append((cfg.flows, cfg.hidden, cfg.layers))
        return flow_mod.train_flow(X, cfg, **kw)

    monkeypatch.setattr(flow_mod, "_best_of", rigged)
    out = tmp_path / "out"
    cfg = RunConfig(
        input=_table(tmp_path),
        out=out,
        w_grid=(0.0, 0.5),
        repeats=2,
        seed=1,
        budget="default",
        allow_risky=True,
        report=False,
    )
    result = run_pipeline(cfg)
    record = json.loads((out / "audit.json").read_text(encoding="utf-8"))
    assert result.audit.splits == 5 * result.audit.rounds  # 300 rows: rounds of five folds
    model = record["model"]
    # the family: the Gaussian copula and the searched flow; the audited one is released
    first = searches[0] if model["flows"] else (0, model["hidden"], model["layers"])
    assert model["label"] == record["audit"]["chosen_model"]
    assert (model["flows"], model["hidden"], model["layers"]) == first
    arch = record["audit"]["architecture"]
    assert {k: arch[k] for k in ("flows", "hidden", "layers")} == {
        "flows": first[0],
        "hidden": first[1],
        "layers": first[2],
    }
    # the released model repeats the audited training recipe (issue 31)
    assert (arch["steps_per_epoch"], arch["batch_size"]) == (
        model["steps_per_epoch"],
        model["batch_size"],
    )
    assert {c["label"] for c in model["candidates"]} >= {model["label"]}
    assert len(searches) == 1  # no second search, neither on split 2 nor for the release


def _point(w: float, distance: float, density: float, se: float = 0.004):  # type: ignore[no-untyped-def]
    from engine.privacy.audit import ROC_FPR, CurvePoint

    grid = tuple(float(x) for x in ROC_FPR)
    return CurvePoint(
        w=w,
        auc=distance,
        auc_sd=se * 2,
        auc_se=se,
        tpr_at_1pct_fpr=0.0,
        tpr_at_01pct_fpr=0.0,
        density_auc=density,
        density_auc_sd=se * 2,
        density_auc_se=se,
        repeats=4,
        refined=False,
        roc_fpr=grid,
        roc_tpr=grid,
    )


def _density_bound_audit():  # type: ignore[no-untyped-def]
    from engine.privacy.audit import AuditResult

    curve = (_point(0.0, 0.502, 0.571), _point(0.5, 0.513, 0.60))
    return AuditResult(
        threshold=0.55,
        holdout_fraction=0.2,
        repeats=4,
        splits=1,
        curve=curve,
        selected_w=None,
        rule="",
        seconds=1.0,
        budget_exhausted=False,
    )


def test_refusal_quotes_the_density_attack_when_it_decides(tmp_path: Path) -> None:
    from engine.pipeline import RunConfig, Verdict, prepare, release

    prep = prepare(RunConfig(input=_table(tmp_path), seed=0))
    result = release(prep, _density_bound_audit(), rng=np.random.default_rng(0))
    assert result.verdict is Verdict.REFUSED and result.refusal is not None
    why = result.refusal.reason
    assert "density attack AUC 0.571 ± 0.004 (upper 95 % bound 0.578)" in why, why
    assert "0.502" not in why  # the distance AUC, which passed, is not the headline
    assert "--" not in why  # words a person reads name no command-line option
    # failing at w = 0: the model itself gives members away, so the hint says what changes that
    hint = result.refusal.hint
    assert "the model itself gives members away at w = 0" in hint, hint
    assert "coarsen columns" in hint and hint.endswith("--allow-risky to export at w = 0 anyway")
    forced = replace(prep, config=replace(prep.config, forced_w=0.5))
    why_forced = release(forced, _density_bound_audit(), rng=np.random.default_rng(0))
    assert why_forced.refusal is not None
    assert "density attack AUC 0.600 ± 0.004" in why_forced.refusal.reason
    assert why_forced.refusal.hint == "lower --w or add --allow-risky to override"


def test_cli_refusal_names_the_binding_attack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import engine.pipeline.synthesize_step as pipeline
    from engine import cli

    monkeypatch.setattr(
        pipeline, "_audit", lambda prep, rng, progress, cancel, final=None: _density_bound_audit()
    )
    code = cli.main(["run", str(_table(tmp_path)), "--out", str(tmp_path / "o"), "--no-report"])
    err = capsys.readouterr().err
    assert code == 3
    assert "density attack AUC 0.571" in err and "--allow-risky" in err, err


def test_refusal_by_uncertainty_alone_says_so_and_not_that_the_model_leaks(tmp_path: Path) -> None:
    """A mean AUC below the limit that fails only by its standard error (a few dozen rows,
    fresh splits that disagree) is not a model giving members away: more rows settle it."""
    from engine.pipeline import RunConfig, Verdict, prepare, release
    from engine.privacy.audit import AuditResult

    curve = (_point(0.0, 0.483, 0.47, se=0.113), _point(0.5, 0.50, 0.48, se=0.113))
    audit = AuditResult(
        threshold=0.55,
        holdout_fraction=0.2,
        repeats=5,
        splits=4,
        curve=curve,
        selected_w=None,
        rule="",
        seconds=1.0,
        budget_exhausted=False,
    )
    prep = prepare(RunConfig(input=_table(tmp_path), seed=0))
    result = release(prep, audit, rng=np.random.default_rng(0))
    assert result.verdict is Verdict.REFUSED and result.refusal is not None
    why, hint = result.refusal.reason, result.refusal.hint
    assert "distance attack AUC 0.483 ± 0.113" in why, why
    assert "its estimate is below the limit" in why and "cannot show that it stays below" in why
    assert "--" not in why
    assert "gives members away" not in hint and hint.startswith("more rows would settle it")
