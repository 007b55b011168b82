"""One reusable worker layer: run an engine function on a thread, report on the GUI thread.

::

    page ──Task(fn).start()──► _Runner (QThread)  fn(progress, cancel) ──► result / exception
      ▲                              │ progress(fraction, text[, partial]): stored under a lock
      │ started / progress / log     │ done(result, error): queued to the GUI thread
      │ partial / result / error     │
      │ cancelled                    ▼
      └──── finished ◄──── Task (lives on the GUI thread; a 100 ms timer drains the progress)

The engine function never sees Qt: it gets a plain ``progress(fraction, text, partial=None)``
callable and an :class:`engine.progress.CancelToken` it only reads. All signals of :class:`Task`
are emitted on the GUI thread, so pages may connect them to any slot (and tests may wait on
them). ``progress`` is throttled to about ten updates a second; ``log`` delivers every message
in batches; ``partial`` delivers every typed partial result (:class:`engine.EpochDone`,
:class:`engine.AuditPointDone`) in order, for live plots that never parse text. Cancel sets the
token; the engine stops at its next step boundary, and at the latest at its next progress
report (the worker's ``progress`` raises :class:`engine.Cancelled` once the token is set, so
every report is a step boundary). :class:`TimeLeft` estimates the time left
from the progress measured after the first training epochs.

Models: superqt ``utils/_qthreading.py`` (signals of a worker), Orange ``TaskState``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from desktop.qt import QObject, QThread, QTimer, Signal, Slot

TaskFn = Callable[[Callable[..., None], Any], Any]


class _Runner(QThread):
    """Runs ``fn(progress, cancel)`` once; its only signal is ``done`` (queued to the GUI)."""

    done = Signal(object, object)  # result, exception

    def __init__(self, fn: TaskFn, progress: Callable[..., None], cancel: Any) -> None:
        super().__init__()
        self._fn, self._progress, self._cancel = fn, progress, cancel

    def run(self) -> None:  # runs on the worker thread: never touch widgets here
        try:
            result = self._fn(self._progress, self._cancel)
        except BaseException as err:  # noqa: BLE001 - everything is reported to the GUI
            self.done.emit(None, err)
        else:
            self.done.emit(result, None)


class Task(QObject):
    """A cancellable job whose signals all arrive on the GUI thread.

    Example::

        task = Task(lambda progress, cancel: synthesize(prep, progress, cancel), parent=page)
        task.progress.connect(page.on_progress)
        task.result.connect(page.on_done)
        task.start()
    """

    started = Signal()
    progress = Signal(float, str)  # throttled, latest value
    log = Signal(list)  # every (fraction, text) since the last batch
    partial = Signal(object)  # each typed partial result (EpochDone, AuditPointDone), in order
    result = Signal(object)
    error = Signal(object)  # an exception instance (not Cancelled)
    cancelled = Signal()
    finished = Signal()  # always last, after result / error / cancelled

    running_tasks: set[Task] = set()  # for shutdown and leak checks in tests
    interval_ms = 100

    def __init__(self, fn: TaskFn, parent: QObject | None = None) -> None:
        super().__init__(parent)
        from engine import CancelToken

        self._fn = fn
        self.token = CancelToken()
        self._lock = threading.Lock()
        self._pending: list[tuple[float, str]] = []
        self._partials: list[Any] = []
        self._latest: tuple[float, str] | None = None
        self._runner: _Runner | None = None
        self._timer = QTimer(self)
        self._timer.setInterval(self.interval_ms)
        self._timer.timeout.connect(self._drain)
        self.started_at = 0.0
        self.is_running = False

    # -- called from the worker thread -------------------------------------------------
    def _report(self, fraction: float, text: str, partial: Any = None) -> None:
        """Keep one progress report; after Cancel, stop the engine here instead (issue 44: the
        engine reports at every step, but checked the token at fewer places; a cancel during
        the audit's rounds, the release or the comparison waited for the next of those).
        The last report (fraction 1: "files written") comes after the files are in place, so
        it is never a place to stop: a cancel there would say "nothing was written"."""
        if fraction < 1.0 and self.token.cancelled:
            self.token.raise_if_cancelled()
        with self._lock:
            self._latest = (float(fraction), str(text))
            self._pending.append(self._latest)
            if len(self._pending) > 5000:  # a runaway engine must not grow memory
                del self._pending[:1000]
            if partial is not None:
                self._partials.append(partial)
                if len(self._partials) > 20000:
                    del self._partials[:5000]

    # -- GUI thread ----------------------------------------------------------------------
    def start(self) -> None:
        """Start the job on a new thread (once)."""
        if self._runner is not None:
            raise RuntimeError("a Task runs once; create a new one")
        self._runner = _Runner(self._fn, self._report, self.token)
        self._runner.done.connect(self._on_done)
        Task.running_tasks.add(self)
        self.is_running = True
        self.started_at = time.monotonic()
        self._timer.start()
        self.started.emit()
        self._runner.start()

    def cancel(self) -> None:
        """Ask the engine to stop at its next step boundary (returns at once)."""
        self.token.cancel()

    def wait(self, ms: int = 30000) -> bool:
        """Block until the thread has ended (used at shutdown)."""
        if self._runner is None:
            return True
        self._runner.quit()
        return bool(self._runner.wait(ms))

    def shutdown(self, ms: int = 30000) -> None:
        """Cancel, then join the thread; safe to call twice."""
        self.cancel()
        self.wait(ms)
        self._timer.stop()
        Task.running_tasks.discard(self)

    @Slot()
    def _drain(self) -> None:
        with self._lock:
            batch, self._pending = self._pending, []
            partials, self._partials = self._partials, []
            latest, self._latest = self._latest, None
        for item in partials:
            self.partial.emit(item)
        if batch:
            self.log.emit(batch)
        if latest is not None:
            self.progress.emit(*latest)

    @Slot(object, object)
    def _on_done(self, result: Any, err: BaseException | None) -> None:
        from engine import Cancelled

        self._timer.stop()
        if self._runner is not None:
            self._runner.wait()  # run() has returned; this join is immediate
        self._drain()
        self.is_running = False
        Task.running_tasks.discard(self)
        if err is None:
            self.result.emit(result)
        elif isinstance(err, Cancelled) or (
            self.token.cancelled and isinstance(err, KeyboardInterrupt)
        ):
            self.cancelled.emit()
        else:
            self.error.emit(err)
        self.finished.emit()


def shutdown_all(ms: int = 30000) -> None:
    """Cancel and join every running task (at window close)."""
    for task in list(Task.running_tasks):
        task.shutdown(ms)


def left_text(seconds: float | None) -> str:
    """Plain-language time left: seconds under a minute, else minutes and seconds.

    Example:
        >>> left_text(None), left_text(23.4), left_text(65.0), left_text(2.0)
        ('estimating time left', 'about 25 seconds left', 'about 1:05 left', 'a few seconds left')
    """
    if seconds is None or not seconds == seconds:
        return "estimating time left"
    if seconds < 7.5:
        return "a few seconds left"
    if seconds < 60:
        return f"about {int(5 * round(seconds / 5))} seconds left"
    return f"about {int(seconds // 60)}:{int(seconds % 60):02d} left"


def eta_text(elapsed: float, fraction: float) -> str:
    """Time left extrapolated from the whole elapsed time (before any epoch is measured).

    Example:
        >>> eta_text(10.0, 0.5)
        'about 10 seconds left'
        >>> eta_text(1.0, 0.0)
        'estimating time left'
    """
    if fraction <= 0.02 or elapsed < 0.5:
        return left_text(None)
    return left_text(max(elapsed / fraction * (1.0 - fraction), 0.0))


class TimeLeft:
    """Time left, measured from the rate of progress after the first training epochs.

    The start of a run (reading, encoding, the first, slow epoch) says little about the rest, so
    nothing is estimated until ``min_epochs`` epochs are done; from then on the estimate is the
    progress still to go divided by the progress per second measured since that point, *up to
    now*: the engine counts a model's progress in the epochs early stopping will need, so this
    rate is the measured cost of the stages done so far. A stage that makes no progress for a
    while (a slow step between two reports) is part of that cost: while the bar stands still
    the estimate never counts down, it grows (issue 33: it counted down for 40 s while the bar
    sat at 11 %, then jumped from "about 40 seconds" to "about 5:04").

    With ``wait_for_audit`` the rate is measured from the first privacy test on (the first
    :class:`engine.AuditPointDone`, counted by :meth:`audited`): the rest of a run is mostly
    attacks, which cost several times more per step of the bar than training does (on the
    demo cohort 1,250 against 370 s per unit), so a rate of training alone promised about a
    fifth of the real time (benchmarks/bench_time_left.py).

    What is shown (:meth:`text`) never rises faster than the clock (issue 44: "1:00", "1:26",
    "2:44" within 21 s on a 7,874-row table): the estimate may exceed the last one shown, scaled
    to the work still left, by no more than the seconds that have passed since it was shown. A
    stalled stage still makes it grow, a second a second at most; a lower estimate is shown at
    once. :meth:`seconds` with no estimate shown yet is the measured rate alone.

    Example:
        >>> est = TimeLeft(min_epochs=1)
        >>> est.update(0.10, now=5.0); est.seconds(now=5.0) is None
        True
        >>> est.epoch(now=5.0); est.update(0.10, now=5.0); est.update(0.30, now=9.0)
        >>> est.seconds(now=9.0)
        14.0
        >>> est.seconds(now=13.0) > est.seconds(now=11.0) > 14.0  # no progress: it grows
        True
    """

    def __init__(self, min_epochs: int = 3, wait_for_audit: bool = False) -> None:
        self.min_epochs = min_epochs
        self.wait_for_audit = wait_for_audit
        self.epochs = 0
        self.audits = 0
        self.fraction = 0.0
        self._anchor: tuple[float, float] | None = None  # (time, fraction) after the first epochs
        self._last = 0.0
        self._shown: tuple[float, float, float] | None = None  # (time, fraction, seconds) shown

    def epoch(self, now: float | None = None) -> None:
        """Count one finished epoch (an EpochDone partial result arrived)."""
        self.epochs += 1

    def audited(self) -> None:
        """Count one audited w (an AuditPointDone partial result arrived)."""
        self.audits += 1

    def update(self, fraction: float, now: float | None = None) -> None:
        """Record the progress reached (never backwards)."""
        now = time.monotonic() if now is None else now
        self.fraction = max(self.fraction, float(fraction))
        self._last = now
        ready = self.epochs >= self.min_epochs and (self.audits > 0 or not self.wait_for_audit)
        if self._anchor is None and ready:
            self._anchor = (now, self.fraction)

    def seconds(self, now: float | None = None) -> float | None:
        """Estimated seconds left (None: not measured yet), at most :meth:`ceiling`."""
        now = time.monotonic() if now is None else now
        if self._anchor is None:
            return None
        t0, f0 = self._anchor
        moved = self.fraction - f0
        if moved <= 0 or self._last - t0 < 0.5:
            return None
        rate = max((1.0 - self.fraction) * (max(now, self._last) - t0) / moved, 0.0)
        ceiling = self.ceiling(now)
        return rate if ceiling is None else min(rate, ceiling)

    def ceiling(self, now: float) -> float | None:
        """The most the estimate may say at ``now``: the last one shown, scaled to the work
        still left, plus the seconds since it was shown (None: nothing shown yet).

        Example:
            >>> est = TimeLeft(min_epochs=0)
            >>> est._shown = (10.0, 0.5, 60.0)  # "about 1:00" shown at 10 s, half done
            >>> est.fraction = 0.5; est.ceiling(now=31.0)  # 21 s later, no progress
            81.0
            >>> est.fraction = 0.75; est.ceiling(now=31.0)  # half the rest done meanwhile
            51.0
        """
        if self._shown is None:
            return None
        t, f, shown = self._shown
        left = (1.0 - self.fraction) / (1.0 - f) if f < 1.0 else 0.0
        return shown * left + max(now - t, 0.0)

    def text(self, now: float | None = None) -> str:
        """The estimate in plain words; what it says becomes the reference of the next one."""
        now = time.monotonic() if now is None else now
        left = self.seconds(now)
        if left is not None:
            self._shown = (now, self.fraction, left)
        return left_text(left)
