"""The density attack's leave-one-out references computed all at once
(engine.search.density.leave_one_out_refits) against a KDE refitted without each row in turn,
and against scipy's gaussian_kde (an independent implementation)."""

from __future__ import annotations

import numpy as np
from scipy.stats import gaussian_kde

from engine.search.density import GaussianKDE, leave_one_out_refits, principal_basis


def _one_by_one(x: np.ndarray, basis: np.ndarray) -> np.ndarray:
    return np.array(
        [
            GaussianKDE(basis=basis).fit(np.delete(x, i, 0)).log_density(x[i : i + 1])[0]
            for i in range(len(x))
        ]
    )


def test_refits_at_once_equal_the_refits_one_by_one_on_a_distance_space() -> None:
    """A distance space like the audit's: two measurements, a 0/1 column and a one-hot block
    of three levels (a singular direction), 60 holdout rows, far from the origin (the sums
    are centred first): every row's reference within 1e-4 nats of its own refit."""
    rng = np.random.default_rng(4)
    n = 60
    num = rng.multivariate_normal([50.0, 120.0], [[4.0, 1.0], [1.0, 9.0]], n)
    flag = rng.integers(0, 2, n)[:, None].astype(float)
    onehot = np.eye(3)[rng.integers(0, 3, n)] / np.sqrt(2.0)
    x = np.hstack([num, flag, onehot])
    basis = principal_basis(x)
    assert basis.shape[1] == 5  # the one-hot block's constant sum left out
    got = leave_one_out_refits(x, basis)
    want = _one_by_one(x, basis)
    assert np.abs(got - want).max() < 1e-4


def test_a_direction_one_row_alone_spans_is_floored_as_in_a_refit() -> None:
    """A level held by one holdout row: without that row its direction has no variance and
    is floored at rtol times the largest, in both computations alike."""
    rng = np.random.default_rng(2)
    x = np.c_[rng.standard_normal((30, 2)), np.zeros(30)]
    x[7, 2] = 1.0
    basis = np.eye(3)
    got = leave_one_out_refits(x, basis)
    want = _one_by_one(x, basis)
    assert np.isfinite(got).all()
    assert np.allclose(got, want, rtol=1e-6, atol=1e-3)


def test_refits_match_scipy_gaussian_kde_without_each_row() -> None:
    """Full-rank rows: scipy's gaussian_kde (Scott's factor on n - 1 rows) gives the same
    log-density for each left-out row."""
    x = np.random.default_rng(0).multivariate_normal([0, 0, 0], np.eye(3) + 0.5, 50)
    got = leave_one_out_refits(x, np.eye(3))
    want = [gaussian_kde(np.delete(x, i, 0).T).logpdf(x[i])[0] for i in range(len(x))]
    assert np.allclose(got, want, atol=1e-8)
