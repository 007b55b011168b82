"""Tests of the hand-written MAF (engine/flows/select.py, engine/flows/maf.py)."""

from __future__ import annotations

import time

import numpy as np
import pytest
import torch

from engine.errors import Cancelled, InputError
from engine.flows.maf import MAF
from engine.flows.select import FlowConfig, TrainedFlow, select_flow, train_flow
from engine.progress import CancelToken

torch.set_num_threads(1)


def _skewed_table(n: int, seed: int = 0) -> np.ndarray:
    """d = 6: correlated Gaussian core, a log-normal, a bounded (logistic), a squared, a
    dequantized binary and a time-like column, then z-scored (as the encoder would)."""
    rng = np.random.default_rng(seed)
    d = 6
    C = 0.5 * np.ones((d, d)) + 0.5 * np.eye(d)
    G = rng.multivariate_normal(np.zeros(d), C, size=n)
    X = np.column_stack(
        [
            G[:, 0],
            np.exp(0.7 * G[:, 1]),
            1.0 / (1.0 + np.exp(-2.0 * G[:, 2])),
            0.4 * G[:, 3] ** 2 + G[:, 3],
            (G[:, 4] > 0.5) + rng.uniform(size=n),
            np.log1p(np.exp(G[:, 5] + 0.5 * G[:, 0])),
        ]
    )
    return (X - X.mean(0)) / X.std(0)


def _cs_gaussian(n: int, d: int, rho: float, seed: int) -> np.ndarray:
    C = rho * np.ones((d, d)) + (1 - rho) * np.eye(d)
    return np.random.default_rng(seed).multivariate_normal(np.zeros(d), C, size=n)


def _tiny(layers: int = 1, batch_norm: bool = False, d: int = 4, scale: float = 0.5) -> MAF:
    torch.manual_seed(3)
    m = MAF(d, flows=3, hidden=12, layers=layers, batch_norm=batch_norm)
    with torch.no_grad():  # a non-trivial map: larger output weights and biases
        m.W2.normal_(0.0, scale)
        m.b2.normal_(0.0, scale)
        if batch_norm:
            m.bn_mean.normal_()
            m.bn_var.uniform_(0.5, 2.0)
            m.bn_log_gamma.normal_(0.0, 0.3)
    return m.double().eval()


@pytest.fixture(scope="module")
def skewed_flow() -> tuple[TrainedFlow, np.ndarray]:
    X = _skewed_table(3000)
    return train_flow(X, FlowConfig(max_epochs=60), device="cpu", seed=1), X


@pytest.fixture(scope="module")
def gaussian_flow() -> tuple[TrainedFlow, np.ndarray]:
    X = _cs_gaussian(2500, 5, 0.9, seed=7)
    return train_flow(X, FlowConfig(), device="cpu", seed=2), X


def test_round_trip_after_training(skewed_flow: tuple[TrainedFlow, np.ndarray]) -> None:
    flow, X = skewed_flow
    Z = flow.to_latent(X)
    assert Z.dtype == np.float64 and flow.last_nonfinite == 0
    assert np.abs(flow.from_latent(Z) - X).max() < 1e-4
    assert flow.last_nonfinite == 0
    assert np.isfinite(flow.val_nll) and flow.val_nll < 6 * 1.4189  # better than N(0, I)


@pytest.mark.parametrize("layers,batch_norm", [(1, False), (2, False), (1, True)])
def test_log_det_matches_autograd_jacobian(layers: int, batch_norm: bool) -> None:
    m = _tiny(layers, batch_norm)
    x = torch.randn(3, 4, dtype=torch.float64)
    _, log_det = m.to_latent(x)
    for r in range(3):
        J = torch.autograd.functional.jacobian(lambda t: m.to_latent(t[None])[0][0], x[r])
        assert abs(torch.linalg.slogdet(J)[1].item() - log_det[r].item()) < 1e-9


@pytest.mark.parametrize("layers", [1, 2])
def test_each_made_layer_is_autoregressive(layers: int) -> None:
    m = _tiny(layers)
    weights = m.normalized_weights()
    x = torch.randn(4, dtype=torch.float64)
    for k in range(m.flows):
        for part in (0, 1):  # mu and log-scale
            J = torch.autograd.functional.jacobian(
                lambda t, k=k, part=part: m._made(t[None], k, weights)[part][0], x
            )
            assert torch.all(torch.triu(J) == 0), "output i must not depend on inputs >= i"
            assert torch.any(torch.tril(J, -1) != 0)


def test_masked_spectral_norm_at_most_one(skewed_flow: tuple[TrainedFlow, np.ndarray]) -> None:
    flow, _ = skewed_flow
    with torch.no_grad():
        for W in flow.model.normalized_weights():
            if W.numel():
                assert torch.linalg.matrix_norm(W.double(), ord=2).max().item() <= 1 + 1e-3
    masked = flow.model.W1 * flow.model.mask1  # the raw masked weights were larger than 1
    assert torch.linalg.matrix_norm(masked.detach(), ord=2).max().item() > 1.0


def test_spectral_norm_of_fresh_model_after_power_iterations() -> None:
    m = MAF(7, flows=4, hidden=32, layers=2)
    m.power_iteration_(steps=200)
    with torch.no_grad():
        for W in m.normalized_weights():
            assert torch.linalg.matrix_norm(W, ord=2).max().item() <= 1 + 1e-3


@pytest.mark.parametrize("batch_norm", [False, True])
def test_incremental_inverse_equals_naive(batch_norm: bool) -> None:
    m = _tiny(1, batch_norm, d=7, scale=0.2).float()
    z = torch.randn(500, 7)
    with torch.no_grad():
        fast, slow = m.from_latent(z, method="incremental"), m.from_latent(z, method="naive")
        # float32: within 1e-5 absolute, relative for the few values beyond 1 in size
        assert ((fast - slow).abs() / slow.abs().clamp(min=1.0)).max().item() < 1e-5
        assert (m.to_latent(fast)[0] - z).abs().max().item() < 1e-4


def test_eval_cache_invalidated_by_optimizer_step() -> None:
    m = _tiny().float()
    with torch.no_grad():
        first = m.normalized_weights()
        assert m.normalized_weights()[0] is first[0]  # cached
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    loss = -m.log_prob(torch.randn(8, 4)).mean()
    loss.backward()
    opt.step()
    with torch.no_grad():
        assert not torch.equal(m.normalized_weights()[0], first[0])


def test_per_sample_gradients_with_torch_func() -> None:
    from torch.func import functional_call, grad, vmap

    m = MAF(3, flows=2, hidden=8).train()
    params = {k: v.detach() for k, v in m.named_parameters()}
    buffers = dict(m.named_buffers())
    m.power_iteration_()

    def nll(p: dict, x: torch.Tensor) -> torch.Tensor:
        return -functional_call(m, (p, buffers), (x[None],)).sum()

    x = torch.randn(5, 3)
    per_sample = vmap(grad(nll), in_dims=(None, 0))(params, x)
    one = grad(nll)(params, x[2])
    assert torch.allclose(per_sample["W1"][2], one["W1"], atol=1e-6)


def test_same_seed_same_result() -> None:
    X = _skewed_table(600, seed=4)
    cfg = FlowConfig(flows=2, hidden=16, max_epochs=8)
    a, b = (train_flow(X, cfg, device="cpu", seed=11) for _ in range(2))
    assert a.val_nll == b.val_nll
    for (ka, va), (_, vb) in zip(
        a.model.state_dict().items(), b.model.state_dict().items(), strict=True
    ):
        assert torch.equal(va, vb), ka
    c = train_flow(X, cfg, device="cpu", seed=12)
    assert c.val_nll != a.val_nll


def test_cancel_is_felt_within_one_epoch() -> None:
    X = _skewed_table(2000, seed=5)
    token = CancelToken()
    seen: list[tuple[float, str]] = []

    def progress(fraction: float, text: str) -> None:
        seen.append((fraction, text))
        if len(seen) == 2:
            token.cancel()

    start = time.perf_counter()
    with pytest.raises(Cancelled):
        train_flow(
            X, FlowConfig(max_epochs=500), device="cpu", seed=0, progress=progress, cancel=token
        )
    assert len(seen) == 2 and time.perf_counter() - start < 10
    assert seen[0][1].startswith("training flow: epoch 1/500, ")
    assert "validation loss " in seen[0][1]
    # the fraction counts towards where early stopping ends (best epoch + patience 20), not
    # towards max_epochs (500, rarely reached): after epoch 1 it is 1/21, not 1/500
    assert seen[0][0] == pytest.approx(1 / 21)
    assert seen[0][0] < seen[1][0] <= 2 / 21


def test_gaussian_latents_and_samples(gaussian_flow: tuple[TrainedFlow, np.ndarray]) -> None:
    flow, X = gaussian_flow
    Z = flow.to_latent(X)
    assert np.abs(Z.mean(0)).max() < 0.1
    assert np.abs(np.cov(Z, rowvar=False) - np.eye(5)).max() < 0.15
    S = flow.from_latent(np.random.default_rng(3).standard_normal((20_000, 5)))
    R = np.corrcoef(S, rowvar=False)
    pooled = R[np.triu_indices(5, 1)].mean()
    assert abs(pooled - 0.9) < 0.02
    assert flow.to_dict().keys() == {
        "flows",
        "hidden",
        "layers",
        "val_nll",
        "device",
        "device_note",
        "train_seconds",
        "whitened",
        "epochs",
        "steps_per_epoch",
        "batch_size",
    }
    assert flow.to_dict()["whitened"] is True  # the default start (issue 13)
    assert flow.history[-1][0] == flow.epochs


def test_input_errors() -> None:
    X = np.zeros((50, 2))
    with pytest.raises(InputError, match="budget"):
        select_flow(X, budget="huge")
    with pytest.raises(InputError, match="missing or infinite"):
        train_flow(np.array([[np.nan, 1.0]] * 20))
    with pytest.raises(InputError, match="at least 10 rows"):
        train_flow(np.zeros((3, 2)))
    if not torch.cuda.is_available():
        with pytest.raises(InputError, match="no CUDA support|no NVIDIA GPU found"):
            train_flow(np.random.default_rng(0).normal(size=(50, 2)), device="cuda")


def test_select_flow_default_budget_picks_from_candidates() -> None:
    X = _skewed_table(400, seed=9)
    texts: list[str] = []
    flow = select_flow(
        X, budget="default", device="cpu", seed=0, progress=lambda f, t: texts.append(t)
    )
    assert (flow.config.flows, flow.config.hidden, flow.config.layers) in {
        (3, 32, 1),
        (5, 64, 1),
        (5, 128, 2),
    }
    assert any("candidate 3/3" in t for t in texts)


def test_nonfinite_rows_are_counted() -> None:
    m = _tiny().float()
    flow = TrainedFlow(
        model=m, config=FlowConfig(), val_nll=0.0, train_seconds=0.0, epochs=0, device="cpu"
    )
    Z = np.zeros((4, 4))
    Z[1, 0] = np.inf
    out = flow.from_latent(Z)
    assert flow.last_nonfinite == 1 and np.isfinite(out[[0, 2, 3]]).all()


# ------------------------------------------------------------------ whitened start (issue 13)
def test_whitened_identity_flow_is_the_fitted_gaussian() -> None:
    """With every MADE output at zero the flow is exactly its whitening step: its log-density
    must be scipy's multivariate normal with the training rows' mean and (ridged) covariance,
    and the generating pass must invert the density pass."""
    from scipy.stats import multivariate_normal

    from engine.flows.whiten import WHITEN_RIDGE, whitening

    rng = np.random.default_rng(3)
    X = rng.multivariate_normal(
        [1.0, -2.0, 0.5], [[2, 1.2, 0.3], [1.2, 1.5, -0.4], [0.3, -0.4, 1]], 400
    )
    m = MAF(3, flows=2, hidden=8).double()
    with torch.no_grad():
        m.W2.zero_()
        m.b2.zero_()
    mean, L = whitening(X)
    m.set_whitening(mean.double(), L.double())
    C = np.cov(X, rowvar=False)
    C = C + np.diag(np.diag(C)) * WHITEN_RIDGE
    x = torch.as_tensor(X[:20])
    expected = multivariate_normal(X.mean(0), C).logpdf(X[:20])
    assert np.allclose(m.log_prob(x).detach().numpy(), expected, atol=1e-4)
    z, log_det = m.to_latent(x)
    assert torch.allclose(m.from_latent(z), x, atol=1e-8)
    J = torch.autograd.functional.jacobian(lambda t: m.to_latent(t[None])[0][0], x[0])
    assert abs(torch.linalg.slogdet(J)[1].item() - log_det[0].item()) < 1e-9


@pytest.mark.parametrize("whiten,low,high", [(True, 0.7, 0.9), (False, -0.1, 0.45)])
def test_an_early_stopped_flow_keeps_the_correlation_only_when_whitened(
    whiten: bool, low: float, high: float
) -> None:
    """A flow stopped after 2 epochs (as early stopping does on a 100-row table) samples
    columns with the data's correlation of 0.8 from a whitened start; from the plain start
    (close to the identity map) it samples nearly independent columns: every association
    in the synthetic table would be shrunk towards zero."""
    X = _cs_gaussian(100, 3, 0.8, seed=5)
    cfg = FlowConfig(flows=2, hidden=16, max_epochs=2, whiten=whiten)
    flow = train_flow(X, cfg, seed=0)
    S = flow.from_latent(np.random.default_rng(1).normal(size=(20_000, 3)))
    r = np.corrcoef(S, rowvar=False)[np.triu_indices(3, 1)]
    assert low < r.mean() < high, r
