"""More guards for issue 18 (item 4): small, hand-computed cases that kill the one-line mutants
``make mutate`` left alive in the disclosure rules, the accountant, the neighbour counts and the
release metrics. Each test names what it pins down; ``docs/mutation.md`` lists the rest."""

from __future__ import annotations

import numpy as np
import pytest

from engine import disclosure


def test_safe_count_threshold_is_strict_and_rounds_to_an_integer() -> None:
    """9.6 is below 10 (hidden); 10 is shown; 10.4 shows as 10; a custom threshold of 5."""
    assert disclosure.safe_count(9.6) == "< 10"
    assert disclosure.safe_count(10) == "10"
    assert disclosure.safe_count(10.4) == "10"
    assert disclosure.safe_count(1234567.6) == "1,234,568"
    assert disclosure.safe_count(4, 5) == "< 5"
    assert disclosure.safe_count(5, 5) == "5"
    assert disclosure.safe_count(np.nan) == disclosure.NOT_AVAILABLE


# --- Theorem 2's epsilon for one and for several copies ---------------------------------------


def _statement(w: float, C: float = 2.0, delta: float = 0.01):
    from engine.privacy.release import epsilon_statement

    return epsilon_statement(np.array([[0.0], [C]]), w, delta)


def test_epsilon_statement_by_hand() -> None:
    """C = 2 (two codes 2 apart), w = 0.5, delta = 0.01: eps = 0.5*4/(2*0.5) + 2*sqrt(2*0.5*ln
    100)/sqrt(0.5) = 2 + 2*sqrt(2 ln 100) = 8.0703; w = 0.2: 0.25 + 2*sqrt(0.4 ln 100)/sqrt(0.8)."""
    import math

    s = _statement(0.5)
    assert (s.w, s.delta, s.C, s.C_method) == (0.5, 0.01, 2.0, "exact")
    assert s.value == pytest.approx(2.0 + 2.0 * math.sqrt(2.0 * math.log(100.0)), rel=1e-12)
    s2 = _statement(0.2, C=3.0, delta=1e-5)
    by_hand = 0.2 * 9 / (2 * 0.8) + 3.0 * math.sqrt(2 * 0.2 * math.log(1e5)) / math.sqrt(0.8)
    assert s2.value == pytest.approx(by_hand, rel=1e-12)
    assert _statement(0.0).value == 0.0
    assert _statement(1.0).value == math.inf
    assert s.sentence.startswith("At w = 0.5 the injected noise gives local (8.07, 0.01)-")
    assert "C = 2 apart (exact, from the data)" in s.sentence
    assert s.sentence.endswith(f"this is {s.nature}.")
    for w, delta in [(-0.1, 0.01), (1.1, 0.01), (0.5, 0.0), (0.5, 1.0)]:
        with pytest.raises(ValueError, match=r"w must lie in \[0, 1\] and delta in \(0, 1\)"):
            _statement(w, delta=delta)


def test_epsilon_for_copies_composes_renyi_dp_by_hand() -> None:
    """rho = M w C^2 / (2 (1 - w)); eps = rho + 2 sqrt(rho ln(1/delta)). C = 2, w = 0.5, M = 4:
    rho = 8, eps = 8 + 4 sqrt(2 ln 100) = 20.14; one copy returns the statement itself."""
    import math

    from engine.privacy.audit import epsilon_for_copies

    s = _statement(0.5)
    assert epsilon_for_copies(s, 1) is s
    four = epsilon_for_copies(s, 4)
    assert four.value == pytest.approx(8.0 + 4.0 * math.sqrt(2.0 * math.log(100.0)), rel=1e-12)
    assert (four.w, four.C, four.delta, four.C_method) == (s.w, s.C, s.delta, s.C_method)
    two = epsilon_for_copies(_statement(0.2, C=3.0, delta=1e-5), 2)
    rho = 2 * 0.2 * 9.0 / (2 * 0.8)
    assert two.value == pytest.approx(rho + 2 * math.sqrt(rho * math.log(1e5)), rel=1e-12)
    assert two.sentence.startswith("At w = 0.2 with 2 synthetic copies of every record")
    assert f"local ({two.value:.3g}, 1e-05)" in two.sentence
    assert "the 2 copies" in two.sentence and two.sentence.endswith(f"this is {s.nature}.")
    assert epsilon_for_copies(_statement(1.0), 3).value == math.inf
    with pytest.raises(ValueError, match="^copies must be at least 1$"):
        epsilon_for_copies(s, 0)


# --- the "< 10" rules ---------------------------------------------------------------------------


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


def test_copy_masks_by_hand() -> None:
    """Synthetic rows: a copy of a duplicated real row, a copy of a unique one, a new row, and a
    row that differs in the second column only."""
    import pandas as pd

    real = pd.DataFrame({"a": [1, 1, 2, 3], "b": ["x", "x", "y", "z"]})
    synth = pd.DataFrame({"a": [1, 2, 4, 3], "b": ["x", "y", "y", "y"]})
    any_copy, unique_copy = disclosure.copy_masks(real, synth)
    assert any_copy.tolist() == [True, True, False, False]
    assert unique_copy.tolist() == [False, True, False, False]
    # extra synthetic columns are ignored: only the real table's columns are compared
    any2, _ = disclosure.copy_masks(real, synth.assign(c=[9, 9, 9, 9]))
    assert any2.tolist() == [True, True, False, False]


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


# --- formula escaping and gradient clipping ---------------------------------------------------


@pytest.mark.parametrize("first", ["=", "+", "-", "@", "\t", "\r", "\n", "\0"])
def test_every_formula_trigger_is_escaped_and_nothing_else(first: str) -> None:
    from engine.files.write import escape_formula

    assert escape_formula(first + "A1") == "'" + first + "A1"
    assert escape_formula("A1" + first) == "A1" + first
    assert escape_formula("") == ""
    assert escape_formula("'=x") == "'=x"


def test_clip_gradients_scales_the_whole_record_by_hand() -> None:
    """Two parameters; record 0 has norm sqrt(9 + 16 + 144) = 13 -> scaled by 2/13 (clip 2);
    record 1 has norm 1 (under the clip) and is left alone, not scaled up."""
    import torch

    from engine.privacy.dp.train import clip_gradients

    grads = {"a": torch.tensor([[3.0, 4.0], [0.6, 0.0]]), "b": torch.tensor([[[12.0]], [[0.8]]])}
    out = clip_gradients(grads, 2.0)
    assert out["a"].tolist()[0] == pytest.approx([6 / 13, 8 / 13], abs=1e-6)
    assert out["b"].tolist()[0][0][0] == pytest.approx(24 / 13, abs=1e-6)
    assert out["a"].tolist()[1] == pytest.approx([0.6, 0.0], abs=1e-7)
    assert out["b"].tolist()[1][0][0] == pytest.approx(0.8, abs=1e-7)
    assert set(out) == {"a", "b"} and out["b"].shape == (2, 1, 1)


# --- DerSimonian-Laird pooling ---------------------------------------------------------------


def test_pool_dl_fe_and_hksj_by_hand() -> None:
    """y = (0, 1, 3), s = (0.5, 1, 1): w = (4, 1, 1), theta_F = 2/3, Q = 22/3, c = 6 - 18/6 = 3,
    tau2 = (22/3 - 2)/3 = 16/9, I2 = 100 (16/3)/(22/3) = 800/11 %; DL weights 1/(s^2 + 16/9)."""
    import math

    from scipy import stats

    from engine.stats.meta import pool

    y, s = [0.0, 1.0, 3.0], [0.5, 1.0, 1.0]
    fe = pool(y, s, method="fe", labels=["A", "B", "C"])
    assert fe.estimate == pytest.approx(2 / 3, abs=1e-12)
    assert fe.se == pytest.approx(1 / math.sqrt(6), abs=1e-12)
    assert (fe.Q, fe.Q_df, fe.Q_p) == pytest.approx((22 / 3, 2, math.exp(-11 / 3)), abs=1e-12)
    assert (fe.tau2, fe.I2, fe.k) == pytest.approx((16 / 9, 800 / 11, 3), abs=1e-12)
    assert (fe.pi_low, fe.pi_high) == pytest.approx((fe.ci_low, fe.ci_high), abs=1e-12)
    assert [x.weight for x in fe.studies] == pytest.approx([400 / 6, 100 / 6, 100 / 6], abs=1e-9)
    assert [x.study for x in fe.studies] == ["A", "B", "C"]

    dl = pool(y, s)
    wr = np.array([1 / (0.25 + 16 / 9), 1 / (1 + 16 / 9), 1 / (1 + 16 / 9)])
    est, se = float(wr @ y / wr.sum()), float(wr.sum() ** -0.5)
    z = float(stats.norm.ppf(0.975))
    assert (dl.method, dl.estimate, dl.se) == (
        "dl",
        pytest.approx(est, abs=1e-12),
        pytest.approx(se, abs=1e-12),
    )
    assert (dl.ci_low, dl.ci_high) == pytest.approx((est - z * se, est + z * se), abs=1e-12)
    assert dl.p == pytest.approx(2 * stats.norm.sf(est / se), abs=1e-12)
    half = float(stats.t.ppf(0.975, 1)) * math.sqrt(16 / 9 + se**2)
    assert (dl.pi_low, dl.pi_high) == pytest.approx((est - half, est + half), abs=1e-9)
    assert [x.weight for x in dl.studies] == pytest.approx(list(100 * wr / wr.sum()), abs=1e-9)
    assert dl.studies[0].study == "study 1" and dl.t_df is None

    hk = pool(y, s, method="hksj")
    q = float(wr @ (np.array(y) - est) ** 2 / 2)
    t2 = float(stats.t.ppf(0.975, 2))
    assert (hk.estimate, hk.se, hk.t_df) == pytest.approx((est, se * math.sqrt(q), 2), abs=1e-12)
    assert hk.ci_low == pytest.approx(est - t2 * se * math.sqrt(q), abs=1e-12)
    assert hk.p == pytest.approx(2 * stats.t.sf(est / (se * math.sqrt(q)), 2), abs=1e-12)


def test_pool_two_homogeneous_studies_by_hand() -> None:
    """y = (1, 1.1), s = (1, 1): Q = 0.005 < k - 1, so tau2 = 0 and I2 = 0, DL equals FE; with
    two studies there is no prediction interval; a negative pooled estimate gives the same p."""
    import math

    from engine.errors import InputError
    from engine.stats.meta import pool

    dl = pool([1.0, 1.1], [1.0, 1.0])
    assert (dl.tau2, dl.I2, dl.Q) == pytest.approx((0.0, 0.0, 0.005), abs=1e-12)
    assert dl.estimate == pytest.approx(1.05) and dl.se == pytest.approx(1 / math.sqrt(2))
    assert math.isnan(dl.pi_low) and math.isnan(dl.pi_high)
    assert pool([-1.0, -1.1], [1.0, 1.0]).p == pytest.approx(dl.p, abs=1e-12)
    same = pool([2.0, 2.0], [1.0, 1.0])
    assert (same.Q, same.I2, same.tau2) == (0.0, 0.0, 0.0)
    with pytest.raises(InputError, match="method 'x' is unknown: use dl, fe or hksj"):
        pool([1.0, 2.0], [1.0, 1.0], method="x")  # type: ignore[arg-type]


# --- the DP-SGD accountant --------------------------------------------------------------------


def test_gdp_mu_and_delta_by_hand() -> None:
    """mu = r sqrt(T (e^(1/sigma^2) - 1)): sigma 1, r 0.5, T 4 -> sqrt(e - 1). delta(eps) =
    Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2): mu 1, eps 0 -> Phi(.5) - Phi(-.5)."""
    import math

    from scipy.stats import norm

    from engine.privacy.dp import accountant as acc

    assert acc.gdp_mu(1.0, 0.5, 4) == pytest.approx(math.sqrt(math.e - 1), rel=1e-12)
    assert acc.gdp_mu(2.0, 0.1, 100) == pytest.approx(
        0.1 * math.sqrt(100 * math.expm1(0.25)), rel=1e-12
    )
    assert acc.delta_for_epsilon(0.0, 1.0) == pytest.approx(
        norm.cdf(0.5) - norm.cdf(-0.5), abs=1e-12
    )
    by_hand = norm.cdf(-0.5) - math.e * norm.cdf(-1.5)
    assert acc.delta_for_epsilon(1.0, 1.0) == pytest.approx(by_hand, abs=1e-12)
    mu, eps = 2.0, 3.0
    by_hand = norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)
    assert acc.delta_for_epsilon(eps, mu) == pytest.approx(by_hand, abs=1e-12)
    assert acc.delta_for_epsilon(1.0, 0.0) == 0.0
    assert acc.delta_for_epsilon(60.0, 1.0) == 0.0  # far tail: exactly 0, never negative


def test_rdp_epsilon_at_order_2_by_hand() -> None:
    """Order 2 only: A_2 = 1 + r^2 (e^(1/sigma^2) - 1); eps = T log A_2 + log(1/2) - (log delta
    + log 2). sigma 1, r 0.5, T 10, delta 0.01; and r = 1 (no subsampling): A_2 = e^(1/sigma^2)."""
    import math

    from engine.privacy.dp.accountant import rdp_epsilon

    a2 = 1 + 0.25 * math.expm1(1.0)
    want = 10 * math.log(a2) + math.log(0.5) - (math.log(0.01) + math.log(2))
    assert rdp_epsilon(1.0, 0.01, 0.5, 10, orders=(2,)) == pytest.approx(want, rel=1e-12)
    want_full = 1.0 + math.log(0.5) - (math.log(0.01) + math.log(2))
    assert rdp_epsilon(1.0, 0.01, 1.0, 1, orders=(2,)) == pytest.approx(want_full, rel=1e-12)
    # order 3 by hand: A_3 = (1-r)^3 + 3(1-r)^2 r + 3(1-r) r^2 e^(1/s^2) + r^3 e^(3/s^2)
    r, s2 = 0.5, 4.0
    a3 = (1 - r) ** 3 + 3 * (1 - r) ** 2 * r + 3 * (1 - r) * r**2 * math.exp(1 / s2)
    a3 += r**3 * math.exp(3 / s2)
    want3 = 5 * math.log(a3) / 2 + math.log(2 / 3) - (math.log(1e-5) + math.log(3)) / 2
    got = rdp_epsilon(2.0, 1e-5, r, 5, orders=(3,))
    assert got == pytest.approx(want3, rel=1e-12)
    # the minimum over orders, and never below 0
    assert rdp_epsilon(2.0, 1e-5, r, 5, orders=(2, 3)) == pytest.approx(
        min(got, rdp_epsilon(2.0, 1e-5, r, 5, orders=(2,))), rel=1e-12
    )
    assert rdp_epsilon(100.0, 0.5, 0.001, 1, orders=(2,)) == 0.0


def test_bisect_sigma_finds_the_smallest_admissible_sigma() -> None:
    """eps(sigma) = 10 / sigma, target 2: the answer is 5 (from above, to rtol), reached from a
    start below and above; an unreachable target is refused in words."""
    from engine.errors import InputError
    from engine.privacy.dp.accountant import _bisect_sigma

    for start in (0.3, 5.0, 80.0):
        got = _bisect_sigma(lambda s: 10.0 / s, 2.0, start, 1.5, 1e-4)
        assert 10.0 / got <= 2.0 and got == pytest.approx(5.0, rel=1.2e-4)
    with pytest.raises(InputError, match="not reachable with these settings"):
        _bisect_sigma(lambda s: 5.0, 2.0, 1.0, 1.5, 1e-3)


def test_sigma_for_epsilon_is_tight_and_checks_its_input() -> None:
    """The calibrated sigma meets the target and 0.5 % less noise does not."""
    from engine.errors import InputError
    from engine.privacy.dp import accountant as acc

    delta, r, T = 1e-5, 0.01, 50
    sigma = acc.sigma_for_epsilon(2.0, delta, r, T)
    assert acc.accountant_epsilon(sigma, delta, r, T) <= 2.0
    assert acc.accountant_epsilon(sigma * 0.995, delta, r, T) > 2.0
    with pytest.raises(InputError, match="the privacy budget must be positive"):
        acc.sigma_for_epsilon(0.0, delta, r, T)


# --- neighbour counts and ranks (eq. 26) -----------------------------------------------------


@pytest.mark.parametrize("d", [1, 16])
def test_count_closer_is_strict_on_both_paths(d: int) -> None:
    """Points 0, 1, 2, 3 on a line (padded to d = 16 for the brute-force path): around 0 with
    radius 2 two points lie strictly closer (0 and 1; 2 sits on the circle); radius 2.5 -> 3;
    radius 0 -> 0; around 1.5 with radius 1.5 -> 2 (0 and 3 on the circle)."""
    from engine.privacy.neighbours import count_closer

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
    one at 4.999999 is, and one at 5.000001 is not, though float64 |a|^2 + |b|^2 - 2ab cannot tell."""
    from engine.privacy.neighbours import count_closer

    base = np.full((1, 20), 1e4)
    pts = np.repeat(base, 3, axis=0)
    pts[0, :2] += [3.0, 4.0]
    pts[1, 0] += 4.999999
    pts[2, 0] += 5.000001
    assert count_closer(pts, base, np.array([5.0])).tolist() == [1]
    assert count_closer(pts, base, np.array([5.0000011])).tolist() == [3]


def test_kth_neighbour_distances_and_record_ranks_by_hand() -> None:
    """Rows 0, 1, 3, 3 (a duplicate): 1st other neighbour 1, 1, 0, 0; 2nd 3, 2, 2, 2. Ranks with
    own distances (1.5, 0.5, 0, 2.5): row 0 has one row (1) closer than 1.5; row 1 none; row 2's
    own distance 0 gives rank 0; row 3 has its duplicate and row 1 closer than 2.5 -> 2."""
    from engine.privacy.neighbours import kth_neighbour_distances
    from engine.privacy.release import record_ranks

    x = np.array([[0.0], [1.0], [3.0], [3.0]])
    assert kth_neighbour_distances(x, 1).tolist() == [1.0, 1.0, 0.0, 0.0]
    assert kth_neighbour_distances(x, 2).tolist() == [3.0, 2.0, 2.0, 2.0]
    own = np.array([1.5, 0.5, 0.0, 2.5])
    assert record_ranks(x, own).tolist() == [1, 0, 0, 2]
    assert record_ranks(x, own, np.array([3, 0])).tolist() == [2, 1]


def test_pool_with_large_standard_errors_and_identical_estimates() -> None:
    """s = (10, 10): c = 0.01 (below 1), y = (0, 100): Q = 50, tau2 = 49 / 0.01 = 4900. HKSJ on
    identical estimates: q = 0, so se = 0 and the p-value is 0, not a division error."""
    from engine.stats.meta import pool

    assert pool([0.0, 100.0], [10.0, 10.0]).tau2 == pytest.approx(4900.0, rel=1e-12)
    flat = pool([2.0, 2.0], [1.0, 1.0], method="hksj")
    assert (flat.se, flat.p) == (0.0, 0.0)
