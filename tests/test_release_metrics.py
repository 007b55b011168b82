"""Hand-computed cases that kill the mutants of the release metrics, the ranks and the
neighbour counts that survived mutmut (issue 18; docs/mutation.md lists the ones argued
equivalent).

The main case is five real rows on a line with integer gaps, so every distance, rank, tie and
k-th neighbour is exact and can be checked by eye:

    real   0    1    3    6    10
    synth  2    1    6.5  2    24
    own    2    0    3.5  4    14      (|real - synth|)

    rank r_i = #{j != i : |x_i - x_j| < own_i}:
      row 0 (own 2):   row 1 at 1 closer; row 2 at 3                              -> 1
      row 1 (own 0):   nobody                                                     -> 0
      row 2 (own 3.5): rows 1 (2), 0 (3), 3 (3) closer; row 4 at 7                -> 3
      row 3 (own 4):   row 2 at 3 closer; row 4 at exactly 4 (tie, not closer)    -> 1
      row 4 (own 14):  all four (4, 7, 9, 10)                                     -> 4
    closer probability = (1 + 0 + 3 + 1 + 4) / (5 * 4) = 0.45, median rank 1.

    k-th nearest other real row (k = 1..4):
      row 0: 1 3 6 10 | row 1: 1 2 5 9 | row 2: 2 3 3 7 | row 3: 3 4 5 6 | row 4: 4 7 9 10
    at risk (own <= k-th distance): k = 1 -> row 1 only (1); k = 2 -> rows 0, 1, 3 (row 3 on
    the tie 4 = 4) (3); k = 3 -> rows 0, 1, 3 (3; row 2: 3.5 > 3); k = 4 -> rows 0-3 (4; row 4:
    14 > 10). The default k = 5 is cut to n - 1 = 4.
    Nearest real row of each synthetic row: 2 -> 1 (1 or 3), 1 -> 0 (an exact copy), 6.5 -> 0.5,
    2 -> 1, 24 -> 14: one copy in five.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import engine.privacy.release as release
from engine.privacy.neighbours import count_closer, kth_neighbour_distances
from engine.privacy.release import record_ranks, release_metrics

REAL = np.array([[0.0], [1.0], [3.0], [6.0], [10.0]])
SYNTH = np.array([[2.0], [1.0], [6.5], [2.0], [24.0]])
SHAPE_MESSAGE = "real and paired synthetic rows must have the same 2-D shape, n >= 2"


def _metrics(
    real: np.ndarray = REAL, synth: np.ndarray = SYNTH, **kw: object
) -> release.ReleaseMetrics:
    return release_metrics(real, synth, rng=np.random.default_rng(0), **kw)  # type: ignore[arg-type]


# --- release_metrics on the five-row line ------------------------------------------------------


def test_release_metrics_of_five_rows_by_hand() -> None:
    # sample_rows has no effect while the table is within the exact limit: every row is ranked
    m = _metrics(sample_rows=2)
    assert m.to_dict() == {
        "rows": 5,
        "closer_probability": pytest.approx(9 / 20),  # sum r_i / (n (n - 1))
        "median_rank": 1.0,
        "exact": True,
        "rows_evaluated": 5,
        # own 0 .. 14: 99th percentile 13.6, width 0.5 (30 bins), all 5 rows merged into one bin
        "own_distance_histogram": {"edges": [0.0, 14.5], "counts": [5]},
        # nearest other real row 1, 1, 2, 3, 4: width 0.2, one bin up to 4.2 (not the 2nd row's 7)
        "nearest_real_histogram": {"edges": [0.0, 4.2], "counts": [5]},
        "share_within_1e6": 0.2,  # one exact copy; the rows 1 away are not copies
        "k_risk": 5,  # the default k
        "at_risk": 4,  # k = 5 cut to n - 1 = 4: row 4 (14 > 10) is the only one safe
    }


@pytest.mark.parametrize(("k", "at_risk"), [(0, 0), (1, 1), (2, 3), (3, 3), (4, 4), (5, 4), (9, 4)])
def test_records_at_risk_for_every_k(k: int, at_risk: int) -> None:
    """k = 2 has an exact tie (row 3: own 4 = its 2nd neighbour's distance, counted at risk);
    k = 0 puts nobody at risk, not the exact copy; any k >= n - 1 is the farthest row."""
    m = _metrics(k=k)
    assert (m.k_risk, m.at_risk) == (k, at_risk)


def test_two_rows_are_enough_and_one_row_is_refused() -> None:
    # two rows 0 and 4; own 3 and 5: row 0 has row 1 (4) not closer, row 1 has row 0 (4) closer
    m = _metrics(np.array([[0.0], [4.0]]), np.array([[3.0], [-1.0]]))
    assert (m.rows, m.closer_probability, m.median_rank, m.at_risk) == (2, 0.5, 0.5, 1)
    with pytest.raises(ValueError, match=f"^{SHAPE_MESSAGE}$"):
        _metrics(REAL[:1], SYNTH[:1])


@pytest.mark.parametrize(
    ("real", "synth"),
    [
        (REAL, np.hstack([SYNTH, SYNTH])),  # 5 x 1 against 5 x 2 (would broadcast)
        (REAL[:4], SYNTH),  # 4 rows against 5
        (REAL.ravel(), SYNTH.ravel()),  # 1-D
        (REAL[None], SYNTH[None]),  # 3-D
    ],
)
def test_release_metrics_refuse_rows_that_do_not_pair(real: np.ndarray, synth: np.ndarray) -> None:
    with pytest.raises(ValueError, match=f"^{SHAPE_MESSAGE}$"):
        _metrics(real, synth)


def test_the_exact_limit_and_the_default_sample_of_20000_rows() -> None:
    """Rows on a line 1 apart, each synthetic row 0.25 away: every rank is 0. 20,000 rows are
    ranked exactly; at 20,001 rows 20,000 of them are drawn."""
    x = np.arange(20_001.0)[:, None]
    big = _metrics(x, x + 0.25)
    assert (big.exact, big.rows_evaluated, big.closer_probability, big.at_risk) == (
        False,
        20_000,
        0.0,
        20_001,
    )
    small = _metrics(x[:-1], x[:-1] + 0.25)
    assert (small.exact, small.rows_evaluated) == (True, 20_000)


def test_n_equal_to_the_exact_limit_is_exact() -> None:
    m = _metrics(exact_limit=5, sample_rows=2)
    assert (m.exact, m.rows_evaluated, m.closer_probability) == (True, 5, pytest.approx(0.45))


def test_a_sample_of_every_row_drawn_without_replacement_gives_the_exact_value() -> None:
    """Above the limit with sample_rows = n, each row is drawn once: the same 0.45 and median 1
    as the exact computation (drawn with replacement, some rows would count twice)."""
    for seed in range(5):
        m = release_metrics(
            REAL, SYNTH, rng=np.random.default_rng(seed), exact_limit=4, sample_rows=5
        )
        assert (m.exact, m.rows_evaluated) == (False, 5)
        assert (m.closer_probability, m.median_rank) == (pytest.approx(0.45), 1.0)


def test_a_sample_smaller_than_the_table_ranks_only_the_drawn_rows() -> None:
    """Ten rows 0..9 on a line, each synthetic row 1.5 to the right: ranks 1 (the two ends) or 2.
    Three drawn rows give a closer probability of (their ranks) / (3 * 9)."""
    x = np.arange(10.0)[:, None]
    for seed in range(5):
        m = release_metrics(
            x, x + 1.5, rng=np.random.default_rng(seed), exact_limit=9, sample_rows=3
        )
        assert (m.exact, m.rows_evaluated, m.rows) == (False, 3, 10)
        # three distinct rows: 0, 1 or 2 of the two ends, so 4, 5 or 6 closer pairs of 27
        assert round(m.closer_probability * 27, 9) in (4.0, 5.0, 6.0)


def test_a_synthetic_row_exactly_1e6_from_a_real_row_counts_as_a_copy() -> None:
    real = np.array([[0.0], [5.0]])
    synth = np.array([[1e-6], [5.5]])  # 1e-6 away (counted, the limit is inclusive) and 0.5 away
    assert _metrics(real, synth).share_within_1e6 == 0.5
    assert _metrics(real, np.array([[2e-6], [5.5]])).share_within_1e6 == 0.0


def test_a_wide_table_gets_the_same_copy_share_on_either_device() -> None:
    """16 columns (the five-row line padded with zeros): the copy share is a k-d tree search
    bounded at 2e-6 on any device since issue 31 (it stops at once for rows with nothing that
    close; the full nearest search it replaced was 190 s of a million-row release), and every
    metric is the same for a CPU and a CUDA run."""
    real, synth = (np.hstack([a, np.zeros((5, 15))]) for a in (REAL, SYNTH))
    for device in ("cpu", "cuda"):
        m = _metrics(real, synth, device=device)
        assert (m.closer_probability, m.at_risk, m.share_within_1e6) == (
            pytest.approx(0.45),
            4,
            0.2,
        )
    assert not hasattr(release, "nearest_distances")  # no device-dependent search left here


# --- record_ranks, count_closer, kth_neighbour_distances ---------------------------------------


def test_ranks_of_records_closer_than_one() -> None:
    """Own distances below 1: rows 0, 0.25, 0.5, 2; own 0.3 / 0.3 / 0.6 / 0.5.
    Row 0: row 0.25 closer (0.25 < 0.3) -> 1; row 0.25: both 0 and 0.5 at 0.25 -> 2;
    row 0.5: 0.25 (0.25) and 0 (0.5) closer -> 2; row 2: nobody within 0.5 -> 0."""
    real = np.array([[0.0], [0.25], [0.5], [2.0]])
    own = np.array([0.3, 0.3, 0.6, 0.5])
    assert record_ranks(real, own).tolist() == [1, 2, 2, 0]
    assert record_ranks(real, own, np.array([1, 3])).tolist() == [2, 0]


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
    expect = {1: [1, 1, 2, 3, 4], 2: [3, 2, 3, 4, 7], 3: [6, 5, 3, 5, 9], 4: [10, 9, 7, 6, 10]}
    for k, dist in expect.items():
        assert kth_neighbour_distances(REAL, k).tolist() == dist
    assert kth_neighbour_distances(REAL.astype(np.float32), 2).dtype == np.float64


# --- epsilon_statement --------------------------------------------------------------------------


def test_epsilon_statement_sentence_and_refusal_word_for_word() -> None:
    """C = 2 (two codes 2 apart), w = 0.5, delta = 0.01: eps = 2 + 2 sqrt(2 ln 100) = 8.07."""
    s = release.epsilon_statement(np.array([[0.0], [2.0]]), 0.5, 0.01)
    assert s.sentence == (
        "At w = 0.5 the injected noise gives local (8.07, 0.01)-differential privacy per record "
        "if the flow's latent codes of any two records lie at most C = 2 apart (exact, from the "
        f"data); this is {release.NATURE}."
    )
    for w, delta in [(-0.1, 0.01), (1.1, 0.01), (0.5, 0.0), (0.5, 1.0)]:
        with pytest.raises(ValueError, match=r"^w must lie in \[0, 1\] and delta in \(0, 1\)$"):
            release.epsilon_statement(np.array([[0.0], [2.0]]), w, delta)


# --- the GDP dual and the weight check ---------------------------------------------------------


def test_a_mechanism_with_mu_zero_has_delta_zero_at_every_epsilon() -> None:
    """mu = 0 (no noisy step) leaks nothing: delta(epsilon) = 0, also at epsilon = 0, where a
    mu of 0.5 gives delta(0) = 2 Phi(0.25) - 1 = 0.1974."""
    from engine.privacy.dp.accountant import delta_for_epsilon

    assert [delta_for_epsilon(e, 0.0) for e in (0.0, 0.5, 3.0)] == [0.0, 0.0, 0.0]
    assert delta_for_epsilon(0.0, 0.5) == pytest.approx(0.19741, abs=1e-5)


@pytest.mark.parametrize("w", [None, float("nan"), -0.5, 1.5])
def test_a_missing_or_impossible_weight_gets_the_one_line_input_error(w: object) -> None:
    from engine.errors import InputError
    from engine.flows.generate import inject_latent_noise

    with pytest.raises(InputError, match=rf"^perturbation weight w={w} is outside 0\.\.1; choose"):
        inject_latent_noise(np.zeros((2, 1)), w, np.zeros((2, 1)))  # type: ignore[arg-type]


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
