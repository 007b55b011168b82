"""The "< 10" rules of ``engine.disclosure``: a count under 10 is hidden, a range is drawn 10
rows in from each end, a Kaplan-Meier step holds at least 10 events. Small, hand-computed
cases that kill the one-line mutants of the rules (``docs/mutation.md``)."""

from __future__ import annotations

import numpy as np

from engine import disclosure

# --- counts and totals ----------------------------------------------------------------------------


def test_safe_count_threshold_is_strict_and_rounds_to_an_integer() -> None:
    """9.6 is below 10 (hidden); 10 is shown; 10.4 shows as 10; a custom threshold of 5."""
    assert disclosure.safe_count(9.6) == "< 10"
    assert disclosure.safe_count(10) == "10"
    assert disclosure.safe_count(10.4) == "10"
    assert disclosure.safe_count(1234567.6) == "1,234,568"
    assert disclosure.safe_count(4, 5) == "< 5"
    assert disclosure.safe_count(5, 5) == "5"
    assert disclosure.safe_count(np.nan) == disclosure.NOT_AVAILABLE


def test_small_count_and_safe_total_by_hand() -> None:
    """JSON counts: 9.6 hidden, 10.4 -> 10; a total 1-9 above the shown figure is hidden, 0 or
    10 above is kept; None and NaN stay unavailable."""
    assert disclosure.small_count(9.6) == "< 10"
    assert disclosure.small_count(10) == 10  # the threshold itself is shown
    assert disclosure.small_count(10.4) == 10 and isinstance(disclosure.small_count(10.4), int)
    assert disclosure.small_count(float("nan")) is None
    assert disclosure.safe_total(409, 400) == "< 10 more than the rows used"
    assert disclosure.safe_total(401, 400) == "< 10 more than the rows used"
    assert disclosure.safe_total(410, 400) == 410
    assert disclosure.safe_total(400, 400) == 400
    assert disclosure.safe_total(399.6, None) == 400 and isinstance(
        disclosure.safe_total(399.6, None), int
    )
    assert disclosure.safe_total(None, 400) is None
    assert disclosure.safe_total(395, 400) == 395  # fewer than shown reveals nothing new


def test_safe_bounds_keep_ten_rows_beyond_each_bound() -> None:
    """0..29: the 10th smallest is 9, the 10th largest 20; 3 values shrink to the middle one;
    4 values to the two middle ones; text and missing entries are ignored."""
    assert disclosure.safe_bounds(list(range(30))) == (9.0, 20.0)
    assert disclosure.safe_bounds(list(range(30))[::-1]) == (9.0, 20.0)
    assert disclosure.safe_bounds(list(range(20))) == (9.0, 10.0)
    assert disclosure.safe_bounds([4.0, 1.0, 3.0, 2.0]) == (2.0, 3.0)
    assert disclosure.safe_bounds([5.0]) == (5.0, 5.0)
    assert disclosure.safe_bounds(list(range(30)), k=2) == (1.0, 28.0)
    assert disclosure.safe_bounds(["x", None, 7, "8"] + [float("nan")]) == (7.0, 8.0)


# --- the coarse Kaplan-Meier grid -----------------------------------------------------------------


def test_coarse_km_grid_by_hand() -> None:
    """Times 1..40, events at every time: the 10th largest time is 31 -> end 31; 12 steps of
    31/12 hold 2-3 events each, so intervals merge until each holds >= 10 events."""
    t = np.arange(1.0, 41.0)
    grid = disclosure.coarse_km_grid(t, np.ones(40, dtype=bool))
    assert grid[0] == 0.0 and grid[-1] <= 31.0
    counts = np.histogram(t, bins=grid)[0]
    assert ((counts == 0) | (counts >= 10)).all()
    assert len(grid) == 4  # 0, then three intervals of >= 10 events
    # no event at all: no merging, 12 equal steps up to 31
    free = disclosure.coarse_km_grid(t, np.zeros(40, dtype=bool))
    np.testing.assert_allclose(free, np.linspace(0.0, 31.0, 13))
    np.testing.assert_allclose(
        disclosure.coarse_km_grid(t, np.zeros(40, dtype=bool), intervals=4),
        [0, 7.75, 15.5, 23.25, 31],
    )
    # fewer than 10 records, or a 10th-largest time of 0: only the origin
    assert disclosure.coarse_km_grid(np.arange(9.0), np.ones(9)).tolist() == [0.0]
    assert disclosure.coarse_km_grid(np.arange(10.0), np.ones(10)).tolist() == [0.0]
    assert disclosure.coarse_km_grid(np.arange(11.0), np.zeros(11)).tolist()[-1] == 1.0


def test_coarse_km_grid_counts_events_on_the_edge_once() -> None:
    """Events exactly on a grid time belong to the interval that ends there (right-closed)."""
    t = np.array([5.0] * 10 + [10.0] * 10 + [12.0] * 10)
    e = np.ones(30, dtype=bool)
    grid = disclosure.coarse_km_grid(t, e, intervals=2)
    # end = 10th largest = 12 -> 12; edges 0, 6, 12: 10 events in (0, 6], 20 in (6, 12]
    assert grid.tolist() == [0.0, 6.0, 12.0]


def test_coarse_km_grid_with_exactly_ten_records_reaches_the_smallest_time() -> None:
    """Ten records at 1..10 (no events): all ten are at risk up to t = 1, the 10th largest."""
    grid = disclosure.coarse_km_grid(np.arange(1.0, 11.0), np.zeros(10, dtype=bool))
    np.testing.assert_allclose(grid, np.linspace(0.0, 1.0, 13))


def test_coarse_km_grid_merges_a_last_interval_with_a_single_event() -> None:
    """10 events at 5, one at 9, 10 censored at 12; end 12, edges 0, 6, 12: (6, 12] holds one
    event, which a step of the curve would reveal -> merged with (0, 6], the grid still ends at
    12 (issue 44: the axis covers the follow-up)."""
    t = np.array([5.0] * 10 + [9.0] + [12.0] * 10)
    e = np.array([True] * 11 + [False] * 10)
    assert disclosure.coarse_km_grid(t, e, intervals=2).tolist() == [0.0, 12.0]


def test_coarse_km_grid_counts_an_event_on_the_upper_edge_in_that_interval() -> None:
    """9 events at 5 and one at 6 make (0, 6] hold 10 events (right-closed); 10 at 12."""
    t = np.array([5.0] * 9 + [6.0] + [12.0] * 10)
    assert disclosure.coarse_km_grid(t, np.ones(20, dtype=bool), intervals=2).tolist() == [
        0.0,
        6.0,
        12.0,
    ]


def test_coarse_km_grid_does_not_count_an_edge_event_in_the_next_interval() -> None:
    """11 events in (0, 6] (one of them at 6), 9 events at 12 and one censored: (6, 12] holds 9
    events, not 10, so it is merged with (0, 6] (counted in the next one, 6 would stay)."""
    t = np.array([5.0] * 10 + [6.0] + [12.0] * 10)
    e = np.array([True] * 20 + [False])
    assert disclosure.coarse_km_grid(t, e, intervals=2).tolist() == [0.0, 12.0]
