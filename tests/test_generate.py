"""Latent Noise Injection keeps the correlation structure for every w (the paper's section
3.1.1 simulation at reduced size); Direct Noise Injection shows its known -(1-w)rho bias."""

from __future__ import annotations

import math

import numpy as np
import pytest

import engine.flows.generate as generate
import engine.privacy.audit as audit
import engine.privacy.release as audit_release
from engine.errors import InputError
from engine.flows.generate import (
    direct_noise_injection,
    flow_sampling,
    inject_latent_noise,
    latent_noise_injection,
    perturb_latent,
)

RHO, D, N = 0.9, 5, 2500


def pooled_correlation(X: np.ndarray) -> float:
    """Mean of the off-diagonal correlations (the paper's pooled correlation)."""
    c = np.corrcoef(X, rowvar=False)
    return float(c[np.triu_indices_from(c, k=1)].mean())


@pytest.fixture(scope="module")
def data() -> np.ndarray:
    cov = np.full((D, D), RHO) + (1 - RHO) * np.eye(D)
    return np.random.default_rng(11).multivariate_normal(np.zeros(D), cov, size=N)


@pytest.fixture(scope="module")
def flow(data: np.ndarray):
    from engine.flows.select import FlowConfig, train_flow

    return train_flow(data, FlowConfig(flows=5, hidden=64), device="cpu", seed=3)


@pytest.mark.parametrize("w", [0.0, 0.5, 0.8])
def test_lni_keeps_pooled_correlation(flow, data: np.ndarray, w: float) -> None:
    rng = np.random.default_rng(100 + int(w * 10))
    # average over a few noise draws so the test measures bias, not one draw's noise
    estimates = [pooled_correlation(latent_noise_injection(flow, data, w, rng)) for _ in range(4)]
    assert abs(np.mean(estimates) - RHO) < 0.01, estimates


@pytest.mark.parametrize("w", [0.25, 0.5, 0.75])
def test_dni_is_biased_by_one_minus_w(data: np.ndarray, w: float) -> None:
    got = pooled_correlation(direct_noise_injection(data, w, np.random.default_rng(5)))
    expected_bias = -(1 - w) * RHO
    assert abs((got - pooled_correlation(data)) - expected_bias) < 0.02


def test_w1_returns_input_and_w0_is_far_from_every_real_row(flow, data: np.ndarray) -> None:
    from scipy.spatial import cKDTree

    same = latent_noise_injection(flow, data, 1.0, np.random.default_rng(0))
    assert np.array_equal(same, data)
    synth = latent_noise_injection(flow, data, 0.0, np.random.default_rng(0))
    nearest, _ = cKDTree(data).query(synth)
    assert nearest.min() > 1e-6


def test_flow_sampling_matches_correlation(flow) -> None:
    sample = flow_sampling(flow, 5000, D, np.random.default_rng(9))
    assert sample.shape == (5000, D)
    assert abs(pooled_correlation(sample) - RHO) < 0.02


# --- one noise injection, by hand (docs/mutation.md) ----------------------------------------------


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


@pytest.mark.parametrize("w", [None, float("nan"), -0.5, 1.5])
def test_a_missing_or_impossible_weight_gets_the_one_line_input_error(w: object) -> None:
    from engine.errors import InputError
    from engine.flows.generate import inject_latent_noise

    with pytest.raises(InputError, match=rf"^perturbation weight w={w} is outside 0\.\.1; choose"):
        inject_latent_noise(np.zeros((2, 1)), w, np.zeros((2, 1)))  # type: ignore[arg-type]


# --- latent noise injection in row blocks (hand-computed; docs/mutation.md) --------------------
# ``latent_noise_injection`` works in blocks of ``GENERATE_CHUNK_ROWS`` rows. The map below is
# affine (``to_latent: x -> x - 1``, ``from_latent: z -> z + 1``) and records the size of every
# block it decodes; the noise source hands out 0, 1, 2, ... in order, so with w = 0.36 (sqrt 0.6,
# sqrt(1 - w) 0.8) every released value is ``0.6 (x - 1) + 0.8 noise + 1``, checked by eye:
#
#     X (5 x 2)  = 0 1 / 2 3 / 4 5 / 6 7 / 8 9      noise = the same numbers, in the same order
#     released   = 0.6 (x - 1) + 0.8 x + 1 = 1.4 x + 0.4
#                = 0.4 1.8 / 3.2 4.6 / 6.0 7.4 / 8.8 10.2 / 11.6 13.0
#
# The block size is lowered to 2 (blocks of 2, 2 and 1 rows) with ``monkeypatch``; one test keeps
# the real 65,536.

X5 = np.arange(10).reshape(5, 2)  # integers on purpose: the result must still be float
RELEASED_036 = np.array([[0.4, 1.8], [3.2, 4.6], [6.0, 7.4], [8.8, 10.2], [11.6, 13.0]])


class _Recorder:
    """An affine latent map that records the rows of every block it decodes and, like a
    ``TrainedFlow``, keeps a ``last_nonfinite`` count (here a sentinel -1 per call)."""

    def __init__(self) -> None:
        self.blocks: list[int] = []
        self.last_nonfinite = -5

    def to_latent(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(X, dtype=float) - 1.0

    def from_latent(self, Z: np.ndarray) -> np.ndarray:
        self.blocks.append(len(Z))
        self.last_nonfinite = -1
        return np.asarray(Z, dtype=float) + 1.0


class _Plain:
    """The same map without a ``last_nonfinite`` attribute (the exact Gaussian map of tests)."""

    def to_latent(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(X, dtype=float) - 1.0

    def from_latent(self, Z: np.ndarray) -> np.ndarray:
        return np.asarray(Z, dtype=float) + 1.0


class _CountingNoise:
    """A noise source that hands out 0, 1, 2, ... in row order (one pass or in blocks alike)."""

    def __init__(self) -> None:
        self.next = 0

    def standard_normal(self, shape: tuple[int, ...]) -> np.ndarray:
        n = int(np.prod(shape))
        out = np.arange(self.next, self.next + n, dtype=float).reshape(shape)
        self.next += n
        return out


@pytest.fixture
def blocks_of_two(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(generate, "GENERATE_CHUNK_ROWS", 2)


def test_five_integer_rows_in_blocks_of_two_by_hand(blocks_of_two: None) -> None:
    flow, noise = _Recorder(), _CountingNoise()
    out = latent_noise_injection(flow, X5, 0.36, noise)  # type: ignore[arg-type]
    assert flow.blocks == [2, 2, 1]
    assert noise.next == 10  # every noise number drawn once, none twice
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, RELEASED_036, rtol=0, atol=1e-12)
    assert flow.last_nonfinite == 0  # counted over the whole output, not the flow's -1


def test_a_plain_list_of_rows_is_released_in_blocks_too(blocks_of_two: None) -> None:
    rows, noise = X5.tolist(), _CountingNoise()
    out = latent_noise_injection(_Recorder(), rows, 0.36, noise)  # type: ignore[arg-type]
    np.testing.assert_allclose(out, RELEASED_036, rtol=0, atol=1e-12)


def test_one_w_per_row_is_cut_into_the_same_blocks(blocks_of_two: None) -> None:
    """w = 1, 0, 0.36, 1, 0: rows at w = 1 come back exactly, rows at w = 0 are pure noise
    (noise + 1), row 2 is 1.4 x + 0.4 = 6.0, 7.4."""
    w = np.array([1.0, 0.0, 0.36, 1.0, 0.0])
    flow = _Recorder()
    out = latent_noise_injection(flow, X5, w, _CountingNoise())  # type: ignore[arg-type]
    expected = [[0.0, 1.0], [3.0, 4.0], [6.0, 7.4], [6.0, 7.0], [9.0, 10.0]]
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-12)
    assert flow.blocks == [2, 2, 1]


def test_exactly_one_block_of_rows_is_decoded_in_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """4 rows with blocks of 4: one pass, and the flow's own count is left alone; 5 rows: two
    blocks (4 + 1) and the count is taken over the whole output."""
    monkeypatch.setattr(generate, "GENERATE_CHUNK_ROWS", 4)
    flow = _Recorder()
    out = latent_noise_injection(flow, X5[:4], 0.36, _CountingNoise())  # type: ignore[arg-type]
    np.testing.assert_allclose(out, RELEASED_036[:4], rtol=0, atol=1e-12)
    assert flow.blocks == [4]
    assert flow.last_nonfinite == -1
    flow = _Recorder()
    out = latent_noise_injection(flow, X5, 0.36, _CountingNoise())  # type: ignore[arg-type]
    np.testing.assert_allclose(out, RELEASED_036, rtol=0, atol=1e-12)
    assert flow.blocks == [4, 1]
    assert flow.last_nonfinite == 0


def test_rows_that_decode_to_inf_or_nan_are_counted_across_blocks(blocks_of_two: None) -> None:
    """Row 0 (inf in one column, block 1), row 3 (inf in both, block 2) and row 4 (nan, block
    3) are not finite: 3 rows, not 4 cells, not 1 block's count."""
    X = X5.astype(float)
    X[0, 1] = np.inf
    X[3, :] = np.inf
    X[4, 0] = np.nan
    flow = _Recorder()
    out = latent_noise_injection(flow, X, 0.36, _CountingNoise())  # type: ignore[arg-type]
    assert flow.last_nonfinite == 3
    np.testing.assert_allclose(out[1:3], RELEASED_036[1:3], rtol=0, atol=1e-12)
    assert out[4, 1] == pytest.approx(13.0)


def test_a_map_without_a_nonfinite_count_is_not_given_one(blocks_of_two: None) -> None:
    flow = _Plain()
    out = latent_noise_injection(flow, X5, 0.36, _CountingNoise())  # type: ignore[arg-type]
    np.testing.assert_allclose(out, RELEASED_036, rtol=0, atol=1e-12)
    assert not hasattr(flow, "last_nonfinite")


def test_blocks_give_the_bits_of_one_pass_with_a_real_generator(blocks_of_two: None) -> None:
    X = np.random.default_rng(1).normal(size=(7, 3))
    w = np.linspace(0.0, 1.0, 7)
    blocked = latent_noise_injection(_Plain(), X, w, np.random.default_rng(9))
    noise = np.random.default_rng(9).standard_normal((7, 3))
    one_pass = np.sqrt(w)[:, None] * (X - 1.0) + np.sqrt(1.0 - w)[:, None] * noise + 1.0
    np.testing.assert_array_equal(blocked, one_pass)


def test_the_real_block_is_65536_rows() -> None:
    """65,536 rows go in one pass; 65,537 in a block of 65,536 and one of 1 row."""
    assert generate.GENERATE_CHUNK_ROWS == 65_536
    flow = _Recorder()
    X = np.zeros((65_537, 1))
    out = latent_noise_injection(flow, X[:65_536], 0.36, np.random.default_rng(0))
    assert flow.blocks == [65_536] and out.shape == (65_536, 1)
    flow = _Recorder()
    out = latent_noise_injection(flow, X, 0.36, np.random.default_rng(0))
    assert flow.blocks == [65_536, 1] and out.shape == (65_537, 1)
    expected = 0.6 * -1.0 + 0.8 * np.random.default_rng(0).standard_normal((65_537, 1)) + 1.0
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
