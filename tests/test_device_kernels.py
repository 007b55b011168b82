"""The audit's kernels in torch blocks (engine.search.device_kernels, issue 45 item 2) against
the CPU path: run here on the CPU device (method "torch" or LATENT_SYNTH_TORCH_KERNELS), so CI
runs the GPU code paths; the last tests run on a real GPU only.

Tolerances (float64 everywhere in the torch kernels): nearest-neighbour distances within 1e-12
relative of the CPU's (measured: 2.3e-16, one unit in the last place, where scipy's k-d tree
sums the squares in another order), the same neighbour wherever the nearest is not tied; kernel
sums within 1e-9 relative of a float64 numpy sum (measured ~1e-14) and within 1e-4 nats of the
CPU's float32 sums (measured up to 3.6e-5 at queries far out, log p ~ -35: the CPU's own float32
error, ``density.py``); the audit's AUCs within 1e-6 (measured: equal)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.spatial import cKDTree
from scipy.special import logsumexp

import engine.search.device_kernels as kernels
import engine.search.neighbours as neighbours
from engine.device import probe_cuda
from engine.privacy.audit import AuditConfig, run_audit
from engine.search.density import GaussianKDE, leave_one_out_refits, principal_basis
from engine.search.device_kernels import FORCE_ENV, kernel_device, knn, log_kernel_sums
from engine.search.neighbours import nearest_distances, neighbour_distances

CPU = torch.device("cpu")
SIZES = [(500, 3), (1500, 8), (3000, 20)]


def _table(n: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(queries, reference) with ties and duplicates: a 0/1 column, a column of 4 levels,
    reference rows repeated, queries that are reference rows, rows rounded to a grid."""
    rng = np.random.default_rng(seed)
    r = rng.normal(size=(n, d)) * rng.uniform(0.5, 3.0, d) + rng.normal(0, 5, d)
    r[:, 0] = rng.integers(0, 2, n)
    r[:, -1] = rng.integers(0, 4, n)
    r[n // 10 : n // 5] = r[: n // 10]  # duplicated rows
    r[n // 5 : n // 4] = np.round(r[n // 5 : n // 4])  # on a grid: exact ties
    q = np.vstack([r[: n // 5], rng.normal(size=(n // 2, d)) * 2.0, np.round(r[: n // 10] + 0.5)])
    return q, r


@pytest.mark.parametrize("n,d", SIZES)
def test_nearest_distances_equal_the_cpu_path_and_the_neighbours_where_not_tied(
    n: int, d: int
) -> None:
    q, r = _table(n, d, seed=n + d)
    cpu = nearest_distances(q, r)
    dist, idx = knn(q, r, 1, device=CPU)
    assert np.array_equal(nearest_distances(q, r, method="torch"), dist[:, 0])
    assert np.abs(dist[:, 0] - cpu).max() <= 1e-12 * max(1.0, cpu.max())
    assert (dist[:, 0] == 0).sum() == (cpu == 0).sum() > 0
    two, at = cKDTree(r).query(q, k=2)
    alone = two[:, 1] > two[:, 0] * (1 + 1e-9)  # ties aside
    assert alone.mean() > 0.3
    assert np.array_equal(idx[alone, 0], at[alone, 0])


@pytest.mark.parametrize("n,d", SIZES)
def test_kth_other_row_equals_the_cpu_path(n: int, d: int) -> None:
    """Leave-one-out: a row is not its own neighbour, its duplicates are (distance 0)."""
    _, r = _table(n, d, seed=2 * n + d)
    cpu = neighbour_distances(r, (1, 5))
    got = neighbour_distances(r, (1, 5), method="torch")
    assert np.abs(got - cpu).max() <= 1e-12 * max(1.0, cpu.max())
    assert (got[:, 0] == 0).sum() == (cpu[:, 0] == 0).sum() >= n // 10


def test_fewer_rows_than_neighbours_give_inf_as_the_tree() -> None:
    x = np.array([[0.0], [1.0], [3.0]])
    dist, idx = knn(x, x, 3, device=CPU, exclude_self=True)
    assert dist.tolist() == [[1.0, 3.0, np.inf], [1.0, 2.0, np.inf], [2.0, 3.0, np.inf]]
    assert idx[:, 2].tolist() == [3, 3, 3]


def test_uncertified_queries_are_scanned_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    """No spare candidates: almost no query certifies, so nearly all go to the direct scan,
    which must give the same distances on a table full of exact ties (grid corners and
    half-way points)."""
    rng = np.random.default_rng(5)
    r = rng.integers(0, 3, size=(2000, 4)).astype(np.float64)
    q = rng.integers(0, 3, size=(600, 4)) + 0.5 * rng.integers(0, 2, size=(600, 4))
    exact = np.sqrt(((q[:, None, :] - r[None, :, :]) ** 2).sum(-1))
    want = np.sort(exact, axis=1)[:, :3]
    monkeypatch.setattr(kernels, "CANDIDATES", 0)
    monkeypatch.setattr(kernels, "CPU_BLOCK_BYTES", 2**16)  # many blocks, reference chunks
    got, idx = knn(q, r, 3, device=CPU)
    assert np.array_equal(got, want)
    assert np.array_equal(np.take_along_axis(exact, idx, axis=1), want)
    kth = knn(r, r, 5, device=CPU, exclude_self=True)[0]
    assert np.array_equal(kth[:, -1], neighbour_distances(r, (5,)).ravel())


def test_small_blocks_give_the_same_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    q, r = _table(1500, 8, seed=3)
    whole = knn(r, r, 5, device=CPU, exclude_self=True)
    sums = log_kernel_sums(q, r, device=CPU), log_kernel_sums(r, r, device=CPU, leave_one_out=True)
    monkeypatch.setattr(kernels, "CPU_BLOCK_BYTES", 2**17)  # 1-3 query rows a block
    assert kernels.block_rows(len(r), CPU) < 5
    blocks = knn(r, r, 5, device=CPU, exclude_self=True)
    assert np.array_equal(whole[0], blocks[0])
    assert np.abs(sums[0] - log_kernel_sums(q, r, device=CPU)).max() < 1e-10
    looped = log_kernel_sums(r, r, device=CPU, leave_one_out=True)
    assert np.abs(sums[1] - looped).max() < 1e-10


def _float64_sums(q: np.ndarray, p: np.ndarray, leave_one_out: bool) -> np.ndarray:
    expo = -0.5 * ((q[:, None, :] - p[None, :, :]) ** 2).sum(-1)
    if leave_one_out:
        np.fill_diagonal(expo, -np.inf)
    return logsumexp(expo, axis=1)


@pytest.mark.parametrize("n,d", SIZES)
def test_kernel_sums_equal_float64_and_the_cpu_path(n: int, d: int) -> None:
    q, x = _table(n, d, seed=3 * n + d)
    basis = principal_basis(x)
    cpu = GaussianKDE(basis=basis).fit(x)
    dev = GaussianKDE(basis=basis, method="torch").fit(x)
    assert dev.white_ is not None and cpu.white_ is None
    wq, wx = ((q - dev.mean_) @ dev.basis_) @ dev.whiten_, dev.white_
    got = dev.log_density(q) - dev.log_const_  # log-sums within 1e-9: sums within 1e-9 relative
    assert np.abs(got - _float64_sums(wq, wx, False)).max() < 1e-9
    got_loo = log_kernel_sums(wx, wx, device=CPU, leave_one_out=True)
    assert np.abs(got_loo - _float64_sums(wx, wx, True)).max() < 1e-9
    # the CPU's float32 products: off by up to 3.6e-5 nats at queries far out (log p ~ -35)
    assert np.abs(dev.log_density(q) - cpu.log_density(q)).max() < 1e-4
    loo = dev.leave_one_out_log_density() - cpu.leave_one_out_log_density()
    assert np.abs(loo).max() < 1e-4


def test_leave_one_out_refits_equal_the_cpu_computation() -> None:
    rng = np.random.default_rng(4)
    x = np.hstack([rng.normal(size=(300, 4)) * [1, 2, 5, 0.1], np.eye(3)[rng.integers(0, 3, 300)]])
    x[:30] = x[30:60]
    basis = principal_basis(x)
    cpu = leave_one_out_refits(x, basis)
    assert np.allclose(leave_one_out_refits(x, basis, method="torch"), cpu, rtol=1e-10, atol=1e-10)


def test_the_variable_forces_the_torch_path_and_nothing_else_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(FORCE_ENV, raising=False)
    assert [kernel_device(m) for m in ("auto", "kdtree", "brute")] == [None, None, None]
    assert kernel_device("cuda") == torch.device("cuda") and kernel_device("torch") == CPU
    monkeypatch.setenv(FORCE_ENV, "0")
    assert kernel_device("auto") is None
    monkeypatch.setenv(FORCE_ENV, "1")
    assert kernel_device("auto") == CPU and kernel_device("kdtree") == CPU
    assert GaussianKDE().fit(np.eye(3)).device_ == CPU


class _Identity:
    def to_latent(self, X: np.ndarray) -> np.ndarray:
        return X

    def from_latent(self, Z: np.ndarray) -> np.ndarray:
        return Z


def _audit() -> np.ndarray:
    rng = np.random.default_rng(0)
    n = 400
    x = np.c_[rng.standard_normal((n, 3)), rng.integers(0, 2, n), np.eye(3)[rng.integers(0, 3, n)]]
    x[:20] = x[20:40]
    config = AuditConfig(grid=(0.0, 0.3, 0.6), refine=False, crossfit=True, repeats=2)
    res = run_audit(x, x, lambda rows: _Identity(), config=config, rng=np.random.default_rng(1))
    return np.array([[p.auc, p.density_auc] for p in res.curve])


def test_the_audit_gives_the_same_aucs_on_either_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(FORCE_ENV, raising=False)
    calls: list[int] = []

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return knn(*args, **kwargs)

    monkeypatch.setattr(neighbours, "knn", counted)
    cpu = _audit()
    assert calls == []
    monkeypatch.setenv(FORCE_ENV, "1")
    dev = _audit()
    assert len(calls) >= 30  # every distance attack of every split, w and repeat
    assert np.abs(dev - cpu).max() <= 1e-6
    assert 0.4 < cpu.min() and cpu.max() < 0.6


needs_gpu = pytest.mark.skipif(
    not torch.cuda.is_available() or probe_cuda() is not None, reason="needs a usable CUDA GPU"
)


@needs_gpu
@pytest.mark.parametrize("n,d", SIZES)
def test_the_gpu_gives_the_cpu_answers(n: int, d: int) -> None:
    q, r = _table(n, d, seed=n)
    cpu = nearest_distances(q, r)
    assert np.abs(nearest_distances(q, r, method="cuda") - cpu).max() <= 1e-12 * cpu.max()
    kth = neighbour_distances(r, (1, 5))
    assert np.abs(neighbour_distances(r, (1, 5), method="cuda") - kth).max() <= 1e-12 * kth.max()
    basis = principal_basis(r)
    gpu_kde = GaussianKDE(basis=basis, method="cuda").fit(r)
    cpu_kde = GaussianKDE(basis=basis, method="torch").fit(r)
    assert np.abs(gpu_kde.log_density(q) - cpu_kde.log_density(q)).max() < 1e-9
    loo = gpu_kde.leave_one_out_log_density()
    assert np.abs(loo - cpu_kde.leave_one_out_log_density()).max() < 1e-9
    refits = leave_one_out_refits(r[:300], basis, method="cuda")
    assert np.allclose(refits, leave_one_out_refits(r[:300], basis), rtol=1e-9, atol=1e-9)
