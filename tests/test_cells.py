"""The cell-split neighbour searches give the same exact distances and counts as one k-d tree
over all columns (engine.search.cells), on mixed tables with ties, duplicates, empty cells and
cells that only one side has."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial import cKDTree

from engine.search.cells import (
    count_by_cell,
    discrete_columns,
    kth_by_cell,
    nearest_by_cell,
    unique_rows,
)
from engine.search.neighbours import count_closer, nearest_distances, neighbour_distances


def _mixed(n: int, rng: np.random.Generator, *, numbers: int = 3, rounded: bool = True):
    """``numbers`` numeric columns (rounded: many exact ties), a 3-level one-hot block scaled
    as in the distance space, and a z-scored flag."""
    x = rng.normal(size=(n, numbers))
    if rounded:
        x = x.round(1)
    level = rng.integers(0, 3, n)
    flag = rng.integers(0, 2, n)
    return np.hstack([x, np.eye(3)[level] / np.sqrt(2), ((flag - 0.4) / 0.49)[:, None]])


def test_discrete_columns_are_the_one_hot_block_and_the_flag():
    rows = _mixed(2000, np.random.default_rng(0))
    assert discrete_columns(rows).tolist() == [3, 4, 5, 6]
    assert discrete_columns(rows[:, :3]) is None  # numbers only: nothing to set aside
    assert discrete_columns(rows[:, 3:]) is None  # no continuous column left


@pytest.mark.parametrize("seed", range(6))
def test_nearest_by_cell_equals_one_tree(seed):
    rng = np.random.default_rng(seed)
    ref = _mixed(int(rng.integers(50, 800)), rng, numbers=int(rng.integers(1, 5)))
    if seed % 2:  # a whole cell missing from the reference
        ref = ref[ref[:, -1] > 0]
    queries = np.vstack([_mixed(300, rng, numbers=ref.shape[1] - 4), ref[:40]])  # duplicates
    disc = discrete_columns(ref)
    exact = cKDTree(ref).query(queries, k=1)[0]
    got = nearest_by_cell(queries, ref, disc)
    assert np.allclose(got, exact, rtol=1e-12, atol=1e-12)
    assert (got[-40:] == 0).all()  # the reference's own rows are at distance exactly 0
    assert np.allclose(nearest_distances(queries, ref), exact, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_kth_by_cell_equals_one_tree_with_small_cells_and_duplicates(seed):
    rng = np.random.default_rng(10 + seed)
    x = _mixed(int(rng.integers(30, 600)), rng, numbers=2)
    x = np.vstack([x, x[:5]])  # duplicated rows count at distance 0
    x[-1, -4:] = [0, 0, 1 / np.sqrt(2), -5.0]  # a one-row cell: its neighbours are elsewhere
    disc = discrete_columns(x)
    assert disc is not None
    exact = cKDTree(x).query(x, k=6)[0]
    got = kth_by_cell(x, (1, 5), disc)
    assert np.allclose(got, exact[:, [1, 5]], rtol=1e-12, atol=1e-12)
    assert np.allclose(neighbour_distances(x, (1, 5)), exact[:, [1, 5]], rtol=1e-12, atol=1e-12)
    assert (got[-5:-1, 0] == 0).all()  # the last row was moved to a cell of its own


@pytest.mark.parametrize("seed", range(4))
def test_count_by_cell_equals_one_tree_strictly_inside(seed):
    rng = np.random.default_rng(20 + seed)
    pts = _mixed(int(rng.integers(200, 900)), rng, numbers=3)
    centres = pts[rng.choice(len(pts), 150, replace=False)]
    radii = rng.uniform(0.1, 3.0, 150)
    radii[:20] = np.sqrt(((pts[:20] - centres[:20]) ** 2).sum(1))  # a point exactly on the ball
    below = np.nextafter(radii, 0.0)
    exact = cKDTree(pts).query_ball_point(centres, r=below, return_length=True)
    got = count_by_cell(pts, centres, radii, discrete_columns(pts))
    # rows within rounding of the radius (true ties) may fall either side in float64: exact
    # agreement everywhere else, and never more apart than the number of such rows
    dist = np.sqrt(((centres[:, None, :] - pts[None, :, :]) ** 2).sum(-1))
    ties = (np.abs(dist - radii[:, None]) <= 1e-12 * radii[:, None]).sum(1)
    assert ties[:20].min() >= 1 and (ties == 0).sum() > 100
    assert (got[ties == 0] == exact[ties == 0]).all()
    assert (np.abs(got - exact) <= ties).all()
    assert (got == (dist < radii[:, None]).sum(1))[ties == 0].all()
    public = count_closer(pts, centres, radii)
    assert (public[ties == 0] == exact[ties == 0]).all() and (np.abs(public - exact) <= ties).all()


def test_public_searches_take_the_cell_split_above_the_size_floor(monkeypatch):
    """Above ``CELLS_MIN_ROWS`` reference rows the public searches go through the cell split
    (and give the one-tree answers); below it, one tree."""
    import engine.search.neighbours as nb

    rng = np.random.default_rng(5)
    ref, queries = _mixed(600, rng), _mixed(200, rng)
    calls = []
    real_nearest = nb.nearest_by_cell
    monkeypatch.setattr(nb, "nearest_by_cell", lambda *a: calls.append(1) or real_nearest(*a))
    exact = cKDTree(ref).query(queries, k=1)[0]
    assert np.allclose(nb.nearest_distances(queries, ref), exact, rtol=1e-12, atol=1e-12)
    assert calls == []  # 600 rows: below the floor
    monkeypatch.setattr(nb, "CELLS_MIN_ROWS", 100)
    assert np.allclose(nb.nearest_distances(queries, ref), exact, rtol=1e-12, atol=1e-12)
    assert np.allclose(nb.nearest_distances(queries, ref, method="kdtree"), exact, rtol=1e-12)
    assert calls == [1, 1]
    knn = cKDTree(ref).query(ref, k=6)[0][:, [1, 5]]
    assert np.allclose(nb.neighbour_distances(ref, (1, 5)), knn, rtol=1e-12, atol=1e-12)


def test_nearest_by_cell_batches_many_far_queries_by_bound(monkeypatch):
    """Over 8,192 queries searching another cell go in four batches by their bound: same
    exact distances."""
    import engine.search.cells as cells

    rng = np.random.default_rng(7)
    ref = np.hstack([rng.normal(size=(3000, 2)), rng.integers(0, 2, (3000, 1)).astype(float)])
    queries = np.hstack([rng.normal(size=(10000, 2)), np.full((10000, 1), 2.0)])  # a new cell
    batches = []
    real_split = cells._by_bound
    monkeypatch.setattr(cells, "_by_bound", lambda *a: batches.append(n := real_split(*a)) or n)
    exact = cKDTree(ref).query(queries, k=1)[0]
    got = nearest_by_cell(queries, ref, np.array([2]))
    assert np.allclose(got, exact, rtol=1e-12, atol=1e-12)
    assert [len(b) for b in batches[0]] == [2500] * 4  # the first cell searched: 4 batches


@pytest.mark.parametrize("seed", range(4))
def test_unique_rows_is_numpys_unique_by_rows_at_a_fraction_of_the_cost(seed):
    """The fast row key (issue 31) gives numpy's ``unique(axis=0)`` keys, in its order, and its
    inverse: on the distance space's discrete parts (one-hot block, flags), on many-valued
    columns (the sorted path) and with a non-finite value (numpy's own path); and on 40,000
    rows of three flags it is at least 5x faster (0.9 against 55 ms measured)."""
    import time

    rng = np.random.default_rng(seed)
    cases = [
        _mixed(3000, rng)[:, 3:],
        rng.integers(0, 1500, (3000, 3)) * 0.5 - 7.0,  # 1500^3 codes: the sorted path
        np.vstack([_mixed(50, rng)[:, 3:], [[np.nan, 0.0, 1.0, 2.0]]]),
    ]
    for rows in cases:
        keys, inverse = np.unique(rows, axis=0, return_inverse=True)
        fast_keys, fast_inverse = unique_rows(rows)
        np.testing.assert_array_equal(fast_keys, keys)
        np.testing.assert_array_equal(fast_inverse, np.asarray(inverse).ravel())
    flags = rng.integers(0, 2, (40_000, 3)).astype(float)
    times = []
    for fn in (lambda: np.unique(flags, axis=0, return_inverse=True), lambda: unique_rows(flags)):
        start = time.process_time()
        for _ in range(5):
            fn()
        times.append(time.process_time() - start)
    assert times[1] * 5 < times[0]


@pytest.mark.parametrize("seed", range(3))
def test_queries_in_tree_order_give_the_same_answers(seed, monkeypatch):
    """Issue 31: the cell searches put each batch of queries in k-d tree leaf order (speed
    only: 18.6 -> 5.7 s for the 5th neighbours of a 162,636-row cell); every distance and
    count is bit for bit the one in row order (the reordering forced on small inputs), and
    the one-tree answer."""
    import engine.search.cells as cells

    rng = np.random.default_rng(seed)
    ref, queries = _mixed(3000, rng), _mixed(500, rng)
    disc = discrete_columns(ref)
    radii = np.full(len(queries), 0.8)

    def answers():
        return (
            nearest_by_cell(queries, ref, disc),
            kth_by_cell(ref, (1, 5), disc),
            count_by_cell(ref, queries, radii, disc),
        )

    monkeypatch.setattr(cells, "COHERENT_FROM", 10**9)
    in_row_order = answers()
    monkeypatch.setattr(cells, "COHERENT_FROM", 2)
    for fast, slow in zip(answers(), in_row_order, strict=True):
        np.testing.assert_array_equal(fast, slow)
    np.testing.assert_allclose(in_row_order[0], cKDTree(ref).query(queries, k=1)[0], rtol=1e-12)
    inside = cKDTree(ref).query_ball_point(queries, r=np.nextafter(radii, 0), return_length=True)
    np.testing.assert_array_equal(in_row_order[2], inside)
    order = cells.coherent(ref, np.arange(len(ref)))
    assert sorted(order.tolist()) == list(range(len(ref))) and order.tolist() != list(
        range(len(ref))
    )


@pytest.mark.parametrize("seed", range(3))
def test_counts_in_reach_equal_the_tiles_over_every_cell(seed):
    """Issue 31: the release's rank counts skip the cells a ball cannot reach on the discrete
    columns alone; the counts equal the float32 tiles over all points, with radii from inside
    one cell to across every cell and radii exactly at a point's distance (not counted)."""
    from engine.search.cells import count_in_reach
    from engine.search.neighbours import _tiled_count_closer

    rng = np.random.default_rng(seed)
    ref, queries = _mixed(4000, rng), _mixed(600, rng)
    disc = discrete_columns(ref)
    radii = rng.uniform(0.05, 3.5, len(queries))
    radii[:50] = np.sqrt(((queries[:50] - ref[:50]) ** 2).sum(axis=1))  # ties at the edge
    radii[radii == 0] = 0.5
    fast = count_in_reach(ref, queries, radii, disc, _tiled_count_closer)
    np.testing.assert_array_equal(fast, _tiled_count_closer(ref, queries, radii))
    assert fast.min() < fast.max()
