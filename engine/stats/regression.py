"""Fit one model on one table: Cox proportional hazards, ordinary least squares, logistic
regression.

Cox via lifelines (Efron ties), OLS and logistic via statsmodels (GLM, binomial family).
Categorical covariates are dummy coded with the first (sorted) level as reference; the levels may
be fixed by the caller (the real table's) so that two fits share one coding. Rows with a missing
value in a used column are left out (complete cases) and counted. :func:`small_terms` names the
terms that describe a group of fewer than 10 people, which no output shows.

Split from the former ``models`` module so that the fitting code (the only part that needs
lifelines and statsmodels) stands apart from the result types (:mod:`engine.stats.fits`) and the
comparisons that use it (:mod:`engine.stats.compare`).

References: Cox (1972) J R Stat Soc B 34:187; lifelines ``CoxPHFitter``; statsmodels ``OLS`` and
``GLM(Binomial)``; docs/contracts.md (small groups).

Example:
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"x": rng.normal(size=200)})
    >>> df["y"] = 2.0 * df["x"] + rng.normal(size=200)
    >>> fit = fit_model(df, ModelSpec("ols", outcome="y", covariates=("x",)))
    >>> round(fit.coefficient("x").estimate, 2)
    1.93
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import numpy as np
import pandas as pd

from engine.disclosure import THRESHOLD
from engine.errors import InputError
from engine.stats.fits import (
    ALPHA,
    INTERCEPT,
    Coefficient,
    ModelFit,
    ModelNotConverged,
    ModelSpec,
)


def category_levels(series: pd.Series) -> list[str]:
    """The sorted levels of a categorical column, as text (the first is the reference)."""
    return sorted(series.dropna().astype(str).unique().tolist())


def is_categorical(series: pd.Series) -> bool:
    """Whether a column is dummy coded (neither numeric nor boolean)."""
    return not (pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series))


def _design(
    df: pd.DataFrame, spec: ModelSpec, levels: Mapping[str, list[str]]
) -> tuple[pd.DataFrame, int]:
    """Response column(s) + numeric design (dummies ``col=level``, first level dropped), complete
    cases."""
    used = df[spec.used_columns()]
    complete = used.dropna()
    for (
        col,
        known,
    ) in levels.items():  # a level the reference table lacks cannot be coded: drop the row
        complete = complete[complete[col].astype(str).isin(known)]
    out = pd.DataFrame(index=complete.index)
    for col in spec.used_columns()[: 2 if spec.analysis == "cox" else 1]:
        out[col] = pd.to_numeric(complete[col], errors="coerce").astype(float)
        if out[col].isna().any():
            raise InputError(f"column '{col}' has non-numeric values: recode it as numbers")
    for col in spec.covariates:
        if col in levels:
            codes = pd.Categorical(complete[col].astype(str), categories=levels[col])
            for level in levels[col][1:]:
                out[f"{col}={level}"] = (codes == level).astype(float)
        else:
            out[col] = complete[col].astype(float)
    return out, len(df) - len(complete)


def check_binary(values: pd.Series, col: str) -> None:
    """Raise :class:`InputError` naming ``col`` unless every value is 0 or 1."""
    if not values.isin([0.0, 1.0]).all():
        raise InputError(f"column '{col}' must be coded 0/1 (1 = event): recode it")


def _fit_cox(
    data: pd.DataFrame, spec: ModelSpec
) -> list[tuple[str, float, float, float, float, float, float | None]]:
    from lifelines import CoxPHFitter
    from lifelines.exceptions import ConvergenceError

    if spec.time is None or spec.event is None:
        raise InputError("a Cox analysis needs time and event columns: give both")
    if (data[spec.time] < 0).any():
        raise InputError(f"column '{spec.time}' has negative times: follow-up time must be >= 0")
    check_binary(data[spec.event], spec.event)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s = CoxPHFitter().fit(data, duration_col=spec.time, event_col=spec.event).summary
    except (ConvergenceError, np.linalg.LinAlgError) as exc:
        raise ModelNotConverged(
            f"the Cox model did not converge ({str(exc).splitlines()[0][:80]}): drop a covariate "
            "that (almost) predicts the event or is constant"
        ) from exc
    return [
        (str(n), r["coef"], r["se(coef)"], r["coef lower 95%"], r["coef upper 95%"], r["p"], None)
        for n, r in s.iterrows()
    ]


def _fit_glm(
    data: pd.DataFrame, spec: ModelSpec
) -> list[tuple[str, float, float, float, float, float, float | None]]:
    # the two model modules, not statsmodels.api: it imports every model family (1.5 s of a
    # short run's start-up against 0.3 s)
    from statsmodels.genmod.families import Binomial
    from statsmodels.genmod.generalized_linear_model import GLM
    from statsmodels.regression.linear_model import OLS
    from statsmodels.tools.tools import add_constant

    if spec.outcome is None:
        raise InputError(f"a {spec.analysis} analysis needs an outcome column: give one")
    y = data[spec.outcome]
    x = add_constant(data.drop(columns=[spec.outcome]), has_constant="add").rename(
        columns={"const": INTERCEPT}
    )
    from statsmodels.tools.sm_exceptions import ConvergenceWarning, PerfectSeparationWarning

    if spec.analysis == "logistic":
        check_binary(y, spec.outcome)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if spec.analysis == "ols":
                res = OLS(y, x).fit()
            else:
                res = GLM(y, x, family=Binomial()).fit()
    except (np.linalg.LinAlgError, ValueError) as exc:
        raise ModelNotConverged(
            f"the {spec.analysis} model could not be fitted ({str(exc)[:80]}): drop a constant or "
            "redundant covariate"
        ) from exc
    kinds = {type(w.message) for w in caught}
    if spec.analysis == "logistic" and (
        PerfectSeparationWarning in kinds
        or ConvergenceWarning in kinds
        or not bool(getattr(res, "converged", True))
        or not np.all(np.isfinite(np.asarray(res.bse, dtype=float)))
    ):
        raise ModelNotConverged(
            f"the logistic model did not converge: a covariate (almost) perfectly separates "
            f"'{spec.outcome}' = 0 from 1, so its odds ratio is infinite"
        )
    ci = res.conf_int(ALPHA)
    df_resid = float(res.df_resid) if spec.analysis == "ols" else None
    return [
        (str(n), res.params[n], res.bse[n], ci.loc[n, 0], ci.loc[n, 1], res.pvalues[n], df_resid)
        for n in res.params.index
    ]


def fit_model(
    df: pd.DataFrame,
    spec: ModelSpec,
    *,
    levels: Mapping[str, list[str]] | None = None,
    source: str = "table",
) -> ModelFit:
    """Fit ``spec`` on ``df``: Cox via lifelines (Efron ties), OLS / logistic via statsmodels.

    ``levels`` fixes the dummy coding of categorical covariates (default: sorted levels of ``df``).

    References: Cox (1972); lifelines ``CoxPHFitter``; statsmodels ``OLS`` and ``GLM(Binomial)``.

    Example:
        >>> from lifelines.datasets import load_rossi
        >>> spec = ModelSpec("cox", time="week", event="arrest", covariates=("fin", "age"))
        >>> fit = fit_model(load_rossi(), spec)
        >>> round(fit.coefficient("age").estimate, 4)
        -0.0715
    """
    spec.check(df, source)
    if levels is None:
        levels = {c: category_levels(df[c]) for c in spec.covariates if is_categorical(df[c])}
    data, dropped = _design(df, spec, levels)
    if len(data) < data.shape[1] + 2:
        raise ModelNotConverged(
            f"{source}: only {len(data)} complete rows for {data.shape[1] - 1} terms: use fewer "
            "covariates or fill missing values"
        )
    absent = _absent_merged(data)
    fit = _fit_cox if spec.analysis == "cox" else _fit_glm
    rows = fit(data.drop(columns=absent), spec)
    rows += [(name, np.nan, np.nan, np.nan, np.nan, np.nan, None) for name in absent]
    per = spec.per or {}
    coefs = tuple(
        Coefficient(
            name, float(e), float(s), float(lo), float(hi), float(p), float(per.get(name, 1.0)), d
        )
        for name, e, s, lo, hi, p, d in rows
    )
    event_col = (
        spec.event
        if spec.analysis == "cox"
        else spec.outcome
        if spec.analysis == "logistic"
        else None
    )
    n_events = int(data[event_col].sum()) if event_col else None
    withheld = small_terms(data, spec, levels, event_col) + tuple(absent)
    return ModelFit(spec.analysis, len(data), dropped, n_events, coefs, withheld=withheld)


def _absent_merged(data: pd.DataFrame) -> list[str]:
    """Dummies of the merged rare level (:data:`engine.columns.codes.OTHER`, issue 32) that no row
    of this table holds: a release may well have none of a 6-person group, and an all-zero
    column stops the fit. Left out of the fit; the term is withheld and said to be merged
    (:func:`engine.stats.fits.withheld_note`) instead of the whole comparison failing."""
    from engine.columns.codes import OTHER

    return [c for c in data.columns if str(c).endswith(f"={OTHER}") and not data[c].any()]


def small_terms(
    data: pd.DataFrame, spec: ModelSpec, levels: Mapping[str, list[str]], event_col: str | None
) -> tuple[str, ...]:
    """Terms that describe a group of fewer than 10 rows (docs/contracts.md, last paragraph): a
    level's dummy when the level or the reference level has < 10 rows, or (Cox, logistic) < 10
    events (logistic: or non-events) among them; a two-valued numeric covariate likewise; the
    intercept when a reference level is small.

    Example:
        >>> d = pd.DataFrame({"y": [0.0, 1.0] * 30, "g=b": [1.0] * 4 + [0.0] * 56})
        >>> spec = ModelSpec("ols", outcome="y", covariates=("g",))
        >>> small_terms(d, spec, {"g": ["a", "b"]}, None)
        ('g=b',)
    """
    ev = data[event_col] if event_col else None

    def small(mask: pd.Series) -> bool:
        if int(mask.sum()) < THRESHOLD:
            return True
        if ev is None:
            return False
        events = int(ev[mask].sum())
        others = int(mask.sum()) - events if spec.analysis == "logistic" else THRESHOLD
        return min(events, others) < THRESHOLD

    out: list[str] = []
    small_reference = False
    for col in spec.covariates:
        if col in levels:
            dummies = [f"{col}={lv}" for lv in levels[col][1:] if f"{col}={lv}" in data]
            in_level = data[dummies].astype(bool) if dummies else pd.DataFrame(index=data.index)
            ref_small = small(~in_level.any(axis=1))
            small_reference |= ref_small
            out += [d for d in dummies if ref_small or small(in_level[d])]
        elif col in data and data[col].nunique() == 2:
            if any(small(data[col] == v) for v in data[col].unique()):
                out.append(col)
    if small_reference and spec.analysis != "cox":
        out.append(INTERCEPT)
    return tuple(out)
