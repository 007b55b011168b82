"""Hand-computed cases that kill the mutants of protect_outliers and coarse_km_grid that
survived mutmut (issue 18). See docs/mutation_survivors_extra.md for the ones argued equivalent.

protect_outliers is run with an exact identity map and a noise source that returns zeros, so a
record's synthetic row is exactly sqrt(w_i) * x_i and its own distance is (1 - sqrt(w_i)) |x_i|.
A record is at risk while that distance is <= its k-th nearest other real row's distance; each
round halves w_i of the records at risk, the last round (8 by default) sets it to 0.
Factors 1 - sqrt(w) for w = 0.7 / 2^r, r = 0..5: 0.163, 0.408, 0.582, 0.704, 0.791, 0.852
(irrational, so no distance ties with the integer neighbour distances below).
"""

from __future__ import annotations

import numpy as np
import pytest

from engine import disclosure
from engine.privacy.release import ProtectResult, protect_outliers


class _Identity:
    def to_latent(self, X: np.ndarray) -> np.ndarray:
        return X

    def from_latent(self, Z: np.ndarray) -> np.ndarray:
        return Z


class _ZeroNoise:
    """Stands in for the generator: every noise draw is 0, so LNI gives sqrt(w) * z exactly."""

    def standard_normal(self, shape: tuple[int, ...]) -> np.ndarray:
        return np.zeros(shape)


def _protect(x: np.ndarray, w: float, **kw: int) -> ProtectResult:
    return protect_outliers(_Identity(), x, x, w, rng=_ZeroNoise(), **kw)  # type: ignore[arg-type]


# --- protect_outliers --------------------------------------------------------------------------


# Runs first: under the loop-counter mutants (rounds = 1, rounds -= 1, `or`) the next test,
# which has records at risk even at w = 0, would loop for ever; this one fails at once.
def test_protect_outliers_stops_after_the_round_that_clears_every_record() -> None:
    """A regular decagon of radius 10, k = 1: every nearest neighbour is 2 * 10 * sin(18 deg)
    = 6.18 away. At w = 0.9 the own distances are 0.51, 3.29 (w 0.45), 5.26 (0.225), then
    6.65 > 6.18 at w = 0.1125: exactly three rounds, all ten records at w = 0.1125."""
    a = np.linspace(0.0, 2 * np.pi, 10, endpoint=False)
    ring = 10 * np.c_[np.cos(a), np.sin(a)]
    res = _protect(ring, 0.9, k=1)
    assert (res.at_risk_before, res.at_risk_after, res.rounds) == (10, 0, 3)
    np.testing.assert_allclose(res.w_per_record, np.full(10, 0.1125), rtol=1e-12, atol=0)
    np.testing.assert_allclose(res.synthetic_model_rows, np.sqrt(0.1125) * ring)
    # one round allowed: the last (only) round draws independently (w = 0), nobody left at risk
    one = _protect(ring, 0.9, k=1, max_rounds=1)
    assert (one.rounds, one.at_risk_after, one.w_per_record.max()) == (1, 0, 0.0)


def test_protect_outliers_lowers_w_record_by_record_with_the_default_k_and_rounds() -> None:
    """Ten points on a line, default k = 5: 5th-neighbour distances 5 4 3 3 3 3 4 4 7 15.
    x = 19 (kth 15): own 3.1, 7.8, 11.1, 13.4, 15.03 > 15 -> safe at w = 0.7/16 = 0.04375;
    x = 10 (kth 7): 0.704 * 10 = 7.04 > 7 -> 0.0875; x = 7 (kth 4): 0.582 * 7 = 4.07 -> 0.175.
    x = 0..3 have |x| <= kth: at risk even at w = 0, set to 0 in round 8 and still counted."""
    x = np.array([0, 1, 2, 3, 4, 5, 6, 7, 10, 19.0])[:, None]
    res = _protect(x, 0.7)
    assert (res.at_risk_before, res.at_risk_after, res.rounds) == (10, 4, 8)
    expected = [0, 0, 0, 0, 0.04375, 0.0875, 0.0875, 0.175, 0.0875, 0.04375]
    np.testing.assert_allclose(res.w_per_record, expected, rtol=1e-12, atol=0)
    # the released row is the one drawn at the record's final w
    np.testing.assert_allclose(res.synthetic_model_rows, np.sqrt(res.w_per_record)[:, None] * x)
    # with k = 6 (distances 6 5 4 3 3 4 4 5 8 16) more records need a lower w: k matters
    k6 = _protect(x, 0.7, k=6)
    assert k6.w_per_record[[5, 7, 8, 9]].tolist() == [0.021875, 0.04375, 0.021875, 0.021875]


def test_protect_outliers_with_fewer_rows_than_k_uses_the_farthest_other_row() -> None:
    """Four rows 10, 11, 13, 17 and the default k = 5: k is cut to n - 1 = 3, the farthest other
    row (7, 6, 4, 7). x = 10: 0.582 * 10 = 5.8 <= 7, 7.04 > 7 -> w 0.0875; x = 11: 0.408 * 11
    = 4.5 <= 6, 6.4 > 6 -> 0.175; x = 13: 5.3 > 4 -> 0.35; x = 17: 6.9 <= 7, 9.9 -> 0.175."""
    x = np.array([10.0, 11.0, 13.0, 17.0])[:, None]
    res = _protect(x, 0.7)
    assert (res.at_risk_before, res.at_risk_after, res.rounds) == (4, 0, 3)
    np.testing.assert_allclose(res.w_per_record, [0.0875, 0.175, 0.35, 0.175], rtol=1e-12)


# --- coarse_km_grid ----------------------------------------------------------------------------


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


# --- sigma calibration: the bisection ----------------------------------------------------------
# eps_of(sigma) = 1 / sigma meets the target 1 exactly at sigma = 1.0 (a float with no rounding),
# so the smallest admissible sigma is 1.0 itself; a bracket that drops it returns sqrt(2) instead.


class _Eps:
    """eps_of(sigma) = c / sigma, recording its calls; a search that needs more than 200
    evaluations fails at once instead of looping for ever."""

    def __init__(self, c: float = 1.0) -> None:
        self.c = c
        self.calls: list[float] = []

    def __call__(self, sigma: float) -> float:
        self.calls.append(sigma)
        assert len(self.calls) <= 200, "the bisection does not converge"
        return self.c / sigma


def test_bisection_keeps_a_start_that_meets_the_target_exactly() -> None:
    from engine.privacy.dp.accountant import _bisect_sigma

    assert _bisect_sigma(_Eps(), 1.0, 1.0, 2.0, 0.5) == 1.0


def test_bisection_from_above_stops_on_a_sigma_that_meets_the_target_exactly() -> None:
    """Start 4, step 2: 4 -> 2 -> 1 all meet the target (1/1 = 1 <= 1), 0.5 does not."""
    from engine.privacy.dp.accountant import _bisect_sigma

    assert _bisect_sigma(_Eps(), 1.0, 4.0, 2.0, 0.5) == 1.0


def test_bisection_from_below_stops_on_a_sigma_that_meets_the_target_exactly() -> None:
    """Start 0.25, step 2: 0.25 and 0.5 miss the target, 1 meets it: the answer is 1, not more."""
    from engine.privacy.dp.accountant import _bisect_sigma

    assert _bisect_sigma(_Eps(), 1.0, 0.25, 2.0, 0.5) == 1.0
    # an answer that is not on the grid: within rtol above the true sigma 2
    assert 2.0 <= _bisect_sigma(_Eps(2.0), 1.0, 0.3, 1.5, 1e-3) <= 2.002


def test_bisection_refuses_only_beyond_the_sigma_cap() -> None:
    """eps_of = 15,000 / sigma needs sigma = 15,000; from 5,000 (step 2) the bracket reaches the
    cap 10,000 exactly, which is still allowed, and finds 15,000. A target never met refuses with
    a message that says what to do."""
    from engine.errors import InputError
    from engine.privacy.dp.accountant import _bisect_sigma

    sigma = _bisect_sigma(_Eps(1.5e4), 1.0, 5000.0, 2.0, 1e-3)
    assert 1.5e4 <= sigma <= 1.5e4 * 1.001
    with pytest.raises(InputError) as refused:
        _bisect_sigma(lambda s: 10.0, 1.0, 1.0, 2.0, 1e-3)
    assert str(refused.value) == (
        "epsilon = 1.0: not reachable with these settings; choose a larger epsilon or delta"
    )


def test_bisection_midpoint_that_meets_the_target_exactly_is_kept() -> None:
    """Start 2, step 4 brackets (0.5, 2]; the geometric midpoint is exactly 1, which meets the
    target 1/1 <= 1 and becomes the answer (not 1.41 from searching above it)."""
    from engine.privacy.dp.accountant import _bisect_sigma

    assert _bisect_sigma(_Eps(), 1.0, 2.0, 4.0, 0.5) == 1.0


def test_bisection_stops_once_the_bracket_is_within_the_tolerance() -> None:
    """eps_of = 0.6 / sigma: from 4 (step 2) the bracket is (0.5, 1], a ratio of exactly 2 =
    1 + rtol with rtol = 1, so 1.0 is returned without a further (unneeded) evaluation."""
    from engine.privacy.dp.accountant import _bisect_sigma

    eps_of = _Eps(0.6)
    assert _bisect_sigma(eps_of, 1.0, 4.0, 2.0, 1.0) == 1.0
    assert eps_of.calls == [4.0, 2.0, 1.0, 0.5]


def test_sigma_for_an_epsilon_below_one_and_refusal_of_a_zero_budget() -> None:
    """epsilon = 0.5 (delta 1e-5, r = 0.01, 100 steps) is a valid budget: the calibrated sigma
    (1.143) meets it and 0.1 % less noise would not. A budget of 0 or less is refused by name."""
    from engine.errors import InputError
    from engine.privacy.dp.accountant import accountant_epsilon, sigma_for_epsilon

    sigma = sigma_for_epsilon(0.5, 1e-5, 0.01, 100)
    assert accountant_epsilon(sigma, 1e-5, 0.01, 100) <= 0.5
    assert accountant_epsilon(sigma / 1.001, 1e-5, 0.01, 100) > 0.5
    for budget in (0.0, -1.0):
        with pytest.raises(InputError) as refused:
            sigma_for_epsilon(budget, 1e-5, 0.01, 100)
        assert str(refused.value) == f"epsilon = {budget}: the privacy budget must be positive"
