"""Real-vs-synthetic model comparison: wrappers against lifelines/statsmodels, overlap,
combining rules."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from lifelines import CoxPHFitter
from lifelines.datasets import load_rossi

from engine.errors import InputError
from engine.stats.combine import combine_synthetic_copies
from engine.stats.compare import ci_overlap, compare_fits
from engine.stats.fidelity import (
    correlation_difference,
    fidelity_report,
    km_comparison,
    marginal_fidelity,
)
from engine.stats.fits import Coefficient, ModelFit, ModelSpec
from engine.stats.regression import fit_model

ROSSI_COVS = ("fin", "age", "race", "wexp", "mar", "paro", "prio")


@pytest.fixture(scope="module")
def rossi() -> pd.DataFrame:
    return load_rossi()


@pytest.fixture(scope="module")
def linear() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    n = 400
    df = pd.DataFrame(
        {
            "x": rng.normal(size=n),
            "z": rng.normal(size=n),
            "group": rng.choice(["north", "south", "west"], size=n),
        }
    )
    lin = (
        0.5
        + 1.5 * df["x"]
        - 0.7 * df["z"]
        + df["group"].map({"north": 0.0, "south": 0.4, "west": -0.3})
    )
    df["y"] = lin + rng.normal(size=n)
    df["case"] = (rng.uniform(size=n) < 1 / (1 + np.exp(-(lin - 0.5)))).astype(int)
    return df


def test_cox_matches_lifelines_on_rossi(rossi: pd.DataFrame) -> None:
    # lifelines' own example data (Rossi et al. 1980 recidivism); reference = CoxPHFitter directly.
    ref = CoxPHFitter().fit(rossi, duration_col="week", event_col="arrest").summary
    fit = fit_model(rossi, ModelSpec("cox", time="week", event="arrest", covariates=ROSSI_COVS))
    got = fit.to_frame().set_index("name")
    assert list(got.index) == list(ROSSI_COVS)
    for ours, theirs in (
        ("estimate", "coef"),
        ("se", "se(coef)"),
        ("ci_low", "coef lower 95%"),
        ("ci_high", "coef upper 95%"),
        ("p", "p"),
        ("hr", "exp(coef)"),
    ):
        np.testing.assert_allclose(got[ours], ref.loc[list(ROSSI_COVS), theirs], atol=1e-6, rtol=0)
    assert fit.n == 432 and fit.n_events == 114  # 114 arrests in rossi


def test_cox_dummy_coding_and_per(rossi: pd.DataFrame) -> None:
    text = rossi.assign(race=rossi["race"].map({0: "other", 1: "black"}))
    spec = ModelSpec(
        "cox", time="week", event="arrest", covariates=("age", "race"), per={"age": 10}
    )
    fit = fit_model(text, spec).to_frame().set_index("name")
    # "black" sorts first and is the reference, so race=other is minus the numeric race coefficient
    ref = CoxPHFitter().fit(rossi[["week", "arrest", "age", "race"]], "week", "arrest").summary
    assert fit.loc["race=other", "estimate"] == pytest.approx(-ref.loc["race", "coef"], abs=1e-6)
    assert fit.loc["age", "hr"] == pytest.approx(math.exp(10 * ref.loc["age", "coef"]), abs=1e-9)
    assert fit.loc["race=other", "hr"] == pytest.approx(
        math.exp(-ref.loc["race", "coef"]), abs=1e-6
    )


def test_ols_matches_statsmodels_formula(linear: pd.DataFrame) -> None:
    ref = smf.ols("y ~ x + z + C(group)", data=linear).fit()
    fit = fit_model(linear, ModelSpec("ols", outcome="y", covariates=("x", "z", "group")))
    got = fit.to_frame()
    assert got["name"].tolist() == ["(intercept)", "x", "z", "group=south", "group=west"]
    order = ["Intercept", "x", "z", "C(group)[T.south]", "C(group)[T.west]"]
    np.testing.assert_allclose(got["estimate"], ref.params[order], atol=1e-10)
    np.testing.assert_allclose(got["se"], ref.bse[order], atol=1e-10)
    np.testing.assert_allclose(got["ci_low"], ref.conf_int().loc[order, 0], atol=1e-10)
    np.testing.assert_allclose(got["p"], ref.pvalues[order], atol=1e-10)


def test_logistic_matches_statsmodels_logit(linear: pd.DataFrame) -> None:
    ref = smf.logit("case ~ x + z", data=linear).fit(disp=0)  # Newton on the logit likelihood
    fit = fit_model(
        linear, ModelSpec("logistic", outcome="case", covariates=("x", "z"))
    )  # GLM IRLS
    got = fit.to_frame()
    np.testing.assert_allclose(got["estimate"], ref.params.to_numpy(), atol=1e-6)
    np.testing.assert_allclose(got["se"], ref.bse.to_numpy(), atol=1e-6)
    assert got["or"].iloc[1] == pytest.approx(math.exp(ref.params["x"]), rel=1e-6)
    assert fit.n_events == int(linear["case"].sum())


def test_ci_overlap_identical_disjoint_and_partial() -> None:
    assert ci_overlap(-1.0, 1.0, -1.0, 1.0) == 1.0
    assert ci_overlap(0.0, 1.0, 2.0, 3.0) == 0.0
    # overlap [1, 2]: 1/2 of the first interval, 1/4 of the second -> (0.5 + 0.25) / 2
    assert ci_overlap(0.0, 2.0, 1.0, 5.0) == pytest.approx(0.375)


def test_compare_identical_and_shifted(linear: pd.DataFrame) -> None:
    spec = ModelSpec("ols", outcome="y", covariates=("x", "z", "group"))
    same = compare_fits(linear, linear, spec).to_frame()
    assert (same["ci_overlap"] == 1.0).all() and (same["std_difference"] == 0.0).all()
    assert same["sign_agrees"].all() and same["significance_agrees"].all()
    shifted = linear.assign(y=linear["y"] - 3.0 * linear["x"])  # slope of x flips from +1.5 to -1.5
    row = compare_fits(linear, shifted, spec).to_frame().set_index("name").loc["x"]
    assert row["ci_overlap"] == 0.0 and not row["sign_agrees"]
    assert row["std_difference"] == pytest.approx(-3.0 / row["real_se"], rel=1e-6)


def test_synthetic_level_missing_from_real_is_dropped(linear: pd.DataFrame) -> None:
    synth = linear.copy()
    synth.loc[synth.index[:5], "group"] = "east"
    fit = compare_fits(
        linear, synth, ModelSpec("ols", outcome="y", covariates=("x", "group"))
    ).synthetic
    assert fit.n_dropped == 5 and fit.n == len(linear) - 5


def _fit(q: float, se: float) -> ModelFit:
    return ModelFit(
        "ols", 100, 0, None, (Coefficient("x", q, se, q - 1.96 * se, q + 1.96 * se, 0.01),)
    )


def test_combining_rules_by_hand() -> None:
    # q = 1.0, 1.2, 1.4; se 0.1 each; M = 3: q̄ = 1.2, b = 0.04, ū = 0.01.
    fits = [_fit(1.0, 0.1), _fit(1.2, 0.1), _fit(1.4, 0.1)]
    part = combine_synthetic_copies(fits, "partial")
    c = part.coefficient("x")
    assert c.estimate == pytest.approx(1.2)
    assert c.se**2 == pytest.approx(0.01 + 0.04 / 3)  # Reiter (2003): T_p = ū + b/M = 0.023333
    assert c.df == pytest.approx(2 * (1 + 0.01 / (0.04 / 3)) ** 2)  # (M-1)(1 + ū/(b/M))² = 6.125
    from scipy.stats import t

    assert c.ci_high - c.estimate == pytest.approx(t.ppf(0.975, 6.125) * c.se)
    full = combine_synthetic_copies(fits, "full").coefficient("x")
    assert full.se**2 == pytest.approx((1 + 1 / 3) * 0.04 - 0.01)  # RRR (2003): T_f = 0.043333
    assert full.df == pytest.approx(2 * (1 - 3 * 0.01 / (4 * 0.04)) ** 2)  # 1.3203125
    # nearly identical copies: T_f = (4/3)·1e-4 − 0.01 < 0 -> adjusted to ū (n_syn = n)
    tight = combine_synthetic_copies([_fit(1.0, 0.1), _fit(1.01, 0.1), _fit(1.02, 0.1)], "full")
    assert tight.coefficient("x").se ** 2 == pytest.approx(0.01)
    assert tight.combined["coefficients"]["x"]["adjusted"] is True and tight.combined["copies"] == 3
    with pytest.raises(InputError, match="at least 2"):
        combine_synthetic_copies(fits[:1])


def test_compare_with_copies_uses_partial_rule(linear: pd.DataFrame) -> None:
    rng = np.random.default_rng(5)
    copies = [linear.assign(y=linear["y"] + rng.normal(0, 0.3, len(linear))) for _ in range(3)]
    spec = ModelSpec("ols", outcome="y", covariates=("x",))
    res = fidelity_report(linear, copies, spec)
    fits = [fit_model(c, spec).coefficient("x") for c in copies]
    q = np.array([f.estimate for f in fits])
    u = np.array([f.se**2 for f in fits])
    synth = res.comparison.synthetic.coefficient("x")
    assert synth.se**2 == pytest.approx(u.mean() + q.var(ddof=1) / 3)
    assert "partial synthesis rule" in res.notes[0]


def test_marginal_correlation_and_km(rossi: pd.DataFrame) -> None:
    real = pd.DataFrame(
        {"a": [1.0, 2.0, 3.0, 4.0, 5.0], "b": [2.0, 1.0, 4.0, 3.0, 5.0], "s": list("vwxyz")}
    )
    synth = real.assign(a=real["a"] + 1.0)
    m = marginal_fidelity(real, synth).set_index("column")
    assert list(m.index) == ["a", "b"]  # text column skipped
    assert m.loc["a", "synth_mean"] - m.loc["a", "real_mean"] == 1.0
    assert pd.isna(m.loc["a", "real_q25"])  # < 10 rows beyond a quartile of 5: not shown
    assert m.loc["a", "real_sd"] == pytest.approx(math.sqrt(2.5))
    cor = correlation_difference(real, synth.assign(b=-real["b"]))
    assert cor.max_abs_difference == pytest.approx(2 * 0.8)  # corr(a, b) = 0.8 flips sign
    km = km_comparison(rossi, rossi.assign(week=rossi["week"] * 0.5), "week", "arrest")
    assert km.logrank_p < 1e-6 and 0 < km.max_abs_difference < 1
    events = np.histogram(rossi.loc[rossi["arrest"] == 1, "week"], bins=km.grid)[0]
    assert km.grid[0] == 0.0 and ((events == 0) | (events >= 10)).all()  # coarse, disclosure-safe


def test_fidelity_report_is_json_safe(rossi: pd.DataFrame) -> None:
    spec = ModelSpec(
        "cox", time="week", event="arrest", covariates=("fin", "age", "prio"), per={"age": 10}
    )
    res = fidelity_report(rossi, rossi.sample(frac=1.0, random_state=0), spec)
    doc = json.loads(json.dumps(res.to_dict(), allow_nan=False))
    assert doc["model"]["coefficients"][1]["name"] == "age" and doc["km"][
        "logrank_p"
    ] == pytest.approx(1.0)
    assert doc["correlation"]["max_abs_difference"] == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize(
    "spec,msg",
    [
        (
            ModelSpec("cox", time="week", event="arrested", covariates=("age",)),
            "column 'arrested' not found",
        ),
        (ModelSpec("cox", time="week", event="prio", covariates=("age",)), "must be coded 0/1"),
        (ModelSpec("cox", time="week", covariates=("age",)), "needs the time column and"),
        (ModelSpec("ols", covariates=("age",)), "needs the outcome column"),
        (ModelSpec("ols", outcome="prio", covariates=("age",), per={"fin": 2}), "not a covariate"),
    ],
)
def test_input_errors_name_the_column(rossi: pd.DataFrame, spec: ModelSpec, msg: str) -> None:
    with pytest.raises(InputError, match=msg):
        fit_model(rossi, spec)


def test_a_model_that_does_not_converge_is_recorded_not_fatal() -> None:
    """Perfect separation (logistic) and a constant covariate (Cox) are reported in fidelity."""
    from engine.stats.fits import ModelNotConverged

    rng = np.random.default_rng(0)
    n = 200
    x = rng.normal(size=n)
    d = pd.DataFrame(
        {
            "x": x,
            "y": (x > 0).astype(int),  # x separates y perfectly
            "z": rng.normal(size=n),
            "t": rng.exponential(5, n),
            "e": rng.integers(0, 2, n),
            "c": np.ones(n),
        }
    )
    logistic = ModelSpec("logistic", outcome="y", covariates=("x", "z"))
    with pytest.raises(ModelNotConverged, match="perfectly separates 'y'"):
        fit_model(d, logistic)
    res = fidelity_report(d, d, logistic, ["x", "z"]).to_dict()
    assert res["model"] is None and res["model_status"].startswith("did not converge:")
    assert "separates" in res["model_status"] and len(res["marginal"]) == 2
    cox = fidelity_report(d, d, ModelSpec("cox", time="t", event="e", covariates=("x", "c")))
    assert cox.model_error is not None and cox.model_error.startswith("did not converge")
    assert cox.km is not None and cox.km.max_abs_difference == 0.0
    ok = fidelity_report(d, d, ModelSpec("ols", outcome="z", covariates=("x",))).to_dict()
    assert (
        ok["model_status"] == "fitted" and ok["model"]["coefficients"][0]["std_difference"] == 0.0
    )


def test_logrank_p_is_labelled_descriptive() -> None:
    d = load_rossi()
    km = km_comparison(d, d.assign(week=d["week"] * 0.8), "week", "arrest").to_dict()
    assert km["logrank_p_descriptive"] == km["logrank_p"] < 0.05
