"""The brute-force neighbour kernels (d >= 16) are exact and faster than scikit-learn's.

Exactness is checked against independent implementations: scipy's ``cKDTree`` (nearest
distances) and a float64 all-pairs count (``count_closer``), on random data with duplicated
rows, exact hits, near-ties, ties across reference tiles and one-hot columns.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pytest
from scipy.spatial import cKDTree

from engine.search.neighbours import count_closer, kth_neighbour_distances, nearest_distances

LINE = np.array([[0.0], [1.0], [3.0], [6.0], [10.0]])  # integer gaps: every distance exact


def _hard_case(seed: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """5,000 reference rows (three float32 tiles) with duplicates spread across tiles, a block of
    one-hot columns, and 1,300 queries (three query blocks): random, exact hits, near-ties."""
    rng = np.random.default_rng(seed)
    ref = rng.standard_normal((5000, d))
    ref[:, d // 2 :] = np.eye(d - d // 2)[rng.integers(0, d - d // 2, 5000)]  # one-hot block
    ref[4500:4600] = ref[:100]  # duplicates in the first and the last tile
    ref[2100:2150] = ref[:50]
    q = np.r_[
        rng.standard_normal((1000, d)),
        ref[:150],  # exact hits on duplicated rows (distance 0, tied)
        ref[150:250] + 1e-7 * rng.standard_normal((100, d)),  # near-ties below float32 precision
        (ref[300:350] + ref[4300:4350]) / 2,  # equidistant from two rows in different tiles
    ]
    return q, ref


@pytest.mark.parametrize("d", [20, 30, 50])
@pytest.mark.parametrize("seed", [0, 1])
def test_nearest_distances_equal_the_k_d_tree(d: int, seed: int) -> None:
    q, ref = _hard_case(seed, d)
    tree = cKDTree(ref).query(q)[0]
    got = nearest_distances(q, ref, method="brute")
    np.testing.assert_allclose(got, tree, rtol=0, atol=1e-12)
    assert (got[1000:1150] == 0.0).all()  # 150 exact hits


@pytest.mark.parametrize("d", [20, 30, 50])
def test_nearest_distances_on_an_integer_grid_with_many_ties(d: int) -> None:
    rng = np.random.default_rng(d)
    ref = rng.integers(-1, 2, (3000, d)).astype(float)
    q = np.r_[rng.integers(-1, 2, (600, d)).astype(float), ref[:40]]
    got = nearest_distances(q, ref, method="brute")
    assert got.tolist() == cKDTree(ref).query(q)[0].tolist()  # identical, not just close


def test_nearest_distances_when_every_reference_row_has_a_thousand_copies() -> None:
    # 20 distinct one-hot-like rows x 1,000 copies: each query ties with >= 1,000 rows, so the
    # float64 re-check sees over 500,000 candidate pairs per query block (checked in slices)
    rng = np.random.default_rng(9)
    ref = np.repeat(rng.integers(0, 2, (20, 30)).astype(float), 1000, axis=0)
    q = rng.integers(0, 2, (1200, 30)).astype(float)
    got = nearest_distances(q, ref, method="brute")
    assert got.tolist() == cKDTree(ref).query(q)[0].tolist()


def test_nearest_distances_with_values_beyond_float32_range() -> None:
    # squared norms of 1e21-scale rows overflow float32: the search must stay exact, not inf
    rng = np.random.default_rng(7)
    ref = rng.standard_normal((300, 20)) * 1e21
    q = ref[:30] + rng.standard_normal((30, 20)) * 1e18
    got = nearest_distances(q, ref, method="brute")
    np.testing.assert_allclose(got, cKDTree(ref).query(q)[0], rtol=1e-12, atol=0)


@pytest.mark.parametrize("d", [20, 30, 50])
def test_count_closer_equals_an_all_pairs_count(d: int) -> None:
    q, ref = _hard_case(3, d)
    centres = q[::4]
    dist = np.sqrt(((centres[:, None, :] - ref[None, :, :]) ** 2).sum(-1))
    ordered = np.sort(dist, axis=1)
    radii = ordered[:, 7]
    radii[::5] = ordered[::5, 3]  # radius exactly at a neighbour's distance: not counted
    radii[-40:] = np.r_[np.zeros(20), np.full(20, 0.5)]
    expected = (dist < radii[:, None]).sum(1)
    assert count_closer(ref, centres, radii).tolist() == expected.tolist()
    assert expected[:-40].min() >= 1 and expected[-20:].sum() > 0


def test_count_closer_with_exact_ties_on_an_integer_grid() -> None:
    rng = np.random.default_rng(8)
    pts = rng.integers(-1, 2, (2500, 30)).astype(float)
    radii = np.sqrt(rng.integers(1, 40, 300).astype(float))  # integer squared distances: ties
    dist = np.sqrt(((pts[:300, None, :] - pts[None, :, :]) ** 2).sum(-1))
    expected = (dist < radii[:, None]).sum(1)
    assert count_closer(pts, pts[:300], radii).tolist() == expected.tolist()
    assert (dist == radii[:, None]).sum() > 1000  # the case really has ties at the radius


def _best_of(runs: int, fn, *args) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return min(times)


@pytest.mark.parametrize("d", [30, 50])
def test_brute_search_is_at_least_as_fast_as_scikit_learn(d: int) -> None:
    neighbors = pytest.importorskip("sklearn.neighbors")
    rng = np.random.default_rng(d)
    q, ref = rng.standard_normal((6000, d)), rng.standard_normal((12000, d))
    sk = neighbors.NearestNeighbors(n_neighbors=1, algorithm="brute", n_jobs=-1).fit(ref)
    ours, theirs = [], []
    for _ in range(3):  # interleaved, best of three: the machine is shared
        ours.append(_best_of(1, nearest_distances, q, ref))
        theirs.append(_best_of(1, sk.kneighbors, q))
    assert min(ours) <= min(theirs), f"ours {min(ours):.3f} s, scikit-learn {min(theirs):.3f} s"


# --- neighbour counts at the radius, by hand (eq. 26; docs/mutation.md) ---------------------------


@pytest.mark.parametrize("d", [1, 16])
def test_count_closer_is_strict_on_both_paths(d: int) -> None:
    """Points 0, 1, 2, 3 on a line (padded to d = 16 for the brute-force path): around 0 with
    radius 2 two points lie strictly closer (0 and 1; 2 sits on the circle); radius 2.5 -> 3;
    radius 0 -> 0; around 1.5 with radius 1.5 -> 2 (0 and 3 on the circle)."""
    from engine.search.neighbours import count_closer

    def pad(x: list[float]) -> np.ndarray:
        out = np.zeros((len(x), d))
        out[:, 0] = x
        return out

    pts = pad([0.0, 1.0, 2.0, 3.0])
    got = count_closer(pts, pad([0.0, 0.0, 0.0, 1.5, 10.0]), np.array([2.0, 2.5, 0.0, 1.5, 1.0]))
    assert got.tolist() == [2, 3, 0, 2, 0]
    assert got.dtype == np.int64
    assert count_closer(pts, pad([0.0]), np.array([0.0])).tolist() == [0]


def test_count_closer_brute_path_resolves_rounding_at_the_radius() -> None:
    """d = 20, large coordinates: a point exactly 5 away (3-4-5 triangle) is not closer than 5,
    one at 4.999999 is, and one at 5.000001 is not, though float64 |a|^2 + |b|^2 - 2ab cannot
    tell."""
    from engine.search.neighbours import count_closer

    base = np.full((1, 20), 1e4)
    pts = np.repeat(base, 3, axis=0)
    pts[0, :2] += [3.0, 4.0]
    pts[1, 0] += 4.999999
    pts[2, 0] += 5.000001
    assert count_closer(pts, base, np.array([5.0])).tolist() == [1]
    assert count_closer(pts, base, np.array([5.0000011])).tolist() == [3]


@pytest.mark.parametrize("radius", [0.5, 1.0, 3.0])
def test_count_closer_excludes_a_point_exactly_on_a_radius_below_or_at_one(radius: float) -> None:
    pts = np.array([[0.0], [radius], [-radius / 2], [radius * 2]])
    # the centre itself and -radius/2 lie strictly inside; +radius lies on the sphere
    counts = count_closer(pts, np.array([[0.0], [9.0]]), np.array([radius, 0.0]))
    assert counts.tolist() == [2, 0] and counts.dtype == np.int64  # counts, not floats


def test_count_closer_with_float32_radii_is_exact_in_float64() -> None:
    """A point 2^-30 inside a radius of 1 given as float32 is closer: the radius is moved one
    float64 step below, not one float32 step (2^-24)."""
    pts = np.array([[0.0], [1.0 - 2.0**-30], [1.0]])
    radii = np.array([1.0], dtype=np.float32)
    assert count_closer(pts, np.array([[0.0]]), radii).tolist() == [2]
    # float32 points and centres are read as the same float64 values
    pts32 = np.array([[0.0], [0.5], [1.0]], dtype=np.float32)
    assert count_closer(pts32, np.zeros((1, 1), np.float32), radii).tolist() == [2]


def test_kth_neighbour_distances_of_the_five_row_line() -> None:
    """Rows 0, 1, 3, 6, 10 (the line of tests/test_release_metrics.py)."""
    expect = {1: [1, 1, 2, 3, 4], 2: [3, 2, 3, 4, 7], 3: [6, 5, 3, 5, 9], 4: [10, 9, 7, 6, 10]}
    for k, dist in expect.items():
        assert kth_neighbour_distances(LINE, k).tolist() == dist
    assert kth_neighbour_distances(LINE.astype(np.float32), 2).dtype == np.float64


@pytest.mark.parametrize("where", ["point", "centre", "radius"])
def test_count_closer_with_a_huge_value_in_16_columns_is_exact_and_silent(where: str) -> None:
    """A 1e20 coordinate (or radius) would overflow float32 squares: the float32 tiles are not
    used for it (no overflow warning reaches the user) and the count stays exact."""
    pts = np.zeros((6, 16))
    pts[:, 0] = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    centres, radii = pts[:2].copy(), np.array([2.5, 2.0])
    expect = [3, 3]  # 0: rows 0, 1, 2 (row 3 at 3); 1: rows 0, 1, 2 (row 3 at exactly 2)
    if where == "point":
        pts[5, 1] = 1e20  # the row at 5 moves far away: not counted anyway
    elif where == "centre":
        centres[1, 1] = 1e20  # nothing is near it
        expect = [3, 0]
    else:
        radii[0] = 1e20  # every row is closer
        expect = [6, 3]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert count_closer(pts, centres, radii).tolist() == expect
