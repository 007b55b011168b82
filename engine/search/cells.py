"""Exact neighbour searches that set a table's discrete columns aside (one k-d tree per cell).

Why by hand: no library splits a mixed table this way. In the distance space a binary column is
two values and a categorical one is a one-hot block, so the rows fall into a few *cells* (one per
combination of discrete values) and the squared distance between two rows is the squared
distance of their continuous parts plus a constant per pair of cells, ``delta^2``. A k-d tree over
all columns at d = 12 (8 numbers, a 3-level category, a flag) works as in 12 dimensions; trees
over the 8 continuous columns of each cell work as in 8, and a neighbour in another cell is
searched only when ``delta^2`` is below the best squared distance found so far (bounded with
``distance_upper_bound``). The answers are the same exact float64 distances as one tree over all
columns (up to rounding of the sum, ~1e-16 relative; ``tests/test_cells.py`` compares both on
random mixed tables with ties, duplicates and cells missing from one side).

Measured on the audit's own inputs for the ``wide`` case of ``benchmarks/bench_pipeline.py``
(8 correlated numbers, a 3-level category, a flag; 2 cores; inputs captured from a real run):
nearest distances of 50,000 rows to 40,000 in 0.70-0.89 s against 1.55-2.04 s for one tree;
the 1st and 5th neighbours of 100,000 rows in 4.3 s against 11.3 s. The pipeline's figures
(neighbour search 68 -> 48-53 s for 77 searches) are in that script's docstring. Below
``CELLS_MIN_ROWS`` reference rows one tree is quicker and is used instead.

References: Bentley (1975) k-d trees; scipy.spatial.cKDTree (``distance_upper_bound``).

Example:
    >>> import numpy as np
    >>> ref = np.array([[0.0, 0.0], [0.0, 3.0], [1.0, 0.5]])  # column 1 numeric, column 0 a flag
    >>> nearest_by_cell(np.array([[1.0, 2.9], [0.0, 0.1]]), ref, np.array([0])).round(3).tolist()
    [1.005, 0.1]
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.spatial import cKDTree

from engine.search.parallel import workers_for

MAX_LEVELS = 16  # a column with at most this many distinct values is set aside as discrete
MAX_CELLS = 256  # at most this many cells (else fewer discrete columns are set aside)
_DENSE_CODES = 1 << 20  # combined codes below this are counted with a bincount, not sorted


def unique_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(rows, axis=0, return_inverse=True)`` (the inverse flat), fast for columns of
    few values: each column is coded by its sorted distinct values, the codes are combined into
    one integer per row (first column most significant, so the rows come out in the same
    lexicographic order) and counted. ``np.unique`` with ``axis=0`` sorts structured rows, which
    cost 55 ms for 40,000 rows of 3 binary columns, called several times per audit repeat
    (issue 31: 11 of the 17.5 s CPU of the 100,000-row audit's neighbour search); this takes
    about 2 ms. Non-finite values, or more combinations than an int64 holds, go to ``np.unique``.

    Example:
        >>> keys, inverse = unique_rows(np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 0.0]]))
        >>> keys.tolist(), inverse.tolist()
        ([[0.0, 2.0], [1.0, 0.0]], [1, 0, 1])
    """
    x = np.asarray(rows, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] == 0 or len(x) == 0 or not np.isfinite(x).all():
        keys, inverse = np.unique(x, axis=0, return_inverse=True)
        return keys, np.asarray(inverse).ravel()
    levels: list[np.ndarray] = []
    code = np.zeros(len(x), dtype=np.int64)
    radix = 1
    for j in range(x.shape[1]):
        values, inv = np.unique(x[:, j], return_inverse=True)
        radix *= len(values)
        if radix >= 1 << 62:
            keys, inverse = np.unique(x, axis=0, return_inverse=True)
            return keys, np.asarray(inverse).ravel()
        code = code * len(values) + inv.ravel()
        levels.append(values)
    if radix <= _DENSE_CODES:
        present = np.bincount(code, minlength=radix) > 0
        used = np.flatnonzero(present)
        inverse = (np.cumsum(present) - 1)[code]
    else:
        used, inverse = np.unique(code, return_inverse=True)
    keys = np.empty((len(used), x.shape[1]))
    rest = used.copy()
    for j in reversed(range(x.shape[1])):
        keys[:, j] = levels[j][rest % len(levels[j])]
        rest //= len(levels[j])
    return keys, np.asarray(inverse, dtype=np.int64).ravel()


def discrete_columns(rows: np.ndarray) -> np.ndarray | None:
    """Columns of ``rows`` to set aside (few distinct values, at most ``MAX_CELLS`` cells and at
    least one continuous column left); None when the split would not help (no such column, or
    one cell only)."""
    x = np.asarray(rows, dtype=np.float64)
    if x.ndim != 2 or len(x) == 0 or x.shape[1] < 2:
        return None
    head = x[: 4 * MAX_LEVELS * MAX_LEVELS]  # a column with many values shows them early: cheap
    levels = np.array(
        [
            len(np.unique(x[:, j])) if len(np.unique(head[:, j])) <= MAX_LEVELS else MAX_LEVELS + 1
            for j in range(x.shape[1])
        ]
    )
    disc = [j for j in np.argsort(levels, kind="stable") if levels[j] <= MAX_LEVELS]
    cells = 0
    while disc:
        cells = len(unique_rows(x[:, disc])[0])
        if cells <= MAX_CELLS:
            break
        disc.pop()  # drop the column with most levels
    if not disc or len(disc) == x.shape[1] or cells < 2:
        return None
    return np.sort(np.asarray(disc, dtype=np.int64))


class _CellIndex:
    """The reference rows grouped by their discrete part, one lazily built tree per cell."""

    def __init__(self, reference: np.ndarray, disc: np.ndarray) -> None:
        self.disc = disc
        self.cont = np.setdiff1d(np.arange(reference.shape[1]), disc)
        self.keys, inverse = unique_rows(reference[:, disc])
        order = np.argsort(inverse, kind="stable")
        bounds = np.searchsorted(inverse[order], np.arange(len(self.keys) + 1))
        cont = reference[:, self.cont]
        self.rows = [
            order[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)
        ]  # reference rows per cell
        self.points = [np.ascontiguousarray(cont[rows]) for rows in self.rows]
        self._trees: dict[int, cKDTree] = {}

    def tree(self, cell: int) -> cKDTree:
        if cell not in self._trees:
            self._trees[cell] = cKDTree(self.points[cell], leafsize=32, balanced_tree=False)
        return self._trees[cell]

    def groups(self, queries: np.ndarray):
        """Per distinct discrete part of the queries: (query rows in a spatially coherent order,
        delta^2 to every cell, cells in increasing delta^2)."""
        keys, inverse = unique_rows(queries[:, self.disc])
        order = np.argsort(inverse, kind="stable")
        bounds = np.searchsorted(inverse[order], np.arange(len(keys) + 1))
        for g, (a, b) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
            d2 = ((self.keys - keys[g]) ** 2).sum(axis=1)
            rows = coherent(queries[:, self.cont], order[a:b])
            yield rows, d2, np.argsort(d2, kind="stable")


COHERENT_FROM = 4096  # queries from which a batch is put in k-d tree order first


def coherent(points: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``rows`` reordered so that consecutive rows of ``points`` lie close together (the leaf
    order of a k-d tree over them). Each query's answer is its own, so the order changes no
    result; it changes the speed: a tree walked by nearby queries in turn stays in cache. The
    5th neighbour of each of a million rows (survival table, 7 numbers in 8 cells): one cell of
    162,636 rows 18.6 s in row order, 5.7 s in tree order, one thread (issue 31).

    Example:
        >>> coherent(np.array([[0.0], [9.0], [1.0]]), np.arange(3)).tolist()  # (too few to sort)
        [0, 1, 2]
    """
    if len(rows) < COHERENT_FROM:
        return rows
    tree = cKDTree(np.ascontiguousarray(points[rows]), leafsize=32, balanced_tree=False)
    return rows[tree.indices]


def _bound(limit2: np.ndarray) -> float:
    """``distance_upper_bound`` for a batch: just above the largest remaining distance."""
    top = float(limit2.max())
    return (
        np.inf if not np.isfinite(top) else float(np.nextafter(np.sqrt(top), np.inf)) * (1 + 1e-12)
    )


def _by_bound(live: np.ndarray, limit2: np.ndarray, d2: float) -> list[np.ndarray]:
    """Queries of another cell in four batches by their remaining squared distance, so each
    batch's ``distance_upper_bound`` is tight (one bound for all: 0.23 s, four: 0.15 s for
    29,000 queries at d = 8); the own cell (``d2`` 0, no bound yet) and small sets in one."""
    if d2 == 0 or len(live) < 8192:
        return [live]
    return [live[part] for part in np.array_split(np.argsort(limit2, kind="stable"), 4)]


def nearest_by_cell(queries: np.ndarray, reference: np.ndarray, disc: np.ndarray) -> np.ndarray:
    """Distance from each query row to its nearest reference row, ``disc`` set aside. The
    distance returned is recomputed in float64 from the two whole rows (as the brute path
    of :mod:`engine.search.neighbours` does), so it does not depend on the split."""
    q = np.ascontiguousarray(queries, dtype=np.float64)
    r = np.ascontiguousarray(reference, dtype=np.float64)
    index = _CellIndex(r, disc)
    qc = np.ascontiguousarray(q[:, index.cont])
    best2 = np.full(len(q), np.inf)
    best_row = np.zeros(len(q), dtype=np.int64)
    for rows, d2, cells in index.groups(q):
        for c in cells:
            live = rows[d2[c] < best2[rows]]
            if len(live) == 0:
                break  # every later cell is at least as far
            for part in _by_bound(live, best2[live] - d2[c], d2[c]):
                dist, at = index.tree(c).query(
                    qc[part],
                    k=1,
                    distance_upper_bound=_bound(best2[part] - d2[c]),
                    workers=workers_for(part),
                )
                cand = dist * dist + d2[c]
                better = cand < best2[part]
                best2[part[better]] = cand[better]
                best_row[part[better]] = index.rows[c][at[better]]
    diff = q - r[best_row]
    return np.sqrt(np.einsum("ij,ij->i", diff, diff))


def kth_by_cell(points: np.ndarray, orders: tuple[int, ...], disc: np.ndarray) -> np.ndarray:
    """Distances from each row to its k-th nearest *other* row of ``points`` for every k in
    ``orders`` (one column each; duplicates count, at distance 0), ``disc`` set aside; each
    distance recomputed in float64 from the two whole rows."""
    x = np.ascontiguousarray(points, dtype=np.float64)
    index = _CellIndex(x, disc)
    xc = np.ascontiguousarray(x[:, index.cont])
    m = max(orders) + 1  # the row itself is among its own neighbours at distance 0
    best2 = np.full((len(x), m), np.inf)
    best_row = np.zeros((len(x), m), dtype=np.int64)
    for rows, d2, cells in index.groups(x):
        for c in cells:
            live = rows[d2[c] < best2[rows, -1]]
            if len(live) == 0:
                break
            take = min(m, len(index.points[c]))
            dist, at = index.tree(c).query(
                xc[live],
                k=take,
                distance_upper_bound=_bound(best2[live, -1] - d2[c]),
                workers=workers_for(live),
            )
            dist, at = dist.reshape(len(live), take), at.reshape(len(live), take)
            found = np.concatenate([index.rows[c], [0]])[at]  # a miss (index n) -> row 0, at inf
            merged = np.concatenate([best2[live], dist * dist + d2[c]], axis=1)
            merged_row = np.concatenate([best_row[live], found], axis=1)
            keep = np.argsort(merged, axis=1, kind="stable")[:, :m]
            best2[live] = np.take_along_axis(merged, keep, axis=1)
            best_row[live] = np.take_along_axis(merged_row, keep, axis=1)
    out = np.empty((len(x), len(orders)))
    for j, k in enumerate(orders):
        diff = x - x[best_row[:, k]]
        out[:, j] = np.where(
            np.isfinite(best2[:, k]), np.sqrt(np.einsum("ij,ij->i", diff, diff)), np.inf
        )
    return out


def count_by_cell(
    points: np.ndarray, centres: np.ndarray, radii: np.ndarray, disc: np.ndarray
) -> np.ndarray:
    """For each centre, the ``points`` rows strictly closer than its radius, ``disc`` set aside.

    In the centre's own cell the count is the k-d tree's, as over all columns (the discrete
    columns add exact zeros). In another cell the radius is ``sqrt(r^2 - delta^2)``, rounded;
    rows within a relative 1e-9 of it are re-checked in float64 from the whole rows, so a row
    exactly on the ball (a tie) is never counted."""
    p = np.ascontiguousarray(points, dtype=np.float64)
    index = _CellIndex(p, disc)
    c = np.ascontiguousarray(centres, dtype=np.float64)
    cc = np.ascontiguousarray(c[:, index.cont])
    radii = np.asarray(radii, dtype=np.float64)
    r2 = radii**2
    counts = np.zeros(len(c), dtype=np.int64)
    for rows, d2, cells in index.groups(c):
        for cell in cells:
            live = rows[d2[cell] < r2[rows]]
            if len(live) == 0:
                break
            tree = index.tree(cell)
            if d2[cell] == 0:
                counts[live] += tree.query_ball_point(
                    cc[live],
                    r=np.nextafter(radii[live], 0.0),
                    return_length=True,
                    workers=workers_for(live),
                )
                continue
            radius = np.sqrt(r2[live] - d2[cell])
            sure = tree.query_ball_point(
                cc[live], r=radius * (1 - 1e-9), return_length=True, workers=workers_for(live)
            )
            maybe = tree.query_ball_point(
                cc[live], r=radius * (1 + 1e-9), return_length=True, workers=workers_for(live)
            )
            counts[live] += sure
            for i in np.flatnonzero(maybe > sure):  # the thin band: whole rows in float64
                centre = live[i]
                near = tree.query_ball_point(cc[centre], r=radius[i] * (1 + 1e-9))
                diff = p[index.rows[cell][near]] - c[centre]
                dist = np.sqrt(np.einsum("ij,ij->i", diff, diff))
                counts[centre] += int((dist < radii[centre]).sum()) - int(sure[i])
    return counts


def count_in_reach(
    points: np.ndarray,
    centres: np.ndarray,
    radii: np.ndarray,
    disc: np.ndarray,
    count: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
) -> np.ndarray:
    """``count(points, centres, radii)`` (points strictly closer than each centre's radius, on
    whole rows) summed over the cells of ``points`` that a centre's ball can reach: a cell at
    squared distance ``delta^2`` >= r^2 (1 + 1e-9) on the discrete columns alone holds no point
    closer than r, so it is skipped. The counts are the same; the work falls with the cells
    left out (the release's rank sample on a million survival rows, issue 31)."""
    p = np.ascontiguousarray(points, dtype=np.float64)
    c = np.ascontiguousarray(centres, dtype=np.float64)
    radii = np.asarray(radii, dtype=np.float64)
    r2 = radii**2
    cell_keys, cell_of = unique_rows(p[:, disc])
    order = np.argsort(cell_of, kind="stable")
    bounds = np.searchsorted(cell_of[order], np.arange(len(cell_keys) + 1))
    members = [order[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    counts = np.zeros(len(c), dtype=np.int64)
    keys, inverse = unique_rows(c[:, disc])
    for g in range(len(keys)):
        rows = np.flatnonzero(inverse == g)
        d2 = ((cell_keys - keys[g]) ** 2).sum(axis=1)
        for cell in np.flatnonzero(d2 < r2[rows].max() * (1 + 1e-9)):
            live = rows[r2[rows] * (1 + 1e-9) > d2[cell]]
            if len(live):
                counts[live] += count(p[members[cell]], c[live], radii[live])
    return counts
