"""The audit's economies, by their numbers: the w above the deciding range are measured once a
split (marked in ``audit.json``); a sampled distance attack on a large table agrees with scoring
every row; repeats are added on one split until the SE target; the decode thread changes no
number; a large table's flows train on a budget of steps, the same recipe in the audit and the
release."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.privacy.audit import ONE_REPEAT_NOTE
from engine.privacy.audit_result import SE_TARGET, AuditConfig
from engine.privacy.family import SingleMap, run_family_audit


class _Id:
    """The exact map for standard-normal rows: latent = model space."""

    def to_latent(self, X: np.ndarray) -> np.ndarray:
        return X

    def from_latent(self, Z: np.ndarray) -> np.ndarray:
        return Z


def _audit(X: np.ndarray, seed: int, **options):  # type: ignore[no-untyped-def]
    config = AuditConfig(**options)
    return run_family_audit(
        X, X, SingleMap(lambda rows: _Id()), config=config, rng=np.random.default_rng(seed)
    )


@pytest.mark.parametrize("crossfit", [False, True])
def test_points_above_the_deciding_range_are_measured_once_a_split(crossfit: bool) -> None:
    """With the exact map the AUC rises with w (2,000 standard-normal rows); the limit 0.54 is
    crossed inside the grid. Every point up to two grid steps above the choice gets every unit;
    those above it are measured once a split on the first round (shown, marked, and never able
    to change the choice: the curve is fitted rising, so a higher point cannot pull it down)."""
    X = np.random.default_rng(0).standard_normal((2_000, 3))
    grid = (0.0, 0.3, 0.6, 0.8, 0.9, 0.95, 0.97, 0.99)
    res = _audit(X, 7, grid=grid, crossfit=crossfit, threshold=0.54)
    assert res.selected_w is not None and 0.8 <= res.selected_w < 0.97
    once = [p for p in res.curve if not p.decides]
    above = sorted(g for g in grid if g > res.selected_w)
    cap = above[min(1, len(above) - 1)]
    assert [p.w for p in once] == [g for g in grid if g > cap]
    assert all(p.repeats == (5 if crossfit else 1) for p in once)  # one a split
    deciding = [p.repeats for p in res.curve if p.decides]
    assert min(deciding) >= (5 if crossfit else 3) and max(deciding) > len(once[0:1]) * 1
    record = res.to_dict()
    marked = [c for c in record["curve"] if c["decides"] is False]
    assert [c["w"] for c in marked] == record["points_one_repeat"] == [p.w for p in once]
    assert all(c["note"] == ONE_REPEAT_NOTE for c in marked)
    assert record["repeats"] >= 3  # the measurements every deciding point had


def test_a_refusal_at_the_smallest_w_scores_the_rest_once() -> None:
    """When the smallest w already fails, nothing above it decides: one repeat each."""
    X = np.random.default_rng(1).standard_normal((300, 2))
    res = _audit(X, 3, grid=(0.0, 0.5, 0.9), threshold=0.501, refine=False)
    assert res.selected_w is None
    assert [p.repeats for p in res.curve if p.w > 0] == [1, 1]
    assert res.curve[0].decides and res.curve[0].repeats >= 3


def test_sampled_scoring_agrees_with_scoring_every_row() -> None:
    """12,000 rows (9,600 members, 2,400 holdout): each repeat scores 1,500 of each side; the
    record says how many rows were scored, the SE at the decision is recorded, and the AUCs
    agree with scoring every row within 3 standard errors."""
    X = np.random.default_rng(2).standard_normal((12_000, 3))
    grid = (0.0, 0.5, 0.8, 0.9, 0.95)
    sampled = _audit(X, 5, grid=grid, refine=False, score_max_rows=1_500)
    whole = _audit(X, 5, grid=grid, refine=False)
    assert sampled.rows_scored == (1_500, 1_500)
    assert whole.rows_scored == (9_600, 2_400)
    assert sampled.to_dict()["rows_scored_per_repeat"] == {"members": 1_500, "holdout": 1_500}
    record = sampled.to_dict()
    assert record["se_at_decision"] == sampled.decision.se > 0
    assert record["se_target_met"] == (sampled.decision.se <= SE_TARGET)
    for p, q in zip(sampled.curve, whole.curve, strict=True):
        if p.decides and q.decides:
            assert abs(p.auc - q.auc) < 3 * math.hypot(max(p.auc_se, 0.002), q.auc_se)
    assert abs(sampled.selected_w - whole.selected_w) <= 0.1


def test_repeats_are_added_on_one_split_until_the_se_target() -> None:
    """On one split a unit is a repeat: with a noisy density attack (30 + 30 rows a repeat)
    repeats are added beyond the minimum three until the SE at the decision is at most the
    target or the 20 allowed are spent, and the record says which."""
    X = np.random.default_rng(4).standard_normal((3_000, 3))
    res = _audit(X, 5, grid=(0.0, 0.5, 0.9), refine=False, density_max_eval=30)
    deciding = [p for p in res.curve if p.decides]
    assert max(p.repeats for p in deciding) > 3
    record = res.to_dict()
    assert record["se_target_met"] == (res.decision.se <= SE_TARGET)
    assert record["se_target_met"] or max(p.repeats for p in deciding) == 20


def test_large_tables_train_on_a_step_budget_with_the_audited_recipe() -> None:
    """From 50,000 table rows the family's flows get the steps recipe; a flow trained on it
    takes exactly steps_per_epoch mini-batches an epoch, whatever the number of rows, and
    validates on at most 10,000 rows."""
    from engine.flows import select
    from engine.flows.config import BUDGET_VAL_ROWS, STEP_BUDGET_FROM, FlowConfig
    from engine.flows.train import train_flow

    recipe = FlowConfig(flows=1, hidden=4).on_step_budget()
    assert recipe.steps_per_epoch == 50 and recipe.batch_size == 2_048
    assert recipe.steps_per_epoch * recipe.max_epochs == 4_000  # the budget of steps
    X = np.random.default_rng(0).standard_normal((30_000, 2))
    seen: list[FlowConfig] = []

    def fake_train(rows: np.ndarray, cfg: FlowConfig, **kw):  # type: ignore[no-untyped-def]
        seen.append(cfg)
        return train_flow(rows[:500], FlowConfig(flows=cfg.flows, hidden=4, max_epochs=1), seed=0)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(select, "train_flow", fake_train)
        select.rank_family(X, seed=0, table_rows=STEP_BUDGET_FROM)
        assert all(c.steps_per_epoch == 50 and c.val_max_rows == BUDGET_VAL_ROWS for c in seen)
        seen.clear()
        select.rank_family(X, seed=0, table_rows=STEP_BUDGET_FROM - 1)
        assert all(c.steps_per_epoch is None for c in seen)
    small = FlowConfig(
        flows=1, hidden=4, batch_size=256, steps_per_epoch=3, max_epochs=2, val_max_rows=1_000
    )
    flow = train_flow(X, small, seed=0)
    assert flow.epochs == 2 and len(flow.val_row_nll) == 1_000
    assert flow.to_dict()["steps_per_epoch"] == 3


def test_the_faster_cell_searches_leave_the_audit_unchanged(monkeypatch) -> None:
    """Issue 31 (second part): the cells' row keys by per-column codes and the queries in tree
    order change no number of the audit: on 8,000 mixed rows (two flags, a 3-level one-hot
    block, three numbers; the cell path, reference sets above 4,096 rows) the curve's AUCs and
    SEs and the selected w equal those with numpy's unique by rows and row-order queries."""
    import engine.search.cells as cells

    rng = np.random.default_rng(5)
    n = 8_000
    X = np.hstack(
        [
            rng.standard_normal((n, 3)).round(1),
            np.eye(3)[rng.integers(0, 3, n)] / np.sqrt(2),
            rng.integers(0, 2, (n, 2)) * 2.0 - 1.0,
        ]
    )
    options = dict(grid=(0.0, 0.5, 0.9, 0.99), threshold=0.52, refine=False)
    monkeypatch.setattr(cells, "COHERENT_FROM", 64)  # tree order for these small batches too
    fast = _audit(X, 11, **options)

    def numpy_unique(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        keys, inverse = np.unique(rows, axis=0, return_inverse=True)
        return keys, np.asarray(inverse).ravel()

    monkeypatch.setattr(cells, "unique_rows", numpy_unique)
    monkeypatch.setattr(cells, "COHERENT_FROM", 10**9)
    slow = _audit(X, 11, **options)
    assert fast.selected_w == slow.selected_w
    assert fast.selected_w is not None and fast.selected_w < 0.99
    for a, b in zip(fast.curve, slow.curve, strict=True):
        assert (a.w, a.repeats) == (b.w, b.repeats)
        assert abs(a.auc - b.auc) < 1e-12 and abs(a.density_auc - b.density_auc) < 1e-12
        assert abs(a.auc_se - b.auc_se) < 1e-12


def test_decoding_the_next_point_while_scoring_gives_the_same_curve(monkeypatch) -> None:
    """Each point of a large set (20,000 members: one decode per point) is decoded on a second
    thread while the one before is scored; every draw is a function of (split, repeat) alone
    (common random numbers), so every AUC, SE and repeat count is the one the one-pass batch
    path gives (forced here by a larger decode batch), bit for bit."""
    import threading

    import engine.privacy.attacks as attacks
    import engine.privacy.book as crossfit

    X = np.random.default_rng(3).standard_normal((25_000, 3))
    options = dict(grid=(0.0, 0.5, 0.9), splits=1, refine=False, score_max_rows=2_000)
    threads: list[str] = []
    original = attacks.draw_common

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        threads.append(threading.current_thread().name)
        return original(*args, **kwargs)

    monkeypatch.setattr(crossfit, "draw_common", spy)
    ahead = _audit(X, 11, **options)
    assert any(name.startswith("audit-decode") for name in threads)  # the second thread ran
    monkeypatch.setattr(crossfit, "BATCH_ROWS", 10**9)  # every point in one batch
    threads.clear()
    batch = _audit(X, 11, **options)
    assert not any(name.startswith("audit-decode") for name in threads)
    assert [
        (p.w, p.auc, p.auc_se, p.density_auc, p.density_auc_se, p.repeats) for p in ahead.curve
    ] == [(p.w, p.auc, p.auc_se, p.density_auc, p.density_auc_se, p.repeats) for p in batch.curve]
    assert ahead.selected_w == batch.selected_w


def test_the_step_budget_stops_on_gains_too_small_to_matter_and_keeps_the_best_weights() -> None:
    """A large table's flows stop ``patience`` rounds after the last round that gained at least
    ``min_delta`` nats a row (re-derived here from the validation history), never later than
    the strict rule would, and keep the weights of the lowest validation NLL seen: a
    smaller gain still updates them. The epoch recipe is unchanged (threshold 1e-4)."""
    from dataclasses import replace

    from engine.flows.config import BUDGET_MIN_DELTA, MIN_DELTA, FlowConfig
    from engine.flows.train import train_flow

    rng = np.random.default_rng(3)
    X = rng.standard_normal((6_000, 3)) @ np.array([[1.0, 0.5, 0.2], [0, 1, 0.4], [0, 0, 1]])
    X[:, 2] = np.exp(X[:, 2] / 2)
    base = replace(
        FlowConfig(flows=2, hidden=16).on_step_budget(),
        batch_size=256,
        steps_per_epoch=10,
        max_epochs=60,
        val_max_rows=1_000,
    )
    assert FlowConfig().min_delta == MIN_DELTA == 1e-4 and base.min_delta == BUDGET_MIN_DELTA
    coarse = train_flow(X, base, seed=0)
    strict = train_flow(X, replace(base, min_delta=MIN_DELTA), seed=0)
    val = [v for _, _, v in coarse.history]
    mark, mark_round = math.inf, 0
    for i, v in enumerate(val, start=1):
        if v < mark - BUDGET_MIN_DELTA:
            mark, mark_round = v, i
    assert coarse.epochs == min(base.max_epochs, mark_round + base.patience) < strict.epochs
    # the same steps up to the stop (same seed): the histories agree round by round
    assert np.allclose(val, [v for _, _, v in strict.history[: coarse.epochs]], atol=1e-6)
    # the weights kept: the best round's, including gains below min_delta after the mark
    best = min(range(len(val)), key=lambda i: val[i])
    assert best + 1 > mark_round and abs(coarse.val_nll - val[best]) < 1e-4
    assert coarse.val_nll <= mark + 1e-4
