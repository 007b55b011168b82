"""Will the synthetic table give the same answer? Fit one model on the real and the synthetic table.

Cox proportional hazards (lifelines), ordinary least squares and logistic regression (statsmodels
GLM, binomial family); per coefficient: estimate, SE, 95 % CI, the difference in real-SE units,
the confidence-interval overlap of Karr et al. (2006), and whether sign and significance agree.
Marginal fidelity (mean, SD, quartiles), Kaplan-Meier curves with a log-rank test, correlation
matrices, and the combining rules for M synthetic copies complete :func:`fidelity_report`, whose
``to_dict()`` is ``audit.json["fidelity"]``.

Categorical covariates are dummy coded with the first (sorted) level as reference; the levels come
from the real table so both fits share one coding. Rows with a missing value in a used column are
left out (complete cases) and counted.

References: Karr, Kohnen, Oganian, Reiter & Sanil (2006) Am Stat 60:224 (CI overlap);
Reiter (2003) Surv Methodol 29:181 (partially synthetic data); Raghunathan, Reiter & Rubin (2003)
J Off Stat 19:1 (fully synthetic data); Raab, Nowok & Dibben (2016) J Priv Confid 7(3):67
(synthesis without parameter draws); paper METHOD.md sections 7-8.

Example:
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"x": rng.normal(size=200)})
    >>> df["y"] = 2.0 * df["x"] + rng.normal(size=200)
    >>> spec = ModelSpec("ols", outcome="y", covariates=("x",))
    >>> cmp = compare_fits(df, df, spec)
    >>> float(cmp.to_frame().set_index("name").loc["x", "ci_overlap"])
    1.0
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal, cast

import numpy as np
import pandas as pd
from scipy import stats as sps

from engine.disclosure import NOT_SHOWN_GROUP, THRESHOLD, coarse_km_grid, safe_quantile
from engine.errors import InputError

Analysis = Literal["cox", "ols", "logistic"]
Rule = Literal["partial", "full"]
ALPHA = 0.05
Z95 = float(sps.norm.ppf(1 - ALPHA / 2))
INTERCEPT = "(intercept)"


def json_safe(value: Any) -> Any:
    """Turn numpy scalars, tuples and non-finite floats into plain JSON values (NaN/inf -> None).

    Example:
        >>> json_safe({"a": np.float64(1.5), "b": (np.nan, np.int64(2))})
        {'a': 1.5, 'b': [None, 2]}
    """
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [json_safe(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    return value


class ModelNotConverged(InputError):
    """A model could not be fitted to a table (no convergence, separation, collinearity).

    On the real table of a run this is reported in the fidelity section, not fatal: the
    synthetic table is still exported (the question is the data's, not the user's input).
    """


@dataclass(frozen=True)
class ModelSpec:
    """Which model to fit: ``analysis`` with ``outcome`` (OLS/logistic) or ``time``+``event`` (Cox).

    ``per`` maps a covariate to the units an effect is reported per (e.g. ``{"sbp": 10}``).

    Example:
        >>> ModelSpec("cox", time="t", event="cvd", covariates=("sbp",), per={"sbp": 10}).used_columns()
        ['t', 'cvd', 'sbp']
    """

    analysis: Analysis
    outcome: str | None = None
    covariates: tuple[str, ...] = ()
    time: str | None = None
    event: str | None = None
    per: dict[str, float] | None = None

    def used_columns(self) -> list[str]:
        """Every column the model reads, response first."""
        head = [self.time, self.event] if self.analysis == "cox" else [self.outcome]
        return [c for c in head if c is not None] + list(self.covariates)

    def check(self, df: pd.DataFrame, source: str = "table") -> None:
        """Raise :class:`InputError` naming ``source`` and the column when ``df`` cannot be fitted."""
        if self.analysis not in ("cox", "ols", "logistic"):
            raise InputError(f"analysis '{self.analysis}' is unknown: use cox, ols or logistic")
        if self.analysis == "cox" and (not self.time or not self.event):
            raise InputError("a Cox analysis needs --time and --event columns: give both")
        if self.analysis != "cox" and not self.outcome:
            raise InputError(
                f"a {self.analysis} analysis needs --outcome COL: give the outcome column"
            )
        if not self.covariates:
            raise InputError("no covariates given: list them with --covariates COL,COL")
        for col in self.used_columns():
            if col not in df.columns:
                raise InputError(
                    f"{source}: column '{col}' not found: check the spelling ({len(df.columns)} columns read)"
                )
        for col in self.per or {}:
            if col not in self.covariates:
                raise InputError(
                    f"--per names '{col}', which is not a covariate: add it to the covariates"
                )


@dataclass(frozen=True)
class Coefficient:
    """One row of a coefficient table; ``df`` is the t degrees of freedom when a t CI was used."""

    name: str
    estimate: float
    se: float
    ci_low: float
    ci_high: float
    p: float
    per: float = 1.0
    df: float | None = None


@dataclass(frozen=True)
class ModelFit:
    """A fitted model. For Cox and logistic ``to_frame()`` adds ``hr`` / ``or`` = exp(estimate*per)."""

    analysis: Analysis
    n: int
    n_dropped: int
    n_events: int | None
    coefficients: tuple[Coefficient, ...]
    combined: dict[str, Any] | None = None
    withheld: tuple[str, ...] = ()  # terms of a group of < 10 people (or events): never shown

    def coefficient(self, name: str) -> Coefficient:
        """The coefficient called ``name`` (a dummy is ``column=level``)."""
        for c in self.coefficients:
            if c.name == name:
                return c
        raise InputError(
            f"no coefficient '{name}' in the {self.analysis} model: use one of {[c.name for c in self.coefficients]}"
        )

    def to_frame(self) -> pd.DataFrame:
        """Coefficient table: name, estimate, se, ci_low, ci_high, p, per (+ hr/or columns)."""
        frame = pd.DataFrame([asdict(c) for c in self.coefficients])
        ratio = {"cox": "hr", "logistic": "or"}.get(self.analysis)
        if ratio is not None and len(frame):
            for src, dst in (
                ("estimate", ratio),
                ("ci_low", f"{ratio}_ci_low"),
                ("ci_high", f"{ratio}_ci_high"),
            ):
                frame[dst] = np.exp(frame[src] * frame["per"])
        return frame

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe summary; the terms in ``withheld`` keep only their name (CONTRACTS.md)."""
        combined = self.combined
        if combined and isinstance(combined.get("coefficients"), dict):
            detail = {
                k: {"not_shown": NOT_SHOWN_GROUP} if k in self.withheld else v
                for k, v in combined["coefficients"].items()
            }
            combined = {**combined, "coefficients": detail}
        records = self.to_frame().to_dict(orient="records")
        return json_safe(
            {
                "analysis": self.analysis,
                "n": self.n,
                "n_dropped": self.n_dropped,
                "n_events": self.n_events,
                "combined": combined,
                "coefficients": withhold_terms(records, self.withheld),
                "withheld": list(self.withheld),
            }
        )


def withhold_terms(
    records: Sequence[Mapping[Any, Any]], withheld: Sequence[str]
) -> list[dict[str, Any]]:
    """Coefficient records with every value of a withheld term blanked (None) and a
    ``not_shown`` note, so no file shows a statistic of a group of fewer than 10 people.

    Example:
        >>> withhold_terms([{"name": "site=C", "estimate": -16.8, "per": 1.0}], ["site=C"])
        [{'name': 'site=C', 'estimate': None, 'per': 1.0, 'not_shown': 'not shown: fewer than 10 people in this group'}]
    """
    out = []
    for record in records:
        rec = {str(k): v for k, v in record.items()}
        if rec.get("name") in withheld:
            rec = {k: v if k in ("name", "per") else None for k, v in rec.items()}
            rec["not_shown"] = NOT_SHOWN_GROUP
        out.append(rec)
    return out


def _levels(series: pd.Series) -> list[str]:
    return sorted(series.dropna().astype(str).unique().tolist())


def _is_categorical(series: pd.Series) -> bool:
    return not (pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series))


def _design(
    df: pd.DataFrame, spec: ModelSpec, levels: Mapping[str, list[str]]
) -> tuple[pd.DataFrame, int]:
    """Response column(s) + numeric design (dummies ``col=level``, first level dropped), complete cases."""
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


def _check_binary(values: pd.Series, col: str) -> None:
    if not values.isin([0.0, 1.0]).all():
        raise InputError(f"column '{col}' must be coded 0/1 (1 = event): recode it")


def _fit_cox(
    data: pd.DataFrame, spec: ModelSpec
) -> list[tuple[str, float, float, float, float, float, float | None]]:
    from lifelines import CoxPHFitter
    from lifelines.exceptions import ConvergenceError

    assert spec.time is not None and spec.event is not None
    if (data[spec.time] < 0).any():
        raise InputError(f"column '{spec.time}' has negative times: follow-up time must be >= 0")
    _check_binary(data[spec.event], spec.event)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s = CoxPHFitter().fit(data, duration_col=spec.time, event_col=spec.event).summary
    except (ConvergenceError, np.linalg.LinAlgError) as exc:
        raise ModelNotConverged(
            f"the Cox model did not converge ({str(exc).splitlines()[0][:80]}): drop a covariate that (almost) predicts the event or is constant"
        ) from exc
    return [
        (str(n), r["coef"], r["se(coef)"], r["coef lower 95%"], r["coef upper 95%"], r["p"], None)
        for n, r in s.iterrows()
    ]


def _fit_glm(
    data: pd.DataFrame, spec: ModelSpec
) -> list[tuple[str, float, float, float, float, float, float | None]]:
    import statsmodels.api as sm

    assert spec.outcome is not None
    y = data[spec.outcome]
    x = sm.add_constant(data.drop(columns=[spec.outcome]), has_constant="add").rename(
        columns={"const": INTERCEPT}
    )
    from statsmodels.tools.sm_exceptions import ConvergenceWarning, PerfectSeparationWarning

    if spec.analysis == "logistic":
        _check_binary(y, spec.outcome)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if spec.analysis == "ols":
                res = sm.OLS(y, x).fit()
            else:
                res = sm.GLM(y, x, family=sm.families.Binomial()).fit()
    except (np.linalg.LinAlgError, ValueError) as exc:
        raise ModelNotConverged(
            f"the {spec.analysis} model could not be fitted ({str(exc)[:80]}): drop a constant or redundant covariate"
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
        >>> fit = fit_model(load_rossi(), ModelSpec("cox", time="week", event="arrest", covariates=("fin", "age")))
        >>> round(fit.coefficient("age").estimate, 4)
        -0.0715
    """
    spec.check(df, source)
    if levels is None:
        levels = {c: _levels(df[c]) for c in spec.covariates if _is_categorical(df[c])}
    data, dropped = _design(df, spec, levels)
    if len(data) < data.shape[1] + 2:
        raise ModelNotConverged(
            f"{source}: only {len(data)} complete rows for {data.shape[1] - 1} terms: use fewer covariates or fill missing values"
        )
    rows = _fit_cox(data, spec) if spec.analysis == "cox" else _fit_glm(data, spec)
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
    withheld = small_terms(data, spec, levels, event_col)
    return ModelFit(spec.analysis, len(data), dropped, n_events, coefs, withheld=withheld)


def small_terms(
    data: pd.DataFrame, spec: ModelSpec, levels: Mapping[str, list[str]], event_col: str | None
) -> tuple[str, ...]:
    """Terms that describe a group of fewer than 10 rows (CONTRACTS.md, last paragraph): a
    level's dummy when the level or the reference level has < 10 rows, or (Cox, logistic) < 10
    events (logistic: or non-events) among them; a two-valued numeric covariate likewise; the
    intercept when a reference level is small.

    Example:
        >>> d = pd.DataFrame({"y": [0.0, 1.0] * 30, "g=b": [1.0] * 4 + [0.0] * 56})
        >>> small_terms(d, ModelSpec("ols", outcome="y", covariates=("g",)), {"g": ["a", "b"]}, None)
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


def combine_synthetic_copies(fits: Sequence[ModelFit], rule: Rule = "partial") -> ModelFit:
    """Combine one model fitted on each of M synthetic copies into one estimate with an honest SE.

    With q_m, u_m = estimate and squared SE of copy m: q̄ = mean q_m, b = sample variance of q_m
    (ddof 1), ū = mean u_m.

    * ``"partial"`` (Reiter 2003): T_p = ū + b/M, t CI with ν = (M-1)(1 + ū/(b/M))².
    * ``"full"`` (Raghunathan, Reiter & Rubin 2003): T_f = (1 + 1/M) b − ū, ν = (M-1)(1 − Mū/((M+1)b))²;
      when T_f <= 0 we use Reiter's (2002) adjustment T_f* = (n_syn/n) ū, which is ū here because
      every copy has as many rows as the real table, with a normal CI.

    Which rule fits Latent Noise Injection: every variable of every released row is replaced, which
    looks like full synthesis, but each synthetic row is the decoded, noised latent code of one
    *observed* record, and the flow is fitted once (no posterior draw of its parameters, no new
    population sample per copy). The M copies therefore differ only by synthesis noise given the
    observed data, exactly the situation of partially synthetic data: Var(q̄) ≈ Var(q_obs) +
    Var(q̄ | obs) ≈ ū + b/M. The full-synthesis rule presumes that b carries the sampling
    variability of a fresh population draw; with LNI at w near 1 the copies are almost identical,
    b ≈ 0 and T_f = (1+1/M)b − ū goes negative (useless). At w = 0 (Flow Sampling from the fitted
    flow) b ≈ ū and T_p ≈ ū(1 + 1/M), the rule Raab, Nowok & Dibben (2016) derive for synthesis
    without parameter draws. So ``"partial"`` is the default and the rule we report; ``"full"`` is
    offered for releases that do draw model parameters from their posterior.

    References: Reiter (2003) Surv Methodol 29:181; Raghunathan, Reiter & Rubin (2003) J Off Stat
    19:1; Reiter (2002) J Off Stat 18:531; Raab, Nowok & Dibben (2016) J Priv Confid 7(3).

    Example:
        >>> def one(q, se):
        ...     return ModelFit("ols", 100, 0, None, (Coefficient("x", q, se, q - 1, q + 1, 0.5),))
        >>> c = combine_synthetic_copies([one(1.0, 0.1), one(1.2, 0.1), one(1.4, 0.1)])
        >>> round(c.coefficient("x").estimate, 6), round(c.coefficient("x").se ** 2, 6)
        (1.2, 0.023333)
    """
    if rule not in ("partial", "full"):
        raise InputError(f"combining rule '{rule}' is unknown: use partial or full")
    if len(fits) < 2:
        raise InputError(
            "combining synthetic copies needs at least 2 copies: use --copies 2 or more"
        )
    names = [c.name for c in fits[0].coefficients]
    if any([c.name for c in f.coefficients] != names for f in fits[1:]):
        raise InputError(
            "the synthetic copies gave different coefficients (a category level is missing in one copy): merge rare levels"
        )
    m = len(fits)
    coefs, detail = [], {}
    for i, name in enumerate(names):
        q = np.array([f.coefficients[i].estimate for f in fits])
        u = np.array([f.coefficients[i].se ** 2 for f in fits])
        qbar, b, ubar = float(q.mean()), float(q.var(ddof=1)), float(u.mean())
        total, dof, adjusted = _combined_variance(b, ubar, m, rule)
        se = math.sqrt(total)
        crit = (
            Z95 if dof is None or not math.isfinite(dof) else float(sps.t.ppf(1 - ALPHA / 2, dof))
        )
        stat = abs(qbar) / se
        p = float(
            2
            * (sps.norm.sf(stat) if dof is None or not math.isfinite(dof) else sps.t.sf(stat, dof))
        )
        coefs.append(
            Coefficient(
                name,
                qbar,
                se,
                qbar - crit * se,
                qbar + crit * se,
                p,
                fits[0].coefficients[i].per,
                None if dof is None or not math.isfinite(dof) else dof,
            )
        )
        detail[name] = {
            "between_variance": b,
            "within_variance": ubar,
            "total_variance": total,
            "df": dof,
            "adjusted": adjusted,
        }
    first = fits[0]
    combined = {
        "rule": rule,
        "copies": m,
        "coefficients": detail,
        "reference": "Reiter (2003)" if rule == "partial" else "Raghunathan, Reiter & Rubin (2003)",
    }
    withheld = tuple(dict.fromkeys(t for f in fits for t in f.withheld))
    return replace(first, coefficients=tuple(coefs), combined=combined, withheld=withheld)


def _combined_variance(
    b: float, ubar: float, m: int, rule: Rule
) -> tuple[float, float | None, bool]:
    """(total variance, t degrees of freedom or None for normal, whether adjusted)."""
    if rule == "partial":
        dof = math.inf if b <= 0 else (m - 1) * (1 + ubar / (b / m)) ** 2
        return ubar + b / m, dof, False
    total = (1 + 1 / m) * b - ubar
    if total <= 0:
        return ubar, None, True
    return total, (m - 1) * (1 - m * ubar / ((m + 1) * b)) ** 2, False


@dataclass(frozen=True)
class CoefComparison:
    """One coefficient fitted on the real and on the synthetic table."""

    name: str
    real_estimate: float
    real_se: float
    real_ci_low: float
    real_ci_high: float
    real_p: float
    synth_estimate: float
    synth_se: float
    synth_ci_low: float
    synth_ci_high: float
    synth_p: float
    std_difference: float
    ci_overlap: float
    sign_agrees: bool
    significance_agrees: bool
    per: float = 1.0


def ci_overlap(real_low: float, real_high: float, synth_low: float, synth_high: float) -> float:
    """Karr et al. (2006) interval overlap: mean of the overlap's share of each interval, in [0, 1].

    Karr's raw measure turns negative for disjoint intervals; we report 0 (no overlap).

    References: Karr, Kohnen, Oganian, Reiter & Sanil (2006) Am Stat 60:224, eq. (1).

    Example:
        >>> ci_overlap(0.0, 2.0, 1.0, 3.0), ci_overlap(0.0, 1.0, 2.0, 3.0)
        (0.5, 0.0)
    """
    inner = max(0.0, min(real_high, synth_high) - max(real_low, synth_low))
    widths = (real_high - real_low, synth_high - synth_low)
    if min(widths) <= 0:
        return float("nan")
    return 0.5 * (inner / widths[0] + inner / widths[1])


@dataclass(frozen=True)
class Comparison:
    """The same model on the real and the synthetic table, coefficient by coefficient."""

    analysis: Analysis
    real: ModelFit
    synthetic: ModelFit
    rows: tuple[CoefComparison, ...]

    def to_frame(self) -> pd.DataFrame:
        """One row per coefficient."""
        return pd.DataFrame([asdict(r) for r in self.rows])

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe: both fits and the comparison table."""
        return json_safe(
            {
                "analysis": self.analysis,
                "real": self.real.to_dict(),
                "synthetic": self.synthetic.to_dict(),
                "coefficients": withhold_terms(
                    self.to_frame().to_dict(orient="records"), self.real.withheld
                ),
            }
        )


def compare_fits(
    real: pd.DataFrame,
    synth: pd.DataFrame | Sequence[pd.DataFrame],
    spec: ModelSpec,
    *,
    rule: Rule = "partial",
) -> Comparison:
    """Fit ``spec`` on both tables and compare per coefficient (several synthetic copies: combined by ``rule``).

    References: Karr et al. (2006) for the CI overlap; Reiter (2003) for combining copies.

    Example:
        >>> from lifelines.datasets import load_rossi
        >>> d = load_rossi()
        >>> c = compare_fits(d, d, ModelSpec("cox", time="week", event="arrest", covariates=("fin",)))
        >>> c.rows[0].sign_agrees, c.rows[0].std_difference
        (True, 0.0)
    """
    spec.check(real, "real table")
    levels = {c: _levels(real[c]) for c in spec.covariates if _is_categorical(real[c])}
    fit_real = fit_model(real, spec, levels=levels, source="real table")
    if isinstance(synth, pd.DataFrame):
        fit_syn = fit_model(synth, spec, levels=levels, source="synthetic table")
    else:
        fit_syn = combine_synthetic_copies(
            [
                fit_model(s, spec, levels=levels, source=f"synthetic copy {i + 1}")
                for i, s in enumerate(synth)
            ],
            rule,
        )
    # a term of a small real group is withheld on both sides (and one small in the synthetic
    # table too), so the two columns of every comparison always show the same terms
    withheld = tuple(dict.fromkeys(fit_real.withheld + fit_syn.withheld))
    fit_real, fit_syn = replace(fit_real, withheld=withheld), replace(fit_syn, withheld=withheld)
    rows = []
    for r in fit_real.coefficients:
        s = fit_syn.coefficient(r.name)
        rows.append(
            CoefComparison(
                r.name,
                r.estimate,
                r.se,
                r.ci_low,
                r.ci_high,
                r.p,
                s.estimate,
                s.se,
                s.ci_low,
                s.ci_high,
                s.p,
                (s.estimate - r.estimate) / r.se,
                ci_overlap(r.ci_low, r.ci_high, s.ci_low, s.ci_high),
                bool(np.sign(r.estimate) == np.sign(s.estimate)),
                bool((r.p < ALPHA) == (s.p < ALPHA)),
                r.per,
            )
        )
    return Comparison(spec.analysis, fit_real, fit_syn, tuple(rows))


def _numeric_columns(
    real: pd.DataFrame, synth: pd.DataFrame, columns: Sequence[str] | None
) -> list[str]:
    if columns is None:
        return [c for c in real.columns if c in synth.columns and not _is_categorical(real[c])]
    for c in columns:
        for name, df in (("real", real), ("synthetic", synth)):
            if c not in df.columns:
                raise InputError(f"{name} table: column '{c}' not found: check the spelling")
    return [c for c in columns if not _is_categorical(real[c])]


def marginal_fidelity(
    real: pd.DataFrame, synth: pd.DataFrame, columns: Sequence[str] | None = None
) -> pd.DataFrame:
    """Mean, SD and quartiles of each numeric column, real vs synthetic (text columns are skipped).

    A quartile is :func:`engine.disclosure.safe_quantile` (none with fewer than 20 values).

    Example:
        >>> d = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0]})
        >>> marginal_fidelity(d, d)[["column", "real_mean", "synth_mean", "std_mean_difference"]].values.tolist()
        [['a', 2.5, 2.5, 0.0]]
    """
    rows = []
    for c in _numeric_columns(real, synth, columns):
        row: dict[str, Any] = {"column": c}
        for tag, s in (("real", real[c].astype(float)), ("synth", synth[c].astype(float))):
            # each quartile has >= 10 rows at or beyond it, or is pulled in (CONTRACTS.md)
            q = [safe_quantile(s, p) for p in (0.25, 0.5, 0.75)]
            row.update(
                {
                    f"{tag}_mean": s.mean(),
                    f"{tag}_sd": _sd_no_overflow(s),
                    f"{tag}_q25": q[0],
                    f"{tag}_median": q[1],
                    f"{tag}_q75": q[2],
                    f"{tag}_missing": int(s.isna().sum()),
                }
            )
        row["std_mean_difference"] = (
            (row["synth_mean"] - row["real_mean"]) / row["real_sd"]
            if row["real_sd"] > 0
            else float("nan")
        )
        rows.append(row)
    return pd.DataFrame(rows)


def _sd_no_overflow(s: pd.Series) -> float:
    """Sample SD computed on values scaled by their largest magnitude (values near 1e200 have
    squares that overflow to inf).

    Example:
        >>> f"{_sd_no_overflow(pd.Series([1e200, 3e200])):.4g}"
        '1.414e+200'
    """
    scale = float(s.abs().max()) if s.notna().any() else 0.0
    if not (math.isfinite(scale) and scale > 0):
        return float(s.std())
    return float((s / scale).std()) * scale


@dataclass(frozen=True)
class KMComparison:
    """Kaplan-Meier survival of both tables on one grid, and a log-rank test real vs synthetic.

    The grid is :func:`engine.disclosure.coarse_km_grid` of the real table: it stops (rounded
    down) where 10 real records remain at risk and every step holds 0 or at least 10 real
    events, so no point of the curve describes a group smaller than that (CONTRACTS.md).
    """

    grid: tuple[float, ...]
    real_survival: tuple[float, ...]
    synth_survival: tuple[float, ...]
    max_abs_difference: float
    logrank_statistic: float
    logrank_p: float
    min_at_risk: int

    def to_frame(self) -> pd.DataFrame:
        """Columns time, real, synthetic."""
        return pd.DataFrame(
            {"time": self.grid, "real": self.real_survival, "synthetic": self.synth_survival}
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe. ``logrank_p_descriptive`` repeats ``logrank_p`` under a name that says what
        it is: the synthetic rows are derived from the real ones, not an independent sample, so
        the p-value describes the gap between the curves and is not a test."""
        out = json_safe(asdict(self))
        out["logrank_p_descriptive"] = out["logrank_p"]
        return out


def km_comparison(
    real: pd.DataFrame,
    synth: pd.DataFrame,
    time: str,
    event: str,
    *,
    points: int = 13,
    min_at_risk: int = 10,
) -> KMComparison:
    """Kaplan-Meier curves of real and synthetic on a common grid and the log-rank test between them.

    References: Kaplan & Meier (1958); lifelines ``KaplanMeierFitter``, ``statistics.logrank_test``.

    Example:
        >>> from lifelines.datasets import load_rossi
        >>> d = load_rossi()
        >>> km = km_comparison(d, d, "week", "arrest")
        >>> km.max_abs_difference, round(km.logrank_p, 6)
        (0.0, 1.0)
    """
    from lifelines import KaplanMeierFitter
    from lifelines.statistics import logrank_test

    pairs = []
    for name, df in (("real", real), ("synthetic", synth)):
        for c in (time, event):
            if c not in df.columns:
                raise InputError(f"{name} table: column '{c}' not found: check --time and --event")
        d = df[[time, event]].dropna().astype(float)
        _check_binary(d[event], event)
        pairs.append((d[time].to_numpy(), d[event].to_numpy()))
    (tr, er), (ts, es) = pairs
    # The real curve may leave the secure environment (audit.json): read it on the coarse grid
    # whose every step holds 0 or >= 10 real events and whose end is no patient's time.
    grid = coarse_km_grid(tr, er, intervals=max(points - 1, 1))
    grid = grid[grid <= ts.max()] if len(grid) > 1 and ts.max() > 0 else grid
    surv = [
        KaplanMeierFitter().fit(t, e).survival_function_at_times(grid).to_numpy() for t, e in pairs
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        test = logrank_test(tr, ts, event_observed_A=er, event_observed_B=es)
    return KMComparison(
        tuple(grid.tolist()),
        tuple(surv[0].tolist()),
        tuple(surv[1].tolist()),
        float(np.max(np.abs(surv[0] - surv[1]))),
        float(test.test_statistic),
        float(test.p_value),
        min_at_risk,
    )


@dataclass(frozen=True)
class CorrelationComparison:
    """Pearson correlation matrices of both tables, their difference and its largest absolute entry."""

    columns: tuple[str, ...]
    real: tuple[tuple[float, ...], ...]
    synthetic: tuple[tuple[float, ...], ...]
    difference: tuple[tuple[float, ...], ...]
    max_abs_difference: float

    def to_frame(self) -> pd.DataFrame:
        """The difference matrix (synthetic − real) with column labels."""
        return pd.DataFrame(self.difference, index=self.columns, columns=self.columns)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe."""
        return json_safe(asdict(self))


def correlation_difference(
    real: pd.DataFrame, synth: pd.DataFrame, columns: Sequence[str] | None = None
) -> CorrelationComparison:
    """Pearson correlations real vs synthetic over the numeric ``columns`` (pairwise complete).

    Example:
        >>> d = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [1.0, 3.0, 2.0]})
        >>> correlation_difference(d, d).max_abs_difference
        0.0
    """
    cols = _numeric_columns(real, synth, columns)
    r = real[cols].astype(float).corr().to_numpy()
    s = synth[cols].astype(float).corr().to_numpy()
    diff = s - r
    finite = np.abs(diff[np.isfinite(diff)])
    as_t = lambda m: tuple(tuple(float(v) for v in row) for row in m)  # noqa: E731
    return CorrelationComparison(
        tuple(cols),
        as_t(r),
        as_t(s),
        as_t(diff),
        float(finite.max()) if finite.size else float("nan"),
    )


@dataclass(frozen=True)
class FidelityResult:
    """Everything that goes into ``audit.json["fidelity"]``."""

    comparison: Comparison | None
    marginal: tuple[dict[str, Any], ...]
    correlation: CorrelationComparison
    km: KMComparison | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    model_error: str | None = (
        None  # "did not converge: <reason>" when the model could not be fitted
    )

    def marginal_frame(self) -> pd.DataFrame:
        """The marginal table as a DataFrame."""
        return pd.DataFrame(list(self.marginal))

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (NaN/inf become null)."""
        return json_safe(
            {
                "model": self.comparison.to_dict() if self.comparison else None,
                "marginal": list(self.marginal),
                "correlation": self.correlation.to_dict(),
                "km": self.km.to_dict() if self.km else None,
                "notes": list(self.notes),
                "model_status": self.model_error
                or ("fitted" if self.comparison else "not requested"),
            }
        )


def fidelity_report(
    real: pd.DataFrame,
    synth: pd.DataFrame | Sequence[pd.DataFrame],
    spec: ModelSpec | None,
    columns: Sequence[str] | None = None,
    *,
    rule: Rule = "partial",
) -> FidelityResult:
    """Model comparison (when ``spec``), marginals, correlations and (Cox) Kaplan-Meier in one result.

    With several synthetic copies the model is combined by ``rule``; marginals, correlations and
    KM use the first copy.

    Example:
        >>> d = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0, 4.0], "y": [0.1, 0.9, 2.2, 2.9, 4.1]})
        >>> res = fidelity_report(d, d, ModelSpec("ols", outcome="y", covariates=("x",)))
        >>> res.to_dict()["correlation"]["max_abs_difference"]
        0.0
    """
    first = synth if isinstance(synth, pd.DataFrame) else synth[0]
    comparison, model_error = None, None
    if spec is not None:
        try:
            comparison = compare_fits(real, synth, spec, rule=rule)
        except ModelNotConverged as exc:
            model_error = f"did not converge: {exc}"
    km = (
        km_comparison(real, first, spec.time, spec.event)
        if spec is not None and spec.analysis == "cox" and spec.time and spec.event
        else None
    )
    notes = []
    if model_error is not None:
        notes.append(f"the {spec.analysis if spec else ''} model {model_error}")
    if comparison is not None and comparison.synthetic.combined:
        notes.append(
            f"{comparison.synthetic.combined['copies']} synthetic copies combined by the "
            f"{rule} synthesis rule ({comparison.synthetic.combined['reference']})"
        )
    marginal = tuple(
        cast(  # the marginal table's column names are text
            "list[dict[str, Any]]",
            marginal_fidelity(real, first, columns).to_dict(orient="records"),
        )
    )
    return FidelityResult(
        comparison,
        marginal,
        correlation_difference(real, first, columns),
        km,
        tuple(notes),
        model_error,
    )
