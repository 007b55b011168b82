"""One reusable worker layer: run an engine function on a thread, report on the GUI thread.

::

    page ──Task(fn).start()──► _Runner (QThread)  fn(progress, cancel) ──► result / exception
      ▲                              │ progress(fraction, text): stored under a lock only
      │ started / progress / log     │ done(result, error): queued to the GUI thread
      │ result / error / cancelled   ▼
      └──── finished ◄──── Task (lives on the GUI thread; a 100 ms timer drains the progress)

The engine function never sees Qt: it gets a plain ``progress(fraction, text)`` callable and
an :class:`engine.progress.CancelToken` it only reads. All signals of :class:`Task` are emitted
on the GUI thread, so pages may connect them to any slot (and tests may wait on them).
``progress`` is throttled to about ten updates a second; ``log`` delivers every message in
batches (for live curves). Cancel sets the token; the engine stops at its next step boundary.

Models: superqt ``utils/_qthreading.py`` (signals of a worker), Orange ``TaskState``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from desktop.qt import QObject, QThread, QTimer, Signal, Slot

TaskFn = Callable[[Callable[[float, str], None], Any], Any]


class _Runner(QThread):
    """Runs ``fn(progress, cancel)`` once; its only signal is ``done`` (queued to the GUI)."""

    done = Signal(object, object)  # result, exception

    def __init__(self, fn: TaskFn, progress: Callable[[float, str], None], cancel: Any) -> None:
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
    result = Signal(object)
    error = Signal(object)  # an exception instance (not Cancelled)
    cancelled = Signal()
    finished = Signal()  # always last, after result / error / cancelled

    running_tasks: set[Task] = set()  # for shutdown and leak checks in tests
    interval_ms = 100

    def __init__(self, fn: TaskFn, parent: QObject | None = None) -> None:
        super().__init__(parent)
        from engine.progress import CancelToken

        self._fn = fn
        self.token = CancelToken()
        self._lock = threading.Lock()
        self._pending: list[tuple[float, str]] = []
        self._latest: tuple[float, str] | None = None
        self._runner: _Runner | None = None
        self._timer = QTimer(self)
        self._timer.setInterval(self.interval_ms)
        self._timer.timeout.connect(self._drain)
        self.started_at = 0.0
        self.is_running = False

    # -- called from the worker thread -------------------------------------------------
    def _report(self, fraction: float, text: str) -> None:
        with self._lock:
            self._latest = (float(fraction), str(text))
            self._pending.append(self._latest)
            if len(self._pending) > 5000:  # a runaway engine must not grow memory
                del self._pending[:1000]

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
            latest, self._latest = self._latest, None
        if batch:
            self.log.emit(batch)
        if latest is not None:
            self.progress.emit(*latest)

    @Slot(object, object)
    def _on_done(self, result: Any, err: BaseException | None) -> None:
        from engine.errors import Cancelled

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


def eta_text(elapsed: float, fraction: float) -> str:
    """Plain-language time left, e.g. ``"about 1:05 left"``.

    Example:
        >>> eta_text(10.0, 0.5)
        'about 0:10 left'
        >>> eta_text(1.0, 0.0)
        'estimating time left'
    """
    if fraction <= 0.02 or elapsed < 0.5:
        return "estimating time left"
    left = max(elapsed / fraction * (1.0 - fraction), 0.0)
    return f"about {int(left // 60)}:{int(left % 60):02d} left"
