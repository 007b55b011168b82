"""The audit's heavy kernels in torch, in blocks on a device: exact k-nearest-neighbour
distances and the Gaussian kernel sums of the density attack (issue 45, item 2).

Why: on a GPU the CPU's k-d trees and float32 tiles (:mod:`engine.search.neighbours`,
:mod:`engine.search.density`) leave the device idle. Here both kernels are matrix products in
row blocks on the run's device, in float64 everywhere: the audit ranks distances, so a float32
product that moves a distance by 1e-7 relative can swap two members' ranks, while float64
rounding (~1e-16) certifies all but exact or near-exact ties at once. (An H100's float64 rate is
half its float32; a consumer card's 1/64 still does 20,000 x 40,000 x 34 in ~50 ms.)

Nearest neighbours (:func:`knn`): per query block, ``|r|^2 - 2 q.r`` by one ``addmm`` on
centred rows, the ``k + CANDIDATES`` smallest by ``topk``, their squared distances recomputed
from the differences. The k found are certainly the k nearest when the k-th recomputed value
is at most the smallest any other row can have: the last candidate's expanded value minus the
float64 error bound ``4 (d + 3) eps (|q| + max |r|)^2``, floored at 0 (so exact duplicates
certify). Other queries (more than ``CANDIDATES`` rows tied within rounding) are answered by a
direct scan of the differences against every reference row. The distances returned are
recomputed on the host from the two whole rows (``einsum``), as the CPU's cell and brute paths
do, so they equal the CPU's to the last bit or two (tested: 1e-12 relative).

Kernel sums (:func:`log_kernel_sums`): ``log sum_j exp(-|q_i - p_j|^2 / 2)`` over whitened
points, ``q.p - |p|^2 / 2`` by one ``addmm``, a shifted log-sum-exp (exponents floored at -700,
below which float64 ``exp`` adds nothing to a sum that holds 1). The CPU's float32 products
are off by ~1e-6 relative (``density.py``: within 1e-5 nats of scipy); these are off by ~1e-13.
:func:`leave_one_out_refits_torch` is :func:`engine.search.density.leave_one_out_refits` in
torch (batched ``eigh``), float64 like the CPU's.

Blocks: sized so that about three float64 buffers of a block fit ``min(free / 4,
GPU_BLOCK_BYTES)`` on a GPU, rounded down to a power of two (512 MiB: small cards keep under 2 GB
with the inputs; the same blocks on every run unless memory is short, so seeded runs repeat),
and ``CPU_BLOCK_BYTES`` on the CPU.

Measured (``benchmarks/bench_device_kernels.py``, an H200 machine of 16 cores, CPU path / GPU):
nearest distances of 100,000 rows to 40,000 at 34 columns 1.38 / 0.23 s (10 columns: 0.29 /
0.20 s, the cell trees are quick there), the 1st and 5th other row of 40,000 rows at 34
columns 5.2 / 0.11 s, the kernel sums of 100,000 rows 1.4-1.7 / 0.11 s, 2,000 leave-one-out
refits 0.3-0.7 / 0.005-0.010 s.

Which path runs (:func:`kernel_device`): method ``"cuda"`` (the audit's ``nn_method`` on a run
whose device resolved to CUDA) -> these kernels on the GPU; ``"torch"``, or the environment
variable ``LATENT_SYNTH_TORCH_KERNELS`` set to anything but ``""`` or ``"0"`` -> these kernels
on the CPU device (tests and CI run the GPU code paths this way); else None: the CPU path,
unchanged.

References: PITFALLS.md "Nearest neighbours"; Higham (2002), Accuracy and Stability of Numerical
Algorithms, section 3.1 (inner-product error bound).

Example:
    >>> import numpy as np
    >>> dist, idx = knn(np.array([[3.0, 3.0]]), np.array([[0.0, 0.0], [3.0, 4.0]]), 1,
    ...                 device=torch.device("cpu"))
    >>> dist.tolist(), idx.tolist()
    ([[1.0]], [[1]])
"""

from __future__ import annotations

import math
import os

import numpy as np
import torch

FORCE_ENV = "LATENT_SYNTH_TORCH_KERNELS"
CANDIDATES = 7  # extra candidates per query beyond the k wanted: room for near-ties
GPU_BLOCK_BYTES = 512 * 2**20
CPU_BLOCK_BYTES = 32 * 2**20
_EPS64 = 2.0**-53
_EXP_FLOOR = -700.0  # exp(-700) = 1e-304: nothing beside the 1 every shifted sum holds


def kernel_device(method: str = "auto") -> torch.device | None:
    """The device the torch kernels run on for ``method``, or None for the CPU path.

    Example:
        >>> kernel_device("cuda"), kernel_device("torch")
        (device(type='cuda'), device(type='cpu'))
    """
    if method == "cuda":
        return torch.device("cuda")
    if method == "torch" or os.environ.get(FORCE_ENV, "") not in ("", "0"):
        return torch.device("cpu")
    return None


def block_rows(columns: int, device: torch.device, *, buffers: int = 3) -> int:
    """Rows per block so that ``buffers`` float64 arrays of ``columns`` columns fit the budget."""
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        # a power of two: the same blocks (hence the same rounding) whatever the free memory
        # unless it is short, so a seeded re-run repeats to the bit
        budget = 1 << (max(1, min(free // 4, GPU_BLOCK_BYTES)).bit_length() - 1)
    else:
        budget = CPU_BLOCK_BYTES
    return max(1, int(budget) // (8 * buffers * max(1, columns)))


def _tensor(x: np.ndarray, device: torch.device) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(x, dtype=np.float64)).to(device)


def knn(
    queries: np.ndarray,
    reference: np.ndarray,
    k: int,
    *,
    device: torch.device,
    exclude_self: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` nearest reference rows of every query row: (distances, indices), each (n, k),
    ascending, exact float64. ``exclude_self``: the queries are the reference rows and row i is
    not its own neighbour (a duplicate is, at distance 0). Missing neighbours (fewer rows than
    ``k``) have distance inf and index ``len(reference)``, as scipy's ``cKDTree.query``.

    Example:
        >>> x = np.array([[0.0], [1.0], [3.0]])
        >>> knn(x, x, 2, device=torch.device("cpu"), exclude_self=True)[0].tolist()
        [[1.0, 3.0], [1.0, 2.0], [2.0, 3.0]]
    """
    q = np.ascontiguousarray(queries, dtype=np.float64)
    r = np.ascontiguousarray(reference, dtype=np.float64)
    n, m, d = len(q), len(r), r.shape[1]
    others = m - 1 if exclude_self else m
    found = min(k, others)
    dist = np.full((n, k), np.inf)
    index = np.full((n, k), m, dtype=np.int64)
    if n == 0 or found <= 0:
        return dist, index
    centre = r.mean(axis=0)
    rt = _tensor(r - centre, device)
    qt = rt if exclude_self else _tensor(q - centre, device)
    r_norm2 = (rt * rt).sum(1)
    r_max = float(r_norm2.max().sqrt())
    take = min(found + CANDIDATES, others)
    rows = block_rows(m + take * d, device)
    picks, sure = [], []
    for start in range(0, n, rows):
        qb = qt[start : start + rows]
        part = torch.addmm(r_norm2[None, :], qb, rt.T, alpha=-2.0)  # |r|^2 - 2 q.r
        if exclude_self:
            own = torch.arange(len(qb), device=device)
            part[own, start + own] = math.inf
        vals, idx = torch.topk(part, take, dim=1, largest=False, sorted=True)
        del part
        exact = ((qb[:, None, :] - rt[idx]) ** 2).sum(-1)
        exact, order = exact.sort(dim=1, stable=True)
        picks.append(idx.gather(1, order[:, :found]))
        if take == others:  # every other row is a candidate
            sure.append(torch.ones(len(qb), dtype=torch.bool, device=device))
            continue
        q_norm2 = (qb * qb).sum(1)
        bound = 4.0 * (d + 3) * _EPS64 * (q_norm2.sqrt() + r_max) ** 2
        lowest_other = (vals[:, -1] + q_norm2 - bound).clamp(min=0.0)
        sure.append(exact[:, found - 1] <= lowest_other)
    best = torch.cat(picks)
    unsure = torch.nonzero(~torch.cat(sure)).flatten()
    if len(unsure):
        best[unsure] = _scan(qt[unsure], rt, found, unsure if exclude_self else None)
    index[:, :found] = best.cpu().numpy()
    for j in range(found):  # from the whole rows, as the CPU's cell and brute paths do
        diff = q - r[index[:, j]]
        dist[:, j] = np.sqrt(np.einsum("ij,ij->i", diff, diff))
    return dist, index


def _scan(q: torch.Tensor, r: torch.Tensor, k: int, own: torch.Tensor | None) -> torch.Tensor:
    """Indices of the ``k`` nearest rows of ``r`` for each row of ``q`` from the differences
    themselves (no expanded form): exact up to the rounding of each squared distance.
    ``own``: each query's own row in ``r``, left out."""
    d = r.shape[1]
    rows = max(1, min(len(q), block_rows(d, q.device) // max(1, len(r))))
    chunk = max(1, block_rows(d, q.device) // rows)
    out = []
    for start in range(0, len(q), rows):
        qb = q[start : start + rows]
        best = torch.full((len(qb), 0), math.inf, dtype=q.dtype, device=q.device)
        best_i = torch.zeros((len(qb), 0), dtype=torch.int64, device=q.device)
        for s in range(0, len(r), chunk):
            d2 = ((qb[:, None, :] - r[None, s : s + chunk]) ** 2).sum(-1)
            if own is not None:
                mine = own[start : start + rows] - s
                hit = torch.nonzero((mine >= 0) & (mine < d2.shape[1])).flatten()
                d2[hit, mine[hit]] = math.inf
            cols = torch.arange(s, s + d2.shape[1], device=q.device).expand(len(qb), -1)
            best = torch.cat([best, d2], dim=1)
            best_i = torch.cat([best_i, cols], dim=1)
            best, keep = torch.topk(best, min(k, best.shape[1]), dim=1, largest=False)
            best_i = best_i.gather(1, keep)
        order = best.sort(dim=1, stable=True).indices
        out.append(best_i.gather(1, order))
    return torch.cat(out)


def log_kernel_sums(
    queries: np.ndarray, points: np.ndarray, *, device: torch.device, leave_one_out: bool = False
) -> np.ndarray:
    """``log sum_j exp(-|q_i - p_j|^2 / 2)`` for every query row (float64; whitened rows).
    ``leave_one_out``: the queries are the points and row i leaves out its own kernel.

    Example:
        >>> p = np.array([[0.0], [2.0]])
        >>> float(log_kernel_sums(np.array([[0.0]]), p, device=torch.device("cpu"))[0])
        ... # doctest: +ELLIPSIS
        0.126928...
    """
    pt = _tensor(points, device)
    qt = pt if leave_one_out else _tensor(queries, device)
    half = 0.5 * (pt * pt).sum(1)
    rows = block_rows(len(pt), device, buffers=2)
    out = []
    for start in range(0, len(qt), rows):
        qb = qt[start : start + rows]
        part = torch.addmm(half[None, :], qb, pt.T, beta=-1.0)  # q.p - |p|^2 / 2
        if leave_one_out:
            own = torch.arange(len(qb), device=device)
            part[own, start + own] = -math.inf
        top = part.max(dim=1, keepdim=True).values
        part.sub_(top).clamp_(min=_EXP_FLOOR).exp_()
        out.append(part.sum(dim=1).log_() + top[:, 0] - 0.5 * (qb * qb).sum(1))
    return torch.cat(out).cpu().numpy()


def leave_one_out_refits_torch(y: np.ndarray, rtol: float, *, device: torch.device) -> np.ndarray:
    """Each centred, projected row's log-density under a KDE refitted on the other n - 1
    (covariance, Scott's bandwidth): :func:`engine.search.density.leave_one_out_refits`'s
    float64 computation in torch blocks, one batched ``eigh`` per block."""
    yt = _tensor(y, device)
    n, k = yt.shape
    m = n - 1
    factor2 = (m ** (-1.0 / (k + 4))) ** 2
    total, cross = yt.sum(dim=0), yt.T @ yt
    rows = max(1, block_rows(n * k, device, buffers=3))
    out = []
    for start in range(0, n, rows):
        yi = yt[start : start + rows]
        rest = total - yi
        prods = cross[None] - yi[:, :, None] * yi[:, None, :]
        cov = (prods - rest[:, :, None] * rest[:, None, :] / m) / (m - 1)
        lam, vec = torch.linalg.eigh(cov)
        floor = rtol * lam.max(dim=1).values.clamp(min=1e-300)
        lam = torch.maximum(lam, floor[:, None])
        metric = (vec / (lam * factor2)[:, None, :]) @ vec.transpose(1, 2)
        diff = yi[:, None, :] - yt[None, :, :]
        d2 = (torch.matmul(diff, metric) * diff).sum(-1)
        own = torch.arange(len(yi), device=device)
        d2[own, start + own] = math.inf
        expo = -0.5 * d2
        top = expo.max(dim=1).values
        lse = (expo - top[:, None]).exp().sum(dim=1).log() + top
        log_const = (
            -math.log(m) - 0.5 * k * math.log(2 * math.pi) - 0.5 * (lam * factor2).log().sum(1)
        )
        out.append(lse + log_const)
    return torch.cat(out).cpu().numpy()
