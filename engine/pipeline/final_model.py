"""The final model trained on a thread while the audit scores the rest of its grid (issue 31).

The final model (every row, the audited architecture, the run's seed) does not depend on what
the audit finds above the smallest w: once the family audit has chosen its candidate there
(:func:`engine.privacy.family.run_family_audit` calls ``on_chosen``), the architecture is known.
On a large table (a family of the copula and one flow) it is known before: the pipeline starts
that flow while the audit trains its own first split's flow (``engine.pipeline.synthesize_step``;
both train on one core, :data:`engine.flows.train.CPU_THREADS`, so the two cores of a small
workstation each hold one), and stops it if the audit then chooses the copula.
Measured (2 cores, two budget-recipe trainings of 40,000 and 100,000 rows): one after the other
12.3 s, side by side 6.3 s, the same weights. Beside the audit's grid (which keeps both cores
busy part of the time) the gain is smaller: a training beside the density sums ran at 48 % of
its speed and the sums at 62 % of theirs. The flow is the same as one trained after
the audit: the same rows, seed and recipe on one thread (:func:`engine.flows.train.train_flow`
is deterministic for a seed; its initialization holds a lock, the only global state it uses).

Why a thread and not a process: the model rows and the flow stay in this process (a child
process would re-import torch, 1.6 s, and copy a million rows twice); torch releases the
interpreter lock inside its kernels, so the audit's numpy work and the training overlap.

The rows the final model trains on are drawn here (dequantization and placeholders), from a
generator spawned off the run's without advancing it, so the audit's draws stay as they were.
What the thread reports (epochs, partial results) is kept and replayed in order when the
release waits for it, so the progress line and the training chart read as before.

Example:
    >>> import threading
    >>> final = FinalModel(lambda progress, cancel: ("flow", threading.current_thread().name))
    >>> final.start()
    >>> final.wait(lambda *a: None)[0]
    'flow'
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.progress import NEVER_CANCELLED, CancelToken, Partial, ProgressFn, report
from engine.report import warm

if TYPE_CHECKING:
    from engine.flows.train import FlowConfig, TrainedFlow
    from engine.pipeline.config import Prepared
    from engine.privacy.audit import AuditResult

_POLL_S = 0.2  # how often the waiting side passes on the thread's progress
# Up to this many rows the final model's thread, once trained, loads the report's libraries,
# finds the release metrics' real-row neighbours and begins the real table's model fit: beside
# the audit's grid (whose cost is fixed by the 50,000 rows it audits) they are done before the
# release needs them (100,000 rows: 1.0, 1.7 and 1.3 s off the release's end). On a million
# rows the search alone took 37 s there and held the release up by 35 s, and the peak memory
# rose from 1,704 to 1,925 MiB: all three stay where they were.
EARLY_UP_TO = 200_000


class _EitherToken(CancelToken):
    """Cancelled when the user's token is, or when the run no longer needs the model."""

    def __init__(self, user: CancelToken) -> None:
        super().__init__()
        self.user = user

    @property
    def cancelled(self) -> bool:
        return self._event.is_set() or self.user.cancelled

    def raise_if_cancelled(self) -> None:
        if self.user.cancelled:
            self.user.raise_if_cancelled()
        super().raise_if_cancelled()


class FinalModel:
    """``train(progress, cancel)`` on a thread from :meth:`start`; :meth:`wait` returns its
    result (re-raising what it raised), :meth:`stop` ends it unused."""

    def __init__(
        self,
        train: Callable[[ProgressFn, CancelToken], Any],
        cancel: CancelToken = NEVER_CANCELLED,
    ) -> None:
        self.train = train
        self.token = _EitherToken(cancel)
        self.thread: threading.Thread | None = None
        self.reports: list[tuple[float, str, Partial | None]] = []
        self.result: Any = None
        self.error: BaseException | None = None
        self.seconds = 0.0

    def start(self) -> None:
        """Begin training on a daemon thread (once)."""
        if self.thread is not None:
            return
        self.thread = threading.Thread(target=self._run, name="final-model", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        t0 = time.perf_counter()
        try:
            self.result = self.train(self._keep, self.token)
        except BaseException as err:  # re-raised on the waiting side
            self.error = err
        self.seconds = time.perf_counter() - t0

    def _keep(self, fraction: float, text: str, partial: Partial | None = None) -> None:
        self.reports.append((fraction, text, partial))  # list.append is atomic

    def wait(self, progress: ProgressFn) -> Any:
        """The trained result, passing on the thread's reports to ``progress`` in order."""
        if self.thread is None:
            raise RuntimeError("the final model was never started")
        sent = 0
        while True:
            alive = self.thread.is_alive()
            while sent < len(self.reports):
                report(progress, *self.reports[sent])
                sent += 1
            if not alive:
                break
            self.thread.join(_POLL_S)
        if self.error is not None:
            raise self.error
        return self.result

    def stop(self) -> None:
        """Ask the thread to end (it stops at its next cancel check) and wait for it."""
        if self.thread is not None and self.thread.is_alive():
            self.token._event.set()
            self.thread.join()


class FinalBesideAudit:
    """The pipeline's final model on all rows, trained by a :class:`FinalModel` from the moment
    the audit has chosen its architecture. Its model rows are drawn on that thread from a
    generator spawned off the run's (the run's own draws are left as they were). Once trained,
    the thread loads the report's libraries, finds the real rows' neighbour distances for the
    release metrics (``near``) and begins the real table's model fit (``real_fit``), work that
    waited for the audit's end before."""

    def __init__(self, prep: Prepared, rng: np.random.Generator, cancel: CancelToken) -> None:
        self.prep, self.rng, self.cancel = prep, rng.spawn(1)[0], cancel
        self.model: FinalModel | None = None
        self.X_model: np.ndarray | None = None
        self.architecture: FlowConfig | None = None
        self.encode_seconds = 0.0
        self.near: np.ndarray | None = None  # engine.privacy.release.real_neighbours, all rows
        # engine.pipeline.compare_step.real_fit_beside, begun on the thread once it had trained
        self.real_fit: Callable[[], Any] | None = None
        self._encoding = threading.Lock()

    def _rows(self) -> np.ndarray:
        """The model rows, drawn on the first call (on the model's thread: 1.1 s of
        dequantization at 100,000 rows, which held up the audit's own first flow)."""
        with self._encoding:
            if self.X_model is None:
                t0 = time.perf_counter()
                self.X_model = self.prep.encoder.transform(self.prep.real, self.rng)
                self.encode_seconds = time.perf_counter() - t0
            return self.X_model

    def begin(self, architecture: FlowConfig) -> None:
        """Train ``architecture`` (already training: kept; another: stopped, this one begun).
        The audit begins the only flow of a large table's family before ranking it, beside
        the ranking's own training (one core each); when the audit then chooses the Gaussian
        copula instead, that model is stopped and the copula (nothing to train) begun."""
        from engine.flows.select import select_flow
        from engine.pipeline.compare_step import real_fit_beside
        from engine.privacy.release import real_neighbours

        if self.model is not None:
            if self.architecture == architecture:
                return
            self.model.stop()
        cfg = self.prep.config
        self.architecture = architecture
        early = len(self.prep.real) <= EARLY_UP_TO
        if not early:  # drawn here, on the calling thread, as before: a million rows'
            self._rows()  # temporaries freed on the model's thread stayed in its allocator's
            # arena (the run's peak 1,610 -> 1,897 MiB)

        def train(progress: ProgressFn, cancel: CancelToken) -> TrainedFlow:
            X = self._rows()
            cancel.raise_if_cancelled()
            flow = select_flow(
                X,
                budget=cfg.budget,
                device=cfg.device,
                seed=cfg.seed,
                progress=progress,
                cancel=cancel,
                architecture=architecture,
            )
            # this core is free now while the audit's grid goes on: the report's libraries
            # load (engine.report.warm; begun with the audit, they slowed its first flows) and
            # the release metrics' real-row neighbours are found (1.7 s at 100,000 rows)
            if early:
                warm.start()
                self.near = real_neighbours(self.prep.encoder.distance_space(self.prep.real))
                self.real_fit = real_fit_beside(self.prep)  # the real table's model, from now
            return flow

        self.model = FinalModel(train, self.cancel)
        self.model.start()

    def ready_for(self, audit: AuditResult) -> bool:
        """Whether the model training here is the architecture the audit chose."""
        chosen = getattr(audit, "architecture", None)
        return self.model is not None and chosen is not None and chosen == self.architecture

    def wait(self, progress: ProgressFn) -> tuple[TrainedFlow, np.ndarray, float]:
        """The trained flow, the rows it trained on and its training seconds."""
        assert self.model is not None
        flow = self.model.wait(progress)
        assert self.X_model is not None
        return flow, self.X_model, self.model.seconds - self.encode_seconds

    def stop(self) -> None:
        if self.model is not None:
            self.model.stop()
