"""Outlier protection lowers w record by record until no record is at risk, by hand: the cases
kill the mutants of protect_outliers that survived mutmut (docs/mutation_survivors_extra.md
lists the ones argued equivalent).

protect_outliers is run with an exact identity map and a noise source that returns zeros, so a
record's synthetic row is exactly sqrt(w_i) * x_i and its own distance is (1 - sqrt(w_i)) |x_i|.
A record is at risk while that distance is <= its k-th nearest other real row's distance; each
round halves w_i of the records at risk, the last round (8 by default) sets it to 0.
Factors 1 - sqrt(w) for w = 0.7 / 2^r, r = 0..5: 0.163, 0.408, 0.582, 0.704, 0.791, 0.852
(irrational, so no distance ties with the integer neighbour distances below).
"""

from __future__ import annotations

import numpy as np

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
