"""Normal-score marginals (engine.encoding.marginals), checked against hand-computed values."""

import numpy as np
import pytest
from scipy.stats import norm

from engine.encoding.marginals import NormalScores


def test_round_trip_is_exact_inside_the_bounds() -> None:
    rng = np.random.default_rng(0)
    x = rng.gamma(2.0, 3.0, size=1_000).round(2)
    m = NormalScores.fit(x)
    lo, hi = np.sort(x)[9], np.sort(x)[-10]  # default range: 10th smallest / largest
    assert (m.xs[0], m.xs[-1]) == (lo, hi)
    # exact between the soft top-coding's regions (issue 44: the 9 rows beyond each bound and
    # the 20 just inside it are squeezed together inside the bound, in their order)
    inside = (x >= lo) & (x <= hi)
    core = (x > np.sort(x)[28]) & (x < np.sort(x)[-29])
    back = m.inverse(m.forward(x, rng))
    assert np.abs(back[core] - x[core]).max() < 1e-9
    assert back.min() >= lo and back.max() <= hi
    assert np.sum(back == hi) <= 1 and np.sum(back == lo) <= 1  # no pile at a bound (was 10)
    grid = m.inverse(np.linspace(-5.0, 5.0, 2001))  # the decode keeps the order of scores
    assert np.all(np.diff(grid) >= 0) and np.sum(x[inside] >= lo) == inside.sum()


def test_scores_are_standard_normal() -> None:
    rng = np.random.default_rng(1)
    x = rng.lognormal(0.0, 1.5, size=5_000)  # heavily skewed
    y = NormalScores.fit(x).forward(x, rng)
    assert abs(y.mean()) < 0.03 and abs(y.std() - 1.0) < 0.03
    assert abs(np.mean(y < norm.ppf(0.1)) - 0.1) < 0.01  # the 10 % quantile lands at -1.28


def test_point_mass_frequency_comes_back() -> None:
    # administrative censoring: 745 of 1,000 rows at exactly week 52, the rest spread below
    rng = np.random.default_rng(2)
    x = np.r_[rng.uniform(1.0, 52.0, 255).round(1), np.full(745, 52.0)]
    m = NormalScores.fit(x)
    synth = m.inverse(rng.standard_normal(200_000))
    assert abs(np.mean(synth == 52.0) - 0.745) < 0.005
    below = synth[synth < 52.0]
    assert abs(np.median(below) - np.median(x[x < 52.0])) < 2.0


def test_integer_frequencies_come_back_exactly_in_expectation() -> None:
    rng = np.random.default_rng(3)
    k = rng.poisson(3.0, size=2_000).astype(float)
    m = NormalScores.fit(k, discrete=True)
    synth = m.inverse(rng.standard_normal(400_000))
    assert np.all(synth == np.floor(synth))
    for value in range(7):  # every value held by >= 10 rows: its own exact step
        assert abs(np.mean(synth == value) - np.mean(k == value)) < 0.003
    assert np.array_equal(m.inverse(m.forward(k, rng))[k <= 8], k[k <= 8])


def test_label_codes_round_trip_and_keep_rare_levels() -> None:
    rng = np.random.default_rng(4)
    codes = np.r_[np.zeros(90), np.ones(7), np.full(3, 2.0)]  # a level of 3 rows stays a level
    m = NormalScores.fit(codes, lower=0, upper=2, discrete=True, exact=True)
    assert np.array_equal(m.inverse(m.forward(codes, rng)), codes)
    synth = m.inverse(rng.standard_normal(300_000))
    assert abs(np.mean(synth == 2.0) - 0.03) < 0.002 and abs(np.mean(synth == 1.0) - 0.07) < 0.002


def test_no_real_extreme_leaks() -> None:
    rng = np.random.default_rng(5)
    x = np.r_[rng.normal(50.0, 5.0, 500), 250.0, -80.0]  # two outliers
    m = NormalScores.fit(x)
    ordered = np.sort(x)
    synth = m.inverse(np.r_[rng.standard_normal(100_000) * 3.0, -np.inf, np.inf])
    assert synth.min() == ordered[9] and synth.max() == ordered[-10]
    assert 250.0 not in m.xs and -80.0 not in m.xs and ordered[0] not in synth
    # every inner knot is a bin median of >= 10 rows: never equal to a lone real value
    inner = m.xs[1:-1]
    assert len(inner) <= len(x) // 10
    assert m.beyond(np.array([-40.0, 0.0, 40.0])).tolist() == [True, False, True]


def test_rare_integer_values_are_not_knots() -> None:
    # one person has 40 visits: the fitted map must not hold the value 40
    k = np.r_[np.repeat(np.arange(5.0), 40), 40.0]
    m = NormalScores.fit(k, discrete=True, upper=None)
    assert m.xs.max() <= 5.0
    with pytest.raises(ValueError):
        NormalScores.fit(np.array([]))
