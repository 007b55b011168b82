"""Progress reporting and cooperative cancellation.

Long engine functions take ``progress: ProgressFn`` (fraction 0..1 and a status text) and a
``CancelToken`` they only read; they call ``token.raise_if_cancelled()`` between steps
(epochs, w values) and raise :class:`engine.errors.Cancelled`.

Models: Orange ``Orange/util.py::wrap_callback`` (sub-ranges), ilastik
``lazyflow/cancel_token.py`` (a token the worker only reads).

Example:
    >>> seen = []
    >>> outer = lambda f, text: seen.append(round(f, 2))
    >>> inner = sub_progress(outer, 0.5, 1.0)
    >>> inner(0.5, "half of the second half")
    >>> seen
    [0.75]
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from engine.errors import Cancelled

ProgressFn = Callable[[float, str], None]


def no_progress(fraction: float, text: str) -> None:
    """A progress callback that does nothing."""


class CancelToken:
    """A flag set by the user interface and read by the engine (thread-safe)."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        """Ask the engine to stop at the next step boundary."""
        self._event.set()

    @property
    def cancelled(self) -> bool:
        """Whether cancellation was requested."""
        return self._event.is_set()

    def raise_if_cancelled(self) -> None:
        """Raise :class:`Cancelled` when cancellation was requested."""
        if self._event.is_set():
            raise Cancelled()


NEVER_CANCELLED = CancelToken()


def sub_progress(progress: ProgressFn, start: float, end: float) -> ProgressFn:
    """Map a sub-step's 0..1 onto ``start..end`` of the parent's range."""

    def inner(fraction: float, text: str) -> None:
        fraction = min(max(fraction, 0.0), 1.0)
        progress(start + (end - start) * fraction, text)

    return inner
