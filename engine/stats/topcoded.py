"""What the range rule costs: the real table top-coded the same way, a second reference.

The release keeps every numeric column inside its allowed range (by default from its 10th
smallest to its 10th largest real value, :func:`engine.disclosure.safe_bounds`), so no synthetic
row shows a real extreme that fewer than 10 people hold. That rule has a price no model can
win back: a covariate whose real tail reaches far beyond the bound (positive lymph nodes up to
34 with a bound of 20) has a different slope once limited. This module measures the price on
the real rows themselves: the same bounds applied to the real table (values beyond a bound set
to it: top- and bottom-coding), how many real values lie beyond each bound, and the compared
model fitted on that limited real table beside the plain real and the synthetic fit. A gap
between real and synthetic that the limited real table shares is the rule's, not the model's.

Shown as plain lines on the Fidelity page and in the report's section 3, and kept in
``audit.json["fidelity"]["rule_cost"]``. Counts under 10 are written "fewer than 10"
(:func:`engine.disclosure.small_count`); the bounds are values the release itself may show.

References: issue 44; Hundepool et al. (2012) "Statistical Disclosure Control", section 3.4
(top and bottom coding).

Example:
    >>> import numpy as np, pandas as pd
    >>> real = pd.DataFrame({"x": np.arange(100.0)})
    >>> [(c.column, c.below, c.above) for c in limited_columns(real, {"x": (9.0, 90.0)})]
    [('x', 9, 9)]
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from engine.disclosure.counts import small_count
from engine.stats.fits import json_safe

if TYPE_CHECKING:
    from engine.columns.schema import Schema
    from engine.stats.fidelity import FidelityResult
    from engine.stats.fits import ModelSpec

NUMERIC_KINDS = ("continuous", "integer", "time")
TITLE = "What the range rule costs"
SUBTITLE = "the real table limited to the same ranges, as a second reference"
INTRO = (
    "No synthetic value lies beyond a column's 10th smallest or 10th "
    "largest real value (unless you gave a range), so no extreme that fewer than 10 people hold "
    "can show. The real table limited to the same ranges is a second reference: a difference "
    "between real and synthetic that it shares comes from the rule, not from the model."
)


def rule_cost_words() -> dict[str, str]:
    """The rule's title, subtitle and explanation, for the desktop (through the engine's face).

    Example:
        >>> rule_cost_words()["title"]
        'What the range rule costs'
    """
    return {"title": TITLE, "subtitle": SUBTITLE, "intro": INTRO}


EFFECT = {"cox": "hazard ratio", "logistic": "odds ratio", "ols": "coefficient"}


@dataclass(frozen=True)
class LimitedColumn:
    """One numeric column's allowed range and the real values beyond each end."""

    column: str
    lower: float | None
    upper: float | None
    below: int
    above: int

    def to_dict(self) -> dict[str, Any]:
        """As in ``audit.json`` (counts under 10 as "< 10")."""
        return json_safe(
            {
                "column": self.column,
                "lower": self.lower,
                "upper": self.upper,
                "real_below": small_count(self.below),
                "real_above": small_count(self.above),
            }
        )


@dataclass(frozen=True)
class LimitedTerm:
    """A model term on the real, the limited real and the synthetic table (log scale for Cox
    and logistic; ``per``: the units one step stands for)."""

    name: str
    per: float
    real: float
    limited: float
    limited_se: float
    synthetic: float

    def to_dict(self) -> dict[str, Any]:
        """As in ``audit.json``."""
        return json_safe(
            {
                "name": self.name,
                "per": self.per,
                "real_estimate": self.real,
                "topcoded_estimate": self.limited,
                "topcoded_se": self.limited_se,
                "synth_estimate": self.synthetic,
            }
        )


@dataclass(frozen=True)
class RuleCost:
    """The columns the rule limits (real values beyond a bound) and, with a compared model, its
    terms on the real table limited the same way; ``model_error`` when that fit failed."""

    columns: tuple[LimitedColumn, ...]
    analysis: str | None = None
    terms: tuple[LimitedTerm, ...] = ()
    model_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """``audit.json["fidelity"]["rule_cost"]``."""
        out: dict[str, Any] = {
            "columns": [c.to_dict() for c in self.columns],
            "lines": self.lines(),
        }
        if self.analysis is not None:
            out["model"] = {
                "analysis": self.analysis,
                "model_status": self.model_error or "fitted",
                "coefficients": [t.to_dict() for t in self.terms],
            }
        return out

    def lines(self) -> list[str]:
        """One sentence per limited column, for people (the Fidelity page and the report).

        Example:
            >>> cost = RuleCost((LimitedColumn("nodes", 0.0, 20.0, 0, 9),), "cox",
            ...                 (LimitedTerm("nodes", 1.0, 0.0583, 0.0488, 0.01, 0.0677),))
            >>> print(cost.lines()[0])
            Rule cost for nodes: fewer than 10 real values lie above 20, the largest value any \
synthetic row may show; on the real table limited the same way the hazard ratio of nodes is \
1.050 instead of 1.060 (synthetic table: 1.070).
        """
        terms = {t.name: t for t in self.terms}
        out = []
        for c in self.columns:
            if c.below and c.above:
                beyond = (
                    f"{_count(c.below)} real values lie below {c.lower:g} and {_count(c.above)} "
                    f"above {c.upper:g}, outside the range any synthetic row may show"
                )
            elif c.above:
                beyond = (
                    f"{_count(c.above)} real values lie above {c.upper:g}, the largest value "
                    "any synthetic row may show"
                )
            else:
                beyond = (
                    f"{_count(c.below)} real values lie below {c.lower:g}, the smallest value "
                    "any synthetic row may show"
                )
            line = f"Rule cost for {c.column}: {beyond}"
            term = terms.get(c.column)
            if term is not None and self.analysis is not None:
                effect = EFFECT.get(self.analysis, "estimate")
                per = "" if term.per == 1.0 else f" (per {term.per:g})"
                real, limited, synth = (
                    _effect(v, term.per, self.analysis)
                    for v in (term.real, term.limited, term.synthetic)
                )
                change = (
                    f"unchanged at {real}" if limited == real else f"{limited} instead of {real}"
                )
                line += (
                    f"; on the real table limited the same way the {effect} of {c.column}{per} "
                    f"is {change} (synthetic table: {synth})"
                )
            out.append(line + ".")
        if self.model_error and self.columns:
            out.append(f"The model on the real table limited the same way {self.model_error}.")
        return out


def limited_columns(
    real: pd.DataFrame, bounds: Mapping[str, tuple[float | None, float | None]]
) -> list[LimitedColumn]:
    """Per column of ``bounds``, the real values below / above it (columns with none: left
    out)."""
    out = []
    for name, (lower, upper) in bounds.items():
        if name not in real:
            continue
        v = pd.to_numeric(real[name], errors="coerce").to_numpy(dtype="float64")
        below = int(np.sum(v < lower)) if lower is not None else 0
        above = int(np.sum(v > upper)) if upper is not None else 0
        if below or above:
            out.append(LimitedColumn(name, lower, upper, below, above))
    return out


def limited_table(
    real: pd.DataFrame, bounds: Mapping[str, tuple[float | None, float | None]]
) -> pd.DataFrame:
    """``real`` with each bounded column's values beyond a bound set to that bound (missing
    values stay missing): the real table top- and bottom-coded as the release is.

    Example:
        >>> table = pd.DataFrame({"x": [1.0, 5.0, None, 99.0]})
        >>> limited_table(table, {"x": (2.0, 50.0)})["x"].tolist()
        [2.0, 5.0, nan, 50.0]
    """
    out = real.copy()
    for name, (lower, upper) in bounds.items():
        if name in out:
            out[name] = pd.to_numeric(out[name], errors="coerce").clip(lower=lower, upper=upper)
    return out


def schema_bounds(schema: Schema) -> dict[str, tuple[float | None, float | None]]:
    """The allowed range of every synthesized numeric column (the release's bounds)."""
    return {
        c.name: (c.lower, c.upper)
        for c in schema.synthesized()
        if c.kind in NUMERIC_KINDS and (c.lower is not None or c.upper is not None)
    }


def rule_cost(
    real: pd.DataFrame,
    bounds: Mapping[str, tuple[float | None, float | None]],
    report: FidelityResult | None = None,
    spec: ModelSpec | None = None,
) -> RuleCost:
    """The rule's price on ``real`` (event column as 0/1): the limited columns and, when
    ``report`` compared ``spec``, its terms refitted on the limited real table (only when a
    column of the model is limited; one more fit of the real table's size)."""
    from engine.stats.compare import real_table_fit

    columns = tuple(limited_columns(real, bounds))
    comparison = report.comparison if report is not None else None
    if spec is None or comparison is None:
        return RuleCost(columns)
    if not {c.column for c in columns} & set(spec.used_columns()):
        return RuleCost(columns, spec.analysis)
    try:
        fit = real_table_fit(limited_table(real, bounds), spec)
    except Exception as err:  # a model that fails on the limited table: said, never raised
        return RuleCost(columns, spec.analysis, model_error=f"could not be fitted ({err})")
    withheld = set(comparison.real.withheld)
    terms = []
    for row in comparison.rows:
        if row.name in withheld:
            continue
        try:
            limited = fit.coefficient(row.name)
        except Exception:  # a term the limited table lacks (a level gone): not compared
            continue
        estimates = (row.real_estimate, limited.estimate, limited.se, row.synth_estimate)
        terms.append(LimitedTerm(row.name, float(row.per), *(float(v) for v in estimates)))
    return RuleCost(columns, spec.analysis, tuple(terms))


def _count(n: int) -> str:
    """A count for people: "fewer than 10" under 10."""
    shown = small_count(n)
    return "fewer than 10" if isinstance(shown, str) else f"{shown:,}"


def _effect(estimate: float, per: float, analysis: str) -> str:
    """A hazard / odds ratio (exp of the estimate per ``per`` units) or a coefficient."""
    value = estimate * per
    if analysis in ("cox", "logistic"):
        value = math.exp(value) if value < 700 else math.inf
    return f"{value:.3f}" if math.isfinite(value) else "not finite"
