"""The fast budget's capacity choice: the one-standard-error rule on validation NLL."""

from typing import Any

import numpy as np
import pytest

import engine.flows.select as select
from engine.flows.train import FlowConfig


class _Fake:
    def __init__(self, cfg: FlowConfig) -> None:
        self.config = cfg


@pytest.mark.parametrize(
    ("small_extra", "chosen"),
    [(0.01, 3), (0.5, 5)],  # 0.01 nats worse per row (SE about 0.045): keep the small model
)
def test_smallest_within_one_standard_error(
    monkeypatch: pytest.MonkeyPatch, small_extra: float, chosen: int
) -> None:
    rng = np.random.default_rng(0)
    base = rng.normal(2.0, 1.0, size=500)  # per-row NLL of the large model on 500 rows
    noise = rng.normal(0.0, 1.0, size=500)  # the paired difference's SD is 1

    def fake_train(X: np.ndarray, cfg: FlowConfig, **kw: Any) -> _Fake:
        return _Fake(cfg)

    def fake_nll(flow: _Fake, rows: np.ndarray) -> np.ndarray:
        if flow.config.flows == 3:
            return base + small_extra + noise - noise.mean()
        return base

    monkeypatch.setattr(select, "train_flow", fake_train)
    monkeypatch.setattr(select, "_row_nll", fake_nll)
    X = np.zeros((2_500, 2))
    flow = select._parsimonious(X, select.FAST_CANDIDATES, lambda f, t: None, {"seed": 1})
    assert flow.config.flows == chosen


def test_fast_budget_compares_only_small_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []

    def fake_train(X: np.ndarray, cfg: FlowConfig, **kw: Any) -> _Fake:
        seen.append(cfg.flows)
        return _Fake(cfg)

    monkeypatch.setattr(select, "train_flow", fake_train)
    big = np.random.default_rng(0).normal(size=(select.FAST_SEARCH_UP_TO + 1, 2))
    assert select.select_flow(big, budget="fast", seed=0).config.flows == 5
    assert seen == [5]  # one training: the default model, no search
