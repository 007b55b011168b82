"""Will the synthetic table give the same answer? One model on both tables, coefficient by
coefficient.

Per coefficient: estimate, SE and 95 % CI on each side, the difference in real-SE units, the
confidence-interval overlap of Karr et al. (2006), and whether sign and significance agree.
Several synthetic copies are first combined (:mod:`engine.stats.combine`). The column-level
comparisons (marginals, correlations, Kaplan-Meier) are in :mod:`engine.stats.fidelity`.

References: Karr, Kohnen, Oganian, Reiter & Sanil (2006) Am Stat 60:224 (CI overlap);
Reiter (2003) Surv Methodol 29:181 (combining copies); docs/method.md sections 7-8.

Example:
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"x": rng.normal(size=200)})
    >>> df["y"] = 2.0 * df["x"] + rng.normal(size=200)
    >>> cmp = compare_fits(df, df, ModelSpec("ols", outcome="y", covariates=("x",)))
    >>> float(cmp.to_frame().set_index("name").loc["x", "ci_overlap"])
    1.0
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from engine.stats.combine import combine_synthetic_copies
from engine.stats.fits import ALPHA, Analysis, ModelFit, ModelSpec, Rule, json_safe, withhold_terms
from engine.stats.regression import category_levels, fit_model, is_categorical


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


def real_table_fit(real: pd.DataFrame, spec: ModelSpec) -> ModelFit:
    """The real table's fit as :func:`compare_fits` makes it (categorical covariates coded by
    the real table's levels)."""
    levels = {c: category_levels(real[c]) for c in spec.covariates if is_categorical(real[c])}
    return fit_model(real, spec, levels=levels, source="real table")


def compare_fits(
    real: pd.DataFrame,
    synth: pd.DataFrame | Sequence[pd.DataFrame],
    spec: ModelSpec,
    *,
    rule: Rule = "partial",
    real_fit: Callable[[], ModelFit] | None = None,
) -> Comparison:
    """Fit ``spec`` on both tables and compare per coefficient (several synthetic copies: combined
    by ``rule``).

    ``real_fit``: gives the real table's fit already made (or being made) elsewhere, with the
    levels of ``real`` (:func:`real_table_fit`); it raises what fitting it here would raise.

    References: Karr et al. (2006) for the CI overlap; Reiter (2003) for combining copies.

    Example:
        >>> from lifelines.datasets import load_rossi
        >>> d = load_rossi()
        >>> spec = ModelSpec("cox", time="week", event="arrest", covariates=("fin",))
        >>> c = compare_fits(d, d, spec)
        >>> c.rows[0].sign_agrees, c.rows[0].std_difference
        (True, 0.0)
    """
    spec.check(real, "real table")
    levels = {c: category_levels(real[c]) for c in spec.covariates if is_categorical(real[c])}
    fit_real = real_fit() if real_fit is not None else real_table_fit(real, spec)
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
