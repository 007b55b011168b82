"""The nested candidate family (issue 27): the Gaussian copula floor, the flows above it, the
model-choice rule, and a refusal only when the floor itself gives members away."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from engine.flows.select import GAUSSIAN, preference_order, rank_family
from engine.flows.train import FlowConfig, train_flow
from engine.privacy.audit_result import AuditConfig
from engine.privacy.family import Candidate, run_family_audit
from tests.latent_maps import FittedGaussian

COV = np.array([[1.0, 0.6, 0.3], [0.6, 1.0, 0.4], [0.3, 0.4, 1.0]])
FAST = AuditConfig(grid=(0.0, 0.5), repeats=3, refine=False, splits=2)
SURE = AuditConfig(grid=(0.0, 0.5), repeats=4, refine=False, splits=4)


class _Memorizer(FittedGaussian):
    """A 'flow' that learnt its training rows by heart: every decoded row is the member
    nearest to the Gaussian's decode, plus a hair of noise. At w = 0 it copies members."""

    def __init__(self, rows: np.ndarray) -> None:
        super().__init__(rows)
        self.rows = rows

    def from_latent(self, Z: np.ndarray) -> np.ndarray:
        X = super().from_latent(Z)
        nearest = ((X[:, None, :] - self.rows[None]) ** 2).sum(-1).argmin(axis=1)
        return self.rows[nearest] + 1e-3 * np.random.default_rng(0).standard_normal(X.shape)


class _Snapper(FittedGaussian):
    """A floor whose one leak is its last column: decoded values snap to the nearest member's."""

    def __init__(self, rows: np.ndarray) -> None:
        super().__init__(rows)
        self.last = np.sort(rows[:, -1])

    def from_latent(self, Z: np.ndarray) -> np.ndarray:
        X = super().from_latent(Z)
        i = np.clip(np.searchsorted(self.last, X[:, -1]), 0, len(self.last) - 1)
        X[:, -1] = self.last[i]
        return X


class _Family:
    """A leaky flow ranked first (better validation likelihood), the Gaussian floor second."""

    def __init__(self, floor_leaks: bool = False) -> None:
        self.floor_leaks = floor_leaks
        self.fitted: list[str] = []

    def _map(self, label: str, rows: np.ndarray):
        self.fitted.append(label)
        if label == "flow":
            return _Memorizer(rows)
        return _Snapper(rows) if self.floor_leaks else FittedGaussian(rows)

    def rank(self, X):
        return [
            (Candidate("flow", False, 3.9, "the best validation likelihood"), self._map("flow", X)),
            (Candidate("gaussian", True, 4.0, "the best of those left"), self._map("gaussian", X)),
        ]

    def fit(self, label, X):
        return self._map(label, X)


def _rows(n: int = 300, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).multivariate_normal(np.zeros(3), COV, n)


def test_a_flow_that_leaks_at_w0_is_dropped_and_the_gaussian_released() -> None:
    X = _rows(500)
    family = _Family()
    res = run_family_audit(X, X, family, config=SURE, rng=np.random.default_rng(1))
    flow, gauss = res.candidates
    assert flow.status == "dropped" and flow.auc_w0 > 0.6  # copies of members: caught
    assert gauss.status == "chosen" and gauss.auc_w0 < 0.55
    assert res.chosen == "gaussian" and res.selected_w is not None  # released, not refused
    # every candidate on the same splits: the Gaussian refitted on the flow's two splits
    assert family.fitted.count("flow") == 4 and family.fitted.count("gaussian") == 4
    assert "flow gave members away" in res.chosen_because
    assert [p.w for p in res.curve] == [0.0, 0.5]  # the chosen model's whole grid audited


def test_first_ranked_passing_costs_one_model() -> None:
    """When the first-ranked candidate passes, no other candidate is fitted on another split."""
    X = _rows()

    class Passing(_Family):
        def rank(self, X):
            ranked = super().rank(X)
            return ranked[::-1]  # the Gaussian first

    family = Passing()
    res = run_family_audit(X, X, family, config=FAST, rng=np.random.default_rng(1))
    assert res.chosen == "gaussian"
    assert family.fitted.count("flow") == 1  # trained once to be ranked, never audited
    assert [c.status for c in res.candidates] == ["chosen", "not audited"]


def test_refusal_only_when_the_floor_leaks_and_it_names_the_column() -> None:
    """A floor that leaks refuses; the columns left out in turn name the one that drives it."""
    rng = np.random.default_rng(2)
    X = np.c_[_rows(200, 3)[:, :2], rng.permutation(200) * 1.0]  # a unique, spread column
    scale = np.array([0.05, 0.05, 1.0])  # the distance space: the last column counts most
    family = _Family(floor_leaks=True)
    res = run_family_audit(
        X,
        X * scale,
        family,
        to_dist=lambda rows: rows * scale,
        config=FAST,
        rng=np.random.default_rng(1),
        groups={"age": [0], "bmi": [1], "record number": [2]},
    )
    assert res.selected_w is None and res.chosen == "gaussian"
    assert [c.status for c in res.candidates] == ["dropped", "chosen"]
    everything, (top, auc_without) = res.drivers[0], res.drivers[1]
    assert top == "record number" and auc_without < everything[1] - 0.05


def test_model_choice_rule_on_a_hand_made_curve() -> None:
    """One-SE rule, applied again to those left: Gaussian, small flow, large flow (smallest
    first). Per-row validation NLLs made by hand."""
    rng = np.random.default_rng(0)
    base = rng.normal(5.0, 1.0, 200)
    noise = rng.normal(0.0, 0.3, (3, 200))
    # the flows better by 0.01 nats a row (SE about 0.03): the Gaussian first, then the rule
    close = np.stack([base + noise[0], base - 0.01 + noise[1], base - 0.012 + noise[2]])
    assert [i for i, _ in preference_order(close)] == [0, 1, 2]
    # the large flow better by 0.2 nats a row (6 SE): it first, then the Gaussian (the small
    # flow, 0.005 better than the Gaussian, is within its SE)
    far = np.stack([base + noise[0], base - 0.005 + noise[1], base - 0.2 + noise[2]])
    order = preference_order(far, ["G", "small", "large"])
    assert [i for i, _ in order] == [2, 0, 1]
    assert order[0][1] == "the best validation likelihood"


def test_gaussian_candidate_is_the_whitened_start_alone() -> None:
    """flows = 0: no training, the exact Gaussian of all rows, invertible; ranked with the flows."""
    X = _rows(400)
    g = train_flow(X, GAUSSIAN, seed=0)
    assert g.epochs == 0 and g.config.label() == "Gaussian copula (no flow layer)"
    Z = g.to_latent(X)
    assert np.allclose(np.cov(Z, rowvar=False), np.eye(3), atol=0.02)  # refitted on all rows
    assert np.abs(g.from_latent(Z) - X).max() < 1e-4
    assert len(g.val_row_nll) == 80 and np.isclose(g.val_row_nll.mean(), g.val_nll)
    ranked = rank_family(X, seed=0)
    assert sorted(f.config.flows for f, _ in ranked) == [0, 2, 3]
    with pytest.raises(ValueError):
        train_flow(X, FlowConfig(flows=-1), seed=0)


def _released_attack(real, members, holdout, synth) -> float:  # type: ignore[no-untyped-def]
    """The checker's attack on a released file, as the audit's ``released`` attack runs it."""
    from engine.privacy.audit import membership_auc
    from engine.privacy.released_space import ReleasedSpace
    from engine.search.neighbours import nearest_distances

    space = ReleasedSpace.fit(real)
    ref = space.transform(synth)
    d_in = nearest_distances(space.transform(members), ref)
    d_out = nearest_distances(space.transform(holdout), ref)
    return membership_auc(-d_in, -d_out)


def test_a_planted_leak_in_the_released_file_is_caught() -> None:
    """Rows copied from members into a released file: the released-columns attack sees them
    (a clean file of fresh draws does not)."""
    import pandas as pd

    rng = np.random.default_rng(4)

    def frame(n: int) -> pd.DataFrame:
        x = rng.multivariate_normal(np.zeros(3), COV, n)
        return pd.DataFrame(
            {
                "age": (60 + 10 * x[:, 0]).round(),
                "sbp": (130 + 15 * x[:, 1]).round(1),
                "smoker": np.where(x[:, 2] > 0.5, "yes", "no"),
                "stage": rng.integers(1, 5, n),
            }
        )

    members, holdout = frame(300), frame(300)
    real = pd.concat([members, holdout], ignore_index=True)
    clean = frame(300)
    leaky = clean.copy()
    copied = rng.choice(300, 60, replace=False)
    leaky.iloc[:60] = members.iloc[copied].to_numpy()  # 20 % of the file: members verbatim
    assert abs(_released_attack(real, members, holdout, clean) - 0.5) < 0.05
    assert _released_attack(real, members, holdout, leaky) > 0.57


def test_the_released_attack_decides_when_only_the_released_columns_leak() -> None:
    """The audit's own space shows nothing; the released block of the decoded rows copies
    members. The released attack binds and keeps w down (here: refuses at w = 0)."""
    X = _rows(400)
    released = 3  # the last three columns: the released space

    class Plant:
        def __init__(self, rows: np.ndarray) -> None:
            self.g, self.rows = FittedGaussian(rows), rows

        def to_latent(self, A):  # type: ignore[no-untyped-def]
            return self.g.to_latent(A)

        def from_latent(self, Z):  # type: ignore[no-untyped-def]
            own = self.g.from_latent(Z)
            near = ((own[:, None, :] - self.rows[None]) ** 2).sum(-1).argmin(axis=1)
            return np.hstack([own, self.rows[near]])  # released block: members verbatim

    cfg = AuditConfig(
        grid=(0.0, 0.5),
        repeats=3,
        refine=False,
        splits=2,
        released_columns=released,
        select_on=("distance", "density", "released"),
    )
    X_dist = np.hstack([X, X])
    res = run_family_audit(X, X_dist, _PlantFamily(Plant), config=cfg, rng=np.random.default_rng(1))
    p0 = res.curve[0]
    assert p0.auc < 0.56 and p0.released_auc > 0.6
    assert res.selected_w is None and res.binding(None).attack == "released"


class _PlantFamily:
    def __init__(self, make) -> None:  # type: ignore[no-untyped-def]
        self.make = make

    def rank(self, X):  # type: ignore[no-untyped-def]
        return [(Candidate("plant", True), self.make(X))]

    def fit(self, label, X):  # type: ignore[no-untyped-def]
        return self.make(X)


def test_the_refusal_names_the_columns_in_plain_words() -> None:
    """A floor that fails at w = 0: the refusal says even the Gaussian copula gives members
    away and names the columns whose absence lowers the attack most, with the numbers."""
    from dataclasses import replace

    from engine.pipeline import RunConfig, refusal_reason
    from engine.privacy.audit_result import AuditResult
    from engine.privacy.family import CandidateRecord

    X = _rows(200)
    res = run_family_audit(
        X, X, _Family(floor_leaks=True), config=FAST, rng=np.random.default_rng(1)
    )
    floor = CandidateRecord("Gaussian copula (no flow layer)", 2, True, 4.0, "chosen", "fails")
    leaky = tuple(
        replace(
            p,
            auc=0.62,
            auc_fit=0.62,
            auc_fit_se=0.01,
            upper_distance=0.636,
            density_auc=0.5,
            density_fit=0.5,
            upper_density=0.51,
        )
        for p in res.curve
    )
    audit: AuditResult = replace(
        res,
        selected_w=None,
        candidates=(floor,),
        curve=leaky,
        drivers=(("", 0.62), ("record number", 0.51), ("age", 0.60), ("bmi", 0.619)),
    )
    reason, hint = refusal_reason(RunConfig(input="t.csv"), audit)
    assert "already at w = 0.00 the distance attack AUC 0.620" in reason
    assert "even the simplest one (a Gaussian copula of the columns)" in hint
    assert "'record number' (the distance attack's AUC falls from 0.620 to 0.510" in reason
    assert "'age' (to 0.600)" in reason and "bmi" not in reason  # 0.001 lower: not named
    assert "--" not in reason
    from engine.pipeline.refusal import driver_words

    words = driver_words(audit)
    assert words.startswith("; the columns that single people out most: 'record number'")
    assert "--" not in words and "bmi" not in words


def test_family_order_puts_the_copula_last_unless_it_is_best() -> None:
    """The audit's order on hand-made validation NLLs: the flows by the one-SE rule, the
    Gaussian copula last (the fallback) unless its mean NLL beats every flow."""
    from types import SimpleNamespace

    from engine.flows.select import family_order

    rng = np.random.default_rng(1)
    base = rng.normal(5.0, 1.0, 100)

    def cand(flows: int, shift: float):  # type: ignore[no-untyped-def]
        cfg = GAUSSIAN if flows == 0 else FlowConfig(flows=flows, hidden=16 * flows)
        return SimpleNamespace(config=cfg, val_row_nll=base + shift + rng.normal(0, 0.2, 100))

    g, small, large = cand(0, 0.0), cand(2, -0.01), cand(3, -0.3)
    order = [f.config.flows for f, _ in family_order([g, small, large])]
    assert order == [3, 2, 0]  # the large flow far better; the copula the fallback
    order = [f.config.flows for f, _ in family_order([cand(0, -0.5), small, large])]
    assert order[0] == 0  # a copula better than every flow on validation rows goes first
    why = dict((f.config.flows, w) for f, w in family_order([g, small, large]))
    assert why[0].startswith("the floor")


def test_a_refusal_is_confirmed_on_more_rounds() -> None:
    """The floor's w = 0 point is the one that refuses; a floor failing there is audited on up
    to ``floor_rounds`` rounds of fresh folds (a Gaussian fits in a moment) before nothing is
    released. A floor that passes on the first round costs nothing more."""
    rng = np.random.default_rng(2)
    X = np.c_[_rows(200, 3)[:, :2], rng.permutation(200) * 1.0]
    scale = np.array([0.05, 0.05, 1.0])
    cfg = AuditConfig(grid=(0.0, 0.5), refine=False, crossfit=True, floor_rounds=3)
    family = _Family(floor_leaks=True)
    res = run_family_audit(
        X,
        X * scale,
        family,
        to_dist=lambda rows: rows * scale,
        config=cfg,
        rng=np.random.default_rng(1),
    )
    assert res.selected_w is None  # the leak is real: still refused, on three rounds
    assert res.smallest_w_splits == 15 and res.rounds == 3
    assert res.curve[0].units == 15 and res.curve[0].repeats == 15
    # 15 copulas for the refusal, 15 more on a random half of the rows: would more rows help?
    assert family.fitted.count("gaussian") == 30 and family.fitted.count("flow") == 5
    advice = res.rows_advice
    assert advice is not None and (advice.rows, advice.half_rows) == (200, 100)
    assert not advice.helps  # the record-number column gives members away at any size
    assert res.to_dict()["refusal_rows"]["helps"] is False
    assert res.to_dict()["smallest_w_splits"] == 15
    assert res.curve[1].units == 5 and not res.curve[1].decides  # shown, measured once a split

    passing = _Family()
    res2 = run_family_audit(
        _rows(500), _rows(500), passing, config=cfg, rng=np.random.default_rng(1)
    )
    assert res2.selected_w is not None and res2.candidates[1].status == "chosen"
    assert res2.smallest_w_splits == 5 and passing.fitted.count("gaussian") == 5
    assert res2.candidates[0].status == "dropped" and res2.rounds == 1


def test_the_release_gap_is_added_above_the_smallest_w_only() -> None:
    """The bound adds the gap measured between the audit's split models and a checker's attack
    on released files (0.013) to the released-columns attack above the smallest w; a w whose
    bound is within the gap of the limit is no longer chosen, one well below it still is, and
    the smallest w (a fresh sample of the model) is not charged the gap."""
    from engine.privacy.decision import FittedCurve, decide

    ws = (0.0, 0.3, 0.5, 0.7)
    fits = (0.532, 0.532, 0.525, 0.535)  # a fitted curve is monotone: (0.532, 0.532, 0.532, 0.535)
    flat = (0.532, 0.532, 0.532, 0.535)
    curve = FittedCurve(ws, fits, flat, (0.004,) * 4, (10,) * 4)
    assert decide({"released": curve}, 0.55).w == 0.7  # 0.535 + 1.645 x 0.004 = 0.5416
    assert decide({"released": curve}, 0.55, gap=0.013).w == 0.0  # 0.532 + 0.013 + 0.0066 > 0.55
    assert decide({"released": curve}, 0.55, gap=0.008).w == 0.7  # 0.5496: just under
    assert decide({"released": curve}, 0.55, gap=0.009).w == 0.5  # 0.7's 0.5506 over
    assert decide({"released": curve}, 0.55, gap=0.05).w == 0.0  # never charged at w = 0
    other = FittedCurve(ws, fits, flat, (0.004,) * 4, (10,) * 4)
    assert decide({"distance": other}, 0.55, gap=0.05).w == 0.7  # the gap is the released one's


def test_a_flow_under_the_limit_gets_more_rounds_before_it_is_dropped_a_leaky_one_does_not() -> (
    None
):
    """A candidate whose estimate at w = 0 is under the limit but whose bound is over it is
    measured on more rounds (up to ``max_rounds``) before it is dropped: one round's noise does
    not choose the model. One whose estimate is over the limit (a memorizer) is dropped on the
    first round."""
    X = _rows(500)
    leaky = _Family()
    cfg = AuditConfig(grid=(0.0, 0.5), refine=False, crossfit=True, max_rounds=3)
    res = run_family_audit(X, X, leaky, config=cfg, rng=np.random.default_rng(1))
    assert res.candidates[0].status == "dropped" and leaky.fitted.count("flow") == 5

    class _GaussianFirst(_Family):  # a sound flow (the exact Gaussian map) ranked first
        def _map(self, label, rows):  # type: ignore[no-untyped-def]
            self.fitted.append(label)
            return FittedGaussian(rows)

    one = _GaussianFirst()
    first = run_family_audit(
        X[:200], X[:200], one, config=replace(cfg, max_rounds=1), rng=np.random.default_rng(4)
    )
    rec = first.candidates[0]
    assert rec.label == "flow" and one.fitted.count("flow") == 5
    fits = [(rec.auc_w0, rec.auc_w0_se), (rec.density_auc_w0, rec.density_auc_w0_se)]
    point = max(f for f, _ in fits)
    bound = max(f + 1.6449 * se for f, se in fits)
    # a limit between the flow's first-round estimate at w = 0 and its bound there: under on
    # the estimate, over on the margin (the same seed gives the same first round)
    between = 0.5 * (point + bound)
    assert point < between < bound
    more = _GaussianFirst()
    run_family_audit(
        X[:200], X[:200], more, config=replace(cfg, threshold=between), rng=np.random.default_rng(4)
    )
    assert more.fitted.count("flow") > 5  # measured again before any verdict
