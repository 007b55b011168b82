"""Conditional dequantization (engine/encoding/dequantize.py): discrete scores drawn given the row,
so dependence on binary, categorical, integer and point-mass columns is not weakened."""

import numpy as np
import pandas as pd
import pytest
from scipy.stats import truncnorm
from statsmodels.discrete.discrete_model import Logit

from engine.columns.schema import infer_schema
from engine.encoding.dequantize import conditional_scores, truncated_normal
from engine.encoding.encoder import TableEncoder


def _probit_table(n: int = 4000, rho: float = 0.6, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n)
    b = (rho * x + np.sqrt(1 - rho**2) * rng.standard_normal(n) > 0.3).astype(int)
    return pd.DataFrame({"marker": (50 + 10 * x).round(3), "event": b})


def _encoder(df: pd.DataFrame, conditional: bool) -> TableEncoder:
    bounds = {"marker": (float(df["marker"].min()), float(df["marker"].max()))}
    return TableEncoder(infer_schema(df, bounds=bounds), conditional=conditional).fit(df)


def test_scores_carry_the_latent_correlation_not_the_uniform_draws_weakened_one():
    df = _probit_table()
    r = {}
    for conditional in (False, True):
        X = _encoder(df, conditional).transform(df, np.random.default_rng(1))
        r[conditional] = np.corrcoef(X.T)[0, 1]
    # uniform draws inside each code's step: about 0.64 x 0.6 = 0.38 (and a bit less with the
    # threshold at 0.3); conditional draws: the probit's latent 0.6
    assert r[False] == pytest.approx(0.37, abs=0.04)
    assert r[True] == pytest.approx(0.60, abs=0.04)


def test_every_code_decodes_as_it_was_and_the_margin_stays_standard_normal():
    df = _probit_table()
    enc = _encoder(df, True)
    X = enc.transform(df, np.random.default_rng(2))
    back = enc.inverse_transform(X).frame
    assert back["event"].tolist() == df["event"].tolist()
    assert np.abs(back["marker"] - df["marker"]).max() < 1e-6
    assert X[:, 1].mean() == pytest.approx(0.0, abs=0.04)
    assert X[:, 1].std() == pytest.approx(1.0, abs=0.04)


def test_exactly_placed_values_are_left_alone():
    df = _probit_table(n=500)
    plain = _encoder(df, False).transform(df, np.random.default_rng(3))
    cond = _encoder(df, True).transform(df, np.random.default_rng(3))
    assert np.array_equal(plain[:, 0], cond[:, 0])  # the continuous column: same scores
    assert not np.array_equal(plain[:, 1], cond[:, 1])


def test_a_gaussian_model_of_the_scores_gives_the_real_odds_ratio_back():
    """The mechanism of issue 13's attenuation, without a flow: a near-Gaussian model of the
    scores (what a small flow learns) decodes to a logistic slope 35-40 % too weak when the
    binary's score was drawn uniformly, and to about the real slope when drawn conditionally."""
    rng = np.random.default_rng(4)
    n = 6000
    x = rng.standard_normal(n)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-(1.5 * x - 0.5)))).astype(int)
    df = pd.DataFrame({"marker": (50 + 10 * x).round(3), "outcome": y})
    real = Logit(df["outcome"], np.c_[np.ones(n), df["marker"]]).fit(disp=0).params.iloc[1]
    slopes = {}
    for conditional in (False, True):
        enc = _encoder(df, conditional)
        X = enc.transform(df, np.random.default_rng(5))
        draw = np.random.default_rng(6).multivariate_normal(X.mean(0), np.cov(X.T), size=n)
        s = enc.inverse_transform(draw).frame
        slopes[conditional] = (
            Logit(s["outcome"], np.c_[np.ones(n), s["marker"]]).fit(disp=0).params.iloc[1]
        )
    assert slopes[False] / real < 0.75
    assert slopes[True] / real == pytest.approx(1.0, abs=0.12)


def test_point_mass_values_are_redrawn_in_their_step_and_decode_exactly():
    rng = np.random.default_rng(7)
    n = 2000
    risk = rng.standard_normal(n)
    t = np.where(
        rng.uniform(size=n) < 0.4, 52.0, np.clip(30 - 8 * risk + rng.normal(0, 6, n), 1, 51.9)
    )
    df = pd.DataFrame({"risk": risk.round(4), "weeks": t.round(1)})
    enc = _encoder(df.rename(columns={"risk": "marker"}), True)
    X = enc.transform(df.rename(columns={"risk": "marker"}), np.random.default_rng(8))
    back = enc.inverse_transform(X).frame
    at52 = df["weeks"] == 52.0
    assert (back.loc[at52, "weeks"] == 52.0).all()
    assert not (back.loc[~at52, "weeks"] == 52.0).any()


def test_no_interval_means_no_change():
    Y = np.random.default_rng(0).standard_normal((50, 3))
    same = conditional_scores(Y, Y, Y, np.random.default_rng(1))
    assert np.array_equal(same, Y)


@pytest.mark.parametrize(("a", "b"), [(-1.0, 0.5), (1.5, np.inf), (-np.inf, -3.0), (6.0, 7.0)])
def test_truncated_normal_matches_scipy(a, b):
    """Cross-check against scipy.stats.truncnorm (an independent implementation)."""
    n = 200_000
    y = truncated_normal(np.zeros(n), 1.0, np.full(n, a), np.full(n, b), np.random.default_rng(9))
    assert y.min() >= a and y.max() <= b
    assert y.mean() == pytest.approx(truncnorm.mean(a, b), abs=0.01)
    assert y.std() == pytest.approx(truncnorm.std(a, b), abs=0.01)


def test_truncated_normal_far_outside_returns_the_nearest_end():
    y = truncated_normal(
        np.array([0.0, 0.0]),
        1.0,
        np.array([40.0, -np.inf]),
        np.array([41.0, -40.0]),
        np.random.default_rng(0),
    )
    assert y.tolist() == [40.0, -40.0]


def test_a_long_table_burns_in_on_a_subsample_and_still_reaches_the_latent_correlation():
    df = _probit_table(n=30_000, seed=11)  # above FIT_ROWS: burn-in on 20,000 rows, then all
    enc = _encoder(df, True)
    X = enc.transform(df, np.random.default_rng(12))
    assert np.corrcoef(X.T)[0, 1] == pytest.approx(0.60, abs=0.02)
    assert (enc.inverse_transform(X).frame["event"] == df["event"]).all()


def test_a_long_truncated_normal_draw_in_blocks_is_the_same_draw(monkeypatch):
    """Issue 31: a million-row column is drawn in blocks on every core; the uniforms come from
    one call as before, so the draw is the same, bit for bit, as in one block."""
    import engine.encoding.dequantize as dq

    rng = np.random.default_rng(0)
    n = 600_000
    mean = rng.normal(size=n)
    lo = np.floor(mean * 10) / 10
    hi = lo + 0.1
    lo = np.where(rng.random(n) < 0.3, -np.inf, lo)  # some open intervals
    blocks = dq.truncated_normal(mean, 0.7, lo, hi, np.random.default_rng(3))
    monkeypatch.setattr(dq, "_BLOCK", 10**9)
    whole = dq.truncated_normal(mean, 0.7, lo, hi, np.random.default_rng(3))
    np.testing.assert_array_equal(blocks, whole)
    assert ((blocks >= lo) & (blocks <= hi)).all()
