"""Training of one MAF and the trained model's numpy interface (see ``engine/flows/select.py``).

* ``FlowConfig``: architecture and schedule (:mod:`engine.flows.config`, re-exported here).
* ``train_flow``: Adam (fused kernel, :mod:`engine.flows.adam`), 80/20 seeded split, a plateau
  schedule down to ``min_lr``, early stopping on the validation NLL of an exponential moving
  average of the weights (patience reset by a gain of ``min_delta``), best (averaged) weights
  restored, spectral-norm vectors made exact at the end; each epoch also reported as an
  :class:`engine.progress.EpochDone` partial result.
* ``TrainedFlow``: ``to_latent`` / ``from_latent`` on float64 numpy arrays (float32 on the
  device, chunks of 16,384 rows; docs/pitfalls.md), non-finite output rows counted in
  ``last_nonfinite``.

References: Papamakarios et al. 2017 (MAF); Germain et al. 2015 (MADE); Miyato et al. 2018
(spectral normalization); main paper section 4.2.

Example:
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(300, 2))
    >>> flow = train_flow(X, FlowConfig(flows=2, hidden=8, max_epochs=3), seed=0)
    >>> bool(np.allclose(flow.from_latent(flow.to_latent(X)), X, atol=1e-4))
    True
"""

from __future__ import annotations

import copy
import math
import secrets
import threading
import time

import numpy as np
import torch

from engine.device import is_out_of_memory, seeded_determinism
from engine.device import resolve_device as resolve_device_choice
from engine.errors import InputError
from engine.flows.adam import FusedAdam, PlateauSchedule
from engine.flows.config import MIN_DELTA, FlowConfig
from engine.flows.maf import MAF
from engine.flows.noise import noise_stats, noisy  # noqa: F401  (noisy re-exported)
from engine.flows.trained import (  # noqa: F401 (re-exported)
    CHUNK_ROWS,
    CPU_THREADS,
    TrainedFlow,
    cpu_threads,
)
from engine.flows.whiten import whitening
from engine.progress import (
    NEVER_CANCELLED,
    CancelToken,
    EpochDone,
    ProgressFn,
    no_progress,
    report,
)

__all__ = [
    "FlowConfig",
    "TrainedFlow",
    "train_flow",
    "resolve_device",
    "cpu_threads",
    "check_table",
    "row_nll",
    "split_indices",
    "init_model",
    "Stopping",
    "INIT_LOCK",
    "CANCEL_EVERY",
]

CANCEL_EVERY = 50  # training steps between two cancel checks
# a model trained on a thread beside another (engine.pipeline.final_model) seeds its initial
# weights from torch's global generator: one at a time
INIT_LOCK = threading.Lock()
_INIT_LOCK, _CANCEL_EVERY = INIT_LOCK, CANCEL_EVERY  # the names other modules imported before


def resolve_device(device: str) -> str:
    """``"auto"`` -> ``"cuda"`` when a probed GPU runs kernels, else ``"cpu"``; an explicit
    ``"cuda"`` that cannot run raises :class:`InputError` naming the cause (engine/device.py)."""
    return resolve_device_choice(device).device


def check_table(X: np.ndarray) -> np.ndarray:
    """``X`` as float64, or :class:`InputError` saying why it cannot be trained on."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] < 1:
        raise InputError(
            f"the model table must be 2-D with at least one column; got shape {X.shape}"
        )
    if X.shape[0] < 10:
        raise InputError(f"only {X.shape[0]} complete rows; the flow needs at least 10 rows")
    bad = ~np.isfinite(X).all(axis=1)
    if bad.any():
        raise InputError(
            f"the model table has {int(bad.sum())} rows with missing or infinite values "
            f"(first: row {int(np.argmax(bad))}); drop or encode them first"
        )
    return X


def row_nll(model: MAF, X: torch.Tensor) -> np.ndarray:
    """Negative log-likelihood of each row (float64, evaluation mode)."""
    model.eval()
    with torch.no_grad():
        parts = [-model.log_prob(chunk).double().cpu().numpy() for chunk in X.split(CHUNK_ROWS)]
    return np.concatenate(parts) if parts else np.empty(0)


def _mean_nll(model: MAF, X: torch.Tensor) -> float:
    return float(row_nll(model, X).sum()) / max(len(X), 1)


def _make_optimizer(model: MAF, config: FlowConfig) -> FusedAdam:
    """Adam on the non-empty parameters (the fused kernel, without ``torch.optim``'s
    one-off 1.3 s import of the compiler: :mod:`engine.flows.adam`)."""
    params = [p for p in model.parameters() if p.numel() > 0]
    return FusedAdam(params, lr=config.lr, weight_decay=config.weight_decay)


def split_indices(
    n: int, val_fraction: float, rng: np.random.Generator, val_max: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Seeded (train, validation) row indices; at most ``val_max`` validation rows."""
    n_val = min(max(1, int(round(n * val_fraction))), n - 1, val_max or n)
    perm = rng.permutation(n)
    return perm[n_val:], perm[:n_val]


_row_nll = row_nll  # (the name imported before)


def init_model(config: FlowConfig, features: int, seed: int) -> MAF:
    """The untrained MAF of ``config`` with ``seed``'s initial weights (torch's global generator
    forked, so the caller's random state is untouched; one thread at a time)."""
    with INIT_LOCK, torch.random.fork_rng(devices=[]):  # torch's seed is process-wide
        torch.manual_seed(seed)
        return MAF(
            features,
            config.flows,
            config.hidden,
            config.layers,
            spectral_norm=config.spectral_norm,
            batch_norm=config.batch_norm,
            log_scale_bound=config.log_scale_bound,
        )


class Stopping:
    """Early stopping of :func:`train_flow`, one model's bookkeeping (shared with the batched
    trainer, :mod:`engine.flows.batched`, so both stop by the same rule): the best validation
    NLL (a gain of :data:`MIN_DELTA` keeps new weights), the last one that counted as progress
    (a gain of ``config.min_delta`` resets the patience), and the epochs without it."""

    def __init__(self, config: FlowConfig) -> None:
        self.config = config
        self.best, self.best_epoch, self.bad_epochs = math.inf, 0, 0
        self.mark, self.mark_epoch = math.inf, 0  # the last validation NLL counted as progress

    def update(self, epoch: int, val_nll: float) -> bool:
        """Record an epoch's validation NLL; True when its weights are the new best."""
        better = val_nll < self.best - MIN_DELTA
        if better:
            self.best, self.best_epoch = val_nll, epoch
        if val_nll < self.mark - self.config.min_delta:
            self.mark, self.mark_epoch, self.bad_epochs = val_nll, epoch, 0
        else:
            self.bad_epochs += 1
        return better

    def planned(self) -> int:
        """Where early stopping will end the training if nothing improves again: the fraction
        of the progress bar counts towards it (not max_epochs, which is rarely reached)."""
        return min(self.config.max_epochs, self.mark_epoch + self.config.patience)

    def done(self, train_nll: float) -> bool:
        """Whether to stop after this epoch (patience spent, or the training loss diverged)."""
        return self.bad_epochs >= self.config.patience or not math.isfinite(train_nll)


def _train_epoch(
    model: MAF,
    opt: FusedAdam,
    Xtr: torch.Tensor,
    batch: int,
    gen: torch.Generator,
    cancel: CancelToken,
    average: MAF,
    noise: tuple[float, torch.Tensor, torch.Tensor] | None = None,
    steps: int | None = None,
) -> float:
    """One pass over the shuffled training rows (``steps``: exactly that many mini-batches
    from successive shuffles instead); returns the mean training NLL.

    ``average`` receives an exponential moving average of the weights (horizon about one
    epoch), which removes most of the mini-batch noise from the weights we evaluate and keep.
    """
    model.train()
    n = len(Xtr)
    if steps is None:
        perm = torch.randperm(n, generator=gen)
    else:
        need = steps * batch
        perm = torch.cat([torch.randperm(n, generator=gen) for _ in range(-(-need // n))])[:need]
    Xs = Xtr[perm.to(Xtr.device)]
    steps = math.ceil(len(Xs) / batch)
    weight = min(0.1, max(1e-3, 1.0 / steps))
    live: list[torch.Tensor] = [p for p in model.parameters() if p.numel() > 0]
    avg: list[torch.Tensor] = [p for p in average.parameters() if p.numel() > 0]
    total = 0.0
    for step, xb in enumerate(Xs.split(batch)):
        if step % CANCEL_EVERY == CANCEL_EVERY - 1:
            cancel.raise_if_cancelled()
        model.power_iteration_()
        if noise is not None:
            xb = noisy(xb, noise, gen)
        loss = -model.log_prob(xb).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        with torch.no_grad():
            torch._foreach_lerp_(avg, live, weight)
        total += float(loss.detach()) * len(xb)
    with torch.no_grad():
        for mine, theirs in zip(average.buffers(), model.buffers(), strict=True):
            mine.copy_(theirs)
    return total / len(Xs)


def _fit(
    model: MAF,
    config: FlowConfig,
    Xtr: torch.Tensor,
    Xva: torch.Tensor,
    seed: int,
    progress: ProgressFn,
    cancel: CancelToken,
) -> tuple[list[tuple[int, float, float]], float]:
    """The epoch loop; leaves the best weights in ``model``. Returns (history, seconds)."""
    gen, opt = torch.Generator().manual_seed(seed), _make_optimizer(model, config)
    sched = PlateauSchedule(
        opt, factor=0.5, patience=max(1, config.patience // 3), min_lr=config.min_lr
    )
    batch = config.effective_batch(len(Xtr))
    noise = noise_stats(config, Xtr)
    average = copy.deepcopy(model)
    best_state, stop = copy.deepcopy(model.state_dict()), Stopping(config)
    history: list[tuple[int, float, float]] = []
    shown, start = 0.0, time.perf_counter()
    for epoch in range(1, config.max_epochs + 1):
        cancel.raise_if_cancelled()
        began = time.perf_counter()
        train_nll = _train_epoch(
            model, opt, Xtr, batch, gen, cancel, average, noise, config.steps_per_epoch
        )
        val_nll = _mean_nll(average, Xva)
        history.append((epoch, train_nll, val_nll))
        sched.step(val_nll)
        if stop.update(epoch, val_nll):
            best_state = copy.deepcopy(average.state_dict())
        # the fraction counts towards where early stopping will end (not max_epochs, which is
        # rarely reached), so time left estimated from it is not inflated; never backwards
        planned = stop.planned()
        shown = max(shown, epoch / planned)
        done = EpochDone(
            epoch,
            config.max_epochs,
            train_nll,
            val_nll,
            time.perf_counter() - began,
            stop.best_epoch,
            planned,
        )
        report(
            progress,
            shown,
            f"training flow: epoch {epoch}/{config.max_epochs}, training loss {train_nll:.2f}, "
            f"validation loss {val_nll:.2f}",
            done,
        )
        if stop.done(train_nll):
            break
    model.load_state_dict(best_state)
    model.exact_spectral_()  # make the spectral bound exact for the weights we keep
    return history, time.perf_counter() - start


def _stage(config: FlowConfig) -> str:
    """What is being done, for the progress lines: a flow is trained, a copula fitted."""
    if config.flows == 0:
        what = "Gaussian copula" if config.whiten else "independent normal model"
        return f"fitting the {what}"
    return "training flow"


def done_text(config: FlowConfig, epochs: int, val_loss: float) -> str:
    """The progress line once a model is fitted: what was fitted, in plain words (issue 44: a
    copula is fitted, not trained, so no "training flow: done after 0 epochs").

    Example:
        >>> done_text(FlowConfig(flows=0, whiten=True), 0, 8.41)
        'fitting the Gaussian copula: done, validation loss 8.41'
        >>> done_text(FlowConfig(flows=3, hidden=32), 41, 8.12)
        'training flow: done after 41 epochs, validation loss 8.12'
    """
    if config.flows == 0:
        return f"{_stage(config)}: done, validation loss {val_loss:.2f}"
    unit = "epoch" if epochs == 1 else "epochs"
    return f"training flow: done after {epochs} {unit}, validation loss {val_loss:.2f}"


def train_flow(
    X: np.ndarray,
    config: FlowConfig = FlowConfig(),  # noqa: B008 (frozen)
    *,
    device: str = "auto",
    seed: int | None = None,
    progress: ProgressFn = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
) -> TrainedFlow:
    """Fit a MAF to the rows of ``X`` (n x d, already encoded) by maximum likelihood.

    Deterministic on CPU for a given ``seed`` (split, initialization and batch order); on the
    GPU a seed also turns on PyTorch's deterministic algorithms (same GPU and versions, same
    numbers). ``seed=None`` draws one from the operating system's secure randomness.
    ``device="auto"`` falls back to the CPU when the GPU probe fails, and a GPU run that runs
    out of memory is retried on the CPU; either reason is kept in ``device_note``.

    References: Papamakarios et al. 2017; main paper section 4.2 (Adam, lr floor 1e-7,
    80/20 validation split with early stopping).

    Example:
        >>> import numpy as np
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> train_flow(X, FlowConfig(flows=1, hidden=4, max_epochs=2), seed=0).epochs
        2
    """
    X = check_table(X)
    choice = resolve_device_choice(device)
    seeded = seed is not None
    seed = secrets.randbits(31) if seed is None else int(seed)
    notes = [choice.note] if choice.note else []
    if choice.note:
        progress(0.0, f"{_stage(config)}: {choice.note}")
    try:
        flow = _train_on(X, config, choice.device, seed, seeded, progress, cancel)
    except Exception as err:
        if not (choice.device.startswith("cuda") and is_out_of_memory(err)):
            raise
        torch.cuda.empty_cache()
        notes.append("the GPU ran out of memory, so the flow was trained on the CPU")
        progress(0.0, f"{_stage(config)}: {notes[-1]}; starting again")
        flow = _train_on(X, config, "cpu", seed, seeded, progress, cancel)
    flow.device_note = "; ".join(notes) or None
    return flow


def _train_on(
    X: np.ndarray,
    config: FlowConfig,
    dev: str,
    seed: int,
    seeded: bool,
    progress: ProgressFn,
    cancel: CancelToken,
) -> TrainedFlow:
    """``train_flow`` on one resolved device."""
    train_idx, val_idx = split_indices(
        len(X), config.val_fraction, np.random.default_rng(seed), config.val_max_rows
    )
    Xtr = torch.as_tensor(X[train_idx], dtype=torch.float32, device=dev)
    Xva = torch.as_tensor(X[val_idx], dtype=torch.float32, device=dev)
    model = init_model(config, X.shape[1], seed)
    if config.whiten:
        model.set_whitening(*whitening(X[train_idx]))
    model = model.to(dev)
    with cpu_threads(dev), seeded_determinism(dev, seeded):
        if config.flows > 0:
            history, seconds = _fit(model, config, Xtr, Xva, seed, progress, cancel)
            rows = row_nll(model, Xva)
        else:  # the whitened Gaussian alone: nothing to train; scored on rows it did not see,
            history, seconds, rows = [], 0.0, row_nll(model, Xva)  # then refitted on all rows
            if config.whiten:
                model.set_whitening(*(t.to(dev) for t in whitening(X)))
    final = float(rows.mean()) if len(rows) else math.nan
    progress(1.0, done_text(config, len(history), final))
    return TrainedFlow(
        model=model.eval(),
        config=config,
        val_nll=final,
        train_seconds=seconds,
        epochs=len(history),
        device=dev,
        history=history,
        val_row_nll=rows,
    )
