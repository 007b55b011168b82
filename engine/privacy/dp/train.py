"""DP-SGD training of the MAF (DP-NF paper Algorithm 1; METHOD.md section 9).

Each step: Poisson-sample every row with probability ``r``; per-record gradients of the
negative log-likelihood, vectorised with ``torch.func`` (``functional_call`` + ``vmap(grad)``);
clip each to L2 norm ``C``; sum; add ``N(0, sigma^2 C^2 I)``; divide by the *expected* batch
size ``r n`` (the actual size is not used, so it leaks nothing); one Adam (or SGD) step on that
noisy mean, which is post-processing. ``T`` steps, no validation split, no early stopping and no
data-dependent learning-rate schedule (each would spend privacy that is not accounted for).

What changes against the ordinary flow (PITFALLS.md, "Flows and speed"):

* **Batch norm is off.** It normalizes each record by the batch's statistics, so one record
  moves every other record's gradient (no per-record sensitivity) and its running statistics
  are an unnoised release of the data's moments.
* **Spectral norm stays on, and is DP-safe.** ``MAF.power_iteration_()`` reads only the weights
  and the previous power-iteration vectors ``u, v``, never a record: it runs outside the
  per-record function, once per step, and is post-processing of the (already private) weights.
  Inside the per-record loss ``u, v`` are constants, so each record's gradient of
  ``W / max(u'Wv, 1)`` is an ordinary gradient and is clipped like any other. The final
  ``exact_spectral_()`` (an SVD of the weights) is post-processing too.
* No validation loss and no loss history are kept: they are functions of the real records.

Known limits, stated in the guarantee's notes: noise comes from torch's generator (not a
cryptographic one; Opacus' "secure mode" uses torchcsprng), in float32 (floating-point attacks
on the Gaussian mechanism are not addressed), and the number of rows ``n`` is treated as public.

References: Abadi et al. 2016 (DP-SGD); Doroshenko et al. 2022 (PLD accounting); DP-NF paper
(seeds/dp-normalizing-flows-paper.md) Algorithm 1 and section 3.2; Miyato et al. 2018.

Example:
    >>> import numpy as np
    >>> X = np.random.default_rng(0).uniform(-1, 1, size=(200, 2))
    >>> flow = train_dp_flow(X, epsilon=8.0, config=DPConfig(flows=1, hidden=8, steps=5), seed=0)
    >>> flow.guarantee.steps, bool(np.isfinite(flow.from_latent(np.zeros((3, 2)))).all())
    (5, True)
"""

from __future__ import annotations

import math
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch.func import functional_call, grad, vmap

from engine.device import seeded_determinism
from engine.errors import InputError
from engine.flows.maf import MAF
from engine.flows.select import FlowConfig, TrainedFlow, resolve_device
from engine.privacy.dp.accountant import DPGuarantee, default_delta, sigma_for_epsilon
from engine.progress import NEVER_CANCELLED, CancelToken, ProgressFn, no_progress

try:  # one intra-op thread for these small networks (engine/flows/select.py measured why)
    from engine.flows.select import cpu_threads
except ImportError:  # pragma: no cover - older flow module
    import contextlib

    def cpu_threads(device: str, n: int = 1) -> Any:
        return contextlib.nullcontext()


GRAD_CHUNK = 1024
_REPORT_EVERY = 25


@dataclass(frozen=True)
class DPConfig:
    """Architecture and DP-SGD schedule. ``expected_batch`` sets ``r = expected_batch / n``
    (capped at 0.5) unless ``sampling_rate`` is given.

    Defaults are smaller than the ordinary flow's: the noise per coordinate grows with the
    number of parameters, so 3 flows of 32 hidden units learn more per unit of privacy.

    Example:
        >>> DPConfig().sampling_rate_for(1000)
        0.256
    """

    flows: int = 3
    hidden: int = 32
    layers: int = 1
    log_scale_bound: float = 3.0
    spectral_norm: bool = True
    clip: float = 1.0
    expected_batch: int = 256
    sampling_rate: float | None = None
    steps: int = 1000
    lr: float = 5e-3
    optimizer: str = "adam"

    def sampling_rate_for(self, n: int) -> float:
        """Poisson sampling rate ``r`` for ``n`` rows."""
        if self.sampling_rate is not None:
            return float(self.sampling_rate)
        return float(min(self.expected_batch / n, 0.5))

    def flow_config(self) -> FlowConfig:
        """The equivalent ordinary ``FlowConfig`` (batch norm off), for ``TrainedFlow``."""
        return FlowConfig(
            flows=self.flows,
            hidden=self.hidden,
            layers=self.layers,
            spectral_norm=self.spectral_norm,
            batch_norm=False,
            log_scale_bound=self.log_scale_bound,
            lr=self.lr,
            max_epochs=0,
            whiten=False,  # a covariance of the rows would be spent outside the DP accounting
        )

    @classmethod
    def from_flow_config(cls, config: FlowConfig, **dp: Any) -> DPConfig:
        """Take the architecture of an ordinary ``FlowConfig``; batch norm is always off."""
        return cls(
            flows=config.flows,
            hidden=config.hidden,
            layers=config.layers,
            log_scale_bound=config.log_scale_bound,
            spectral_norm=config.spectral_norm,
            **dp,
        )


@dataclass
class DPTrainedFlow(TrainedFlow):
    """A DP-SGD-trained MAF: the same ``to_latent`` / ``from_latent`` / ``to_dict`` as
    :class:`engine.flows.select.TrainedFlow`, plus the privacy ``guarantee``. ``val_nll`` is NaN: no
    held-out loss is computed (it would be a function of the records)."""

    guarantee: DPGuarantee | None = None
    dp_config: DPConfig = field(default_factory=DPConfig)

    def to_dict(self) -> dict[str, Any]:
        """The ``model`` block of the run record, with the guarantee."""
        out = super().to_dict()
        out.update(
            training="DP-SGD",
            steps=self.dp_config.steps,
            optimizer=self.dp_config.optimizer,
            guarantee=None if self.guarantee is None else self.guarantee.to_dict(),
        )
        return out


def trainable(model: MAF) -> dict[str, torch.Tensor]:
    """The model's non-empty trainable parameters, detached (the arguments of the loss)."""
    return {k: p.detach() for k, p in model.named_parameters() if p.requires_grad and p.numel()}


def per_record_gradients(model: MAF, X: torch.Tensor) -> dict[str, torch.Tensor]:
    """Gradient of each row's NLL w.r.t. each parameter: ``{name: (n, *shape)}``.

    ``vmap(grad(loss))`` over rows with the model called functionally; the model must not
    mutate state in its forward pass (no batch norm).

    Example:
        >>> model = MAF(2, flows=1, hidden=4, batch_norm=False)
        >>> g = per_record_gradients(model, torch.zeros(3, 2))
        >>> tuple(g["W1"].shape)
        (3, 1, 4, 2)
    """
    if model.batch_norm:
        raise ValueError("per-record gradients need batch_norm=False (it mixes records)")
    params = trainable(model)
    buffers = dict(model.named_buffers())

    def nll(p: dict[str, torch.Tensor], row: torch.Tensor) -> torch.Tensor:
        return -functional_call(model, (p, buffers), (row.unsqueeze(0),)).squeeze(0)

    per_row = vmap(grad(nll), in_dims=(None, 0))
    chunks = [per_row(params, xb) for xb in X.split(GRAD_CHUNK)]
    return {k: torch.cat([c[k] for c in chunks]) for k in params}


def clip_gradients(grads: dict[str, torch.Tensor], clip: float) -> dict[str, torch.Tensor]:
    """Scale each record's whole gradient to L2 norm at most ``clip`` (``g / max(1, |g|/C)``).

    Example:
        >>> g = clip_gradients({"w": torch.tensor([[3.0, 4.0], [0.3, 0.4]])}, 1.0)
        >>> [round(float(v), 4) for v in g["w"].norm(dim=1)]
        [1.0, 0.5]
    """
    norms = per_record_norms(grads)
    factor = 1.0 / torch.clamp(norms / clip, min=1.0)
    return {k: g * factor.view(-1, *([1] * (g.dim() - 1))) for k, g in grads.items()}


def per_record_norms(grads: dict[str, torch.Tensor]) -> torch.Tensor:
    """The L2 norm of each record's gradient across all parameters."""
    squares = [g.reshape(g.shape[0], -1).square().sum(1) for g in grads.values()]
    return torch.stack(squares).sum(0).sqrt()


def noisy_mean_gradient(
    model: MAF,
    X: torch.Tensor,
    *,
    clip: float,
    sigma: float,
    expected_batch: float,
    gen: torch.Generator,
) -> dict[str, torch.Tensor]:
    """(sum of clipped per-record gradients + N(0, sigma^2 C^2 I)) / expected batch size."""
    params = trainable(model)
    if len(X):
        summed = {
            k: g.sum(0) for k, g in clip_gradients(per_record_gradients(model, X), clip).items()
        }
    else:
        summed = {k: torch.zeros_like(p) for k, p in params.items()}
    out = {}
    for k, s in summed.items():
        noise = torch.randn(s.shape, generator=gen, dtype=s.dtype).to(s.device)
        out[k] = (s + sigma * clip * noise) / expected_batch
    return out


def train_dp_flow(
    X: np.ndarray,
    *,
    epsilon: float,
    delta: float | None = None,
    config: DPConfig | FlowConfig | None = None,
    clip: float | None = None,
    r: float | None = None,
    T: int | None = None,
    device: str = "cpu",
    seed: int | None = None,
    progress: ProgressFn = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
) -> DPTrainedFlow:
    """Train a MAF on ``X`` (n x d, encoded with data-independent bounds) by DP-SGD so that
    it is (``epsilon``, ``delta``)-DP; sigma is calibrated on the PLD accountant (the RDP bound
    without ``dp-accounting``), so the stated epsilon never exceeds ``epsilon``.

    ``clip``, ``r`` and ``T`` override the config's ``clip``, sampling rate and ``steps``.
    ``delta=None`` means ``1 / n^1.1``.

    References: DP-NF paper Algorithm 1; Abadi et al. 2016; Doroshenko et al. 2022 (PLD).
    """
    dp = _resolve_config(config, clip=clip, r=r, T=T)
    X = _check_rows(X)
    n, d = X.shape
    delta = default_delta(n) if delta is None else float(delta)
    rate = dp.sampling_rate_for(n)
    sigma = sigma_for_epsilon(epsilon, delta, rate, dp.steps)
    dev = resolve_device(device)
    seeded = seed is not None
    seed = secrets.randbits(31) if seed is None else int(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = MAF(
            d,
            dp.flows,
            dp.hidden,
            dp.layers,
            spectral_norm=dp.spectral_norm,
            batch_norm=False,
            log_scale_bound=dp.log_scale_bound,
        ).to(dev)
    gen = torch.Generator().manual_seed(seed)
    opt = _optimizer(model, dp)
    Xt = torch.as_tensor(X, dtype=torch.float32, device=dev)
    start = time.perf_counter()
    with cpu_threads(dev), seeded_determinism(dev, seeded):
        for step in range(1, dp.steps + 1):
            if step % _REPORT_EVERY == 0:
                cancel.raise_if_cancelled()
                progress(
                    step / dp.steps, f"DP training: step {step}/{dp.steps} (sigma {sigma:.2f})"
                )
            _dp_step(model, opt, Xt, rate=rate, clip=dp.clip, sigma=sigma, gen=gen)
        model.exact_spectral_()
    guarantee = DPGuarantee.for_training(sigma, delta, rate, dp.steps, dp.clip, target=epsilon)
    progress(1.0, f"DP training: done, epsilon {guarantee.epsilon:.2f}")
    return DPTrainedFlow(
        model=model.eval(),
        config=dp.flow_config(),
        val_nll=math.nan,
        train_seconds=time.perf_counter() - start,
        epochs=0,
        device=dev,
        history=[],
        guarantee=guarantee,
        dp_config=dp,
    )


def _dp_step(
    model: MAF,
    opt: torch.optim.Optimizer,
    Xt: torch.Tensor,
    *,
    rate: float,
    clip: float,
    sigma: float,
    gen: torch.Generator,
) -> None:
    """One DP-SGD step: power iteration (weights only), Poisson sample, noisy mean, update."""
    model.power_iteration_()  # reads no record: post-processing (module docstring)
    n = len(Xt)
    batch = Xt[(torch.rand(n, generator=gen) < rate).to(Xt.device)]
    noisy = noisy_mean_gradient(
        model, batch, clip=clip, sigma=sigma, expected_batch=rate * n, gen=gen
    )
    for name, p in model.named_parameters():
        p.grad = noisy[name] if name in noisy else None
    opt.step()


def _resolve_config(
    config: DPConfig | FlowConfig | None, *, clip: float | None, r: float | None, T: int | None
) -> DPConfig:
    dp = (
        DPConfig.from_flow_config(config)
        if isinstance(config, FlowConfig)
        else config or DPConfig()
    )
    changes: dict[str, Any] = {}
    if clip is not None:
        changes["clip"] = float(clip)
    if r is not None:
        changes["sampling_rate"] = float(r)
    if T is not None:
        changes["steps"] = int(T)
    if changes:
        from dataclasses import replace

        dp = replace(dp, **changes)
    if not dp.clip > 0:
        raise InputError(f"clipping norm {dp.clip}: must be positive")
    if dp.optimizer not in ("adam", "sgd"):
        raise InputError(f"DP optimizer '{dp.optimizer}': choose adam or sgd")
    return dp


def _optimizer(model: MAF, dp: DPConfig) -> torch.optim.Optimizer:
    params = [p for p in model.parameters() if p.numel() > 0]
    if dp.optimizer == "sgd":
        return torch.optim.SGD(params, lr=dp.lr)
    return torch.optim.Adam(params, lr=dp.lr)


def _check_rows(X: np.ndarray) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] < 1 or X.shape[0] < 2:
        raise InputError(
            f"DP training needs a 2-D table with rows and columns; got shape {X.shape}"
        )
    if not np.isfinite(X).all():
        raise InputError("the encoded table has missing or infinite values; encode complete rows")
    return X
