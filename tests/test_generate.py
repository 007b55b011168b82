"""Latent Noise Injection keeps the correlation structure for every w (the paper's section
3.1.1 simulation at reduced size); Direct Noise Injection shows its known -(1-w)rho bias."""

from __future__ import annotations

import numpy as np
import pytest

from engine.flows.generate import direct_noise_injection, flow_sampling, latent_noise_injection

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
