"""Every thread pool and thread limit of the engine, in one place (issue 45).

BLAS's thread count is a setting of the whole process (OpenBLAS and MKL keep one value), so
two threads that each "set, work, restore" can leave a stale value behind: the second to finish
restores what the first had set. Here a BLAS limit is a *request*: while requests are active
the setting is the smallest requested, and when the last request ends the value from before the
first is restored. Requests are counted under one lock, so the order in which threads finish
does not matter. Torch's intra-op count is kept per thread by torch itself (OpenMP's setting,
MKL's local setting), so :func:`torch_threads` saves and restores it in the calling thread.

Thread counts come from the machine (:func:`cores`: the CPUs this process may run on, so a
``taskset`` or a container's quota is honoured), and the sizes below which work stays on one
thread are stated per core, not tuned for one machine.

Why by hand: ``threadpoolctl`` limits BLAS but its limits are not counted across threads, and
torch has no scoped setting at all.

Example:
    >>> import torch
    >>> before = torch.get_num_threads()
    >>> with torch_threads(1):
    ...     torch.get_num_threads()
    1
    >>> torch.get_num_threads() == before
    True
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

_LOCK = threading.Lock()


def cores() -> int:
    """CPU cores this process may run on (its affinity mask, else the machine's count)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


class _Setting:
    """One process-wide thread count, set to the smallest active request and restored when the
    last request ends."""

    def __init__(self, get: Callable[[], int], put: Callable[[int], None]) -> None:
        self.get, self.put = get, put
        self.requests: Counter[int] = Counter()
        self.original: int | None = None

    def enter(self, n: int) -> None:
        with _LOCK:
            if not self.requests:
                self.original = self.get()
            self.requests[n] += 1
            self._apply()

    def leave(self, n: int) -> None:
        with _LOCK:
            self.requests[n] -= 1
            if self.requests[n] <= 0:
                del self.requests[n]
            self._apply()

    def _apply(self) -> None:
        want = min(self.requests) if self.requests else self.original
        if want is not None and self.get() != want:
            self.put(want)
        if not self.requests:
            self.original = None


_BLAS_LIMITS: list[Any] = []  # the threadpoolctl controller, found once (0.6 ms a scan)


def _blas_controller() -> Any:
    if not _BLAS_LIMITS:
        from threadpoolctl import ThreadpoolController

        _BLAS_LIMITS.append(ThreadpoolController())
    return _BLAS_LIMITS[0]


def _blas_get() -> int:
    info = [p["num_threads"] for p in _blas_controller().info() if p["user_api"] == "blas"]
    return int(min(info)) if info else 1


def _blas_put(n: int) -> None:
    # the controller's limit object keeps the original; it is dropped, the value stays
    _blas_controller().limit(limits=n, user_api="blas")


_BLAS = _Setting(_blas_get, _blas_put)


@contextlib.contextmanager
def _request(setting: _Setting, n: int) -> Iterator[None]:
    n = max(1, int(n))
    setting.enter(n)
    try:
        yield
    finally:
        setting.leave(n)


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Torch's CPU kernels in the calling thread on at most ``n`` threads while the block runs
    (the count before is restored; other threads keep theirs)."""
    import torch

    before = torch.get_num_threads()
    n = max(1, int(n))
    if before != n:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


def blas_threads(n: int) -> contextlib.AbstractContextManager[None]:
    """numpy's BLAS on at most ``n`` threads while the block runs (see the module)."""
    return _request(_BLAS, n)


# A torch training step of fewer multiply-adds than this per thread runs faster on one thread:
# OpenMP's start and barrier cost about 20 us a kernel, a 64-unit network's kernels 5-50 us.
MULADDS_PER_THREAD = 2_000_000


def training_threads(device: str, muladds_per_step: int) -> int:
    """Intra-op threads for training: one for the small networks of a single model (their
    kernels are shorter than a thread team's start), more as the step grows (many models
    trained together, wide layers), never more than the cores this process may use; the GPU
    needs one host thread.

    Example:
        >>> training_threads("cuda", 10**9), training_threads("cpu", 100_000)
        (1, 1)
    """
    if device != "cpu":
        return 1
    return max(1, min(cores(), muladds_per_step // MULADDS_PER_THREAD))


def pool(workers: int, *, name: str = "engine", torch_single: bool = False) -> ThreadPoolExecutor:
    """A thread pool of at most ``workers`` threads (capped by :func:`cores`); with
    ``torch_single`` each pool thread runs torch on one thread (two teams of threads on two
    cores oversubscribe them). Use as a context manager."""
    init = _torch_single if torch_single else None
    return ThreadPoolExecutor(max(1, min(workers, cores())), name, initializer=init)


def _torch_single() -> None:
    import torch

    if torch.get_num_threads() != 1:
        torch.set_num_threads(1)
