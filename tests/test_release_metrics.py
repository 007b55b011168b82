"""The release metrics (closer probability, median rank, records at risk, the copy share) and
the record ranks, by hand: the cases kill the one-line mutants of ``release_metrics`` and
``record_ranks`` (``docs/mutation.md`` lists the ones argued equivalent).

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

import numpy as np
import pytest

import engine.privacy.release as release
from engine.privacy.release import record_ranks, release_metrics
from engine.search.neighbours import kth_neighbour_distances

REAL = np.array([[0.0], [1.0], [3.0], [6.0], [10.0]])
SYNTH = np.array([[2.0], [1.0], [6.5], [2.0], [24.0]])
SHAPE_MESSAGE = "real and paired synthetic rows must have the same 2-D shape, n >= 2"


def _metrics(
    real: np.ndarray = REAL, synth: np.ndarray = SYNTH, **kw: object
) -> release.ReleaseMetrics:
    rng = np.random.default_rng(0)
    return release_metrics(real, synth, rng=rng, **kw)  # type: ignore[arg-type]


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


# --- record_ranks ---------------------------------------------------------------------------------


def test_ranks_of_records_closer_than_one() -> None:
    """Own distances below 1: rows 0, 0.25, 0.5, 2; own 0.3 / 0.3 / 0.6 / 0.5.
    Row 0: row 0.25 closer (0.25 < 0.3) -> 1; row 0.25: both 0 and 0.5 at 0.25 -> 2;
    row 0.5: 0.25 (0.25) and 0 (0.5) closer -> 2; row 2: nobody within 0.5 -> 0."""
    real = np.array([[0.0], [0.25], [0.5], [2.0]])
    own = np.array([0.3, 0.3, 0.6, 0.5])
    assert record_ranks(real, own).tolist() == [1, 2, 2, 0]
    assert record_ranks(real, own, np.array([1, 3])).tolist() == [2, 0]


def test_kth_neighbour_distances_and_record_ranks_by_hand() -> None:
    """Rows 0, 1, 3, 3 (a duplicate): 1st other neighbour 1, 1, 0, 0; 2nd 3, 2, 2, 2. Ranks with
    own distances (1.5, 0.5, 0, 2.5): row 0 has one row (1) closer than 1.5; row 1 none; row 2's
    own distance 0 gives rank 0; row 3 has its duplicate and row 1 closer than 2.5 -> 2."""
    from engine.privacy.release import record_ranks

    x = np.array([[0.0], [1.0], [3.0], [3.0]])
    assert kth_neighbour_distances(x, 1).tolist() == [1.0, 1.0, 0.0, 0.0]
    assert kth_neighbour_distances(x, 2).tolist() == [3.0, 2.0, 2.0, 2.0]
    own = np.array([1.5, 0.5, 0.0, 2.5])
    assert record_ranks(x, own).tolist() == [1, 0, 0, 2]
    assert record_ranks(x, own, np.array([3, 0])).tolist() == [2, 1]
