"""Run independent blocks of numpy work on every core, each with a one-thread BLAS.

Why by hand: numpy's ufuncs and BLAS calls release the GIL, so a thread per core over whole
blocks keeps both cores of a small workstation busy where numpy alone runs its element-wise
passes on one; one BLAS call per small tile with BLAS's own threads spends its time
synchronising instead (2-3x slower on a loaded 2-core machine).

Example:
    >>> out = [0] * 4
    >>> def square(i): out[i] = i * i
    >>> over_blocks(square, range(4)); out
    [0, 1, 4, 9]
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from typing import Any

from engine.threads import blas_threads, pool, torch_threads

PARALLEL_MIN_ROWS = 4096  # fewer queries run on one thread: scipy starts Python threads per call


def workers_for(queries) -> int:
    """``workers`` for a scipy k-d tree query of ``queries`` rows: every core for a large batch,
    one thread for a small one. scipy starts its worker threads on every call (a few ms on a
    loaded machine), which the audit of a small table paid 300 times per run."""
    return -1 if len(queries) >= PARALLEL_MIN_ROWS else 1


PARALLEL_MIN_ELEMENTS = 2**23  # less work than this runs inline: a pool costs ~1-5 ms a call


def one_blas_thread() -> Any:
    """A context in which numpy's BLAS runs on one thread (a counted request:
    :func:`engine.threads.blas_threads`).

    Why: a BLAS product large enough for BLAS to start its second thread, issued right after
    torch has decoded rows (torch's OpenMP threads still spinning), ran 5-10x slower on two
    cores: the demo's density attack took 3 s instead of 0.3-0.7 s."""
    return blas_threads(1)


def one_torch_thread() -> Any:
    """Torch's kernels on one thread in the calling thread (restored afterwards). Why: the same
    reduction split over one or two threads rounds differently, so a block must not depend on
    where it ran, and two pool threads each starting a team would oversubscribe the cores."""
    return torch_threads(1)


def over_blocks(
    func: Callable[[int], None],
    starts: Iterable[int],
    *,
    elements: int | None = None,
    torch_threads: bool = False,
) -> None:
    """``func(start)`` for every start, on all cores (one-thread BLAS inside). ``elements``:
    the work's size in array entries; below ``PARALLEL_MIN_ELEMENTS`` the blocks run inline
    (starting threads and limiting BLAS costs more than small blocks save). ``torch_threads``:
    ``func`` runs torch kernels, kept on one thread wherever the block runs."""
    starts = list(starts)
    torch_context = one_torch_thread() if torch_threads else contextlib.nullcontext()
    if len(starts) <= 1 or (elements is not None and elements < PARALLEL_MIN_ELEMENTS):
        with one_blas_thread(), torch_context:
            for start in starts:
                func(start)
        return
    with one_blas_thread(), pool(len(starts), name="blocks", torch_single=torch_threads) as ex:
        list(ex.map(func, starts))
