"""A trained MAF's numpy interface (:class:`TrainedFlow`) and the CPU thread settings of the
flows' torch work (:func:`cpu_threads`); training itself is :mod:`engine.flows.train`, which
re-exports both.

``to_latent`` / ``from_latent`` take and give float64 numpy arrays (float32 on the device, in
chunks of 16,384 rows; docs/pitfalls.md) and count non-finite output rows in ``last_nonfinite``.

References: Papamakarios et al. 2017 (MAF).

Example:
    >>> with cpu_threads("cpu", 1):
    ...     import torch; torch.get_num_threads()
    1
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from engine.errors import InputError
from engine.flows.config import FlowConfig
from engine.flows.maf import MAF
from engine.threads import torch_threads

# Rows per chunk of a map. (The chunks of a large map on two threads were tried: the
# release's million rows decoded no faster beside the real model's fit, and the threads'
# allocations raised the run's peak memory by 50 MiB.)
CHUNK_ROWS = 16_384
CPU_THREADS = 1


def cpu_threads(device: str, n: int = CPU_THREADS) -> Any:
    """Run the block with at most ``n`` intra-op CPU threads in this thread (restored
    afterwards; :func:`engine.threads.torch_threads`).

    These networks are small (512 x 64 matrices): on a busy 2-core machine one thread trained
    an epoch in 0.08 s and two threads in 3-4 s (OpenMP threads spinning against other work).
    """
    import torch

    if device != "cpu" or torch.get_num_threads() <= n:
        return contextlib.nullcontext()
    return torch_threads(n)


@dataclass
class TrainedFlow:
    """A trained MAF with numpy in/out (read-only by convention).

    References: Papamakarios et al. 2017.

    Example:
        >>> import numpy as np
        >>> from engine.flows.train import train_flow
        >>> flow = train_flow(np.random.default_rng(1).normal(size=(200, 3)),
        ...                   FlowConfig(flows=1, hidden=4, max_epochs=1), seed=1)
        >>> sorted(flow.to_dict())[:3]
        ['batch_size', 'device', 'device_note']
    """

    model: MAF
    config: FlowConfig
    val_nll: float
    train_seconds: float
    epochs: int
    device: str
    history: list[tuple[int, float, float]] = field(default_factory=list)
    last_nonfinite: int = 0
    device_note: str | None = None  # why not the requested device (GPU unusable, out of memory)
    # each validation row's NLL (before a Gaussian is refitted on all rows): the model choice
    val_row_nll: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False)

    def _map(self, A: np.ndarray, forward: bool) -> np.ndarray:
        A = np.asarray(A, dtype=np.float64)
        if A.ndim != 2 or A.shape[1] != self.model.features:
            raise InputError(
                f"expected a table with {self.model.features} model columns, got shape {A.shape}"
            )
        out = np.empty_like(A)
        self.model.eval()
        with torch.no_grad(), cpu_threads(self.device):
            for start in range(0, len(A), CHUNK_ROWS):
                t = torch.from_numpy(A[start : start + CHUNK_ROWS]).to(self.device, torch.float32)
                r = self.model.to_latent(t)[0] if forward else self.model.from_latent(t)
                out[start : start + CHUNK_ROWS] = r.cpu().numpy()
        self.last_nonfinite = int((~np.isfinite(out).all(axis=1)).sum())
        return out

    def to_latent(self, X: np.ndarray) -> np.ndarray:
        """Model-space rows -> latent codes (float64); counts non-finite rows."""
        return self._map(X, forward=True)

    def from_latent(self, Z: np.ndarray) -> np.ndarray:
        """Latent codes -> model-space rows (float64); counts non-finite rows."""
        return self._map(Z, forward=False)

    def to_dict(self) -> dict[str, Any]:
        """The ``model`` block of the run record (docs/contracts.md)."""
        return {
            "flows": self.config.flows,
            "hidden": self.config.hidden,
            "layers": self.config.layers,
            "val_nll": self.val_nll,
            "device": self.device,
            "device_note": self.device_note,
            "train_seconds": self.train_seconds,
            "whitened": self.config.whiten,
            "epochs": self.epochs,
            "steps_per_epoch": self.config.steps_per_epoch,  # None: a pass over all rows
            "batch_size": self.config.batch_size,  # None: about 25 steps a pass
        }
