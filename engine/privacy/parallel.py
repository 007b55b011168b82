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
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any


def cores() -> int:
    """CPU cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


PARALLEL_MIN_ROWS = 4096  # fewer queries run on one thread: scipy starts Python threads per call


def workers_for(queries) -> int:
    """``workers`` for a scipy k-d tree query of ``queries`` rows: every core for a large batch,
    one thread for a small one. scipy starts its worker threads on every call (a few ms on a
    loaded machine), which the audit of a small table paid 300 times per run."""
    return -1 if len(queries) >= PARALLEL_MIN_ROWS else 1


PARALLEL_MIN_ELEMENTS = 2**23  # less work than this runs inline: a pool costs ~1-5 ms a call


_CONTROLLER: list[Any] = []


def one_blas_thread() -> Any:
    """A context in which numpy's BLAS runs on one thread. The library scan is done once (a
    fresh ``threadpool_limits`` costs 0.6 ms a call, the cached controller's limit 0.01 ms).

    Why: a BLAS product large enough for BLAS to start its second thread, issued right after
    torch has decoded rows (torch's OpenMP threads still spinning), ran 5-10x slower on two
    cores: the demo's density attack took 3 s instead of 0.3-0.7 s."""
    if not _CONTROLLER:
        from threadpoolctl import ThreadpoolController

        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0].limit(limits=1, user_api="blas")


@contextlib.contextmanager
def one_torch_thread() -> Iterator[None]:
    """Torch's element-wise and reduction kernels on one thread in the calling thread (its
    OpenMP setting is per thread; restored afterwards). Why: the same reduction split over one
    or two threads rounds differently, so a block must not depend on where it ran, and two
    pool threads each starting a team of two would oversubscribe two cores."""
    import torch

    before = torch.get_num_threads()
    if before != 1:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if before != 1:
            torch.set_num_threads(before)


def _torch_worker() -> None:
    """A pool thread's initializer: torch on one thread there (the thread ends with the pool)."""
    import torch

    if torch.get_num_threads() != 1:
        torch.set_num_threads(1)


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
    init = _torch_worker if torch_threads else None
    with one_blas_thread(), ThreadPoolExecutor(min(cores(), len(starts)), initializer=init) as pool:
        list(pool.map(func, starts))
