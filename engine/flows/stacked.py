"""B MAFs of one architecture as one stacked network (:class:`StackedMAF`), for the batched
trainer (:mod:`engine.flows.batched`).

Each member's trainable weights are one row of a single flat tensor ``flat`` (B x P; the
named weights ``W1``, ``b1``, ... are views of it with a leading member dimension), so that
Adam, the moving average of the weights, a member's frozen update and dropping the members
that stopped are each one or a few tensor operations per step, whatever the number of
weight tensors; the density pass is :meth:`engine.flows.maf.MAF.log_prob` with batched
matrix products (``baddbmm``) over the members.

Why by hand, not ``torch.func.stack_module_state`` + ``vmap(functional_call)``: ``vmap`` runs
the same batched kernels, but the spectral normalization's persistent vectors and the
per-member masks around it are ours either way, and ``torch.func`` imports the compiler stack
(about 1.3 s, :mod:`engine.flows.adam`).

References: Papamakarios et al. 2017 (MAF); Germain et al. 2015 (MADE); Miyato et al. 2018
(spectral normalization).

Example:
    >>> import torch
    >>> from engine.flows.maf import MAF
    >>> _ = torch.manual_seed(0)
    >>> models = [MAF(3, flows=2, hidden=8) for _ in range(2)]
    >>> x = torch.randn(2, 5, 3)
    >>> lp = StackedMAF(models).log_prob(x)
    >>> bool(torch.allclose(lp[1], models[1].log_prob(x[1]), atol=1e-5))
    True
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from engine.flows.maf import MAF

__all__ = ["StackedMAF", "StackedAdam", "WEIGHTS", "VECTORS", "padded", "batch_index"]

WEIGHTS = ("W1", "b1", "Wh", "bh", "W2", "b2")  # the trainable weights of a MAF without BN
VECTORS = ("u1", "v1", "uh", "vh", "u2", "v2")  # spectral normalization's power iteration
_LOG_2PI = math.log(2.0 * math.pi)


def _matvec(W: Tensor, v: Tensor) -> Tensor:
    return (W @ v.unsqueeze(-1)).squeeze(-1)


class StackedMAF:
    """The members' weights (module docstring) on the masks of the first member.

    ``models``: MAFs of one architecture without batch normalization, whitening already set
    (each its own), all on one device. The members are not changed; :meth:`write` copies a
    row of weights back into one.
    """

    def __init__(self, models: list[MAF]) -> None:
        base = models[0]
        if base.batch_norm:
            raise ValueError("batch normalization is not stacked (its statistics are per batch)")
        self.base = base
        self.shapes = {n: tuple(getattr(base, n).shape) for n in WEIGHTS}
        self.sizes = {n: math.prod(s) for n, s in self.shapes.items()}
        rows = [torch.cat([getattr(m, n).detach().reshape(-1) for n in WEIGHTS]) for m in models]
        self.flat = torch.stack(rows).requires_grad_()
        self.vectors = {n: torch.stack([getattr(m, n) for m in models]) for n in VECTORS}
        self.white_mean = torch.stack([m.white_mean for m in models])
        self.white_inv_t = torch.stack([m.white_inv.T for m in models])
        chol = torch.stack([m.white_chol for m in models])
        self.log_det0 = -torch.log(torch.diagonal(chol, dim1=-2, dim2=-1)).sum(-1)

    @property
    def members(self) -> int:
        return self.flat.shape[0]

    def keep(self, slots: Tensor) -> None:
        """Keep only the members at ``slots`` (in that order): the others are dropped."""
        self.flat = self.flat.detach()[slots].requires_grad_()
        self.vectors = {n: v[slots] for n, v in self.vectors.items()}
        self.white_mean, self.white_inv_t = self.white_mean[slots], self.white_inv_t[slots]
        self.log_det0 = self.log_det0[slots]

    def named(self, flat: Tensor) -> dict[str, Tensor]:
        """The named weights (leading dimension: members) as views of ``flat`` (B x P)."""
        out, at = {}, 0
        for n in WEIGHTS:
            out[n] = flat[:, at : at + self.sizes[n]].unflatten(1, self.shapes[n])
            at += self.sizes[n]
        return out

    def write(self, model: MAF, row: Tensor) -> None:
        """Copy one member's weights ``row`` (P,) into ``model`` (the same architecture)."""
        with torch.no_grad():
            for n, w in self.named(row.unsqueeze(0)).items():
                getattr(model, n).copy_(w[0])

    def _masked(self, P: dict[str, Tensor]) -> list[tuple[Tensor, Tensor, Tensor]]:
        b, V = self.base, self.vectors
        stacks = [(P["W1"] * b.mask1, V["u1"], V["v1"]), (P["W2"] * b.mask2, V["u2"], V["v2"])]
        if b.layers > 1:
            stacks.append((P["Wh"] * b.maskh, V["uh"], V["vh"]))
        return stacks

    @torch.no_grad()
    def power_iteration_(self, stepping: Tensor | None = None) -> None:
        """:meth:`MAF.power_iteration_` (one step) of every member, or of those where
        ``stepping`` (B, bool) is set: the others keep their vectors, as a model that takes no
        step that round would."""
        if not self.base.spectral_norm:
            return
        for Wm, u, v in self._masked(self.named(self.flat)):
            vv = F.normalize(_matvec(Wm.transpose(-1, -2), u), dim=-1)
            uu = F.normalize(_matvec(Wm, vv), dim=-1)
            if stepping is not None:
                mask = stepping.view(-1, *[1] * (u.dim() - 1))
                uu, vv = torch.where(mask, uu, u), torch.where(mask, vv, v)
            u.copy_(uu)
            v.copy_(vv)

    def _weights(self, P: dict[str, Tensor]) -> tuple[Tensor, Tensor, Tensor]:
        """The masked, spectrally normalized weights, as :meth:`MAF.normalized_weights`."""
        stacks = self._masked(P)
        if not self.base.spectral_norm:
            return stacks[0][0], (stacks[2][0] if len(stacks) > 2 else P["Wh"]), stacks[1][0]

        def norm(Wm: Tensor, u: Tensor, v: Tensor) -> Tensor:
            sigma = (u * _matvec(Wm, v)).sum(-1)
            return Wm / sigma.clamp(min=1.0)[..., None, None]

        Wh = norm(*stacks[2]) if len(stacks) > 2 else P["Wh"]
        return norm(*stacks[0]), Wh, norm(*stacks[1])

    def log_prob(self, x: Tensor, flat: Tensor | None = None) -> Tensor:
        """(B, N) log-densities of each member's rows ``x`` (B, N, d), with weights ``flat``
        (default: the trained ones): :meth:`MAF.log_prob` member by member."""
        P = self.named(self.flat if flat is None else flat)
        b = self.base
        W1, Wh, W2 = self._weights(P)
        d, c = b.features, b.log_scale_bound
        x = torch.matmul(x - self.white_mean[:, None, :], self.white_inv_t)
        log_det = self.log_det0[:, None]
        for k in range(b.flows):
            h = torch.relu(torch.baddbmm(P["b1"][:, k, None, :], x, W1[:, k].transpose(-1, -2)))
            for j in range(b.layers - 1):
                h = torch.relu(
                    torch.baddbmm(P["bh"][:, k, j, None, :], h, Wh[:, k, j].transpose(-1, -2))
                )
            out = torch.baddbmm(P["b2"][:, k, None, :], h, W2[:, k].transpose(-1, -2))
            s = c * torch.tanh(out[..., d:] / c)
            x = (x - out[..., :d]) * torch.exp(-s)
            log_det = log_det - s.sum(-1)
            if k < b.flows - 1:
                x = x.flip(-1)
        return -0.5 * (x.square().sum(-1) + d * _LOG_2PI) + log_det


class StackedAdam:
    """Adam with L2 weight decay (not AdamW) on the members' flat weights (B x P), with one
    learning rate and one step count per member, and only the members that step updated.

    Each member's step is torch's fused Adam kernel on that member's named weights (views of
    its row), the kernel :class:`engine.flows.adam.FusedAdam` calls on a single model's
    weights, so a member's update is bit-identical to its single training's for the same
    gradient. Why not the update written out in tensor operations over the whole stack: the
    kernel rounds differently (it differs by an ulp of the weights a step), and that
    rounding, amplified by training, was most of the gap to one-by-one training. Members
    with the same learning rate share one kernel call (one call in the common case).
    """

    def __init__(self, stack: StackedMAF, weight_decay: float) -> None:
        self.wd, self.stack = weight_decay, stack
        flat = stack.flat
        self.m, self.v = torch.zeros_like(flat), torch.zeros_like(flat)
        self.grad = torch.zeros_like(flat)
        self.t = torch.zeros(flat.shape[0], dtype=torch.float32, device=flat.device)
        self._views()

    def _views(self) -> None:
        """Each member's list of named-weight views of the weights, gradient and moments."""
        bounds, at = [], 0
        for n in WEIGHTS:
            if self.stack.sizes[n]:
                bounds.append((at, at + self.stack.sizes[n]))
            at += self.stack.sizes[n]

        def per_member(T: Tensor) -> list[list[Tensor]]:
            return [[T[e, a:b] for a, b in bounds] for e in range(T.shape[0])]

        self.views = [per_member(T) for T in (self.stack.flat.detach(), self.grad, self.m, self.v)]
        self.steps = [[self.t[e]] * len(bounds) for e in range(len(self.t))]

    def keep(self, slots: Tensor) -> None:
        """Keep only the members at ``slots``, after :meth:`StackedMAF.keep`."""
        self.m, self.v, self.t = self.m[slots], self.v[slots], self.t[slots]
        self.grad = torch.zeros_like(self.m)
        self._views()

    @torch.no_grad()
    def step(
        self,
        grad: Tensor,
        lr: list[float],
        stepping: np.ndarray,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ) -> None:
        """One update of the members where ``stepping`` (B, bool) is set, from ``grad``
        (B x P), each with its learning rate ``lr[e]``."""
        self.grad.copy_(grad)
        groups: dict[float, list[int]] = {}
        for e in np.flatnonzero(stepping):
            groups.setdefault(lr[e], []).append(int(e))
        P, G, M, V = self.views
        for rate, members in groups.items():
            torch._foreach_add_([self.t[e] for e in members], 1.0)
            torch._fused_adam_(
                [w for e in members for w in P[e]],
                [w for e in members for w in G[e]],
                [w for e in members for w in M[e]],
                [w for e in members for w in V[e]],
                [],
                [s for e in members for s in self.steps[e]],
                amsgrad=False,
                lr=rate,
                beta1=betas[0],
                beta2=betas[1],
                weight_decay=self.wd,
                eps=eps,
                maximize=False,
            )


def padded(parts: Sequence[Tensor]) -> tuple[Tensor, Tensor]:
    """Row blocks of unequal length as one (B, max rows, ...) tensor (zeros after each
    block's end) and their lengths (B,).

    Example:
        >>> x, n = padded([torch.ones(2, 1), torch.ones(3, 1)])
        >>> tuple(x.shape), n.tolist(), float(x[0, 2, 0])
        ((2, 3, 1), [2, 3], 0.0)
    """
    width = max(len(p) for p in parts)
    out = parts[0].new_zeros((len(parts), width, *parts[0].shape[1:]))
    for i, p in enumerate(parts):
        out[i, : len(p)] = p
    return out, torch.tensor([len(p) for p in parts])


def batch_index(
    orders: Sequence[Tensor], batches: Sequence[int], device: str
) -> tuple[Tensor, np.ndarray]:
    """The members' mini-batches of one epoch, member ``i`` taking its rows in ``orders[i]``
    order, ``batches[i]`` at a time (the last batch the rest): row indices (B, S, widest
    batch; 0 in padding) on ``device``, and each batch's rows (B, S; 0: no batch), host side.

    Example:
        >>> index, rows = batch_index([torch.arange(5), torch.arange(3)], [2, 3], "cpu")
        >>> index[0].tolist(), rows.tolist()
        ([[0, 1, 0], [2, 3, 0], [4, 0, 0]], [[2, 2, 1], [3, 0, 0]])
    """
    steps = [-(-len(o) // b) for o, b in zip(orders, batches, strict=True)]
    index = torch.zeros(len(orders), max(steps), max(batches), dtype=torch.long)
    rows = np.zeros((len(orders), max(steps)), dtype=np.int64)
    for i, (o, b, s) in enumerate(zip(orders, batches, steps, strict=True)):
        full = torch.zeros(s * b, dtype=torch.long)
        full[: len(o)] = o
        index[i, :s, :b] = full.view(s, b)
        rows[i, :s] = b
        rows[i, s - 1] = len(o) - (s - 1) * b
    return index.to(device), rows
