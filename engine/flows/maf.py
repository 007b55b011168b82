"""The Masked Autoregressive Flow network itself (docs/method.md section 3), hand-written.

``MAF`` stacks ``flows`` MADE layers (Germain et al. 2015) with a reversal of the feature
order between them and, optionally, batch normalization. The weights of all layers are kept
in a few stacked tensors (``W1``: flows x hidden x d, ...) so that masking, spectral
normalization and the optimizer step are a handful of batched operations per training step,
whatever the number of flows.

* Density pass ``to_latent(x) -> (z, log_det)``: one network evaluation per MADE layer,
  ``z_i = (x_i - mu_i(x_<i)) * exp(-s_i(x_<i))`` (eq. 4), ``log_det = -sum_i s_i``.
* Generating pass ``from_latent(z) -> x``: ``x_i = mu_i + z_i * exp(s_i)`` (eq. 3), d
  sequential steps per layer. With one hidden layer the hidden units are sorted by MADE degree
  and the first layer's pre-activations are updated one input column at a time (rank-1 update
  ``a += x_j W1[:, j]``, restricted to the units that see ``x_j``), instead of re-running the
  whole MADE d times; with more hidden layers it falls back to d full passes.
* Log-scales are soft-clamped, ``s = c tanh(s_raw / c)``, so decoding a noisy latent code
  amplifies by at most ``exp(flows * c)``.
* Spectral normalization (Miyato et al. 2018) of every *masked* weight ``W * M`` (its norm can
  exceed ``W``'s): ``W_sn = (W * M) / max(sigma_hat, 1)`` with ``sigma_hat = u' (W * M) v`` from
  persistent power-iteration vectors, so every weight matrix has spectral norm at most 1
  (Lemma 2 (a) of the paper). ``power_iteration_()`` advances ``u, v`` (the training loop calls
  it once per step); ``exact_spectral_()`` sets them from an SVD (done once after training, so
  the bound holds to rounding). In eval mode without autograd, the normalized weights are
  cached and invalidated when a parameter or ``u, v`` changes (tensor version counters), so
  repeated evaluation is cheap.

Per-sample gradients (future DP-SGD mode): with ``batch_norm=False`` the forward pass reads
parameters and buffers and mutates nothing (the power iteration lives outside it), so
``torch.func.functional_call`` + ``vmap(grad(...))`` work on this module. Call
``model.power_iteration_()`` once per step outside the transformed function. Batch norm updates
running statistics in train mode and is not supported there (Opacus rejects it as well).

References: Papamakarios et al. 2017 (MAF); Germain et al. 2015 (MADE);
Miyato et al. 2018 (spectral normalization); main paper section 2.1.1 and Lemma 2.

Example:
    >>> import torch
    >>> _ = torch.manual_seed(0)
    >>> maf = MAF(features=3, flows=2, hidden=8).eval()
    >>> x = torch.randn(4, 3)
    >>> z, log_det = maf.to_latent(x)
    >>> bool(torch.allclose(maf.from_latent(z), x, atol=1e-5))
    True
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

_BN_EPS = 1e-5
_BN_MOMENTUM = 0.1
_LOG_2PI = math.log(2.0 * math.pi)


def _matvec(W: Tensor, v: Tensor) -> Tensor:
    """Batched ``W @ v`` for ``W`` (..., m, n) and ``v`` (..., n)."""
    return (W @ v.unsqueeze(-1)).squeeze(-1)


def _uniform(shape: tuple[int, ...], bound: float) -> Tensor:
    return (torch.rand(shape) * 2.0 - 1.0) * bound


class MAF(nn.Module):
    """Masked Autoregressive Flow with spectrally normalized masked weights.

    Args:
        features: number of columns ``d``.
        flows: number of MADE layers ``K``; 0 leaves the fixed whitening step alone (with
            ``set_whitening``, exactly the Gaussian of the training rows: a Gaussian copula on
            the encoder's normal scores).
        hidden: hidden units per hidden layer ``H``.
        layers: hidden layers per MADE ``L``.
        spectral_norm: normalize every masked weight to spectral norm at most 1.
        batch_norm: batch normalization between MADE layers.
        log_scale_bound: soft clamp ``c`` of the log-scales.

    References: Papamakarios et al. 2017; Germain et al. 2015; Miyato et al. 2018.

    Example:
        >>> maf = MAF(features=2, flows=1, hidden=4)
        >>> tuple(maf.log_prob(torch.zeros(5, 2)).shape)
        (5,)
    """

    # Buffers made by register_buffer in __init__ (declared here for the type checker only).
    mask1: Tensor
    maskh: Tensor
    mask2: Tensor
    u1: Tensor
    v1: Tensor
    uh: Tensor
    vh: Tensor
    u2: Tensor
    v2: Tensor
    bn_mean: Tensor
    bn_var: Tensor
    white_mean: Tensor
    white_inv: Tensor
    white_chol: Tensor

    def __init__(
        self,
        features: int,
        flows: int = 5,
        hidden: int = 64,
        layers: int = 1,
        *,
        spectral_norm: bool = True,
        batch_norm: bool = False,
        log_scale_bound: float = 3.0,
    ) -> None:
        super().__init__()
        if features < 1 or flows < 0 or hidden < 1 or layers < 1:
            raise ValueError("features, hidden and layers must be at least 1, flows at least 0")
        d, K, H, L = features, flows, hidden, layers
        self.features, self.flows, self.hidden, self.layers = d, K, H, L
        self.spectral_norm = spectral_norm
        self.batch_norm = batch_norm
        self.log_scale_bound = float(log_scale_bound)
        # MADE degrees (Germain et al. 2015): inputs 1..d, hidden units cycle over 1..d-1
        # and are sorted, so the units that see x_j form a contiguous tail.
        deg_in = torch.arange(1, d + 1)
        deg_hid = torch.sort(torch.arange(H) % max(d - 1, 1) + 1).values
        deg_out = torch.cat([deg_in, deg_in])
        self.register_buffer("mask1", (deg_hid[:, None] >= deg_in[None, :]).float())
        self.register_buffer("maskh", (deg_hid[:, None] >= deg_hid[None, :]).float())
        self.register_buffer("mask2", (deg_out[:, None] > deg_hid[None, :]).float())
        # _ends[i]: hidden units with degree <= i, i.e. those output i (0-based) may read.
        self._ends = [int((deg_hid <= i).sum()) for i in range(d)]
        self.W1 = nn.Parameter(_uniform((K, H, d), 1.0 / math.sqrt(d)))
        self.b1 = nn.Parameter(_uniform((K, H), 1.0 / math.sqrt(d)))
        self.Wh = nn.Parameter(_uniform((K, L - 1, H, H), 1.0 / math.sqrt(H)))
        self.bh = nn.Parameter(_uniform((K, L - 1, H), 1.0 / math.sqrt(H)))
        # Small output weights: every layer starts close to the identity map.
        self.W2 = nn.Parameter(_uniform((K, 2 * d, H), 1e-2 / math.sqrt(H)))
        self.b2 = nn.Parameter(torch.zeros(K, 2 * d))
        for name, rows, cols in (
            ("1", (K, H), (K, d)),
            ("h", (K, L - 1, H), (K, L - 1, H)),
            ("2", (K, 2 * d), (K, H)),
        ):
            self.register_buffer("u" + name, F.normalize(torch.randn(rows), dim=-1))
            self.register_buffer("v" + name, F.normalize(torch.randn(cols), dim=-1))
        nb = max(K - 1, 0) if batch_norm else 0
        self.bn_log_gamma = nn.Parameter(torch.zeros(nb, d))
        self.bn_beta = nn.Parameter(torch.zeros(nb, d))
        self.register_buffer("bn_mean", torch.zeros(nb, d))
        self.register_buffer("bn_var", torch.ones(nb, d))  # not 0: see docs/pitfalls.md
        # The fixed linear first step (``set_whitening``): identity until set.
        self.register_buffer("white_mean", torch.zeros(d))
        self.register_buffer("white_inv", torch.eye(d))
        self.register_buffer("white_chol", torch.eye(d))
        self._cache: tuple[tuple[int, ...], tuple[Tensor, Tensor, Tensor]] | None = None

    @torch.no_grad()
    def set_whitening(self, mean: Tensor, chol: Tensor) -> None:
        """Make the flow's first step the fixed map ``x -> L^-1 (x - mean)`` for a lower
        triangular ``L`` (a Cholesky factor of the training rows' covariance): the MADE
        layers, which start close to the identity, then start from the Gaussian with that
        mean and covariance instead of from independent columns. Lower triangular, so the
        map stays autoregressive; its log-determinant is the constant ``-sum log L_ii``.
        """
        self.white_mean.copy_(mean)
        self.white_chol.copy_(torch.tril(chol))
        self.white_inv.copy_(torch.linalg.inv(torch.tril(chol).double()).to(chol.dtype))

    # ----------------------------------------------------------------- spectral norm
    def _masked(self) -> tuple[Tensor, Tensor, Tensor]:
        Wh = self.Wh * self.maskh if self.layers > 1 else self.Wh  # skip the empty stack
        return self.W1 * self.mask1, Wh, self.W2 * self.mask2

    def _stacks(self) -> list[tuple[Tensor, Tensor, Tensor]]:
        """(masked weight, u, v) for the weight stacks that are not empty."""
        W1, Wh, W2 = self._masked()
        stacks = [(W1, self.u1, self.v1), (W2, self.u2, self.v2)]
        return stacks + ([(Wh, self.uh, self.vh)] if self.layers > 1 else [])

    @torch.no_grad()
    def power_iteration_(self, steps: int = 1) -> None:
        """Advance the persistent power-iteration vectors ``u, v`` of every masked weight."""
        if not self.spectral_norm:
            return
        for Wm, u, v in self._stacks():
            uu, vv = u, v
            for _ in range(steps):
                vv = F.normalize(_matvec(Wm.transpose(-1, -2), uu), dim=-1)
                uu = F.normalize(_matvec(Wm, vv), dim=-1)
            u.copy_(uu)
            v.copy_(vv)

    @torch.no_grad()
    def exact_spectral_(self) -> None:
        """Set ``u, v`` to the exact top singular vectors (SVD; cheap for these sizes).

        The SVD runs on the CPU: small batched SVDs on the GPU go through cuSOLVER, which is
        slower here, differs between versions and fails on some old cards."""
        for Wm, u, v in self._stacks():
            if not Wm.any():  # e.g. d = 1: every connection is masked out
                continue
            U, _, Vh = torch.linalg.svd(Wm.detach().cpu(), full_matrices=False)
            u.copy_(U[..., :, 0])
            v.copy_(Vh[..., 0, :])

    def _normalize(self, Wm: Tensor, u: Tensor, v: Tensor) -> Tensor:
        sigma = (u * _matvec(Wm, v)).sum(-1)
        return Wm / sigma.clamp(min=1.0)[..., None, None]

    def normalized_weights(self) -> tuple[Tensor, Tensor, Tensor]:
        """The masked (and, if enabled, spectrally normalized) weights ``W1, Wh, W2``.

        Cached while autograd is off and no parameter or power-iteration vector changed.
        """
        cacheable = not torch.is_grad_enabled()
        if cacheable:
            tensors = [self.W1, self.Wh, self.W2, self.u1, self.uh, self.u2]
            key = tuple(t._version for t in tensors) + tuple(t.data_ptr() for t in tensors)
            if self._cache is not None and self._cache[0] == key:
                return self._cache[1]
        if self.spectral_norm:
            stacks = self._stacks()
            W1, W2 = self._normalize(*stacks[0]), self._normalize(*stacks[1])
            Wh = self._normalize(*stacks[2]) if self.layers > 1 else self.Wh
        else:
            W1, Wh, W2 = self._masked()
        if cacheable:
            self._cache = (key, (W1, Wh, W2))
        return W1, Wh, W2

    def _apply(self, fn, recurse=True):
        self._cache = None  # moving to another device or dtype invalidates the cache
        return super()._apply(fn, recurse)

    # ----------------------------------------------------------------- passes
    def _made(
        self, x: Tensor, k: int, weights: tuple[Tensor, Tensor, Tensor]
    ) -> tuple[Tensor, Tensor]:
        """``(mu, s)`` of MADE layer ``k`` for inputs ``x`` (N x d)."""
        W1, Wh, W2 = weights
        h = torch.relu(torch.addmm(self.b1[k], x, W1[k].T))
        for j in range(self.layers - 1):
            h = torch.relu(torch.addmm(self.bh[k, j], h, Wh[k, j].T))
        out = torch.addmm(self.b2[k], h, W2[k].T)
        c = self.log_scale_bound
        d = self.features
        return out[:, :d], c * torch.tanh(out[:, d:] / c)

    def _bn(self, x: Tensor, k: int) -> tuple[Tensor, Tensor]:
        if self.training:
            mean, var = x.mean(0), x.var(0, unbiased=False)
            with torch.no_grad():
                self.bn_mean[k].lerp_(mean.detach(), _BN_MOMENTUM)
                self.bn_var[k].lerp_(var.detach(), _BN_MOMENTUM)
        else:
            mean, var = self.bn_mean[k], self.bn_var[k]
        log_gamma = self.bn_log_gamma[k]
        y = (x - mean) * torch.rsqrt(var + _BN_EPS) * torch.exp(log_gamma) + self.bn_beta[k]
        return y, (log_gamma - 0.5 * torch.log(var + _BN_EPS)).sum()

    def _bn_inverse(self, y: Tensor, k: int) -> Tensor:
        scale = torch.sqrt(self.bn_var[k] + _BN_EPS) * torch.exp(-self.bn_log_gamma[k])
        return (y - self.bn_beta[k]) * scale + self.bn_mean[k]

    def to_latent(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Density pass ``x -> (z, log|det dz/dx|)``: one network evaluation per layer."""
        weights = self.normalized_weights()
        x = (x - self.white_mean) @ self.white_inv.T
        log_det = x.new_zeros(x.shape[0]) - torch.log(torch.diagonal(self.white_chol)).sum()
        for k in range(self.flows):
            mu, s = self._made(x, k, weights)
            x = (x - mu) * torch.exp(-s)
            log_det = log_det - s.sum(-1)
            if k < self.flows - 1:
                if self.batch_norm:
                    x, ld = self._bn(x, k)
                    log_det = log_det + ld
                x = x.flip(-1)
        return x, log_det

    def log_prob(self, x: Tensor) -> Tensor:
        """Log-density of each row under the flow (eq. 2)."""
        z, log_det = self.to_latent(x)
        return -0.5 * (z.square().sum(-1) + self.features * _LOG_2PI) + log_det

    def forward(self, x: Tensor) -> Tensor:
        """Same as :meth:`log_prob` (for ``torch.func.functional_call``)."""
        return self.log_prob(x)

    def from_latent(self, z: Tensor, method: str = "auto") -> Tensor:
        """Generating pass ``z -> x``; batch norm always uses its running statistics.

        ``method``: ``"auto"`` (incremental when ``layers == 1``), ``"incremental"``, ``"naive"``.
        """
        if method not in ("auto", "incremental", "naive"):
            raise ValueError(f"unknown method {method!r}")
        incremental = method == "incremental" or (method == "auto" and self.layers == 1)
        if incremental and self.layers != 1:
            raise ValueError("the incremental generating pass needs exactly one hidden layer")
        weights = self.normalized_weights()
        x = z
        for k in reversed(range(self.flows)):
            if k < self.flows - 1:
                x = x.flip(-1)
                if self.batch_norm:
                    x = self._bn_inverse(x, k)
            x = (
                self._inverse_incremental(x, k, weights)
                if incremental
                else self._inverse_naive(x, k, weights)
            )
        return x @ self.white_chol.T + self.white_mean

    def _inverse_naive(self, z: Tensor, k: int, weights: tuple[Tensor, Tensor, Tensor]) -> Tensor:
        """d full MADE passes; after pass i the first i+1 columns are exact."""
        x = torch.zeros_like(z)
        for _ in range(self.features):
            mu, s = self._made(x, k, weights)
            x = mu + z * torch.exp(s)
        return x

    def _inverse_incremental(
        self, z: Tensor, k: int, weights: tuple[Tensor, Tensor, Tensor]
    ) -> Tensor:
        """One hidden layer: rank-1 updates of the first layer's pre-activations (H x N).

        The hidden units output ``i`` reads (the first ``e``) take no later update, so each
        unit's ReLU is taken once, when its turn comes, into ``r`` (the same values as a ReLU of
        all ``e`` rows at every output, which took a third of the pass: 40,000 rows, d = 10,
        five flows, 130-150 -> 80-90 ms)."""
        W1, _, W2 = weights
        d, c = self.features, self.log_scale_bound
        w1, b1 = W1[k], self.b1[k]
        w2 = torch.stack([W2[k, :d], W2[k, d:]], dim=1)  # d x 2 x H: (mu, s) rows per output
        b2 = torch.stack([self.b2[k, :d], self.b2[k, d:]], dim=1)  # d x 2
        zt = z.T.contiguous()
        a = b1[:, None].expand(-1, zt.shape[1]).contiguous()
        r, ready = torch.empty_like(a), 0  # ReLU of a[:ready]
        xt = torch.empty_like(zt)
        for i in range(d):
            e = self._ends[i]
            if e > ready:
                r[ready:e] = torch.relu(a[ready:e])
                ready = e
            if e > 0:
                out = torch.addmm(b2[i][:, None], w2[i, :, :e], r[:e])
                mu, s = out[0], out[1]
            else:
                mu, s = b2[i, 0], b2[i, 1]
            s = c * torch.tanh(s / c)
            xt[i] = mu + zt[i] * torch.exp(s)
            if i < d - 1 and e < a.shape[0]:
                a[e:].addr_(w1[e:, i], xt[i])
        return xt.T
