"""Progress reporting, typed partial results and cooperative cancellation.

Long engine functions take ``progress: ProgressFn`` (fraction 0..1 and a status text) and a
``CancelToken`` they only read; they call ``token.raise_if_cancelled()`` between steps
(epochs, w values) and raise :class:`engine.errors.Cancelled`.

A step that finishes a piece of the result also hands it over as a typed *partial result*
(:class:`EpochDone` after each training epoch, :class:`AuditPointDone` after each audited w),
so a user interface plots numbers, never words parsed out of the status text. A callback that
takes a third parameter, ``progress(fraction, text, partial)``, receives them; a plain
two-parameter callback keeps working and never sees them. Engine code sends both through
:func:`report`; :func:`sub_progress` and :func:`labelled` forward them.

Models: Orange ``Orange/util.py::wrap_callback`` (sub-ranges) and ``TaskState.partial_result_ready``
(partial results), ilastik ``lazyflow/cancel_token.py`` (a token the worker only reads).

Example:
    >>> seen = []
    >>> outer = lambda f, text: seen.append(round(f, 2))
    >>> inner = sub_progress(outer, 0.5, 1.0)
    >>> inner(0.5, "half of the second half")
    >>> seen
    [0.75]
    >>> got = []
    >>> listener = lambda f, text, partial=None: got.append(partial)
    >>> report(labelled(sub_progress(listener, 0.0, 0.5), model="final model"), 1.0, "epoch 1",
    ...        EpochDone(epoch=1, max_epochs=300, train_loss=2.5, val_loss=2.7, seconds=0.1))
    >>> got[0].model, got[0].val_loss
    ('final model', 2.7)
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import cast

from engine.errors import Cancelled

ProgressFn = Callable[[float, str], None]


@dataclass(frozen=True)
class EpochDone:
    """One finished training epoch of one model (losses are mean negative log-likelihoods).

    ``model`` names the model among several trained in one run ("audit split 1", "final
    model", ...; empty until a caller names it with :func:`labelled`). ``planned_epochs`` is
    where early stopping will end the training if the validation loss does not improve again
    (``best_epoch + patience``, at most ``max_epochs``).

    Example:
        >>> EpochDone(epoch=3, max_epochs=300, train_loss=1.0, val_loss=1.2, seconds=0.05,
        ...           best_epoch=3, planned_epochs=23).remaining_epochs
        20
    """

    epoch: int
    max_epochs: int
    train_loss: float
    val_loss: float
    seconds: float  # wall time of this epoch
    best_epoch: int = 0
    planned_epochs: int = 0
    model: str = ""

    @property
    def remaining_epochs(self) -> int:
        """Epochs left before early stopping ends this model's training (if nothing improves)."""
        return max(self.planned_epochs - self.epoch, 0)


@dataclass(frozen=True)
class AuditPointDone:
    """The membership AUCs of both attacks at one audited w so far (mean and SE of the mean).

    Example:
        >>> AuditPointDone(w=0.3, split=1, distance_auc=0.51, distance_se=0.004,
        ...                density_auc=0.53, density_se=0.006, repeats=3).w
        0.3
    """

    w: float
    split: int  # 1-based train/holdout split these repeats came from (all splits so far)
    distance_auc: float
    distance_se: float
    density_auc: float
    density_se: float
    repeats: int
    refined: bool = False


Partial = EpochDone | AuditPointDone


def accepts_partial(progress: Callable[..., None]) -> bool:
    """Whether ``progress`` takes a third positional parameter (the partial result).

    Example:
        >>> accepts_partial(lambda f, t: None), accepts_partial(lambda f, t, partial=None: None)
        (False, True)
    """
    try:
        params = inspect.signature(progress).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature
        return False
    positional = 0
    for p in params:
        if p.kind is p.VAR_POSITIONAL:
            return True
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            positional += 1
    return positional >= 3


def report(
    progress: ProgressFn, fraction: float, text: str, partial: Partial | None = None
) -> None:
    """Call ``progress(fraction, text)``, adding ``partial`` where the callback accepts it."""
    if partial is not None and accepts_partial(progress):
        cast(Callable[[float, str, Partial], None], progress)(fraction, text, partial)
    else:
        progress(fraction, text)


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
    """Map a sub-step's 0..1 onto ``start..end`` of the parent's range (partials pass through)."""

    def inner(fraction: float, text: str, partial: Partial | None = None) -> None:
        fraction = min(max(fraction, 0.0), 1.0)
        report(progress, start + (end - start) * fraction, text, partial)

    return inner


def labelled(progress: ProgressFn, prefix: str = "", *, model: str = "") -> ProgressFn:
    """Put ``prefix`` before each text and name the model of each :class:`EpochDone`.

    An epoch already named keeps its name after this one (``"audit split 1, candidate 2 of 3"``).

    Example:
        >>> got = []
        >>> def seen(f, t, p=None):
        ...     got.append((t, p.model))
        >>> fn = labelled(seen, "split 1: ", model="split 1")
        >>> report(fn, 0.5, "epoch 2", EpochDone(2, 300, 1.0, 1.1, 0.01, model="candidate 1 of 3"))
        >>> got
        [('split 1: epoch 2', 'split 1, candidate 1 of 3')]
    """

    def inner(fraction: float, text: str, partial: Partial | None = None) -> None:
        if model and isinstance(partial, EpochDone):
            name = f"{model}, {partial.model}" if partial.model else model
            partial = replace(partial, model=name)
        report(progress, fraction, f"{prefix}{text}", partial)

    return inner
