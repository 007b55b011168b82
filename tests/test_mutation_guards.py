"""Guards for the privacy decision: small, hand-computed cases that kill one-line mutants of the
core (issue 18). Each test names the mutant it kills; ``docs/mutation.md`` lists the rest."""

from __future__ import annotations

import math

import numpy as np
import pytest

import engine.flows.generate as generate
import engine.privacy.audit as audit
import engine.privacy.release as audit_release
from engine.errors import InputError
from engine.flows.generate import inject_latent_noise, latent_noise_injection, perturb_latent


def _point(w: float, auc: float, se: float, dens: float = 0.5, dens_se: float = 0.0):
    """A curve point whose stored upper bounds are the fitted AUC + SE (z = 1 for numbers by
    hand), for the distance and the density attack; other fields neutral."""
    return audit.CurvePoint(
        w=w, auc=auc, auc_sd=se, auc_se=se, tpr_at_1pct_fpr=0.01, tpr_at_01pct_fpr=0.001,
        density_auc=dens, density_auc_sd=dens_se, density_auc_se=dens_se, repeats=4,
        refined=False, roc_fpr=(0.0, 1.0), roc_tpr=(0.0, 1.0), auc_fit=auc, auc_fit_se=se,
        density_fit=dens, density_fit_se=dens_se, upper_distance=auc + se,
        upper_density=dens + dens_se,
    )  # fmt: skip


# --- the selection rule read off a finished curve ----------------------------------------------


def test_selection_stops_at_the_first_failing_w_even_if_a_larger_w_passes_again() -> None:
    """A curve with a dip: w = 0.3 fails, 0.5 passes again. Every smaller w must pass too, so
    the choice is 0.2, not 0.5 (kills ``break`` -> ``continue`` in select_w)."""
    curve = [_point(0.0, 0.50, 0.0), _point(0.2, 0.52, 0.0), _point(0.3, 0.60, 0.0)]
    curve += [_point(0.5, 0.51, 0.0), _point(0.7, 0.53, 0.0)]
    assert audit.select_w(curve, 0.55) == 0.2
    assert audit.select_w(list(reversed(curve)), 0.55) == 0.2  # order of the input is irrelevant


def test_selection_returns_none_when_the_smallest_w_fails() -> None:
    curve = [_point(0.0, 0.56, 0.0), _point(0.5, 0.50, 0.0)]
    assert audit.select_w(curve, 0.55) is None


def test_a_point_under_the_limit_on_the_mean_but_not_on_its_bound_fails() -> None:
    """AUC 0.545 with a bound 0.01 higher at a limit of 0.55: the bound 0.555 is over the limit
    (kills the rule on the fitted mean alone, for either attack)."""
    assert not _point(0.5, 0.545, 0.01).passes(0.55)
    assert not _point(0.5, 0.50, 0.0, dens=0.545, dens_se=0.01).passes(0.55)
    assert _point(0.5, 0.535, 0.01, dens=0.535, dens_se=0.01).passes(0.55)
    curve = [_point(0.0, 0.50, 0.005), _point(0.4, 0.545, 0.01), _point(0.6, 0.51, 0.0)]
    assert audit.select_w(curve, 0.55) == 0.0


def test_the_limit_itself_does_not_pass() -> None:
    """A bound exactly at the limit fails (binary-exact numbers: 0.5 + 0.125 = 0.625)."""
    assert not _point(0.5, 0.5, 0.125).passes(0.625)
    assert not _point(0.5, 0.5, 0.0, dens=0.5, dens_se=0.125).passes(0.625)


def test_only_the_named_attacks_decide() -> None:
    leaky_density = _point(0.5, 0.50, 0.0, dens=0.70, dens_se=0.0)
    assert leaky_density.passes(0.55, ("distance",))
    assert not leaky_density.passes(0.55, ("density",))
    assert not leaky_density.passes(0.55)
    assert audit.select_w([_point(0.0, 0.5, 0.0), leaky_density], 0.55, ("distance",)) == 0.5


# --- one noise injection ----------------------------------------------------------------------


def test_inject_latent_noise_by_hand() -> None:
    """sqrt(0.25) * 2 + sqrt(0.75) * 4 and a per-row w."""
    got = inject_latent_noise(np.array([[2.0]]), 0.25, np.array([[4.0]]))
    assert got[0, 0] == pytest.approx(0.5 * 2.0 + math.sqrt(0.75) * 4.0, abs=1e-12)
    per_row = inject_latent_noise(np.full((2, 2), 3.0), np.array([0.64, 0.36]), np.ones((2, 2)))
    np.testing.assert_allclose(per_row, [[3.0, 3.0], [2.6, 2.6]], rtol=0, atol=1e-12)


@pytest.mark.parametrize("w", [-0.01, 1.01, float("nan")])
def test_inject_latent_noise_refuses_w_outside_0_1(w: float) -> None:
    with pytest.raises(InputError, match="outside 0..1"):
        inject_latent_noise(np.zeros((2, 1)), w, np.zeros((2, 1)))
    with pytest.raises(InputError, match="outside 0..1"):
        inject_latent_noise(np.zeros((2, 1)), np.array([0.5, w]), np.zeros((2, 1)))


def test_inject_latent_noise_refuses_noise_of_another_shape() -> None:
    with pytest.raises(ValueError, match="shape"):
        inject_latent_noise(np.zeros((3, 2)), 0.5, np.zeros((3, 1)))


def test_the_audit_the_release_and_outlier_protection_share_one_injection() -> None:
    """Identity: every caller binds the same function object."""
    assert audit.inject_latent_noise is generate.inject_latent_noise
    assert audit_release.perturb_latent is generate.perturb_latent
    assert not hasattr(audit_release, "_inject")


class _Identity:
    def to_latent(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(X, dtype=float)

    def from_latent(self, Z: np.ndarray) -> np.ndarray:
        return np.asarray(Z, dtype=float)


def test_audited_map_equals_released_map_under_one_seed() -> None:
    """Same rows, same w, same seed: the audit's perturbed rows, the release's and outlier
    protection's first draw are equal to the last bit."""
    X = np.random.default_rng(0).standard_normal((80, 3))
    w = 0.36
    config = audit.AuditConfig(grid=(w,), repeats=1, refine=False)
    split = audit.make_split(X, X, lambda rows: _Identity(), config, np.random.default_rng(1))
    seen: list[np.ndarray] = []

    def record(rows: np.ndarray) -> np.ndarray:
        seen.append(np.array(rows))
        return rows

    from engine.privacy.attacks import draw_common

    draw_common(split, [(w, 0)], record, config)  # repeat 0: default_rng((split seed, 0))
    seed = (split.seed, 0)
    released = latent_noise_injection(_Identity(), X[split.train], w, np.random.default_rng(seed))
    np.testing.assert_array_equal(seen[0], released)

    seen.clear()
    train = X[split.train]
    audit_release.protect_outliers(
        _Identity(), train, train, w, to_dist=record, rng=np.random.default_rng(seed), max_rounds=1
    )
    np.testing.assert_array_equal(seen[0], released)
    expected = 0.6 * train + 0.8 * np.random.default_rng(seed).standard_normal(train.shape)
    np.testing.assert_allclose(released, expected, rtol=0, atol=1e-12)


class _GaussianMap:
    """The exact flow of N(mu, S): X = mu + L Z with L the Cholesky factor of S."""

    def __init__(self, mu: np.ndarray, cov: np.ndarray) -> None:
        self.mu, self.L = mu, np.linalg.cholesky(cov)

    def to_latent(self, X: np.ndarray) -> np.ndarray:
        return np.linalg.solve(self.L, (X - self.mu).T).T

    def from_latent(self, Z: np.ndarray) -> np.ndarray:
        return self.mu + Z @ self.L.T


@pytest.mark.parametrize("w", [0.2, 0.5, 0.8])
def test_lni_keeps_unit_latent_variance_and_the_marginal_sds(w: float) -> None:
    """Under an exact Gaussian map the released latent codes have variance 1 for 0 < w < 1 and
    the released columns keep their SDs (2, 5, 0.5). With w in place of sqrt(w) the latent
    variance would be w^2 + 1 - w (0.84 at w = 0.2, 0.75 at 0.5, 0.84 at 0.8)."""
    sds = np.array([2.0, 5.0, 0.5])
    corr = np.array([[1.0, 0.6, 0.3], [0.6, 1.0, 0.2], [0.3, 0.2, 1.0]])
    gmap = _GaussianMap(np.array([1.0, -3.0, 10.0]), corr * np.outer(sds, sds))
    X = gmap.from_latent(np.random.default_rng(3).standard_normal((20000, 3)))
    synth = latent_noise_injection(gmap, X, w, np.random.default_rng(4))
    latent_var = gmap.to_latent(synth).var(axis=0, ddof=1)
    assert latent_var == pytest.approx(np.ones(3), abs=0.04)
    assert synth.std(axis=0, ddof=1) / X.std(axis=0, ddof=1) == pytest.approx(np.ones(3), abs=0.02)
    # the one-to-one link: correlation of a latent code with its own perturbed code is sqrt(w)
    own = np.corrcoef(gmap.to_latent(X)[:, 0], gmap.to_latent(synth)[:, 0])[0, 1]
    assert own == pytest.approx(math.sqrt(w), abs=0.02)


def test_perturb_latent_draws_noise_from_the_given_generator() -> None:
    Z = np.zeros((4, 2))
    a = perturb_latent(Z, 0.0, np.random.default_rng(5))
    np.testing.assert_array_equal(a, np.random.default_rng(5).standard_normal((4, 2)))


class _Shifted(_Identity):
    """A map that is not exactly invertible (decoding adds 0.25), to see whether it is called."""

    def from_latent(self, Z: np.ndarray) -> np.ndarray:
        return np.asarray(Z, dtype=float) + 0.25


def test_w1_returns_a_fresh_copy_of_the_real_rows_without_decoding() -> None:
    """At w = 1 the release is the data itself: no decoding error, and a copy, so that a later
    edit of the released array cannot change the real rows (kills the w == 1 shortcut mutants)."""
    X = np.arange(6.0).reshape(3, 2)
    same = latent_noise_injection(_Shifted(), X, 1.0, np.random.default_rng(0))
    np.testing.assert_array_equal(same, X)
    assert not np.shares_memory(same, X)
    ints = latent_noise_injection(
        _Shifted(), np.arange(4).reshape(2, 2), 1, np.random.default_rng(0)
    )
    np.testing.assert_array_equal(ints, [[0.0, 1.0], [2.0, 3.0]])
    assert ints.dtype == np.float64
    # a per-row w of all ones is injected, not short-cut: it goes through the map
    rows = latent_noise_injection(_Shifted(), X, np.ones(3), np.random.default_rng(0))
    np.testing.assert_allclose(rows, X + 0.25)
    assert latent_noise_injection(_Shifted(), X, 0.5, np.random.default_rng(0)).shape == (3, 2)


def test_w_at_the_ends_of_0_1_is_accepted() -> None:
    Z, noise = np.array([[2.0, -1.0]]), np.array([[0.5, 0.5]])
    np.testing.assert_array_equal(inject_latent_noise(Z, 1.0, noise), Z)
    np.testing.assert_array_equal(inject_latent_noise(Z, 0.0, noise), noise)
    np.testing.assert_array_equal(inject_latent_noise(Z, np.array([1.0]), noise), Z)


def test_direct_noise_injection_by_hand() -> None:
    """sqrt(w) X + sqrt(1 - w) * column SD * Z, with column SDs 1 and 10."""
    X = np.array([[0.0, 0.0], [1.0, 10.0], [2.0, 20.0]])
    got = generate.direct_noise_injection(X, 0.25, np.random.default_rng(3))
    z = np.random.default_rng(3).standard_normal(X.shape)
    np.testing.assert_allclose(got, 0.5 * X + math.sqrt(0.75) * z * [1.0, 10.0], atol=1e-12)
    with pytest.raises(InputError):
        generate.direct_noise_injection(X, 1.5, np.random.default_rng(3))


def test_shuffled_is_a_permutation_of_all_rows() -> None:
    order = generate.shuffled(50, np.random.default_rng(0))
    assert sorted(order.tolist()) == list(range(50))
    assert (order != np.arange(50)).sum() > 40
