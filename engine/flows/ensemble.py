"""Several flows of one architecture trained at once, as one batched network (issue 31).

The audit of a small table trains the same architecture on eleven more train/holdout splits
(:mod:`engine.privacy.family`). Each of those networks is tiny (2-3 MADE layers of 16-32 units
on a few hundred rows), so one training step is a few dozen torch calls of microseconds each
and Python's per-call overhead is the cost: 0.2 s a flow, 2 s of a 300-row table's 4.6 s
re-run in the wizard. :func:`train_flows` stacks the E members' weights along a leading
dimension and trains them in one loop, with batched matrix products, so a step costs about what
one member's does.

Each member follows :func:`engine.flows.train.train_flow`'s recipe on its own rows: the same
initial weights (the seed's, as a single training would draw them), the same mini-batch order
(the seed's generator over the same number of rows), Adam, the plateau schedule of its own
validation loss (a learning rate per member), the moving average of the weights, early
stopping on its own validation rows and its best averaged weights restored, spectral-norm
vectors made exact at the end. Only the floating-point order of the batched products differs,
so a member's weights match a single training's to rounding at first and then drift as
training amplifies rounding (tests/test_ensemble.py checks the first steps and that the
members' validation losses and fitted models agree with single trainings within seed spread).

Why by hand: ``torch.func.vmap`` over ``functional_call`` would batch the forward pass, but
the loop around it (per-member schedule, early stopping, averaging) is ours either way, and
``torch.func`` imports the compiler stack (about 1.3 s, :mod:`engine.flows.adam`).

Not batched (:func:`batchable` is False): batch normalization, input noise and the step
budget of large tables; the caller trains those one by one.

References: Papamakarios et al. 2017 (MAF); Germain et al. 2015 (MADE); Miyato et al. 2018
(spectral normalization); Kingma & Ba 2015 (Adam).

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> Xs = [rng.normal(size=(120, 2)) for _ in range(3)]
    >>> flows = train_flows(Xs, FlowConfig(flows=2, hidden=8, max_epochs=3), seed=0)
    >>> [f.epochs for f in flows], flows[0].config.flows
    ([3, 3, 3], 2)
"""

from __future__ import annotations

import math
import secrets
import time
from dataclasses import replace

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from engine.flows.adam import PlateauSchedule
from engine.flows.config import MIN_DELTA, FlowConfig
from engine.flows.maf import _LOG_2PI, MAF, _matvec
from engine.flows.train import (
    _INIT_LOCK,
    TrainedFlow,
    _check_table,
    _row_nll,
    _split,
    cpu_threads,
    resolve_device,
    train_flow,
)
from engine.flows.whiten import whitening
from engine.progress import (
    NEVER_CANCELLED,
    CancelToken,
    EpochDone,
    Partial,
    ProgressFn,
    no_progress,
    report,
)

__all__ = ["train_flows", "batchable"]

_PARAMS = ("W1", "b1", "Wh", "bh", "W2", "b2")
_VECTORS = ("u1", "v1", "uh", "vh", "u2", "v2")
_CANCEL_EVERY = 50


def batchable(config: FlowConfig) -> bool:
    """Whether :func:`train_flows` trains ``config`` batched (else one by one).

    Example:
        >>> batchable(FlowConfig(flows=2, hidden=16)), batchable(FlowConfig().on_step_budget())
        (True, False)
    """
    return (
        config.flows > 0
        and not config.batch_norm
        and config.input_noise <= 0.0
        and config.steps_per_epoch is None
        and config.min_delta == MIN_DELTA
    )


def _tiled(t: Tensor, members: int) -> Tensor:
    """``members`` copies of ``t`` along a new leading dimension (detached)."""
    return t.detach().unsqueeze(0).repeat(members, *[1] * t.dim())


class _Stack:
    """E members' weights (leading dimension E) on the masks of one template :class:`MAF`."""

    def __init__(self, base: MAF, members: int, white: list[tuple[Tensor, Tensor]]) -> None:
        self.base, self.E = base, members
        self.params = {n: _tiled(getattr(base, n), members).requires_grad_() for n in _PARAMS}
        self.vectors = {n: _tiled(getattr(base, n), members) for n in _VECTORS}
        dev = base.W1.device
        self.white_mean = torch.stack([m for m, _ in white]).to(dev)
        chol = torch.stack([torch.tril(c) for _, c in white])
        self.white_chol = chol.to(dev)
        self.white_inv = torch.linalg.inv(chol.double()).to(torch.float32).to(dev)
        self.log_det0 = -torch.log(torch.diagonal(self.white_chol, dim1=-2, dim2=-1)).sum(-1)

    def live(self) -> list[Tensor]:
        return [p for p in self.params.values() if p.numel() > 0]

    def named(self, weights: list[Tensor]) -> dict[str, Tensor]:
        """``weights`` (in the order of :meth:`live`) by parameter name, the empty ones kept."""
        it = iter(weights)
        return {k: (next(it) if p.numel() > 0 else p) for k, p in self.params.items()}

    def _masked(self, P: dict[str, Tensor]) -> list[tuple[Tensor, Tensor, Tensor]]:
        b = self.base
        stacks = [(P["W1"] * b.mask1, self.vectors["u1"], self.vectors["v1"])]
        stacks.append((P["W2"] * b.mask2, self.vectors["u2"], self.vectors["v2"]))
        if b.layers > 1:
            stacks.append((P["Wh"] * b.maskh, self.vectors["uh"], self.vectors["vh"]))
        return stacks

    @torch.no_grad()
    def power_iteration_(self) -> None:
        """:meth:`MAF.power_iteration_` for every member (one step)."""
        if not self.base.spectral_norm:
            return
        for Wm, u, v in self._masked(self.params):
            vv = F.normalize(_matvec(Wm.transpose(-1, -2), u), dim=-1)
            u.copy_(F.normalize(_matvec(Wm, vv), dim=-1))
            v.copy_(vv)

    def _weights(self, P: dict[str, Tensor]) -> tuple[Tensor, Tensor, Tensor]:
        stacks = self._masked(P)
        if not self.base.spectral_norm:
            return stacks[0][0], (stacks[2][0] if len(stacks) > 2 else P["Wh"]), stacks[1][0]

        def norm(Wm: Tensor, u: Tensor, v: Tensor) -> Tensor:
            sigma = (u * _matvec(Wm, v)).sum(-1)
            return Wm / sigma.clamp(min=1.0)[..., None, None]

        Wh = norm(*stacks[2]) if len(stacks) > 2 else P["Wh"]
        return norm(*stacks[0]), Wh, norm(*stacks[1])

    def log_prob(self, x: Tensor, P: dict[str, Tensor] | None = None) -> Tensor:
        """(E, N) log-densities of each member's rows ``x`` (E, N, d): :meth:`MAF.log_prob`."""
        P = self.params if P is None else P
        b = self.base
        W1, Wh, W2 = self._weights(P)
        d, c = b.features, b.log_scale_bound
        x = torch.matmul(x - self.white_mean[:, None, :], self.white_inv.transpose(-1, -2))
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

    def member(self, e: int, P: dict[str, Tensor], V: dict[str, Tensor]) -> MAF:
        """Member ``e`` as a plain :class:`MAF` with weights ``P`` and vectors ``V``."""
        b = self.base
        model = MAF(
            b.features, b.flows, b.hidden, b.layers, spectral_norm=b.spectral_norm,
            batch_norm=False, log_scale_bound=b.log_scale_bound,
        ).to(b.W1.device)  # fmt: skip
        with torch.no_grad():
            for n in _PARAMS:
                getattr(model, n).copy_(P[n][e])
            for n in _VECTORS:
                getattr(model, n).copy_(V[n][e])
            model.white_mean.copy_(self.white_mean[e])
            model.white_chol.copy_(self.white_chol[e])
            model.white_inv.copy_(self.white_inv[e])
        return model


class _MemberRate:
    """Member ``e``'s entry of the learning-rate vector, as the ``lr`` of one optimizer."""

    def __init__(self, rates: Tensor, e: int) -> None:
        self.rates, self.e = rates, e

    @property
    def lr(self) -> float:
        return float(self.rates[self.e])

    @lr.setter
    def lr(self, value: float) -> None:
        self.rates[self.e] = value


class _Adam:
    """Adam (L2 weight decay) with one learning rate per member: the update of
    :class:`engine.flows.adam.FusedAdam` with ``lr`` a vector over the leading dimension."""

    def __init__(self, params: list[Tensor], lr: Tensor, weight_decay: float) -> None:
        self.params, self.lr, self.wd = params, lr, weight_decay
        self.m = [torch.zeros_like(p) for p in params]
        self.v = [torch.zeros_like(p) for p in params]
        self.t = 0

    @torch.no_grad()
    def step(self, grads: list[Tensor], b1: float = 0.9, b2: float = 0.999) -> None:
        self.t += 1
        if self.wd:
            grads = list(torch._foreach_add(grads, self.params, alpha=self.wd))
        torch._foreach_lerp_(self.m, grads, 1 - b1)
        torch._foreach_mul_(self.v, b2)
        torch._foreach_addcmul_(self.v, grads, grads, 1 - b2)
        denom = torch._foreach_sqrt(self.v)
        torch._foreach_div_(denom, math.sqrt(1 - b2**self.t))
        torch._foreach_add_(denom, 1e-8)
        steps = torch._foreach_div(self.m, denom)
        size = self.lr / (1 - b1**self.t)
        for p, s in zip(self.params, steps, strict=True):
            p.sub_(s * size.view(-1, *[1] * (p.dim() - 1)))


def train_flows(
    Xs: list[np.ndarray],
    config: FlowConfig,
    *,
    device: str = "auto",
    seed: int | None = None,
    progress: ProgressFn = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
    names: list[str] | None = None,
) -> list[TrainedFlow]:
    """One flow of architecture ``config`` on each table of ``Xs`` (same shape), with
    :func:`engine.flows.train.train_flow`'s recipe and ``seed`` for every member, trained as
    one batched network; tables of other shapes or a recipe that is not :func:`batchable` are
    trained one by one. Each member's epochs are reported as :class:`EpochDone` partial results
    named ``names[e]``.

    Example:
        >>> import numpy as np
        >>> Xs = [np.random.default_rng(s).normal(size=(100, 3)) for s in range(2)]
        >>> [f.model.features for f in train_flows(Xs, FlowConfig(flows=1, hidden=4, max_epochs=2), seed=1)]
        [3, 3]
    """
    Xs = [_check_table(X) for X in Xs]
    seed = secrets.randbits(31) if seed is None else int(seed)
    names = names or [f"model {e + 1}" for e in range(len(Xs))]
    dev = resolve_device(device)
    if len({X.shape for X in Xs}) > 1 or not batchable(config) or len(Xs) < 2 or dev != "cpu":
        return [
            train_flow(X, config, device=device, seed=seed, cancel=cancel, progress=_named(progress, n))
            for X, n in zip(Xs, names, strict=True)
        ]  # fmt: skip
    with cpu_threads(dev):
        return _train_batched(Xs, config, dev, seed, progress, cancel, names)


def _named(progress: ProgressFn, name: str) -> ProgressFn:
    """``progress`` with every :class:`EpochDone` named ``name``."""

    def inner(fraction: float, text: str, partial: Partial | None = None) -> None:
        if isinstance(partial, EpochDone):
            partial = replace(partial, model=name)
        report(progress, fraction, text, partial)

    return inner


def _train_batched(
    Xs: list[np.ndarray],
    config: FlowConfig,
    dev: str,
    seed: int,
    progress: ProgressFn,
    cancel: CancelToken,
    names: list[str],
) -> list[TrainedFlow]:
    E, (n, d) = len(Xs), Xs[0].shape
    train_idx, val_idx = _split(
        n, config.val_fraction, np.random.default_rng(seed), config.val_max_rows
    )
    Xtr = torch.as_tensor(np.stack([X[train_idx] for X in Xs]), dtype=torch.float32, device=dev)
    Xva = torch.as_tensor(np.stack([X[val_idx] for X in Xs]), dtype=torch.float32, device=dev)
    with _INIT_LOCK, torch.random.fork_rng(devices=[]):  # the initial weights of train_flow
        torch.manual_seed(seed)
        base = MAF(
            d, config.flows, config.hidden, config.layers, spectral_norm=config.spectral_norm,
            batch_norm=False, log_scale_bound=config.log_scale_bound,
        )  # fmt: skip
    white = [
        whitening(X[train_idx]) if config.whiten else (torch.zeros(d), torch.eye(d)) for X in Xs
    ]
    stack = _Stack(base.to(dev), E, white)
    live = stack.live()
    avg = [p.detach().clone() for p in live]
    lr = torch.full((E,), config.lr, device=dev)
    opt = _Adam(live, lr, config.weight_decay)
    gen = torch.Generator().manual_seed(seed)
    batch, ntr = config.effective_batch(len(train_idx)), len(train_idx)
    scheds = [  # the single training's plateau rule, on each member's rate
        PlateauSchedule(_MemberRate(lr, e), factor=0.5, patience=max(1, config.patience // 3),
                        min_lr=config.min_lr)
        for e in range(E)
    ]  # fmt: skip
    best, bad, best_epoch = np.full(E, math.inf), np.zeros(E, dtype=int), np.zeros(E, dtype=int)
    active = np.ones(E, dtype=bool)
    best_w = [a.clone() for a in avg]
    planned = np.full(E, min(config.max_epochs, config.patience))
    history: list[list[tuple[int, float, float]]] = [[] for _ in range(E)]
    shown, start = 0.0, time.perf_counter()
    for epoch in range(1, config.max_epochs + 1):
        cancel.raise_if_cancelled()
        began = time.perf_counter()
        Xs_ep = Xtr[:, torch.randperm(ntr, generator=gen).to(dev)]
        steps = math.ceil(ntr / batch)
        weight = min(0.1, max(1e-3, 1.0 / steps))
        total = torch.zeros(E, dtype=torch.float64)
        for step, xb in enumerate(Xs_ep.split(batch, dim=1)):
            if step % _CANCEL_EVERY == _CANCEL_EVERY - 1:
                cancel.raise_if_cancelled()
            stack.power_iteration_()
            loss = -stack.log_prob(xb).mean(-1)
            grads = torch.autograd.grad(loss.sum(), live)
            opt.step(list(grads))
            with torch.no_grad():
                torch._foreach_lerp_(avg, live, weight)
            total += loss.detach().double().cpu() * xb.shape[1]
        train_nll = (total / ntr).numpy()
        with torch.no_grad():
            val = (-stack.log_prob(Xva, stack.named(avg))).double().sum(-1).cpu().numpy() / Xva.shape[1]
        epochs_done = []
        # the plateau schedule and early stopping, per member
        for e in map(int, np.flatnonzero(active)):
            history[e].append((epoch, float(train_nll[e]), float(val[e])))
            scheds[e].step(float(val[e]))
            if val[e] < best[e] - MIN_DELTA:
                best[e], bad[e], best_epoch[e] = val[e], 0, epoch
                with torch.no_grad():
                    for mine, theirs in zip(best_w, avg, strict=True):
                        mine[e].copy_(theirs[e])
            else:
                bad[e] += 1
            planned[e] = min(config.max_epochs, int(best_epoch[e]) + config.patience)
            epochs_done.append((e, EpochDone(
                epoch, config.max_epochs, float(train_nll[e]), float(val[e]),
                time.perf_counter() - began, int(best_epoch[e]), int(planned[e]), names[e],
            )))  # fmt: skip
            if bad[e] >= config.patience or not math.isfinite(train_nll[e]):
                active[e] = False
                lr[e] = 0.0  # a member that stopped is carried along unchanged
        # each member's share done (a stopped one: all of it), towards where early stopping
        # will end it; never backwards
        share = np.where(active, epoch / np.maximum(planned, 1), 1.0)
        shown = max(shown, float(share.mean()))
        for e, done in epochs_done:
            text = (
                f"training flow ({names[e]}): epoch {epoch}/{config.max_epochs}, "
                f"training loss {train_nll[e]:.2f}, validation loss {val[e]:.2f}"
            )
            report(progress, shown, text, done)
        if not active.any():
            break
    seconds = time.perf_counter() - start
    P_best = stack.named(best_w)
    out = []
    for e in range(E):
        model = stack.member(e, P_best, stack.vectors)  # (u, v made exact below)
        model.exact_spectral_()
        rows = _row_nll(model, Xva[e])
        out.append(
            TrainedFlow(
                model=model.eval(),
                config=config,
                val_nll=float(rows.mean()),
                train_seconds=seconds / E,
                epochs=len(history[e]),
                device=dev,
                history=history[e],
                val_row_nll=rows,
            )  # fmt: skip
        )
    report(progress, 1.0, f"training flow: {E} models done")
    return out
