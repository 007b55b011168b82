"""One module owns every thread limit and pool (issue 45): a BLAS limit requested from two
threads at once is the smaller while both are active and the original once both have ended,
whatever order they end in (the old "set, work, restore" helper could leave a stale value);
torch's count is kept per thread; thread counts follow the cores this process may use."""

from __future__ import annotations

import threading

import pytest

from engine import threads


def _blas() -> int:
    return threads._blas_get()


@pytest.mark.parametrize("first_out", ["a", "b"])
def test_concurrent_limits_never_leak(first_out: str) -> None:
    """Two threads request limits on one process-wide setting (a stand-in with the BLAS
    setting's bookkeeping): the smaller holds while both are active, the other's once the
    first ends, and the original once both have ended, in either order."""
    value = [8]
    setting = threads._Setting(lambda: value[0], lambda n: value.__setitem__(0, n))
    entered = {k: threading.Event() for k in "ab"}
    leave = {k: threading.Event() for k in "ab"}

    def worker(name: str, n: int) -> None:
        with threads._request(setting, n):
            entered[name].set()
            leave[name].wait(5)

    ta = threading.Thread(target=worker, args=("a", 1))
    tb = threading.Thread(target=worker, args=("b", 2))
    ta.start()
    entered["a"].wait(5)
    tb.start()
    entered["b"].wait(5)
    assert value[0] == 1  # the smaller of the two active requests
    first, second = ("a", "b") if first_out == "a" else ("b", "a")
    leave[first].set()
    (ta if first == "a" else tb).join(5)
    assert value[0] == {"a": 1, "b": 2}[second]
    leave[second].set()
    ta.join(5)
    tb.join(5)
    assert value[0] == 8 and not setting.requests  # the original: no stale value


def test_a_blas_limit_is_set_and_restored() -> None:
    if not threads._blas_controller().info():
        pytest.skip("no BLAS library found by threadpoolctl")
    original = _blas()
    with threads.blas_threads(1):
        assert _blas() == 1
    assert _blas() == original


def test_torch_threads_are_kept_per_thread() -> None:
    import torch

    before = torch.get_num_threads()
    inside: list[int] = []

    def worker() -> None:
        with threads.torch_threads(1):
            inside.append(torch.get_num_threads())

    runs = [threading.Thread(target=worker) for _ in range(4)]
    for t in runs:
        t.start()
    for t in runs:
        t.join()
    assert inside == [1, 1, 1, 1] and torch.get_num_threads() == before


def test_thread_counts_follow_the_cores(monkeypatch) -> None:
    monkeypatch.setattr(threads, "cores", lambda: 16)
    small, big = 64 * 512 * 10, 5 * 64 * 2048 * 34 * 5  # one small model; 5 wide models together
    assert threads.training_threads("cpu", small) == 1
    assert 1 < threads.training_threads("cpu", big) <= 16
    assert threads.training_threads("cuda", big) == 1
    with threads.pool(64) as ex:
        assert ex._max_workers == 16
    monkeypatch.setattr(threads, "cores", lambda: 2)
    assert threads.training_threads("cpu", big) == 2
