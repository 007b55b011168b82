"""Adam through torch's fused kernel, and a plateau learning-rate schedule, without ``torch.optim``.

Why by hand: every ``torch.optim.Optimizer`` method is wrapped by ``torch._disable_dynamo``,
whose first call imports ``torch._dynamo`` (the compiler): 1.3 s of CPU and 2.7 s of wall time
on a loaded 2-core machine, paid by every run, against 0.1-0.7 s for training the flow itself.
:class:`FusedAdam` calls the same fused kernel (``torch._fused_adam_``) that
``torch.optim.Adam(fused=True)`` calls, with the same state (float32 step counters, zeroed
moments created at the first step), so the weights after every step are bit-identical
(``tests/test_speed_invariants.py``). :class:`PlateauSchedule` is ``ReduceLROnPlateau``'s rule
(mode ``min``, relative threshold 1e-4, no cooldown, eps 1e-8).

References: Kingma & Ba (2015) Adam; torch.optim.Adam and
torch.optim.lr_scheduler.ReduceLROnPlateau.

Example:
    >>> import torch
    >>> p = torch.nn.Parameter(torch.tensor([1.0]))
    >>> opt = FusedAdam([p], lr=0.1)
    >>> (p * p).sum().backward(); opt.step(); round(float(p), 4)
    0.9
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

import torch


class FusedAdam:
    """Adam with L2 weight decay (not AdamW) on one parameter group, fused kernel."""

    def __init__(
        self,
        params: Sequence[torch.Tensor],
        *,
        lr: float,
        weight_decay: float = 0.0,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ) -> None:
        self.params = [p for p in params if p.requires_grad]
        self.lr, self.weight_decay, self.betas, self.eps = lr, weight_decay, betas, eps
        self.state: dict[int, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the gradients (always set to None, as ``torch.optim``'s default)."""
        for p in self.params:
            p.grad = None

    def _moments(self, p: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(step, exp_avg, exp_avg_sq) of ``p``, created at its first step as torch does."""
        if id(p) not in self.state:
            step = torch.zeros((), dtype=torch.float32, device=p.device)
            self.state[id(p)] = (
                step,
                torch.zeros_like(p, memory_format=torch.preserve_format),
                torch.zeros_like(p, memory_format=torch.preserve_format),
            )
        return self.state[id(p)]

    @torch.no_grad()
    def step(self) -> None:
        """One Adam update of every parameter that has a gradient."""
        live = [p for p in self.params if p.grad is not None]
        if not live:
            return
        steps, avgs, sqs = zip(*(self._moments(p) for p in live), strict=True)
        torch._foreach_add_(list(steps), 1)
        torch._fused_adam_(
            live,
            [p.grad for p in live if p.grad is not None],
            list(avgs),
            list(sqs),
            [],
            list(steps),
            amsgrad=False,
            lr=self.lr,
            beta1=self.betas[0],
            beta2=self.betas[1],
            weight_decay=self.weight_decay,
            eps=self.eps,
            maximize=False,
        )


class HasRate(Protocol):
    """What :class:`PlateauSchedule` adjusts: an optimizer's (or one member's) ``lr``."""

    lr: float


class PlateauSchedule:
    """Halve (``factor``) the learning rate after more than ``patience`` epochs without a
    relative improvement of 1e-4 in the monitored loss, never below ``min_lr``."""

    def __init__(self, opt: HasRate, *, factor: float, patience: int, min_lr: float) -> None:
        self.opt, self.factor, self.patience, self.min_lr = opt, factor, patience, min_lr
        self.best, self.bad_epochs = math.inf, 0

    def step(self, loss: float) -> None:
        """Record one epoch's monitored loss and lower the rate when it has plateaued."""
        if loss < self.best * (1.0 - 1e-4):
            self.best, self.bad_epochs = loss, 0
        else:
            self.bad_epochs += 1
        if self.bad_epochs > self.patience:
            new_lr = max(self.opt.lr * self.factor, self.min_lr)
            if self.opt.lr - new_lr > 1e-8:
                self.opt.lr = new_lr
            self.bad_epochs = 0
