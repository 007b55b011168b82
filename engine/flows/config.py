"""The architecture and training schedule of one MAF (:class:`FlowConfig`); training itself is
in :mod:`engine.flows.train`, which re-exports it.

Example:
    >>> FlowConfig(flows=3, hidden=32).label()
    '3 flows, 32 hidden x 1 layer'
"""

from __future__ import annotations

from dataclasses import dataclass, replace

MIN_BATCH, MAX_BATCH, STEPS_PER_EPOCH = 128, 4_096, 25
# The large-table recipe (:meth:`FlowConfig.on_step_budget`, issue 31): from
# STEP_BUDGET_FROM rows a table trains on a budget of steps, not of epochs (an epoch of a
# million rows is not needed to fit a 10-column flow). The audit's flows train with the same
# recipe as the released one.
STEP_BUDGET_FROM = 50_000
BUDGET_BATCH, BUDGET_STEPS, BUDGET_VAL_ROWS = 2_048, 50, 10_000  # rows a step, steps a round
BUDGET_EPOCHS, BUDGET_PATIENCE = 80, 4  # rounds at most, rounds without improvement
# An improvement of the validation NLL (nats a row) that counts as progress for early stopping
# on the step budget: a smaller one still updates the weights kept, but does not extend the
# training. With patience 8 and 1e-4 (before), on the 100,000-row survival table the last 8
# of 24 rounds gained 0.0002 nats between them (13.5814 -> 13.5812), and the audit's
# 40,000-row split flow had stopped improving at its 8th of 15 rounds (its last 7 rose by
# 0.005). Now (patience 4, so the learning rate halves after each round without a gain) they
# train 15 and 10 rounds (seed 0; validation NLL 13.5813 and 13.6200, as good as before to
# 0.0001), 12 and 11 rounds with seed 3 (0.0008 nats short of 18 rounds at patience 6).
BUDGET_MIN_DELTA = 2e-3
MIN_DELTA = 1e-4  # the epoch recipe's threshold (and the smallest gain kept as the best weights)


@dataclass(frozen=True)
class FlowConfig:
    """Architecture and training schedule of one MAF.

    ``batch_size=None``: about 25 steps per epoch, ``clip(n_train // 25, 128, 4096)`` rows
    (256 for an 8,000-row table; full batch below 128 training rows).

    ``input_noise``: standard deviation, in units of each column's SD, of Gaussian noise added
    to every training mini-batch (fresh each step; variance preserving, see ``noisy``;
    validation rows are left clean). A classic
    anti-memorization regulariser for density models (Bishop 1995, "Training with noise is
    equivalent to Tikhonov regularization"): the flow fits the data smoothed by a Gaussian
    kernel of that width instead of point masses at the training rows. 0: off.

    ``whiten``: start the flow from the Gaussian fitted to the training rows (a fixed linear
    first step, :func:`engine.flows.whiten.whitening`) instead of from independent columns.
    ``flows=0`` with ``whiten``: that Gaussian alone (no MADE layer, nothing to train), i.e. a
    Gaussian copula on the encoder's normal scores: the floor of the candidate family
    (:data:`engine.flows.select.GAUSSIAN`).

    References: Papamakarios et al. 2017; Germain et al. 2015; Miyato et al. 2018.

    Example:
        >>> FlowConfig(hidden=32).hidden
        32
    """

    flows: int = 5
    hidden: int = 64
    layers: int = 1
    spectral_norm: bool = True
    batch_norm: bool = False
    log_scale_bound: float = 3.0
    lr: float = 3e-3
    min_lr: float = 1e-7
    batch_size: int | None = None
    max_epochs: int = 300
    patience: int = 20
    val_fraction: float = 0.2
    weight_decay: float = 0.0
    input_noise: float = 0.0
    whiten: bool = True
    # a budget of steps (issue 31): each "epoch" is this many mini-batches drawn from successive
    # shuffles of the training rows, whatever their number (None: one pass over them)
    steps_per_epoch: int | None = None
    val_max_rows: int | None = None  # validation rows at most (a fixed seeded sample)
    # the validation gain (nats a row) that resets early stopping's patience; the weights kept
    # are those of the lowest validation NLL seen (to within MIN_DELTA) whatever this is
    min_delta: float = MIN_DELTA

    def on_step_budget(self) -> FlowConfig:
        """This architecture with the large-table recipe: :data:`BUDGET_BATCH` rows a step,
        :data:`BUDGET_STEPS` steps between validations on a fixed sample of at most
        :data:`BUDGET_VAL_ROWS` rows, at most :data:`BUDGET_EPOCHS` such rounds (early
        stopping after :data:`BUDGET_PATIENCE` rounds without a gain of
        :data:`BUDGET_MIN_DELTA` nats a row).

        Example:
            >>> cfg = FlowConfig().on_step_budget()
            >>> cfg.steps_per_epoch * cfg.max_epochs, cfg.effective_batch(800_000)
            (4000, 2048)
        """
        return replace(
            self,
            batch_size=BUDGET_BATCH,
            steps_per_epoch=BUDGET_STEPS,
            max_epochs=BUDGET_EPOCHS,
            patience=BUDGET_PATIENCE,
            val_max_rows=BUDGET_VAL_ROWS,
            min_delta=BUDGET_MIN_DELTA,
        )

    def effective_batch(self, n_train: int) -> int:
        """Rows per optimizer step for ``n_train`` training rows."""
        if self.batch_size is not None:
            return max(1, min(self.batch_size, n_train))
        return min(n_train, max(MIN_BATCH, min(MAX_BATCH, n_train // STEPS_PER_EPOCH)))

    def label(self) -> str:
        """Short human text, e.g. ``"5 flows, 64 hidden x 1 layer"``; no flow layer on a
        whitened start: ``"Gaussian copula (no flow layer)"``."""
        if self.flows == 0:
            return "Gaussian copula (no flow layer)" if self.whiten else "independent normal scores"
        unit = "layer" if self.layers == 1 else "layers"
        return f"{self.flows} flows, {self.hidden} hidden x {self.layers} {unit}"
