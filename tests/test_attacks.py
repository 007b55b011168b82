"""Tests of the two membership attacks' numerics (issue 11 items 3 and 11, issue 18 ranks).

- The density-ratio attack's KDE on one-hot (categorical) columns: log-densities against
  scipy's ``gaussian_kde`` on the non-degenerate subspace; the audit's density AUC rising with w
  on a table with 3- and 5-level categoricals.
- Exact nearest distances from the brute-force path (ties, high d).
- Ranks (eq. 26) and the closer probability (eq. 22) on hand-computed integer grids with exact
  distance ties.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.spatial import cKDTree
from scipy.stats import gaussian_kde

from engine.columns.schema import infer_schema
from engine.encoding.encoder import TableEncoder
from engine.privacy.audit import AuditConfig, run_audit
from engine.privacy.release import record_ranks, release_metrics
from engine.search.density import GaussianKDE, principal_basis
from engine.search.neighbours import count_closer, nearest_distances


def _mixed_rows(n: int, seed: int) -> np.ndarray:
    """Two continuous columns and one-hot blocks of 3 and 5 levels, scaled as distance_space."""
    rng = np.random.default_rng(seed)
    cont = rng.standard_normal((n, 2)) @ np.array([[1.0, 0.6], [0.0, 0.8]])
    three = np.eye(3)[rng.integers(0, 3, n)]
    five = np.eye(5)[rng.choice(5, n, p=[0.4, 0.3, 0.15, 0.1, 0.05])]
    return np.hstack([cont, three, five]) / np.r_[1.0, 1.0, [np.sqrt(2.0)] * 8]


# --- density attack: KDE on one-hot columns --------------------------------------------------


def test_kde_matches_scipy_on_the_non_degenerate_subspace() -> None:
    x = _mixed_rows(1500, 0)
    rng = np.random.default_rng(1)
    queries = np.r_[_mixed_rows(300, 2), x[:100]]
    queries[:50, :2] += rng.normal(0, 3, (50, 2))  # far queries: large whitened norms
    mean = x.mean(0)
    lam, vec = np.linalg.eigh(np.cov(x, rowvar=False))
    basis = vec[:, lam > 1e-9 * lam.max()]  # two one-hot row sums are constant: 10 -> 8 dims
    assert basis.shape == (10, 8)
    expect = gaussian_kde(((x - mean) @ basis).T).logpdf(((queries - mean) @ basis).T)
    for kde in (GaussianKDE().fit(x), GaussianKDE(basis=principal_basis(x)).fit(x)):
        got = kde.log_density(queries)
        np.testing.assert_allclose(got, expect, rtol=0, atol=1e-4)


def test_kde_keeps_a_fixed_subspace_when_a_level_is_missing() -> None:
    x = _mixed_rows(2000, 3)
    basis = principal_basis(x)
    part = x[x[:, 6] == 0]  # rows without the first level of the 5-level block
    kde = GaussianKDE(basis=basis).fit(part)
    assert kde.dim_ == basis.shape[1] == 8
    with_level = x[x[:, 6] > 0][:20]
    # the density of the fitted rows' own level mix stays finite and far above the absent level
    assert np.isfinite(kde.log_density(part[:20])).all()
    assert kde.log_density(with_level).max() < kde.log_density(part[:20]).min() - 100


# --- density attack in the audit, categorical table ------------------------------------------


class _Identity:
    def to_latent(self, X: np.ndarray) -> np.ndarray:
        return X

    def from_latent(self, Z: np.ndarray) -> np.ndarray:
        return Z


def _categorical_table(n: int, seed: int) -> pd.DataFrame:
    """Four continuous columns, a binary and categoricals of 3 and 5 levels."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, 4))
    frame = pd.DataFrame({f"lab{i}": np.round(50 + 10 * z[:, i], 2) for i in range(4)})
    frame["sex"] = rng.choice(["F", "M"], n)
    frame["stage"] = rng.choice(["I", "II", "III"], n, p=[0.5, 0.3, 0.2])
    frame["site"] = rng.choice(list("abcde"), n, p=[0.4, 0.3, 0.15, 0.1, 0.05])
    return frame


def test_density_attack_auc_rises_with_w_on_categorical_columns() -> None:
    df = _categorical_table(1200, 4)
    enc = TableEncoder(infer_schema(df)).fit(df)
    assert [c.spec.kind for c in enc.columns_][4:] == ["binary", "categorical", "categorical"]
    X_model = enc.transform(df, np.random.default_rng(5))  # z-scored: identity map ~ a flow
    X_dist = enc.distance_space(df)
    assert X_dist.shape[1] == 13  # one-hot blocks of 3 and 5 levels

    def to_dist(rows: np.ndarray) -> np.ndarray:
        return enc.distance_space(enc.inverse_transform(rows).frame)

    res = run_audit(
        X_model,
        X_dist,
        lambda rows: _Identity(),
        to_dist=to_dist,
        config=AuditConfig(grid=(0.0, 0.999), repeats=3, refine=False),
        rng=np.random.default_rng(6),
    )
    low, high = res.curve
    assert abs(low.density_auc - 0.5) < 0.05  # w = 0: no leak
    assert high.density_auc > 0.6 and high.auc > 0.9  # near-copies: both attacks see them


# --- exact neighbours -------------------------------------------------------------------------


@pytest.mark.parametrize("d", [30, 50])
def test_brute_force_is_exact_with_ties_and_duplicates(d: int) -> None:
    rng = np.random.default_rng(d)
    ref = rng.integers(-2, 3, (2000, d)).astype(float)  # integer grid: many exact ties
    q = np.r_[rng.integers(-2, 3, (700, d)).astype(float), ref[:50], ref[50:60] + 1e-7]
    tree = cKDTree(ref).query(q)[0]
    got = nearest_distances(q, ref, method="brute")
    np.testing.assert_allclose(got, tree, rtol=0, atol=1e-12)
    assert (got[700:750] == 0.0).all()


# --- ranks (eq. 26) and closer probability (eq. 22), hand-computed ----------------------------

# Real A(0,0) B(1,0) C(0,1) D(2,0) E(5,5); own synthetic rows and eq. 26 by hand:
#   A~(-1,0): own 1; B, C at exactly 1 (ties, not closer), D 2          -> r = 0
#   B~(3,0):  own 2; A 1, C 1.41, D 1 closer                            -> r = 3
#   C~(0,3):  own 2; A 1, B 1.41 closer; D 2.24                         -> r = 2
#   D~(2,2):  own 2; B 1 closer; A at exactly 2 (tie)                   -> r = 1
#   E~(5,5):  own 0; nobody closer                                      -> r = 0
GRID_REAL = np.array([[0, 0], [1, 0], [0, 1], [2, 0], [5, 5]], dtype=float)
GRID_SYNTH = np.array([[-1, 0], [3, 0], [0, 3], [2, 2], [5, 5]], dtype=float)
GRID_RANKS = [0, 3, 2, 1, 0]


@pytest.mark.parametrize("pad", [0, 14])  # d = 2 (k-d tree path) and d = 16 (brute path)
def test_ranks_with_exact_ties_on_an_integer_grid(pad: int) -> None:
    real = np.hstack([GRID_REAL, np.zeros((5, pad))])
    synth = np.hstack([GRID_SYNTH, np.zeros((5, pad))])
    own = np.sqrt(((real - synth) ** 2).sum(1))
    assert own.tolist() == [1.0, 2.0, 2.0, 2.0, 0.0]
    assert record_ranks(real, own).tolist() == GRID_RANKS
    assert count_closer(real, real[:4], own[:4]).tolist() == [1, 4, 3, 2]  # self included
    m = release_metrics(real, synth, rng=np.random.default_rng(0))
    assert m.closer_probability == pytest.approx(6 / 20)  # sum r_i / (n (n - 1)), not / n^2
    assert m.median_rank == 1.0


def test_closer_probability_of_three_rows_by_hand() -> None:
    # real 0, 1, 3 on a line; own rows 2, 3, 3:
    #   row 0: own 2, row 1 at 1 closer, row 2 at 3                          -> r = 1
    #   row 1: own 2, row 0 at 1 closer, row 2 at exactly 2 (tie)            -> r = 1
    #   row 2: own 0                                                         -> r = 0
    real = np.array([[0.0], [1.0], [3.0]])
    synth = np.array([[2.0], [3.0], [3.0]])
    m = release_metrics(real, synth, rng=np.random.default_rng(0))
    assert m.closer_probability == pytest.approx(2 / 6)  # n (n - 1) = 6 ordered pairs
    assert m.median_rank == 1.0
