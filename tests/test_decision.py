"""The privacy decision (issue 43): each attack's AUC fitted as one rising curve over w, the
pooled SE of that fit, the upper bound and the choice; the audit's driver on planted leaks.

Numbers by hand kill the one-line mutants of :mod:`engine.privacy.decision` (a comparison, a
sign, a start value, a loop's end); the driver tests show that the decision follows the risk:
a leak planted from some w on is found there, a flat curve with one noisy point does not stop
at it, and the SE at the decision is recorded."""

from __future__ import annotations

import math

import numpy as np
import pytest

import engine.privacy.audit as audit
from engine.privacy.audit_result import AuditConfig
from engine.privacy.decision import (
    REFUSAL_MARGIN,
    Z_UPPER,
    FittedCurve,
    bounds_at,
    decide,
    monotone_fit,
    se_at,
)
from engine.privacy.family import SingleMap, run_family_audit

NAN = math.nan


def _curve(ws, fit, se, raw=None) -> FittedCurve:
    return FittedCurve(tuple(ws), tuple(raw or fit), tuple(fit), tuple(se), (10,) * len(ws))


# --- the monotone fit and its SE ---------------------------------------------------------------


def test_the_fit_pools_a_point_that_breaks_the_rise_with_its_neighbour_by_hand() -> None:
    """Units (0.50, 0.56, 0.52) over three w: 0.56 > 0.52 breaks the rise, so both become their
    mean 0.54; the SE of that block is the SD of each unit's mean over it, over sqrt(units)."""
    values = np.array([[0.50, 0.58, 0.52], [0.50, 0.54, 0.52]])
    fit = monotone_fit((0.0, 0.5, 0.7), values)
    assert fit.fit == pytest.approx((0.50, 0.54, 0.54), abs=1e-12)
    # unit means over the block: (0.58 + 0.52) / 2 = 0.55 and (0.54 + 0.52) / 2 = 0.53
    assert fit.se[1] == pytest.approx(np.std([0.55, 0.53], ddof=1) / math.sqrt(2), abs=1e-12)
    assert fit.se[0] == 0.0 and fit.raw == pytest.approx((0.50, 0.56, 0.52))
    assert fit.raw_se[1] == pytest.approx(np.std([0.58, 0.54], ddof=1) / math.sqrt(2))
    assert fit.units == (2, 2, 2)


def test_the_fit_rises_and_weights_each_w_by_its_units() -> None:
    """A falling pair is pooled (the fit rises, never falls); a w measured by three units
    weighs three times one measured by one: (3 x 0.60 + 1 x 0.52) / 4 = 0.58."""
    values = np.array([[0.60, 0.52], [0.60, NAN], [0.60, NAN]])
    fit = monotone_fit((0.1, 0.2), values)
    assert fit.fit == pytest.approx((0.58, 0.58), abs=1e-12)
    assert fit.units == (3, 1)
    rising = monotone_fit((0.1, 0.2), np.array([[0.50, 0.60], [0.52, 0.62]]))
    assert rising.fit == pytest.approx((0.51, 0.61))


def test_the_order_of_the_w_given_does_not_matter() -> None:
    values = np.array([[0.60, 0.50], [0.62, 0.52]])
    fit = monotone_fit((0.9, 0.1), values)
    assert fit.ws == (0.1, 0.9) and fit.fit == pytest.approx((0.51, 0.61))


def test_one_unit_has_no_standard_error_and_a_w_without_any_is_refused() -> None:
    fit = monotone_fit((0.0, 0.5), np.array([[0.5, 0.6], [NAN, 0.61]]))
    assert math.isnan(fit.se[0]) and fit.se[1] == pytest.approx(0.005)
    with pytest.raises(ValueError, match="at least one"):
        monotone_fit((0.0, 0.5), np.array([[0.5, NAN]]))


# --- the bound --------------------------------------------------------------------------------


def test_the_bound_is_fit_plus_z_se_and_the_gap_is_the_released_attacks_above_the_smallest_w() -> (
    None
):
    d = _curve((0.0, 0.5), (0.50, 0.52), (0.004, 0.005))
    r = _curve((0.0, 0.5), (0.50, 0.52), (0.004, 0.005))
    at0 = bounds_at({"distance": d, "released": r}, 0.0, gap=0.01)
    at5 = bounds_at({"distance": d, "released": r}, 0.5, gap=0.01)
    assert at0 == pytest.approx(
        {"distance": 0.5 + Z_UPPER * 0.004, "released": 0.5 + Z_UPPER * 0.004}
    )
    assert at5["distance"] == pytest.approx(0.52 + Z_UPPER * 0.005)
    assert at5["released"] == pytest.approx(0.52 + 0.01 + Z_UPPER * 0.005)
    assert Z_UPPER == pytest.approx(1.6449, abs=1e-4)  # one-sided 95 %
    nan_se = _curve((0.0,), (0.5,), (NAN,))
    assert bounds_at({"distance": nan_se}, 0.0)["distance"] == math.inf


def test_se_at_is_the_largest_se_of_any_attack() -> None:
    a = _curve((0.0, 0.5), (0.5, 0.5), (0.004, 0.006))
    b = _curve((0.0, 0.5), (0.5, 0.5), (0.005, 0.003))
    assert se_at({"distance": a, "density": b}, 0.5) == 0.006
    assert se_at({"distance": a, "density": b}, 0.0) == 0.005


# --- the choice --------------------------------------------------------------------------------


def test_the_largest_w_whose_bound_and_every_smaller_ones_pass_with_z_as_given() -> None:
    """z = 1 for numbers by hand: bounds 0.51, 0.53, 0.56, 0.54 -> 0.5 (0.7 fails; 0.9's pass
    does not count: every smaller w must pass)."""
    c = _curve((0.0, 0.5, 0.7, 0.9), (0.50, 0.52, 0.55, 0.55), (0.01, 0.01, 0.01, -0.01))
    d = decide({"distance": c}, 0.55, z=1.0)
    assert d.w == 0.5 and d.attack == "distance" and not d.uncertain
    assert d.fit == 0.52 and d.se == 0.01 and d.upper == pytest.approx(0.53)
    assert [w for w, _ in d.bounds] == [0.0, 0.5, 0.7, 0.9]


def test_a_bound_exactly_at_the_limit_fails() -> None:
    c = _curve((0.0, 0.5), (0.5, 0.5), (0.0, 0.125))
    assert decide({"distance": c}, 0.625, z=1.0).w == 0.0


def test_the_highest_bound_of_any_attack_decides() -> None:
    a = _curve((0.0, 0.5), (0.50, 0.51), (0.0, 0.0))
    b = _curve((0.0, 0.5), (0.50, 0.56), (0.0, 0.0))
    d = decide({"distance": a, "density": b}, 0.55)
    assert d.w == 0.0 and d.attack in ("distance", "density")
    assert decide({"distance": a}, 0.55).w == 0.5


def test_a_floor_failing_at_the_smallest_w_is_refused_unless_its_estimate_is_clearly_low() -> None:
    """Bound over the limit at the smallest w: a fitted AUC under limit - 0.02 is released there
    (the audit cannot tell, ``uncertain``); at or above it, refused; a flow is never released
    on that ground (the family tries the next model)."""
    assert REFUSAL_MARGIN == 0.02
    low = _curve((0.0, 0.5), (0.529, 0.53), (0.02, 0.02))
    d = decide({"distance": low}, 0.55)
    assert d.w == 0.0 and d.uncertain and d.upper == pytest.approx(0.529 + Z_UPPER * 0.02)
    at = _curve((0.0, 0.5), (0.53, 0.53), (0.02, 0.02))
    assert decide({"distance": at}, 0.55).w is None  # 0.53 is not under 0.53
    assert decide({"distance": low}, 0.55, floor=False).w is None
    # the estimate that counts is every attack's, not only the one with the highest bound
    wide = _curve((0.0,), (0.50,), (0.05,))
    high = _curve((0.0,), (0.535,), (0.006,))
    d = decide({"distance": wide, "density": high}, 0.55)
    assert d.attack == "distance" and d.w is None


def test_a_passing_smallest_w_is_not_marked_uncertain() -> None:
    c = _curve((0.0,), (0.50,), (0.005,))
    d = decide({"distance": c}, 0.55)
    assert d.w == 0.0 and not d.uncertain


def test_a_flat_curve_with_one_noisy_point_does_not_stop_there() -> None:
    """Twelve units on a flat curve at 0.50 with one noisy w (0.3: mean 0.556, spread 0.02):
    point by point its mean + SE would stop the choice at 0.25; the fit pools it with the flat
    stretch around it and the choice goes on to where the curve really rises (0.9)."""
    rng = np.random.default_rng(0)
    ws = (0.0, 0.1, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
    true = np.array([0.5] * 10 + [0.52, 0.60])
    values = true + rng.normal(0, 0.004, (12, len(ws)))
    values[:, 4] = 0.556 + rng.normal(0, 0.02, 12)
    fit = monotone_fit(ws, values)
    point_by_point = values[:, 4].mean() + Z_UPPER * values[:, 4].std(ddof=1) / math.sqrt(12)
    assert point_by_point > 0.55  # the old rule would have stopped before w = 0.3
    assert decide({"distance": fit}, 0.55).w == 0.9


# --- the driver --------------------------------------------------------------------------------


class _Id:
    def to_latent(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(X, dtype=float)

    def from_latent(self, Z: np.ndarray) -> np.ndarray:
        return np.asarray(Z, dtype=float)


class _CopiesNearOwnCode(_Id):
    """A planted leak that starts at a high w: a decoded row is a fresh draw unrelated to its
    code (no leak at all), except that a code within 0.6 of a member's is that member, copied
    exactly. In six dimensions a noisy code comes that close to its own member's only at a high
    w (sqrt(1 - w) |noise| < 0.6: about 6 % of members at w = 0.8, 27 % at 0.9, 70 % at 0.95),
    and to any other member's hardly ever."""

    def __init__(self, rows: np.ndarray) -> None:
        from scipy.spatial import cKDTree

        self.rows, self.tree = np.asarray(rows, float), cKDTree(rows)

    def from_latent(self, Z: np.ndarray) -> np.ndarray:
        Z = np.asarray(Z, dtype=float)
        dist, idx = self.tree.query(Z)
        out = np.random.default_rng(len(Z)).standard_normal(Z.shape)
        near = dist < 0.6
        out[near] = self.rows[idx[near]]
        return out


def test_a_leak_planted_from_a_high_w_on_is_found_there() -> None:
    X = np.random.default_rng(0).standard_normal((600, 6))
    grid = (0.0, 0.2, 0.4, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95)
    res = run_family_audit(
        X,
        X,
        SingleMap(_CopiesNearOwnCode),
        config=AuditConfig(grid=grid, crossfit=True, max_rounds=3, refine=False),
        rng=np.random.default_rng(1),
    )
    auc = {p.w: p.auc for p in res.curve}
    assert max(abs(auc[w] - 0.5) for w in (0.0, 0.2, 0.4)) < 0.03  # no leak at small w
    assert auc[0.95] > 0.75  # the planted copies
    first_over = min(w for w in grid if auc[w] >= 0.55)
    assert res.selected_w is not None and res.selected_w < first_over
    assert res.selected_w >= 0.6  # and not far below it
    assert res.decision is not None and res.decision.upper < 0.55


def test_the_se_at_the_decision_and_the_design_are_in_the_record() -> None:
    X = np.random.default_rng(2).standard_normal((400, 3))
    res = run_family_audit(
        X,
        X,
        SingleMap(lambda rows: _Id()),
        config=AuditConfig(grid=(0.0, 0.3, 0.6, 0.9), crossfit=True, max_rounds=2, refine=False),
        rng=np.random.default_rng(3),
    )
    record = res.to_dict()
    d = res.decision
    assert record["se_at_decision"] == d.se and 0 < d.se < 0.05
    assert record["decision"]["w"] == res.selected_w == d.w
    assert record["decision"]["upper_bound"] == pytest.approx(d.fit + Z_UPPER * d.se)
    assert record["crossfit"] is True and record["rounds"] in (1, 2)
    assert record["se_target_met"] == (d.se <= 0.005)
    point = next(c for c in record["curve"] if c["w"] == d.w)
    assert point["upper_bound"] < 0.55 and point["units"] == 5 * record["rounds"]


def test_common_random_numbers_make_each_units_curve_differ_by_w_alone() -> None:
    """The same (split, repeat) at two w draws the same noise: with the identity map, the
    synthetic rows at w and at 0 differ by sqrt(w) x + (sqrt(1 - w) - 1) noise exactly."""
    from engine.privacy.attacks import draw_common, make_split

    X = np.random.default_rng(4).standard_normal((100, 2))
    cfg = AuditConfig(repeats=1)
    split = make_split(X, X, lambda rows: _Id(), cfg, np.random.default_rng(5))
    a, b = draw_common(split, [(0.0, 0), (0.64, 0)], lambda x: x, cfg)
    noise = a.synth_dist
    members = X[split.train]
    np.testing.assert_allclose(b.synth_dist, 0.8 * members + 0.6 * noise, atol=1e-12)
    c = draw_common(split, [(0.0, 1)], lambda x: x, cfg)[0]
    assert not np.allclose(c.synth_dist, noise)  # another repeat, other noise
    np.testing.assert_array_equal(a.members, b.members)  # the same rows scored


def test_the_gap_and_the_smallest_w_reach_the_released_attacks_bound() -> None:
    """decide() passes the gap and the smallest w to every bound: by default no gap at all; a
    gap charges the released attack above the smallest w only (decide and bounds_at alike)."""
    r = _curve((0.0, 0.5), (0.52, 0.53), (0.005, 0.005))
    assert bounds_at({"released": r}, 0.5)["released"] == pytest.approx(0.53 + Z_UPPER * 0.005)
    assert decide({"released": r}, 0.55).w == 0.5  # no gap unless one is given
    d = decide({"released": r}, 0.55, gap=0.02)
    assert d.w == 0.0 and d.bounds[0][1] == pytest.approx(0.52 + Z_UPPER * 0.005)
    assert d.bounds[1][1] == pytest.approx(0.53 + 0.02 + Z_UPPER * 0.005)


def test_every_field_of_a_decision_and_its_record() -> None:
    """A pass, a refusal and an uncertain release, field by field (what audit.json records)."""
    ok = decide({"distance": _curve((0.0, 0.5), (0.50, 0.52), (0.004, 0.005))}, 0.55)
    assert (ok.w, ok.attack, ok.fit, ok.se, ok.uncertain) == (0.5, "distance", 0.52, 0.005, False)
    assert ok.to_dict() == {
        "w": 0.5,
        "attack": "distance",
        "fitted_auc": 0.52,
        "se": 0.005,
        "upper_bound": ok.upper,
        "uncertain": False,
    }
    no = decide({"density": _curve((0.0, 0.5), (0.56, 0.6), (0.004, 0.005))}, 0.55)
    assert (no.w, no.attack, no.fit, no.se, no.uncertain) == (None, "density", 0.56, 0.004, False)
    assert no.upper == pytest.approx(0.56 + Z_UPPER * 0.004)
    assert [w for w, _ in no.bounds] == [0.0, 0.5]
    unsure = decide({"distance": _curve((0.0,), (0.52,), (0.03,))}, 0.55)
    assert (unsure.w, unsure.fit, unsure.se, unsure.uncertain) == (0.0, 0.52, 0.03, True)
    assert unsure.bounds == ((0.0, pytest.approx(0.52 + Z_UPPER * 0.03)),)


def test_the_rule_in_words_names_the_limit_the_level_the_attacks_and_the_gap() -> None:
    from engine.privacy.decision import rule_words

    words = rule_words(0.55, ("distance", "density"), 0.0)
    assert "95 % upper confidence bound" in words and "below 0.55" in words
    assert "the distance to the closest synthetic row" in words
    assert "the density ratio synthetic/reference" in words and "released" not in words
    assert "rises with w" in words and "gap" not in words
    gapped = rule_words(0.6, ("released",), 0.013)
    assert "below 0.6" in gapped and "0.013 is added to the released-columns attack" in gapped
    assert "z = 1" in rule_words(0.55, ("distance",), 0.0, z=1.0)


def test_the_rule_in_words_exactly_and_the_gap_sentence_only_where_it_applies() -> None:
    from engine.privacy.decision import rule_words

    assert rule_words(0.55, ("distance", "released"), 0.013) == (
        "the largest w at which, for it and every smaller w, the 95 % upper confidence bound of "
        "each attack's expected AUC stays below 0.55 (the distance to the closest synthetic row, "
        "the distance to the closest released row on the released columns); each attack's AUC "
        "is fitted as one curve that rises with w, over every split and repeat, and 0.013 is "
        "added to the released-columns attack above the smallest w (the gap measured between "
        "the audit's models and the released one)"
    )
    assert "added" not in rule_words(0.55, ("released",), 0.0)  # no gap: no sentence
    assert "added" not in rule_words(0.55, ("distance",), 0.013)  # no released attack: none
    assert "z = 1.64" in rule_words(0.55, ("distance",), 0.0, z=1.64)  # not the 95 % one
    named = rule_words(0.55, ("density",), 0.0).split(" (", 1)[1].split(")", 1)[0]
    assert named == "the density ratio synthetic/reference"


def test_the_gap_is_not_charged_at_the_smallest_w_of_a_grid_that_starts_above_zero() -> None:
    r = _curve((0.1, 0.5), (0.52, 0.53), (0.005, 0.005))
    d = decide({"released": r}, 0.55, gap=0.02)
    assert d.w == 0.1 and d.upper == pytest.approx(0.52 + Z_UPPER * 0.005)  # 0.1: no gap


# --- the selection rule read off a finished curve (hand-computed; docs/mutation.md) ---------------


def _point(w: float, auc: float, se: float, dens: float = 0.5, dens_se: float = 0.0):
    """A curve point whose stored upper bounds are the fitted AUC + SE (z = 1 for numbers by
    hand), for the distance and the density attack; other fields neutral."""
    return audit.CurvePoint(
        w=w,
        auc=auc,
        auc_sd=se,
        auc_se=se,
        tpr_at_1pct_fpr=0.01,
        tpr_at_01pct_fpr=0.001,
        density_auc=dens,
        density_auc_sd=dens_se,
        density_auc_se=dens_se,
        repeats=4,
        refined=False,
        roc_fpr=(0.0, 1.0),
        roc_tpr=(0.0, 1.0),
        auc_fit=auc,
        auc_fit_se=se,
        density_fit=dens,
        density_fit_se=dens_se,
        upper_distance=auc + se,
        upper_density=dens + dens_se,
    )


def test_selection_stops_at_the_first_failing_w_even_if_a_larger_w_passes_again() -> None:
    """A curve with a dip: w = 0.3 fails, 0.5 passes again. Every smaller w must pass too, so
    the choice is 0.2, not 0.5 (kills ``break`` -> ``continue`` in select_w)."""
    curve = [_point(0.0, 0.50, 0.0), _point(0.2, 0.52, 0.0), _point(0.3, 0.60, 0.0)]
    curve += [_point(0.5, 0.51, 0.0), _point(0.7, 0.53, 0.0)]
    assert audit.select_w(curve, 0.55) == 0.2
    assert audit.select_w(list(reversed(curve)), 0.55) == 0.2  # order of the input is irrelevant


def test_selection_returns_none_when_the_smallest_w_fails() -> None:
    curve = [_point(0.0, 0.56, 0.0), _point(0.5, 0.50, 0.0)]
    assert audit.select_w(curve, 0.55) is None


def test_a_point_under_the_limit_on_the_mean_but_not_on_its_bound_fails() -> None:
    """AUC 0.545 with a bound 0.01 higher at a limit of 0.55: the bound 0.555 is over the limit
    (kills the rule on the fitted mean alone, for either attack)."""
    assert not _point(0.5, 0.545, 0.01).passes(0.55)
    assert not _point(0.5, 0.50, 0.0, dens=0.545, dens_se=0.01).passes(0.55)
    assert _point(0.5, 0.535, 0.01, dens=0.535, dens_se=0.01).passes(0.55)
    curve = [_point(0.0, 0.50, 0.005), _point(0.4, 0.545, 0.01), _point(0.6, 0.51, 0.0)]
    assert audit.select_w(curve, 0.55) == 0.0


def test_the_limit_itself_does_not_pass() -> None:
    """A bound exactly at the limit fails (binary-exact numbers: 0.5 + 0.125 = 0.625)."""
    assert not _point(0.5, 0.5, 0.125).passes(0.625)
    assert not _point(0.5, 0.5, 0.0, dens=0.5, dens_se=0.125).passes(0.625)


def test_only_the_named_attacks_decide() -> None:
    leaky_density = _point(0.5, 0.50, 0.0, dens=0.70, dens_se=0.0)
    assert leaky_density.passes(0.55, ("distance",))
    assert not leaky_density.passes(0.55, ("density",))
    assert not leaky_density.passes(0.55)
    assert audit.select_w([_point(0.0, 0.5, 0.0), leaky_density], 0.55, ("distance",)) == 0.5
