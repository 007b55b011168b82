"""The release's measures side by side (issue 31): once the copies are drawn and shuffled, the
release metrics and the disclosure measures run on two threads while the caller's thread fits
the fidelity models.

Why by hand: the three steps are independent of each other and each spends most of its time
where the interpreter lock is released (k-d tree queries, BLAS, numpy reductions), so on two
cores they overlap; a general executor would not keep the run's one random generator in order.
The order is kept by construction: the metrics' one draw (:func:`engine.privacy.release.
metric_rows`) and the shuffles are taken before anything is handed over; the disclosure
measures are handed the generator only where nothing else draws from it until they are done
(no outlier protection, whose effect is measured with it after the fidelity models); the
caller's thread draws from it again only after :meth:`Beside.run`'s getter has returned. Every
number is the same as one step after another, bit for bit (``tests/test_release_beside.py``).

Above :data:`BESIDE_UP_TO` rows the steps run one after another, in the same order of draws:
a million rows' measures side by side would hold their temporaries at once (the 2 GB peak of
issue 31), and there the final model's training, not these, sets the time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from engine.pipeline.final_model import EARLY_UP_TO
from engine.threads import pool

T = TypeVar("T")

BESIDE_UP_TO = EARLY_UP_TO  # rows; the work begun beside the audit has the same bound


class Beside:
    """Up to two steps on threads; ``run`` returns a getter of the step's result. A context:
    on a normal exit it waits for the steps; on an error (a cancel) it returns at once and a
    step still running finishes unheard.

    Example:
        >>> with Beside(rows=1_000) as beside:
        ...     get = beside.run(sum, [1, 2, 3])
        ...     get()
        6
    """

    def __init__(self, rows: int) -> None:
        self.pool = pool(2, name="release") if rows <= BESIDE_UP_TO else None

    def run(self, step: Callable[..., T], *args: Any) -> Callable[[], T]:
        """Start ``step(*args)`` on a thread (above :data:`BESIDE_UP_TO` rows: now, here)."""
        if self.pool is None:
            value = step(*args)
            return lambda: value
        return self.pool.submit(step, *args).result

    def __enter__(self) -> Beside:
        return self

    def __exit__(self, kind: object, *exc: object) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=kind is None, cancel_futures=True)
