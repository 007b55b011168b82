"""Exact nearest-neighbour distances and radius counts for the privacy audit.

Why by hand: the audit needs *exact* float64 nearest distances (a membership score that is off
by float32 rounding can flip ranks and ties) at every size, on CPU or GPU, without a heavy
dependency. scipy's ``cKDTree`` (used here, on every core for large batches) is exact and
fastest in low dimension; in high dimension a tree degenerates and exact brute force wins. From
``CELLS_MIN_ROWS`` rows the tree searches set binary and categorical columns aside
(:mod:`engine.search.cells`: one tree per cell over the continuous columns, 2x faster at
d = 12), and dense ball counts go to the float32 tiles below. faiss and
``torch.cdist`` are float32 and not exact, so the brute path below searches in float32 with a
matrix product and then *certifies* the winner: it re-computes in float64 every candidate that
the float32 error bound cannot rule out. On the CPU the product runs in cache-sized tiles (512
queries x 2,048 rows, 4 MiB) with a one-thread BLAS per core and a running top-2 per query, so
no large distance matrix is ever written: 15k x 30k at d = 30 / 50 in 0.66 / 0.85 s against 1.56
/ 1.76 s for scikit-learn's brute force (``n_jobs=-1``), medians of 5, 2 loaded cores.

Crossover (measured, ``benchmarks/bench_audit.py``, 2 shared cores, 15k x 12k): with the torch
brute path the tree won up to d = 12 and was even around d = 16-20, hence
``BRUTE_FORCE_MIN_DIM = 16``. The tiled path moved it down (d = 8: tree 0.32 s, brute 0.37 s;
d = 12: 1.25 s against 0.32 s; d = 16: 3.0 s against 0.35 s); the threshold is kept at 16
because the tree wins on clustered and one-hot data up to d = 14 (table in
:data:`engine.device.BRUTE_FORCE_MIN_DIM`, ``benchmarks/bench_neighbours.py``). Queries whose
float32 winner is not certified (near-ties: tight clusters, duplicated rows) are answered by the
exact k-d tree, so clustered data no longer pay a second float32 pass (d = 16: 2.9 -> 1.0 s).
On a GPU (method ``cuda``, chosen by :func:`engine.device.nn_method_for` from the run's probed
device) the search is :func:`engine.search.device_kernels.knn`: float64 blocks on the device,
certified, out of memory -> CPU; ``torch`` runs the same code on the CPU device (tests).

References:
    PITFALLS.md "Nearest neighbours"; Bentley (1975) k-d trees; scipy.spatial.cKDTree.

Example:
    >>> import numpy as np
    >>> ref = np.array([[0.0, 0.0], [3.0, 4.0]])
    >>> nearest_distances(np.array([[3.0, 3.0]]), ref).tolist()
    [1.0]
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import torch
from scipy.spatial import cKDTree

from engine.device import is_out_of_memory, nn_method_for
from engine.search.cells import (
    count_by_cell,
    count_in_reach,
    discrete_columns,
    kth_by_cell,
    nearest_by_cell,
)
from engine.search.device_kernels import kernel_device, knn
from engine.search.parallel import over_blocks, workers_for

BRUTE_FORCE_MIN_DIM = 16
# Fewest reference rows for the cell split (engine.search.cells): below it one tree is
# quicker (a 300-row audit's 309 searches took 0.12 s with one tree, 0.72 s split in cells).
CELLS_MIN_ROWS = 4096


def _tree(points: np.ndarray) -> cKDTree:
    """A k-d tree tuned for these queries: sliding-midpoint splits and 32-point leaves build
    about twice as fast and query about 20 % faster than scipy's defaults here (measured at
    n = 200,000, d = 7: 2.8 s against 3.6 s on 2 cores); results are identical (exact)."""
    return cKDTree(points, leafsize=32, balanced_tree=False)


def _choose_method(d: int, method: str) -> str:
    """Resolve ``auto`` to ``kdtree`` or ``brute`` from the dimension, on the CPU. The GPU is
    used only when asked for (``cuda``): the caller knows the run's resolved device
    (:func:`engine.device.nn_method_for`); ``torch.cuda.is_available()`` is no such answer.
    ``torch`` (or the variable ``LATENT_SYNTH_TORCH_KERNELS``): the device kernels on the CPU."""
    if method not in ("auto", "kdtree", "brute", "cuda", "torch"):
        raise ValueError(f"unknown nearest-neighbour method '{method}'")
    if kernel_device(method) is not None:
        return "cuda" if method == "cuda" else "torch"
    if method != "auto":
        return method
    return nn_method_for("cpu", d)


def nearest_distances(
    queries: np.ndarray, reference: np.ndarray, *, method: str = "auto"
) -> np.ndarray:
    """Euclidean distance (float64) from every query row to its nearest reference row.

    ``method``: ``auto`` (see module docstring), ``kdtree``, ``brute`` (CPU tiles), ``cuda`` or
    ``torch`` (the device kernels on the GPU or the CPU device). All paths are exact: they
    return the same float64 distances up to rounding (~1e-15).

    Example:
        >>> nearest_distances(np.zeros((1, 3)), np.ones((2, 3)), method="brute").round(6).tolist()
        [1.732051]
    """
    q = np.ascontiguousarray(queries, dtype=np.float64)
    r = np.ascontiguousarray(reference, dtype=np.float64)
    if q.ndim != 2 or r.ndim != 2 or q.shape[1] != r.shape[1] or len(r) == 0:
        raise ValueError("queries and reference must be 2-D with the same number of columns")
    chosen = _choose_method(q.shape[1], method)
    if chosen == "kdtree":
        disc = discrete_columns(r) if len(r) >= CELLS_MIN_ROWS else None
        if disc is not None:
            return nearest_by_cell(q, r, disc)
        return _tree(r).query(q, k=1, workers=workers_for(q))[0]
    if chosen == "brute":
        return _brute_nearest(q, r)
    try:
        return knn(q, r, 1, device=kernel_device(chosen) or torch.device("cpu"))[0][:, 0]
    except Exception as err:
        if not is_out_of_memory(err):
            raise
    torch.cuda.empty_cache()
    warnings.warn(
        "the GPU ran out of memory in the nearest-neighbour search; finishing on the CPU",
        RuntimeWarning,
        stacklevel=2,
    )
    return nearest_distances(q, r, method=nn_method_for("cpu", q.shape[1]))


def _brute_nearest(q: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Certified float32 brute force in cache-sized BLAS tiles on the CPU (the exact tree where
    |x| is near float32 overflow)."""
    if _float32_safe(q, r):
        return _tiled_nearest(q, r)
    return _tree(r).query(q, k=1, workers=workers_for(q))[0]


_EPS32 = 2.0**-24
_TILE_QUERIES, _TILE_REFS = 512, 2048  # a 4 MiB float32 tile per worker stays in cache
_FLOAT32_SAFE = 1e15  # |x| below this: squared norms and their sums stay finite in float32


def _float32_safe(*arrays: np.ndarray) -> bool:
    """True when every value is finite and small enough for the float32 expansion."""
    return all(np.isfinite(a).all() and np.abs(a).max(initial=0.0) < _FLOAT32_SAFE for a in arrays)


def _error_bound(rows: np.ndarray, ref_max_norm: float) -> np.ndarray:
    """Per row, a bound on the float32 error of |r|^2 - 2 q.r (inputs, norms and the d + 1 term
    product rounded to float32): (d + 3) eps (|q| + |r|)^2, with a 4x margin."""
    norms = np.sqrt(np.einsum("ij,ij->i", rows, rows))
    return 4.0 * (rows.shape[1] + 3) * _EPS32 * (norms + ref_max_norm) ** 2


def _augmented(queries: np.ndarray, reference: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float32 ``[-2 q, 1]`` and ``[r, |r|^2]``: one matrix product gives |r|^2 - 2 q.r."""
    d = queries.shape[1]
    qa = np.empty((len(queries), d + 1), np.float32)
    qa[:, :d] = queries
    qa[:, :d] *= -2.0
    qa[:, d] = 1.0
    ra = np.empty((len(reference), d + 1), np.float32)
    ra[:, :d] = reference
    ra[:, d] = np.einsum("ij,ij->i", reference, reference)
    return qa, ra


def _ref_tiles(ra: np.ndarray) -> list[np.ndarray]:
    """Transposed, contiguous reference tiles of ``_TILE_REFS`` rows."""
    return [np.ascontiguousarray(ra[j : j + _TILE_REFS].T) for j in range(0, len(ra), _TILE_REFS)]


def _over_query_blocks(func: Callable[[int], None], n: int) -> None:
    """Run ``func(start)`` for every query block on all cores, each with a one-thread BLAS
    (:func:`engine.search.parallel.over_blocks`)."""
    over_blocks(func, range(0, n, _TILE_QUERIES))


def _tiled_nearest(q: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Exact nearest distances from float32 tiles with a top-2 certificate.

    Per query a running smallest and second-smallest float32 value (and the smallest's row)
    are merged across reference tiles. A gap above twice the error bound certifies the winner;
    other rows (exact ties, near-ties) are answered by the exact float64 k-d tree. Every
    returned distance is computed in float64 from the original values.
    """
    centre = r.mean(axis=0)
    qc, rc = q - centre, r - centre  # smaller norms -> smaller float32 cancellation error
    qa, ra = _augmented(qc, rc)
    tiles = _ref_tiles(ra)
    best = np.empty(len(q), np.float32)
    second = np.empty(len(q), np.float32)
    best_row = np.empty(len(q), np.int64)

    def block(start: int) -> None:
        a = qa[start : start + _TILE_QUERIES]
        rows = np.arange(len(a))
        buf = np.empty((len(a), _TILE_REFS), np.float32)
        b1, b2, bi = (x[start : start + len(a)] for x in (best, second, best_row))
        b1.fill(np.inf), b2.fill(np.inf), bi.fill(0)
        for t, tile in enumerate(tiles):
            x = np.matmul(a, tile, out=buf[:, : tile.shape[1]])
            j = x.argmin(axis=1)
            v1 = x[rows, j]
            x[rows, j] = np.inf
            v2 = x.min(axis=1)
            improved = v1 < b1
            np.minimum(b2, np.minimum(np.where(improved, b1, v1), v2), out=b2)
            bi[improved] = j[improved] + t * _TILE_REFS
            np.minimum(b1, v1, out=b1)

    _over_query_blocks(block, len(q))
    diff = q - r[best_row]
    best2 = np.einsum("ij,ij->i", diff, diff)
    bound = _error_bound(qc, float(np.sqrt(ra[:, -1].astype(np.float64).max())))
    unsure = np.flatnonzero(second.astype(np.float64) - best <= 2.0 * bound)
    out = np.sqrt(best2)
    if len(unsure):
        # near-ties (tight clusters, duplicated rows) go to the exact k-d tree: a float32
        # re-pass over every reference row cost 3-10x the tree on clustered data
        # (benchmarks/bench_neighbours.py, 20 tight clusters, 20k x 20k, d = 16: 2.9 s -> 0.6 s)
        out[unsure] = _tree(r).query(q[unsure], k=1, workers=workers_for(unsure))[0]
    return out


def kth_neighbour_distances(points: np.ndarray, k: int) -> np.ndarray:
    """Distance from each row to its k-th nearest *other* row of the same set (exact, float64).

    Duplicated rows count as other rows at distance 0.

    Example:
        >>> kth_neighbour_distances(np.array([[0.0], [1.0], [3.0]]), 1).tolist()
        [1.0, 1.0, 2.0]
    """
    return neighbour_distances(points, (k,))[:, 0]


def neighbour_distances(
    points: np.ndarray, orders: tuple[int, ...], *, method: str = "auto"
) -> np.ndarray:
    """Distances from each row to its k-th nearest *other* row for every k in ``orders`` (one
    column each, one search for all): exact float64, duplicates at distance 0. Discrete columns
    are set aside when that helps (:mod:`engine.search.cells`). ``method`` ``cuda`` or
    ``torch``: the device kernels (:func:`engine.search.device_kernels.knn`).

    Example:
        >>> neighbour_distances(np.array([[0.0], [1.0], [3.0]]), (1, 2)).tolist()
        [[1.0, 3.0], [1.0, 2.0], [2.0, 3.0]]
    """
    x = np.ascontiguousarray(points, dtype=np.float64)
    k = max(orders)
    device = kernel_device(method)
    if device is not None:
        found = knn(x, x, k, device=device, exclude_self=True)[0]
        return found[:, [j - 1 for j in orders]]
    small = x.shape[1] >= BRUTE_FORCE_MIN_DIM or len(x) < CELLS_MIN_ROWS
    disc = None if small else discrete_columns(x)
    if disc is not None:
        return kth_by_cell(x, tuple(orders), disc)
    tree = cKDTree(x)
    order = (
        tree.indices
    )  # the rows in the tree's leaf order: nearby queries in turn (cells.coherent)
    dist = np.empty((len(x), k + 1))
    dist[order] = tree.query(x[order], k=k + 1, workers=workers_for(x))[0].reshape(len(x), k + 1)
    return dist[:, list(orders)]


def count_closer(points: np.ndarray, centres: np.ndarray, radii: np.ndarray) -> np.ndarray:
    """For each centre row i, the number of ``points`` rows at distance strictly below radii[i].

    Exact: a k-d tree ball count with the radius moved one float below (the ball is closed) for
    d < ``BRUTE_FORCE_MIN_DIM``; float32 tiles with a certificate otherwise (rows within the
    float32 error bound of the radius are re-checked in float64). Never an n x n matrix.

    Example:
        >>> real = np.array([[0.0], [1.0], [2.0]])
        >>> count_closer(real, np.array([[0.0]]), np.array([2.0])).tolist()
        [2]
    """
    p = np.ascontiguousarray(points, dtype=np.float64)
    c = np.ascontiguousarray(centres, dtype=np.float64)
    radii = np.asarray(radii, dtype=np.float64)
    counts = np.zeros(len(c), dtype=np.int64)
    positive = radii > 0
    if not positive.any():
        return counts
    wide = p.shape[1] >= BRUTE_FORCE_MIN_DIM or _full_balls(p, c[positive], radii[positive])
    disc = discrete_columns(p) if len(p) >= CELLS_MIN_ROWS else None
    if wide and _float32_safe(p, c, radii[positive]):
        tiles = _tiled_count_closer
        counts[positive] = (
            tiles(p, c[positive], radii[positive])
            if disc is None
            else count_in_reach(p, c[positive], radii[positive], disc, tiles)
        )
        return counts
    if disc is not None:
        counts[positive] = count_by_cell(p, c[positive], radii[positive], disc)
        return counts
    below = np.nextafter(radii[positive], 0.0)
    counts[positive] = cKDTree(p).query_ball_point(
        c[positive], r=below, return_length=True, workers=workers_for(below)
    )
    return counts


DENSE_BALL_SHARE = 0.005  # balls holding more than this share of the points: float32 tiles
_JUDGE_ROWS = 65_536  # points judged at a time (issue 31: peak memory on a million rows)


def _full_balls(points: np.ndarray, centres: np.ndarray, radii: np.ndarray) -> bool:
    """Whether the balls hold so many points that counting them in a tree costs more than
    comparing every pair in float32 tiles: a tree pays ~280 ns per point inside, the tiles
    ~1.8 ns per pair (measured at d = 12: 8,000 balls of ~1,000 points among 40,000, tiles
    0.56 s, cell trees 2.2 s, one tree 3.8 s). Judged on 64 evenly spaced centres (no
    randomness: the same data always take the same path)."""
    if len(points) < 2_000:
        return False
    pick = np.unique(np.linspace(0, len(centres) - 1, min(64, len(centres))).astype(np.int64))
    c, r2 = centres[pick], radii[pick][:, None] ** 2
    inside = 0
    for s in range(0, len(points), _JUDGE_ROWS):  # 64 x a million float64 would be 0.5 GB
        part = points[s : s + _JUDGE_ROWS]
        d2 = (part * part).sum(1)[None, :] + (c * c).sum(1)[:, None] - 2.0 * (c @ part.T)
        inside += int((d2 < r2).sum())
    return bool(inside / (len(c) * len(points)) > DENSE_BALL_SHARE)


def _row_counts(mask: np.ndarray) -> np.ndarray:
    """True entries per row of a tile (at most ``_TILE_REFS`` < 2^16): 1.5x ``count_nonzero``."""
    return np.add.reduce(mask.view(np.uint8), axis=1, dtype=np.uint16)


def _tiled_count_closer(p: np.ndarray, c: np.ndarray, radii: np.ndarray) -> np.ndarray:
    """``count_closer`` by float32 tiles: |p|^2 - 2 c.p below r^2 - |c|^2 - bound is surely
    closer, above r^2 - |c|^2 + bound surely not; the band between is re-checked in float64."""
    centre = p.mean(axis=0)
    cc = c - centre
    ca, pa = _augmented(cc, p - centre)
    tiles = _ref_tiles(pa)
    thr = radii**2 - np.einsum("ij,ij->i", cc, cc)
    bound = _error_bound(cc, float(np.sqrt(pa[:, -1].astype(np.float64).max())))
    low = np.nextafter((thr - bound).astype(np.float32), np.float32(-np.inf))
    high = np.nextafter((thr + bound).astype(np.float32), np.float32(np.inf))
    counts = np.zeros(len(c), dtype=np.int64)

    def block(start: int) -> None:
        a = ca[start : start + _TILE_QUERIES]
        lo, hi = low[start : start + len(a), None], high[start : start + len(a), None]
        buf = np.empty((len(a), _TILE_REFS), np.float32)
        mask = np.empty((len(a), _TILE_REFS), np.bool_)
        total = counts[start : start + len(a)]
        for t, tile in enumerate(tiles):
            x = np.matmul(a, tile, out=buf[:, : tile.shape[1]])
            sure = _row_counts(np.less(x, lo, out=mask[:, : x.shape[1]]))
            total += sure
            band = np.flatnonzero(
                _row_counts(np.less_equal(x, hi, out=mask[:, : x.shape[1]])) > sure
            )
            if len(band):
                i, j = np.nonzero((x[band] >= lo[band]) & (x[band] <= hi[band]))
                for s in range(0, len(i), 2**16):  # exact ties can fill the band: bounded memory
                    rows, cols = start + band[i[s : s + 2**16]], j[s : s + 2**16] + t * _TILE_REFS
                    dist = np.sqrt(((c[rows] - p[cols]) ** 2).sum(axis=1))
                    np.add.at(total, rows - start, dist < radii[rows])

    _over_query_blocks(block, len(c))
    return counts
