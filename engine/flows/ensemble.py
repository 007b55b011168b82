"""Several flows of one architecture trained at once with one seed: the audit's hook (issue
31), now :func:`engine.flows.batched.train_flows_together` with the same seed for every member.

The audit of a table trains the same architecture on every fold of every round
(:mod:`engine.privacy.rounds`), each fold's model with the run's seed, as the family's ``fit``
would train it alone (:func:`engine.flows.select.select_flow` with the chosen architecture).
:func:`train_flows` trains them as one batched network instead: folds of any size (a table
whose rows do not divide by five has folds of two sizes), on the CPU or the GPU, the
large-table step budget included. Batch normalization, input noise and the Gaussian copula
are trained one by one (:func:`batchable`).

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> Xs = [rng.normal(size=(120, 2)) for _ in range(3)]
    >>> flows = train_flows(Xs, FlowConfig(flows=2, hidden=8, max_epochs=3), seed=0)
    >>> [f.epochs for f in flows], flows[0].config.flows
    ([3, 3, 3], 2)
"""

from __future__ import annotations

import secrets

import numpy as np

from engine.flows.batched import batchable, train_flows_together
from engine.flows.config import FlowConfig
from engine.flows.trained import TrainedFlow
from engine.progress import NEVER_CANCELLED, CancelToken, ProgressFn, no_progress

__all__ = ["train_flows", "batchable"]


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
    """One flow of architecture ``config`` on each table of ``Xs`` (the same columns), each
    as :func:`engine.flows.train.train_flow` trains it with ``seed`` (one seed for all, drawn
    once when None), trained together (:func:`engine.flows.batched.train_flows_together`).
    Each member's epochs are reported as :class:`engine.progress.EpochDone` partial results
    named ``names[e]``.

    Example:
        >>> import numpy as np
        >>> Xs = [np.random.default_rng(s).normal(size=(100 + s, 3)) for s in range(2)]
        >>> cfg = FlowConfig(flows=1, hidden=4, max_epochs=2)
        >>> [f.model.features for f in train_flows(Xs, cfg, seed=1)]
        [3, 3]
    """
    seed = secrets.randbits(31) if seed is None else int(seed)
    return train_flows_together(
        Xs,
        config,
        device=device,
        seeds=[seed] * len(Xs),
        progress=progress,
        cancel=cancel,
        names=names,
    )
