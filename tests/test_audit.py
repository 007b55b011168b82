"""Tests of the membership audit, w selection, release metrics, outlier protection and epsilon.

The flow is replaced by the EXACT Gaussian map of the paper's simulation (section 3.1.1):
d = 5, compound symmetry rho = 0.9, n = 2500; to_latent(x) = L^-1 x, from_latent(z) = L z.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.spatial import cKDTree

from engine.errors import Cancelled, InputError
from engine.privacy.audit import (
    AuditConfig,
    membership_auc,
    roc_curve,
    run_audit,
)
from engine.privacy.release import (
    epsilon_statement,
    latent_diameter,
    protect_outliers,
    record_ranks,
    release_metrics,
    safe_histogram,
)
from engine.progress import CancelToken
from engine.search.neighbours import count_closer, nearest_distances

D, RHO, N = 5, 0.9, 2500
SIGMA = (1 - RHO) * np.eye(D) + RHO * np.ones((D, D))
CHOL = np.linalg.cholesky(SIGMA)


class GaussianMap:
    """The exact transport map of N(0, SIGMA)."""

    def to_latent(self, X: np.ndarray) -> np.ndarray:
        return np.linalg.solve(CHOL, np.asarray(X).T).T

    def from_latent(self, Z: np.ndarray) -> np.ndarray:
        return np.asarray(Z) @ CHOL.T


def fit_gaussian(rows: np.ndarray) -> GaussianMap:
    return GaussianMap()


@pytest.fixture(scope="module")
def data() -> np.ndarray:
    return np.random.default_rng(2024).standard_normal((N, D)) @ CHOL.T


def lni(X: np.ndarray, w: float, rng: np.random.Generator) -> np.ndarray:
    m = GaussianMap()
    return m.from_latent(
        math.sqrt(w) * m.to_latent(X) + math.sqrt(1 - w) * rng.standard_normal(X.shape)
    )


# --- AUC -------------------------------------------------------------------------------------


def test_auc_counts_ties_one_half() -> None:
    # pairs: (3>1) (3>2) (3=3)->.5 (2>1) (2=2)->.5 (2<3) => (1+1+.5+1+.5+0)/6
    assert membership_auc(np.array([3.0, 2.0]), np.array([1.0, 2.0, 3.0])) == pytest.approx(4 / 6)
    assert membership_auc(np.array([1.0, 1.0]), np.array([1.0])) == 0.5


def test_auc_perfect_separation_is_one() -> None:
    assert membership_auc(np.arange(10.0) + 100, np.arange(10.0)) == 1.0
    assert membership_auc(np.arange(10.0), np.arange(10.0) + 100) == 0.0


def test_roc_area_matches_auc() -> None:
    rng = np.random.default_rng(0)
    pos, neg = np.round(rng.normal(0.5, 1, 300), 1), np.round(rng.normal(0, 1, 200), 1)
    fpr, tpr = roc_curve(pos, neg)
    assert np.trapezoid(tpr, fpr) == pytest.approx(membership_auc(pos, neg), abs=1e-12)


# --- the paper's simulation ------------------------------------------------------------------


def test_distance_auc_reproduces_the_paper(data: np.ndarray) -> None:
    cfg = AuditConfig(grid=(0.0, 0.75, 0.975), splits=8, repeats=1, refine=False)
    res = run_audit(data, data, fit_gaussian, config=cfg, rng=np.random.default_rng(7))
    auc = {p.w: p.auc for p in res.curve}
    assert abs(auc[0.0] - 0.5) < 0.03
    assert abs(auc[0.75] - 0.51) < 0.03
    assert auc[0.975] > 0.65
    dens = {p.w: p.density_auc for p in res.curve}
    assert abs(dens[0.0] - 0.5) < 0.03 and dens[0.975] > dens[0.0]
    json.dumps(res.to_dict())  # JSON-safe


def test_selection_with_limit_055(data: np.ndarray) -> None:
    cfg = AuditConfig(splits=3, select_on=("distance",))
    res = run_audit(data, data, fit_gaussian, config=cfg, rng=np.random.default_rng(11))
    assert res.selected_w is not None and 0.8 <= res.selected_w <= 0.95
    assert res.repeats >= 2 and any(p.refined for p in res.curve)
    # both attacks: the density-ratio attack is stronger at mid w, so never a larger w
    from engine.privacy.audit import select_w

    both = select_w(res.curve, 0.55, ("distance", "density"))
    assert both is not None and both <= res.selected_w
    block = res.to_dict()
    assert {"threshold", "holdout_fraction", "repeats", "curve", "selected_w"} <= set(block)
    assert {"w", "auc", "auc_sd", "density_auc", "tpr_at_1pct_fpr"} <= set(block["curve"][0])


def test_no_w_meets_an_impossible_limit(data: np.ndarray) -> None:
    strict = AuditConfig(grid=(0.9,), threshold=0.51, repeats=3, refine=False)
    res = run_audit(data, data, fit_gaussian, config=strict, rng=np.random.default_rng(3))
    assert res.selected_w is None


def test_seeded_runs_are_reproducible(data: np.ndarray) -> None:
    cfg = AuditConfig(grid=(0.0, 0.9), repeats=2, refine=False)
    a = run_audit(data, data, fit_gaussian, config=cfg, rng=np.random.default_rng(5)).to_dict()
    b = run_audit(data, data, fit_gaussian, config=cfg, rng=np.random.default_rng(5)).to_dict()
    a.pop("seconds"), b.pop("seconds")
    assert a == b


def test_cancel_and_bad_input(data: np.ndarray) -> None:
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        run_audit(data, data, fit_gaussian, rng=np.random.default_rng(0), cancel=token)
    with pytest.raises(InputError):
        run_audit(data[:10], data[:10], fit_gaussian, rng=np.random.default_rng(0))
    with pytest.raises(InputError):
        run_audit(
            data, data, fit_gaussian, config=AuditConfig(grid=(1.0,)), rng=np.random.default_rng(0)
        )


# --- release metrics -------------------------------------------------------------------------


def test_release_metrics_on_the_gaussian_simulation(data: np.ndarray) -> None:
    rng = np.random.default_rng(9)
    closer = []
    for w in (0.0, 0.5, 0.75, 0.9):
        m = release_metrics(data, lni(data, w, rng), rng=rng)
        closer.append(m.closer_probability)
        assert m.share_within_1e6 == 0.0
        if w == 0.0:
            assert abs(m.closer_probability - 0.5) < 0.03
            assert abs(m.median_rank - N / 2) < 0.1 * N / 2
        hist = m.own_distance_histogram
        assert sum(hist.counts) == N and min(hist.counts) >= 10
        json.dumps(m.to_dict())
    assert all(a > b for a, b in zip(closer, closer[1:], strict=False))


def test_ranks_match_a_direct_count() -> None:
    rng = np.random.default_rng(1)
    real = np.round(rng.standard_normal((300, 3)), 1)  # ties and duplicates
    synth = real + rng.normal(0, 0.3, real.shape)
    own = np.sqrt(((real - synth) ** 2).sum(1))
    full = np.sqrt(((real[:, None] - real[None]) ** 2).sum(-1))
    expect = (full < own[:, None]).sum(1) - 1
    assert record_ranks(real, own).tolist() == expect.tolist()


def test_sampled_release_metrics_above_the_exact_limit(data: np.ndarray) -> None:
    rng = np.random.default_rng(2)
    m = release_metrics(data, lni(data, 0.0, rng), rng=rng, exact_limit=1000, sample_rows=800)
    assert not m.exact and m.rows_evaluated == 800 and abs(m.closer_probability - 0.5) < 0.05


def test_exact_copies_are_counted() -> None:
    x = np.random.default_rng(0).standard_normal((100, 2))
    assert release_metrics(x, x.copy(), rng=np.random.default_rng(0)).share_within_1e6 == 1.0


def test_histogram_never_shows_small_counts() -> None:
    values = np.r_[np.random.default_rng(0).uniform(0, 1, 500), [7.0, 9.0]]  # two outliers
    h = safe_histogram(values)
    assert min(h.counts) >= 10 and sum(h.counts) == 502 and 7.0 not in h.edges


# --- nearest neighbours ----------------------------------------------------------------------


def test_brute_force_equals_the_tree_at_d50() -> None:
    rng = np.random.default_rng(4)
    ref = rng.standard_normal((3000, 50))
    q = np.r_[rng.standard_normal((1500, 50)), ref[:20] + 1e-9, ref[20:30]]  # near-ties, exact hits
    tree = cKDTree(ref).query(q)[0]
    np.testing.assert_allclose(nearest_distances(q, ref, method="brute"), tree, rtol=0, atol=1e-12)
    np.testing.assert_allclose(nearest_distances(q, ref, method="kdtree"), tree, rtol=0, atol=1e-12)


def test_brute_force_is_exact_on_shifted_data() -> None:
    rng = np.random.default_rng(5)
    ref = rng.standard_normal((500, 20)) * 1e-3 + 1e4  # far from 0: float32 cancellation
    q = ref[:50] + rng.standard_normal((50, 20)) * 1e-5
    np.testing.assert_allclose(
        nearest_distances(q, ref, method="brute"), cKDTree(ref).query(q)[0], rtol=1e-9, atol=1e-12
    )


def test_count_closer_brute_matches_tree() -> None:
    rng = np.random.default_rng(6)
    pts = rng.standard_normal((400, 20))
    radii = rng.uniform(3, 7, 50)
    full = np.sqrt(((pts[:50, None] - pts[None]) ** 2).sum(-1))
    assert count_closer(pts, pts[:50], radii).tolist() == (full < radii[:, None]).sum(1).tolist()


# --- protection, epsilon ---------------------------------------------------------------------


def test_protect_outliers_removes_every_at_risk_record(data: np.ndarray) -> None:
    rng = np.random.default_rng(8)
    X = data[:1500].copy()
    X[:15] = CHOL @ np.full(D, 6.0) + rng.standard_normal((15, D)) * 2  # planted outliers
    res = protect_outliers(GaussianMap(), X, X, 0.9, k=5, rng=rng)
    assert res.at_risk_before > 0 and res.at_risk_after == 0
    assert res.w_per_record[:15].mean() < 0.9 and res.synthetic_model_rows.shape == X.shape
    m = release_metrics(X, res.synthetic_model_rows, rng=rng)
    assert m.at_risk == 0
    json.dumps(res.to_dict())


def test_epsilon_formula_and_monotonicity() -> None:
    codes = np.array([[0.0, 0.0], [3.0, 4.0], [1.0, 1.0]])  # C = 5
    s = epsilon_statement(codes, 0.8, 1e-3)
    expect = 0.8 * 25 / (2 * 0.2) + 5 * math.sqrt(2 * 0.8 * math.log(1e3)) / math.sqrt(0.2)
    assert s.C == 5.0 and s.C_method == "exact" and s.value == pytest.approx(expect)
    assert "not a proven bound" in s.nature
    values = [epsilon_statement(codes, w, 1e-3).value for w in (0.0, 0.2, 0.5, 0.8, 0.95)]
    assert values[0] == 0.0 and all(a < b for a, b in zip(values, values[1:], strict=False))
    assert epsilon_statement(codes, 1.0, 1e-3).to_dict()["value"] is None


def test_latent_diameter_above_the_exact_limit() -> None:
    z = np.random.default_rng(3).standard_normal((3000, 3))
    exact = latent_diameter(z)[0]
    approx, method = latent_diameter(z, exact_limit=500)
    assert approx >= exact - 1e-12 and method in {"exact", "upper bound"}
    if method == "exact":
        assert approx == pytest.approx(exact)
