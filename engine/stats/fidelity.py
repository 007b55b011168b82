"""Real versus synthetic, column by column, and the whole ``audit.json["fidelity"]`` block.

Marginal fidelity (mean, SD, quartiles per numeric column), Pearson correlation matrices and their
difference, Kaplan-Meier curves with a log-rank test (Cox analyses), and :func:`fidelity_report`,
which gathers them with the model comparison of :mod:`engine.stats.compare`; its ``to_dict()`` is
``audit.json["fidelity"]``. Every number a file shows obeys the small-group rules of
:mod:`engine.disclosure` (quartiles, the Kaplan-Meier grid).

References: Kaplan & Meier (1958) J Am Stat Assoc 53:457; lifelines ``KaplanMeierFitter`` and
``statistics.logrank_test``; docs/contracts.md (small groups); docs/method.md section 8.

Example:
    >>> import pandas as pd
    >>> d = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0, 4.0], "y": [0.1, 0.9, 2.2, 2.9, 4.1]})
    >>> res = fidelity_report(d, d, ModelSpec("ols", outcome="y", covariates=("x",)))
    >>> res.to_dict()["correlation"]["max_abs_difference"]
    0.0
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, cast

import numpy as np
import pandas as pd

from engine.disclosure import coarse_km_grid, safe_quantile
from engine.errors import InputError
from engine.stats.compare import Comparison, compare_fits
from engine.stats.fits import ModelFit, ModelNotConverged, ModelSpec, Rule, json_safe
from engine.stats.regression import check_binary, is_categorical
from engine.stats.shifts import column_shifts
from engine.stats.utility import PropensityUtility, propensity_utility
from engine.stats.verdict import FidelityVerdict, fidelity_verdict


def _numeric_columns(
    real: pd.DataFrame, synth: pd.DataFrame, columns: Sequence[str] | None
) -> list[str]:
    if columns is None:
        return [c for c in real.columns if c in synth.columns and not is_categorical(real[c])]
    for c in columns:
        for name, df in (("real", real), ("synthetic", synth)):
            if c not in df.columns:
                raise InputError(f"{name} table: column '{c}' not found: check the spelling")
    return [c for c in columns if not is_categorical(real[c])]


def marginal_fidelity(
    real: pd.DataFrame, synth: pd.DataFrame, columns: Sequence[str] | None = None
) -> pd.DataFrame:
    """Mean, SD and quartiles of each numeric column, real vs synthetic (text columns are skipped).

    A quartile is :func:`engine.disclosure.safe_quantile` (none with fewer than 20 values).

    Example:
        >>> d = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0]})
        >>> shown = ["column", "real_mean", "synth_mean", "std_mean_difference"]
        >>> marginal_fidelity(d, d)[shown].values.tolist()
        [['a', 2.5, 2.5, 0.0]]
    """
    rows = []
    for c in _numeric_columns(real, synth, columns):
        row: dict[str, Any] = {"column": c}
        for tag, s in (("real", real[c].astype(float)), ("synth", synth[c].astype(float))):
            # each quartile has >= 10 rows at or beyond it, or is pulled in (docs/contracts.md)
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
    events, so no point of the curve describes a group smaller than that (docs/contracts.md).
    """

    grid: tuple[float, ...]
    real_survival: tuple[float, ...]
    synth_survival: tuple[float, ...]
    max_abs_difference: float
    logrank_statistic: float
    logrank_p: float
    min_at_risk: int
    time_column: str = ""  # the grid's unit: the time column's own (the plots' axis label)

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
    """Kaplan-Meier curves of real and synthetic on a common grid and the log-rank test between
    them.

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
                raise InputError(
                    f"{name} table: column '{c}' not found: check the time column and the "
                    "event column"
                )
        d = df[[time, event]].dropna().astype(float)
        check_binary(d[event], event)
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
        str(time),
    )


@dataclass(frozen=True)
class CorrelationComparison:
    """Pearson correlation matrices of both tables, their difference and its largest absolute
    entry."""

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
    verdict: FidelityVerdict | None = None  # same conclusions? (engine.stats.verdict)
    utility: PropensityUtility | None = None  # pMSE / S_pMSE (engine.stats.utility)

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
                "verdict": self.verdict.to_dict() if self.verdict else None,
                "utility": self.utility.to_dict() if self.utility else None,
            }
        )


def fidelity_report(
    real: pd.DataFrame,
    synth: pd.DataFrame | Sequence[pd.DataFrame],
    spec: ModelSpec | None,
    columns: Sequence[str] | None = None,
    *,
    rule: Rule = "partial",
    real_fit: Callable[[], ModelFit] | None = None,
) -> FidelityResult:
    """Model comparison (when ``spec``), marginals, correlations and (Cox) Kaplan-Meier in one
    result.

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
            comparison = compare_fits(real, synth, spec, rule=rule, real_fit=real_fit)
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
    correlation = correlation_difference(real, first, columns)
    utility = propensity_utility(real, first, columns)
    verdict = fidelity_verdict(
        comparison.rows if comparison is not None else (),
        column_shifts(real, first, columns),
        model_compared=comparison is not None,
        withheld=comparison.real.withheld if comparison is not None else (),
        utility=utility,
        correlation=correlation.max_abs_difference,
        exposure=spec.exposure if spec is not None else None,
        analysis=spec.analysis if spec is not None else "cox",
        model_error=model_error,
        rows=len(real),
        largest_smd=_largest_smd(real, first, columns),
    )
    return FidelityResult(
        comparison, marginal, correlation, km, tuple(notes), model_error, verdict, utility
    )


def _largest_smd(
    real: pd.DataFrame, synth: pd.DataFrame, columns: Sequence[str] | None
) -> float | None:
    """The largest |mean difference| / real SD over numeric columns (None when there are none).

    Example:
        >>> r = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0]})
        >>> round(_largest_smd(r, r + 0.5, None), 3)
        0.387
    """
    names = [c for c in (columns or real.columns) if c in synth.columns]
    numeric = [
        c
        for c in names
        if pd.api.types.is_numeric_dtype(real[c]) and not pd.api.types.is_bool_dtype(real[c])
    ]
    if not numeric:
        return None
    sd = real[numeric].std().replace(0.0, np.nan)
    smd = ((synth[numeric].mean() - real[numeric].mean()).abs() / sd).dropna()
    return float(smd.max()) if len(smd) else None
