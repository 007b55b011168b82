"""Many small flows of one architecture trained as one (issue 45 item 1).

The audit trains one architecture on every fold of every round (:mod:`engine.privacy.rounds`).
Each network is tiny (2-5 MADE layers of 16-64 units): a step is some hundred torch calls of
microseconds, so Python's (on a GPU: launch) overhead is the cost. :func:`train_flows_together`
stacks B members' weights (:class:`engine.flows.stacked.StackedMAF`) and trains them in one
loop of batched operations, a step costing about what one member's step costs.

Each member follows :func:`engine.flows.train.train_flow`'s recipe for its own table and seed
exactly: the seed's split of its rows (any number of rows), its initial weights, its
whitening, its generator's mini-batch order and batch size, Adam, its own plateau learning
rate, the moving average of its weights, early stopping on its own validation rows (by
:class:`engine.flows.train.Stopping`), its best averaged weights restored and spectral-norm
vectors made exact. Members whose epochs have fewer or smaller mini-batches than another's
(unequal tables) are padded: the rows of a short batch are masked out of its loss, and a
member with no batch left in an epoch takes no step (its weights, Adam moments, step count,
average and power-iteration vectors unchanged). A member that stops is dropped from the
stack (the rest train on without its cost). Only the floating-point order of the batched
products' backward differs from one-by-one training (Adam is the same fused kernel), so each
member agrees with its single training to rounding (``tests/test_batched_training.py``).

Nothing is read back from the device between steps: losses are summed there, read once an epoch.

Trained one by one instead (:func:`batchable` False): batch normalization (its statistics
are per batch) and input noise (its per-step draws from each member's generator), and the
Gaussian copula (``flows=0``: nothing to train).

References: Papamakarios et al. 2017 (MAF); Kingma & Ba 2015 (Adam).

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> Xs = [rng.normal(size=(n, 2)) for n in (120, 121, 130)]
    >>> cfg = FlowConfig(flows=2, hidden=8, max_epochs=3)
    >>> flows = train_flows_together(Xs, cfg, seeds=[0, 1, 2])
    >>> [f.epochs for f in flows], [len(f.val_row_nll) for f in flows]
    ([3, 3, 3], [24, 24, 26])
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from engine.device import is_out_of_memory, resolve_device, seeded_determinism
from engine.errors import InputError
from engine.flows.adam import PlateauSchedule
from engine.flows.config import FlowConfig
from engine.flows.maf import MAF
from engine.flows.stacked import StackedAdam, StackedMAF, batch_index, padded
from engine.flows.train import (
    CANCEL_EVERY,
    Stopping,
    TrainedFlow,
    check_table,
    init_model,
    row_nll,
    split_indices,
    train_flow,
)
from engine.flows.trained import cpu_threads
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

__all__ = ["train_flows_together", "batchable"]


def batchable(config: FlowConfig) -> bool:
    """Whether :func:`train_flows_together` trains ``config``'s members as one network.

    Example:
        >>> batchable(FlowConfig(flows=2, hidden=16)), batchable(FlowConfig(flows=0))
        (True, False)
        >>> batchable(FlowConfig().on_step_budget()), batchable(FlowConfig(input_noise=0.3))
        (True, False)
    """
    return config.flows > 0 and not config.batch_norm and config.input_noise <= 0.0


@dataclass
class _Member:
    """One member's rows, generator, schedule, early stopping and record (host side)."""

    name: str
    model: MAF
    Xtr: torch.Tensor
    Xva: torch.Tensor
    batch: int
    gen: torch.Generator
    rate: _Rate
    sched: PlateauSchedule
    stop: Stopping
    best: torch.Tensor  # the weights kept (a row of the stack's flat weights)
    history: list[tuple[int, float, float]] = field(default_factory=list)
    shown: float = 0.0

    def order(self, steps: int | None) -> torch.Tensor:
        """This epoch's training rows in mini-batch order, drawn as ``train_flow`` draws them."""
        n = len(self.Xtr)
        if steps is None:
            return torch.randperm(n, generator=self.gen)
        need = steps * self.batch
        perms = [torch.randperm(n, generator=self.gen) for _ in range(-(-need // n))]
        return torch.cat(perms)[:need]


class _Rate:
    """One member's learning rate, as the ``lr`` that :class:`PlateauSchedule` adjusts."""

    def __init__(self, lr: float) -> None:
        self.lr = lr


def train_flows_together(
    tables: Sequence[np.ndarray],
    config: FlowConfig,
    *,
    device: str = "auto",
    seeds: Sequence[int | None] | None = None,
    progress: ProgressFn = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
    names: Sequence[str] | None = None,
) -> list[TrainedFlow]:
    """One flow of architecture ``config`` on each table (the same columns, any rows), each
    as :func:`engine.flows.train.train_flow` would train it with its seed (``seeds[i]``;
    None: drawn from the operating system), trained together as one batched network
    (module docstring); a recipe that is not :func:`batchable`, or one table, is trained one
    by one. Each member's epochs are reported as :class:`EpochDone` partial results named
    ``names[i]``. A GPU that runs out of memory: trained on the CPU instead (``device_note``).

    Example:
        >>> import numpy as np
        >>> Xs = [np.random.default_rng(s).normal(size=(100, 3)) for s in range(2)]
        >>> cfg = FlowConfig(flows=1, hidden=4, max_epochs=2)
        >>> [f.model.features for f in train_flows_together(Xs, cfg, seeds=[1, 1])]
        [3, 3]
    """
    Xs = [check_table(X) for X in tables]
    if len({X.shape[1] for X in Xs}) > 1:
        raise InputError("the tables of flows trained together must have the same columns")
    given = list(seeds) if seeds is not None else [None] * len(Xs)
    if len(given) != len(Xs):
        raise InputError(f"{len(given)} seeds for {len(Xs)} tables")
    seeded = all(s is not None for s in given)
    seed_list = [secrets.randbits(31) if s is None else int(s) for s in given]
    labels = list(names) if names is not None else [f"model {i + 1}" for i in range(len(Xs))]
    if len(Xs) < 2 or not batchable(config):
        return [
            train_flow(
                X, config, device=device, seed=s, cancel=cancel, progress=_named(progress, n)
            )
            for X, s, n in zip(Xs, seed_list, labels, strict=True)
        ]
    choice = resolve_device(device)
    notes = [choice.note] if choice.note else []
    try:
        flows = _on_device(Xs, config, choice.device, seed_list, seeded, labels, progress, cancel)
    except Exception as err:
        if not (choice.device.startswith("cuda") and is_out_of_memory(err)):
            raise
        torch.cuda.empty_cache()
        notes.append("the GPU ran out of memory, so the flows were trained on the CPU")
        flows = _on_device(Xs, config, "cpu", seed_list, seeded, labels, progress, cancel)
    for f in flows:
        f.device_note = "; ".join(notes) or None
    return flows


def _named(progress: ProgressFn, name: str) -> ProgressFn:
    """``progress`` with every :class:`EpochDone` named ``name``."""

    def inner(fraction: float, text: str, partial: Partial | None = None) -> None:
        if isinstance(partial, EpochDone):
            partial = replace(partial, model=name)
        report(progress, fraction, text, partial)

    return inner


def _member(X: np.ndarray, config: FlowConfig, seed: int, name: str, dev: str) -> _Member:
    """Member setup exactly as ``train_flow``'s for this table and seed."""
    train_idx, val_idx = split_indices(
        len(X), config.val_fraction, np.random.default_rng(seed), config.val_max_rows
    )
    model = init_model(config, X.shape[1], seed)
    if config.whiten:
        model.set_whitening(*whitening(X[train_idx]))
    model = model.to(dev)
    rate = _Rate(config.lr)
    n_train = len(train_idx)
    return _Member(
        name=name,
        model=model,
        Xtr=torch.as_tensor(X[train_idx], dtype=torch.float32, device=dev),
        Xva=torch.as_tensor(X[val_idx], dtype=torch.float32, device=dev),
        batch=config.effective_batch(n_train),
        gen=torch.Generator().manual_seed(seed),
        rate=rate,
        sched=PlateauSchedule(
            rate, factor=0.5, patience=max(1, config.patience // 3), min_lr=config.min_lr
        ),
        stop=Stopping(config),
        best=torch.empty(0),
    )


def _on_device(
    Xs: list[np.ndarray],
    config: FlowConfig,
    dev: str,
    seeds: list[int],
    seeded: bool,
    names: list[str],
    progress: ProgressFn,
    cancel: CancelToken,
) -> list[TrainedFlow]:
    with cpu_threads(dev), seeded_determinism(dev, seeded):
        members = [_member(X, config, s, n, dev) for X, s, n in zip(Xs, seeds, names, strict=True)]
        start = time.perf_counter()
        _train(members, config, dev, progress, cancel)
        seconds = time.perf_counter() - start
        out = []
        for m in members:
            m.model.exact_spectral_()  # make the spectral bound exact for the weights kept
            rows = row_nll(m.model, m.Xva)
            out.append(
                TrainedFlow(
                    model=m.model.eval(),
                    config=config,
                    val_nll=float(rows.mean()),
                    train_seconds=seconds / len(members),
                    epochs=len(m.history),
                    device=dev,
                    history=m.history,
                    val_row_nll=rows,
                )
            )
    report(progress, 1.0, f"training flow: {len(members)} models done")
    return out


def _train(
    members: list[_Member],
    config: FlowConfig,
    dev: str,
    progress: ProgressFn,
    cancel: CancelToken,
) -> None:
    """The epoch loop of all members; leaves each member's best weights in its model."""
    live = list(members)
    stack = StackedMAF([m.model for m in live])
    opt = StackedAdam(stack, config.weight_decay)
    average = stack.flat.detach().clone()
    for i, m in enumerate(live):
        m.best = average[i].clone()  # the initial weights, kept if nothing improves
    Xtr, _ = padded([m.Xtr for m in live])
    Xva, n_val = padded([m.Xva for m in live])
    for epoch in range(1, config.max_epochs + 1):
        cancel.raise_if_cancelled()
        began = time.perf_counter()
        B = len(live)
        orders = [m.order(config.steps_per_epoch) for m in live]
        index, rows = batch_index(orders, [m.batch for m in live], dev)
        picked = Xtr[torch.arange(B, device=dev)[:, None], index.view(B, -1)]
        batches = picked.view(B, index.shape[1], index.shape[2], -1)
        counts = torch.as_tensor(rows, dtype=torch.float32, device=dev)
        stepping = torch.as_tensor(rows > 0, device=dev)
        # the moving average's weight for a step, per member (its horizon: one epoch)
        per_step = np.clip(1.0 / np.maximum((rows > 0).sum(1), 1), 1e-3, 0.1)
        weights = torch.as_tensor(per_step, dtype=torch.float32, device=dev)[:, None]
        lr = [m.rate.lr for m in live]
        total = torch.zeros(B, dtype=torch.float64, device=dev)
        for s in range(index.shape[1]):
            if s % CANCEL_EVERY == CANCEL_EVERY - 1:
                cancel.raise_if_cancelled()
            at = (batches[:, s], rows[:, s], counts[:, s], stepping[:, s])
            total += _step(stack, opt, average, *at, lr, weights)
        with torch.no_grad():  # the one read from the device in an epoch
            val = _val_sums(stack, average, Xva, n_val)
            both = torch.stack([total / counts.sum(1).double(), val]).cpu().numpy()
        ended = [
            _end_epoch(m, i, epoch, float(both[0, i]), float(both[1, i]), average)
            for i, m in enumerate(live)
        ]
        _report_epoch(members, live, epoch, config, time.perf_counter() - began, progress)
        if any(ended):
            for m in (m for m, e in zip(live, ended, strict=True) if e):
                stack.write(m.model, m.best)
            keep = [i for i, e in enumerate(ended) if not e]
            if not keep:
                return
            slots = torch.tensor(keep, device=dev)
            stack.keep(slots)
            opt.keep(slots)  # (after the stack: views of its new weights)
            average = average[slots]
            Xtr, Xva, n_val = Xtr[slots], Xva[slots], n_val[keep]
            live = [live[i] for i in keep]
    for m in live:
        stack.write(m.model, m.best)


def _step(
    stack: StackedMAF,
    opt: StackedAdam,
    average: torch.Tensor,
    xb: torch.Tensor,
    rows: np.ndarray,
    counts: torch.Tensor,
    has_rows: torch.Tensor,
    lr: list[float],
    weights: torch.Tensor,
) -> torch.Tensor:
    """One optimizer step of every member with rows in this step (``rows``: host side, so
    the choice of path needs no read from the device); returns the summed training NLL of
    each member's batch (on the device, not read)."""
    wide = int(rows.max())
    stepping = None if (rows == wide).all() else has_rows
    stack.power_iteration_(stepping)
    lp = stack.log_prob(xb[:, :wide])
    if stepping is None:  # every member's batch has the same rows: a plain mean
        loss = -lp.mean(-1)
    else:  # a short batch's padding rows out of its mean; no rows: no loss
        mask = torch.arange(wide, device=xb.device)[None, :] < counts[:, None]
        loss = -torch.where(mask, lp, 0.0).sum(-1) / counts.clamp(min=1.0)
    (grad,) = torch.autograd.grad(loss.sum(), [stack.flat])
    opt.step(grad, lr, rows > 0)
    with torch.no_grad():
        w = weights if stepping is None else torch.where(stepping[:, None], weights, 0.0)
        average.lerp_(stack.flat.detach(), w)
    return loss.detach().double() * counts


def _val_sums(
    stack: StackedMAF, average: torch.Tensor, Xva: torch.Tensor, n_val: torch.Tensor
) -> torch.Tensor:
    """Each member's mean validation NLL with its averaged weights (on the device)."""
    nll = -stack.log_prob(Xva, average).double()
    n = n_val.to(nll.device)
    mask = torch.arange(Xva.shape[1], device=nll.device)[None, :] < n[:, None]
    return torch.where(mask, nll, 0.0).sum(1) / n.double()


def _end_epoch(
    m: _Member,
    slot: int,
    epoch: int,
    train_nll: float,
    val_nll: float,
    average: torch.Tensor,
) -> bool:
    """One member's schedule, best weights and early stopping after an epoch; True: stop."""
    m.history.append((epoch, train_nll, val_nll))
    m.sched.step(val_nll)
    if m.stop.update(epoch, val_nll):
        m.best = average[slot].detach().clone()
    m.shown = max(m.shown, epoch / m.stop.planned())
    return m.stop.done(train_nll)


def _report_epoch(
    members: list[_Member],
    live: list[_Member],
    epoch: int,
    config: FlowConfig,
    seconds: float,
    progress: ProgressFn,
) -> None:
    """Each live member's epoch as an :class:`EpochDone` under its name; the fraction done is
    the members' mean share, a stopped member's all of it (so never backwards)."""
    shown = float(np.mean([m.shown if m in live else 1.0 for m in members]))
    for m in live:
        _, train_nll, val_nll = m.history[-1]
        done = EpochDone(
            epoch,
            config.max_epochs,
            train_nll,
            val_nll,
            seconds,
            m.stop.best_epoch,
            m.stop.planned(),
            m.name,
        )
        text = (
            f"training flow ({m.name}): epoch {epoch}/{config.max_epochs}, "
            f"training loss {train_nll:.2f}, validation loss {val_nll:.2f}"
        )
        report(progress, shown, text, done)
