"""Issue 44: the progress words say what was fitted, and the counters a user watches never
go backwards."""

from __future__ import annotations

from types import SimpleNamespace as NS

import numpy as np

from engine.flows.config import FlowConfig
from engine.flows.select import select_flow
from engine.flows.train import train_flow
from tests.latent_maps import FittedGaussian


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
    assert text.startswith("Finished: the Gaussian copula of the columns was fitted; w = ")
    assert "w = 0.61 chosen (released)" in text and "epoch" not in text
    flow = NS(flows=3, hidden=32, layers=1, whitened=True)
    text = _finished_text(NS(refusal=None, model=flow, release=NS(w=0.5), verdict="released"))
    assert "a flow model (3 flows of 32 hidden units) was trained" in text.lower()


# ---------------------------------------------------------------- the audit's counters


class _Snapper(FittedGaussian):
    """A floor that leaks its last column (values snap to the nearest member's)."""

    def __init__(self, rows: np.ndarray) -> None:
        super().__init__(rows)
        self.last = np.sort(rows[:, -1])

    def from_latent(self, Z: np.ndarray) -> np.ndarray:
        X = super().from_latent(Z)
        i = np.clip(np.searchsorted(self.last, X[:, -1]), 0, len(self.last) - 1)
        X[:, -1] = self.last[i]
        return X


class _Family:
    """A leaky flow ranked first (dropped on its first round), a leaky floor second: the floor's
    w = 0 is measured on more rounds, then the grid on the first round's splits (where the old
    words said "split 1" again)."""

    def rank(self, X):
        from engine.privacy.family import Candidate

        return [
            (Candidate("flow", False, 3.9, "best"), _Snapper(X)),
            (Candidate("gaussian", True, 4.0, "floor"), _Snapper(X)),
        ]

    def fit(self, label, X):
        return _Snapper(X)


def test_audit_round_counter_and_bar_never_go_backwards():
    import re

    from engine.privacy.audit_result import AuditConfig
    from engine.privacy.family import run_family_audit

    rng = np.random.default_rng(2)
    cov = np.array([[1.0, 0.6], [0.6, 1.0]])
    X = np.c_[rng.multivariate_normal(np.zeros(2), cov, 200), rng.permutation(200) * 1.0]
    scale = np.array([0.05, 0.05, 1.0])
    cfg = AuditConfig(grid=(0.0, 0.5), refine=False, crossfit=True, floor_rounds=3, threshold=0.6)
    seen: list[tuple[float, str]] = []
    run_family_audit(
        X,
        X * scale,
        _Family(),
        to_dist=lambda rows: rows * scale,
        config=cfg,
        rng=np.random.default_rng(1),
        progress=lambda f, t: seen.append((f, t)),
    )
    points = [(f, t) for f, t in seen if t.startswith("audit: w =")]
    rounds = [int(m.group(1)) for _, t in points if (m := re.search(r"round (\d+) of up", t))]
    assert len(rounds) == len(points) > 20
    assert rounds == sorted(rounds) and rounds[-1] >= 2, rounds
    assert all("of up to 3" in t for _, t in points)
    fractions = [f for f, _ in points]
    assert fractions == sorted(fractions) and fractions[-1] <= 0.99
    assert "split" not in " ".join(t for _, t in points)  # no split number that cycles


# ---------------------------------------------------------------- time left


def test_time_left_shown_never_rises_faster_than_the_clock():
    """The 7,874-row run of issue 44: "about 1:00", then 1:26, then 2:44 within 21 s, as a
    slow stage held the bar. What is shown may grow at most a second a second."""
    from desktop.worker import TimeLeft

    est = TimeLeft(min_epochs=0)
    # 30 s of steady progress, 1 % a second from 10 %
    for t in range(31):
        est.update(0.10 + 0.01 * t, now=float(t))
    first = est.seconds(now=30.0)
    assert first is not None and abs(first - 60.0) < 0.5  # "about 1:00"
    shown = [(30.0, est.text(now=30.0), est.seconds(now=30.0))]
    # a 21 s stage with the bar standing still, the estimate read every second, then a crawl
    for t in range(31, 52):
        shown.append((float(t), est.text(now=float(t)), est.seconds(now=float(t))))
    for t in range(52, 80):
        est.update(0.40 + 0.001 * (t - 51), now=float(t))
        shown.append((float(t), est.text(now=float(t)), est.seconds(now=float(t))))
    for (t0, _, a), (t1, _, b) in zip(shown, shown[1:], strict=False):
        assert b <= a + (t1 - t0) + 1e-9, (t0, a, t1, b)
    after_21 = next(s for t, _, s in shown if t == 51.0)
    assert after_21 <= 81.0 and after_21 > 60.0  # grows, but not to 2:44 (164 s)
    assert shown[-1][2] > after_21  # a crawling stage keeps pushing it up, slowly


def test_time_left_falls_at_once_when_the_work_goes_faster():
    from desktop.worker import TimeLeft

    est = TimeLeft(min_epochs=0)
    for t in range(11):
        est.update(0.10 + 0.01 * t, now=float(t))
    before = est.seconds(now=10.0)
    est.text(now=10.0)
    est.update(0.60, now=12.0)  # a fast stage: half the bar in 2 s
    assert est.seconds(now=12.0) < before / 2
