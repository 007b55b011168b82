"""Flows trained together (engine/flows/batched.py) against the same flows trained one by one
with train_flow (issue 45 item 1): same seeds, same epochs, same held-out likelihoods within a
stated tolerance; members stopping at different epochs; unequal tables; a deterministic CPU
path; and the audit's folds trained in one call.

Tolerance measured (5 folds of a 603 x 4 table, 2 x 16 flows, seeds 11-15, CPU, torch 2.x):
every member stops at the epoch its single training stops at (73-164 epochs), mean validation
NLL within 3e-7 nats, per-row NLL of its held-out fold within 8.6e-6 nats (5.6e-7 relative),
latent codes within 1.4e-6. The gap is rounding: the batched matrix products' backward sums in
another order (1e-8 in a gradient); Adam is the same fused kernel. Asserted with margin: 1e-5
nats on the mean, 1e-5 relative per row, 1e-4 on the codes.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from engine.flows.batched import batchable, train_flows_together
from engine.flows.train import FlowConfig, row_nll, train_flow


def _table(n: int = 603, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 4))
    X[:, 1] += np.sin(2 * X[:, 0])
    X[:, 3] = X[:, 2] ** 2 + 0.3 * X[:, 3]
    return X


def _folds(n: int, k: int = 5, seed: int = 1) -> list[tuple[np.ndarray, np.ndarray]]:
    perm = np.random.default_rng(seed).permutation(n)
    return [(np.sort(np.setdiff1d(perm, perm[i::k])), np.sort(perm[i::k])) for i in range(k)]


def _held_out_nll(flow, rows: np.ndarray) -> np.ndarray:
    return row_nll(flow.model, torch.as_tensor(rows, dtype=torch.float32))


def test_five_folds_equal_their_one_by_one_training() -> None:
    """Five folds of 603 rows (training tables of 482 and 483 rows: short last batches
    padded), each with its own seed: the batched members stop at the epochs of their single
    trainings, at different epochs, and give the same NLL on their held-out fold's rows."""
    X = _table()
    folds = _folds(len(X))
    cfg, seeds = FlowConfig(flows=2, hidden=16), [11, 12, 13, 14, 15]
    alone = [
        train_flow(X[tr], cfg, seed=s, device="cpu")
        for (tr, _), s in zip(folds, seeds, strict=True)
    ]
    together = train_flows_together([X[tr] for tr, _ in folds], cfg, seeds=seeds, device="cpu")
    assert {len(tr) for tr, _ in folds} == {482, 483}
    assert [f.epochs for f in together] == [f.epochs for f in alone]
    assert len({f.epochs for f in together}) >= 3  # they stop at different epochs
    for a, b, (_, hold) in zip(alone, together, folds, strict=True):
        assert abs(a.val_nll - b.val_nll) < 1e-5
        na, nb = _held_out_nll(a, X[hold]), _held_out_nll(b, X[hold])
        assert np.max(np.abs(na - nb) / np.abs(na)) < 1e-5
        assert np.abs(a.to_latent(X[hold]) - b.to_latent(X[hold])).max() < 1e-4
        assert [h[0] for h in b.history] == list(range(1, b.epochs + 1))
        assert abs(a.history[0][1] - b.history[0][1]) < 1e-5  # the first epoch, to rounding
        with torch.no_grad():  # the spectral bound (Lemma 2) holds for the weights kept
            W1, _, W2 = b.model.normalized_weights()
        assert float(torch.linalg.matrix_norm(W1, ord=2).max()) <= 1.0 + 1e-4
        assert float(torch.linalg.matrix_norm(W2, ord=2).max()) <= 1.0 + 1e-4


def test_members_stopping_apart_and_tables_of_other_sizes() -> None:
    """A member on noise stops long before one with structure, and a third table has half the
    rows (its epochs have fewer mini-batches: it takes no step while the others finish theirs);
    two hidden layers, weight decay: each member as trained alone."""
    rng = np.random.default_rng(5)
    z = rng.standard_normal((400, 1))
    structured = np.c_[z, np.sin(3 * z) + 0.05 * rng.standard_normal((400, 1)), z**2]
    noise = rng.standard_normal((400, 3))
    small = structured[:150] + 0.01 * rng.standard_normal((150, 3))
    tables = [noise, structured, small]
    cfg = FlowConfig(flows=2, hidden=8, layers=2, weight_decay=1e-3, patience=8)
    alone = [train_flow(T, cfg, seed=7, device="cpu") for T in tables]
    together = train_flows_together(tables, cfg, seeds=[7, 7, 7], device="cpu")
    assert [f.epochs for f in together] == [f.epochs for f in alone]
    assert together[1].epochs > together[0].epochs + 10
    for a, b, T in zip(alone, together, tables, strict=True):
        assert abs(a.val_nll - b.val_nll) < 1e-3
        na, nb = _held_out_nll(a, T), _held_out_nll(b, T)
        assert np.max(np.abs(na - nb) / np.abs(na)) < 1e-3


def test_step_budget_recipe_trains_together() -> None:
    """The large-table recipe (a budget of steps, a capped validation sample) on tables of
    unequal size: the same epochs and validation NLL as alone."""
    X = _table(1_500, seed=2)
    budget = FlowConfig(flows=1, hidden=8).on_step_budget()
    cfg = replace(budget, batch_size=256, steps_per_epoch=5)
    tables = [X[:1_000], X[200:1_300], X[500:]]
    alone = [
        train_flow(T, cfg, seed=s, device="cpu") for T, s in zip(tables, (1, 2, 3), strict=True)
    ]
    together = train_flows_together(tables, cfg, seeds=[1, 2, 3], device="cpu")
    assert batchable(cfg)
    assert [f.epochs for f in together] == [f.epochs for f in alone]
    assert np.allclose([f.val_nll for f in together], [f.val_nll for f in alone], atol=1e-4)


def test_cpu_path_is_deterministic() -> None:
    """Two batched runs with the same seeds: byte-identical weights and validation NLLs."""
    X = _table(400, seed=3)
    tables = [X[tr] for tr, _ in _folds(len(X), 4)]
    cfg = FlowConfig(flows=2, hidden=8, max_epochs=15)
    runs = [train_flows_together(tables, cfg, seeds=[1, 2, 3, 4], device="cpu") for _ in "ab"]
    for a, b in zip(*runs, strict=True):
        assert a.val_row_nll.tobytes() == b.val_row_nll.tobytes()
        sa, sb = a.model.state_dict(), b.model.state_dict()
        for name, ta in sa.items():
            assert torch.equal(ta, sb[name]), name


def test_unbatchable_recipes_train_one_by_one_exactly() -> None:
    """Input noise (its per-step draws) and batch normalization: each table trained alone by
    train_flow (the same weights); different columns refused."""
    X = _table(200)
    cfg = FlowConfig(flows=1, hidden=4, max_epochs=3, input_noise=0.3)
    assert not batchable(cfg) and not batchable(FlowConfig(batch_norm=True))
    got = train_flows_together([X[:150], X[50:]], cfg, seeds=[1, 2], device="cpu")
    want = [train_flow(T, cfg, seed=s, device="cpu") for T, s in ((X[:150], 1), (X[50:], 2))]
    for a, b in zip(want, got, strict=True):
        assert np.array_equal(a.to_latent(X[:10]), b.to_latent(X[:10]))
    with pytest.raises(Exception, match="same columns"):
        train_flows_together([X, X[:, :3]], cfg, seeds=[1, 1])


class _FlowFamily:
    """A family of one flow architecture, fitted as the run's family fits it: ``fit`` alone,
    ``fit_many`` through the audit's hook (engine.flows.ensemble), with the run's seed."""

    config = FlowConfig(flows=1, hidden=4, max_epochs=2)

    def fit(self, label, X):
        return train_flow(X, self.config, seed=4, device="cpu")

    def fit_many(self, label, Xs):
        from engine.flows.ensemble import train_flows

        return train_flows(Xs, self.config, seed=4, device="cpu")


def test_the_audit_trains_a_rounds_folds_in_one_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """A round's five folds (203 rows: training tables of 162 and 163 rows) trained in one
    batched call, each with the run's seed, as are those of the audit of half the rows (the
    chosen model alone, :class:`engine.privacy.candidates.FloorOnly`)."""
    from engine.flows import ensemble
    from engine.privacy.audit_result import AuditConfig
    from engine.privacy.candidates import FloorOnly
    from engine.privacy.rounds import Rounds

    calls: list[tuple[list[int], list]] = []
    real = ensemble.train_flows_together

    def spy(tables, config, **kw):
        calls.append(([len(t) for t in tables], list(kw["seeds"])))
        return real(tables, config, **kw)

    monkeypatch.setattr(ensemble, "train_flows_together", spy)
    X = _table(203)
    for family in (_FlowFamily(), FloorOnly(_FlowFamily(), "flow")):
        rounds = Rounds(X, X, family, AuditConfig(crossfit=True), np.random.default_rng(0))
        maps = rounds.maps("flow", rounds.rows(0))
        assert len(maps) == 5 and all(m.epochs == 2 for m in maps)
    assert len(calls) == 2
    for sizes, seeds in calls:
        assert sorted(set(sizes)) == [162, 163] and seeds == [4] * 5
