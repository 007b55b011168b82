"""Model estimates as the report prints them: hazard or odds ratios (per the stated units) or
coefficients, with their 95 % interval; terms of a group under 10 people withheld, as in
``audit.json`` (:func:`engine.stats.models.withhold_terms`).

References: Karr et al. (2006) for the comparison; ACRO output rules for the withholding.

Example:
    >>> from engine.stats.models import Coefficient, ModelFit
    >>> fit = ModelFit("cox", 100, 0, 40, (Coefficient("age", 0.1, 0.02, 0.06, 0.14, 0.01),))
    >>> shown(estimates(fit)["age"])
    '1.105 (1.062–1.150)'
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.report.data import NOT_AVAILABLE, finite

if TYPE_CHECKING:
    from engine.stats.models import ModelFit

RATIO_NAMES = {"cox": "HR", "logistic": "OR"}


@dataclass(frozen=True)
class Estimate:
    """One term: ``kind`` is HR, OR or coef; values are None where withheld or not finite."""

    name: str
    kind: str
    value: float | None
    low: float | None
    high: float | None
    per: float = 1.0

    @property
    def label(self) -> str:
        """``"HR sbp per 10"``."""
        return f"{self.kind} {self.name}" + (f" per {self.per:g}" if self.per != 1.0 else "")


def estimates(fit: ModelFit | None) -> dict[str, Estimate]:
    """Each term of ``fit`` by name, on the printed scale (ratios: exp(estimate * per))."""
    if fit is None:
        return {}
    kind = RATIO_NAMES.get(fit.analysis, "coef")
    out = {}
    for c in fit.coefficients:
        per = finite(c.per) or 1.0
        if c.name in fit.withheld:
            out[c.name] = Estimate(c.name, kind, None, None, None, per)
            continue
        values = [c.estimate, c.ci_low, c.ci_high]
        if kind != "coef":
            values = [_exp(v, per) for v in values]
        value, low, high = (finite(v) for v in values)
        out[c.name] = Estimate(c.name, kind, value, low, high, per)
    return out


def _exp(value: float, per: float) -> float:
    try:
        return math.exp(value * per)
    except OverflowError:
        return math.inf


def shown(estimate: Estimate | None) -> str:
    """``"1.234 (1.100–1.380)"``, the value alone without an interval, or "not available"."""
    if estimate is None or estimate.value is None:
        return NOT_AVAILABLE
    if estimate.low is None or estimate.high is None:
        return f"{estimate.value:.3f}"
    return f"{estimate.value:.3f} ({estimate.low:.3f}–{estimate.high:.3f})"
