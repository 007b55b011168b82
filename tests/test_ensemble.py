"""Flows trained at once (engine/flows/ensemble.py, on engine/flows/batched.py) against flows
trained one by one, and the audit's use of them: each split's model is trained on that split's
members, and the batched audit's decisions agree with the one-by-one audit's within seed
spread."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.flows.ensemble import batchable, train_flows
from engine.flows.train import FlowConfig, train_flow


def _tables(count: int, n: int = 160, d: int = 3, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    cov = 0.6 * np.eye(d) + 0.4
    return [
        rng.multivariate_normal(np.zeros(d), cov, n) + 0.5 * rng.standard_exponential((n, d))
        for _ in range(count)
    ]


@pytest.mark.parametrize(
    "config",
    [
        FlowConfig(flows=2, hidden=16),
        FlowConfig(flows=2, hidden=8, layers=2, weight_decay=1e-3, patience=6),
    ],
    ids=["one hidden layer", "two hidden layers, weight decay"],
)
def test_each_member_is_the_flow_trained_alone(config: FlowConfig) -> None:
    """Same rows, seed and recipe: every member stops at the same epoch as its single training,
    with the same validation loss to 1e-3 nats, and maps rows to the same latent codes (to 1e-2:
    the batched products round in another order, and training amplifies rounding)."""
    Xs = _tables(5)
    alone = [train_flow(X, config, seed=3) for X in Xs]
    together = train_flows(Xs, config, seed=3)
    assert [f.epochs for f in together] == [f.epochs for f in alone]
    assert np.allclose([f.val_nll for f in together], [f.val_nll for f in alone], atol=1e-3)
    for a, b, X in zip(alone, together, Xs, strict=True):
        assert np.abs(a.to_latent(X) - b.to_latent(X)).max() < 1e-2
        assert np.allclose(b.val_row_nll, a.val_row_nll, atol=5e-3)
        # the first epoch agrees to rounding (the same initial weights and mini-batches)
        assert abs(a.history[0][1] - b.history[0][1]) < 1e-5
        # the spectral bound of Lemma 2 holds for the kept weights
        W1, _, W2 = b.model.normalized_weights()
        assert float(np.linalg.norm(W1[0].detach().numpy(), 2)) <= 1.0 + 1e-4
        assert float(np.linalg.norm(W2[-1].detach().numpy(), 2)) <= 1.0 + 1e-4


def test_members_stop_on_their_own_validation_rows() -> None:
    """A member on pure noise stops early while one with structure trains on: their epoch
    counts differ as they do alone, and each member's history ends at its own stop."""
    rng = np.random.default_rng(5)
    z = rng.standard_normal((300, 1))
    structured = np.c_[
        z, np.sin(3 * z[:, 0]) + 0.05 * rng.standard_normal(300), rng.standard_normal(300)
    ]
    noise = rng.standard_normal((300, 3))
    cfg = FlowConfig(flows=2, hidden=16, patience=8)
    together = train_flows([noise, structured], cfg, seed=1)
    alone = [train_flow(X, cfg, seed=1) for X in (noise, structured)]
    assert [f.epochs for f in together] == [f.epochs for f in alone]
    assert together[1].epochs > together[0].epochs
    assert [len(f.history) for f in together] == [f.epochs for f in together]


def test_unbatchable_recipes_train_one_by_one() -> None:
    """Input noise: each table trained alone, exactly as train_flow does (the same weights);
    the step budget and tables of different sizes are batched (issue 45,
    tests/test_batched_training.py)."""
    assert not batchable(FlowConfig(input_noise=0.3))
    assert batchable(FlowConfig().on_step_budget())
    Xs = [_tables(1, n=120)[0], _tables(1, n=150)[0]]
    cfg = FlowConfig(flows=1, hidden=8, max_epochs=4, input_noise=0.3)
    got = train_flows(Xs, cfg, seed=2)
    want = [train_flow(X, cfg, seed=2) for X in Xs]
    for a, b in zip(want, got, strict=True):
        assert np.array_equal(a.to_latent(Xs[0][:10]), b.to_latent(Xs[0][:10]))


def test_epochs_reported_per_member_by_name() -> None:
    """The Train page's chart gets each member's epochs under its own name, in order."""
    seen: dict[str, list[int]] = {}

    def progress(fraction: float, text: str, partial: object = None) -> None:
        if partial is not None:
            seen.setdefault(partial.model, []).append(partial.epoch)  # type: ignore[attr-defined]

    flows = train_flows(
        _tables(3),
        FlowConfig(flows=1, hidden=8, max_epochs=5),
        seed=0,
        progress=progress,
        names=["split 2", "split 3", "split 4"],
    )
    assert sorted(seen) == ["split 2", "split 3", "split 4"]
    for name, flow in zip(["split 2", "split 3", "split 4"], flows, strict=True):
        assert seen[name] == list(range(1, flow.epochs + 1))


class _Recorder:
    """A family of one that records the rows each split's map is fitted on."""

    def __init__(self) -> None:
        self.rows: list[np.ndarray] = []
        self.batches = 0

    def rank(self, X):
        from engine.privacy.family import Candidate

        self.rows.append(X)
        return [(Candidate("copy", floor=True), _Shift())]

    def fit(self, label, X):
        raise AssertionError("the batched family fits splits 2-12 at once")

    def fit_many(self, label, Xs):
        self.batches += 1
        self.rows.extend(Xs)
        return [_Shift() for _ in Xs]


class _Shift:
    def to_latent(self, X):
        return X

    def from_latent(self, Z):
        return Z


def test_the_batched_family_fits_each_split_on_its_own_members() -> None:
    """Five folds: the first ranked on its members, the other four fitted in one call, each on
    exactly the members the audit then attacks (its rows, in order); the folds' holdouts
    partition the rows (every row a non-member once)."""
    from engine.privacy.audit_result import AuditConfig
    from engine.privacy.family import run_family_audit

    X = np.random.default_rng(0).standard_normal((200, 2))
    family = _Recorder()
    captured = []
    import engine.privacy.rounds as fam

    real_make = fam.make_split

    def spy(*args, **kwargs):
        split = real_make(*args, **kwargs)
        captured.append(split)
        return split

    fam.make_split = spy
    try:
        run_family_audit(
            X,
            X,
            family,
            config=AuditConfig(grid=(0.0, 0.5), crossfit=True, refine=False),
            rng=np.random.default_rng(1),
        )
    finally:
        fam.make_split = real_make
    assert family.batches == 1 and len(captured) == 5
    for rows, split in zip(family.rows, captured, strict=True):
        assert np.array_equal(rows, X[split.train])
    holds = np.sort(np.concatenate([s.hold for s in captured]))
    assert np.array_equal(holds, np.arange(200))  # each row held out exactly once


@pytest.mark.slow
def test_batched_audit_decides_like_one_by_one_on_a_small_table(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 300-row survival table, three seeds: the audit with the splits' flows trained at once
    scores the smallest w and chooses w like the audit that trains them one by one (the draws
    differ: the splits' rows are drawn before the first split), within the seed spread."""
    from engine import prepare, synthesize
    from engine.pipeline import synthesize_step
    from engine.pipeline.config import RunConfig

    rng = np.random.default_rng(0)
    n = 300
    age = rng.normal(60, 10, n).round()
    sex = rng.choice(["F", "M"], n)
    risk = 0.03 * (age - 60) + 0.4 * (sex == "M")
    t = rng.exponential(5 * np.exp(-risk))
    c = rng.exponential(8, n)
    src = tmp_path / "cohort.csv"
    pd.DataFrame(
        {"age": age, "sex": sex, "time": np.minimum(t, c).round(2), "event": (t <= c).astype(int)}
    ).to_csv(src, index=False)
    aucs: dict[str, list[float]] = {"batched": [], "alone": []}
    ws: dict[str, list[float]] = {"batched": [], "alone": []}
    for mode in ("batched", "alone"):
        if mode == "alone":
            monkeypatch.delattr(synthesize_step._FamilyFitter, "fit_many")
        for seed in (1, 2, 3):
            cfg = RunConfig(
                input=src,
                time="time",
                event="event",
                seed=seed,
                report=False,
                w_grid=(0.0, 0.1, 0.2, 0.4, 0.6),
            )
            res = synthesize(prepare(cfg))
            assert res.audit.splits == 5 * res.audit.rounds
            aucs[mode].append(res.audit.curve[0].auc)
            ws[mode].append(res.audit.selected_w or 0.0)
    assert abs(np.mean(aucs["batched"]) - np.mean(aucs["alone"])) < 0.02, aucs
    assert abs(np.mean(ws["batched"]) - np.mean(ws["alone"])) < 0.25, ws
