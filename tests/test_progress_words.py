"""Issue 44: the progress words say what was fitted, and the counters a user watches never
go backwards."""

from __future__ import annotations

from types import SimpleNamespace as NS

import numpy as np

from engine.flows.config import FlowConfig
from engine.flows.select import select_flow
from engine.flows.train import train_flow


def _rows() -> np.ndarray:
    return np.random.default_rng(0).normal(size=(120, 3))


def test_copula_progress_says_fitted_not_trained_for_zero_epochs():
    texts: list[str] = []
    copula = FlowConfig(flows=0, whiten=True)
    select_flow(_rows(), architecture=copula, seed=0, progress=lambda f, t: texts.append(t))
    train_flow(_rows(), copula, seed=0, progress=lambda f, t: texts.append(t))
    assert texts, "no progress line at all"
    assert not [t for t in texts if "epoch" in t or "training flow" in t]
    assert texts[-1].startswith("fitting the Gaussian copula: done")


def test_a_trained_flow_still_counts_its_epochs():
    texts: list[str] = []
    cfg = FlowConfig(flows=1, hidden=4, max_epochs=2)
    train_flow(_rows(), cfg, seed=0, progress=lambda f, t: texts.append(t))
    assert texts[-1].startswith("training flow: done after 2 epochs")


def test_train_page_finish_line_names_the_copula():
    from desktop.pages.train_page import _finished_text

    model = NS(flows=0, hidden=0, layers=0, whitened=True)
    done = NS(refusal=None, model=model, release=NS(w=0.61), verdict="released")
    text = _finished_text(done)
    assert text.startswith("Finished. The Gaussian copula of the columns was fitted.")
    assert "w = 0.61 chosen (released)" in text and "epoch" not in text
    flow = NS(flows=3, hidden=32, layers=1, whitened=True)
    text = _finished_text(NS(refusal=None, model=flow, release=NS(w=0.5), verdict="released"))
    assert "a flow model (3 flows of 32 hidden units) was trained" in text.lower()
