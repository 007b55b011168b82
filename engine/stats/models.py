"""Will the synthetic table give the same answer? Fit one model on the real and the synthetic table.

Cox proportional hazards (lifelines), ordinary least squares and logistic regression (statsmodels
GLM, binomial family); per coefficient: estimate, SE, 95 % CI, the difference in real-SE units,
the confidence-interval overlap of Karr et al. (2006), and whether sign and significance agree.
Marginal fidelity (mean, SD, quartiles), Kaplan-Meier curves with a log-rank test, correlation
matrices, and the combining rules for M synthetic copies complete :func:`fidelity_report`, whose
``to_dict()`` is ``audit.json["fidelity"]``.

This module is the statistics room's front door: it re-exports the names of the modules that do
the work, so ``from engine.stats.models import fit_model, fidelity_report`` keeps working. Where
each part lives (each module is small enough to read in one sitting):

* :mod:`engine.stats.fits`: :class:`ModelSpec`, :class:`ModelFit`, :class:`Coefficient`,
  :func:`json_safe` (the shared result types);
* :mod:`engine.stats.regression`: :func:`fit_model` (Cox, OLS, logistic) and :func:`small_terms`;
* :mod:`engine.stats.combine`: :func:`combine_synthetic_copies` (combining rules);
* :mod:`engine.stats.compare`: :func:`compare_fits`, :func:`ci_overlap` (coefficient by
  coefficient);
* :mod:`engine.stats.fidelity`: marginals, correlations, Kaplan-Meier, :func:`fidelity_report`.

Categorical covariates are dummy coded with the first (sorted) level as reference; the levels come
from the real table so both fits share one coding. Rows with a missing value in a used column are
left out (complete cases) and counted.

References: Karr, Kohnen, Oganian, Reiter & Sanil (2006) Am Stat 60:224 (CI overlap);
Reiter (2003) Surv Methodol 29:181 (partially synthetic data); Raghunathan, Reiter & Rubin (2003)
J Off Stat 19:1 (fully synthetic data); Raab, Nowok & Dibben (2016) J Priv Confid 7(3):67
(synthesis without parameter draws); paper docs/method.md sections 7-8.

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

from engine.stats.combine import combine_synthetic_copies
from engine.stats.compare import CoefComparison, Comparison, ci_overlap, compare_fits
from engine.stats.fidelity import (
    CorrelationComparison,
    FidelityResult,
    KMComparison,
    correlation_difference,
    fidelity_report,
    km_comparison,
    marginal_fidelity,
)
from engine.stats.fits import (
    ALPHA,
    INTERCEPT,
    Z95,
    Analysis,
    Coefficient,
    ModelFit,
    ModelNotConverged,
    ModelSpec,
    Rule,
    json_safe,
    withhold_terms,
)
from engine.stats.regression import fit_model, small_terms

__all__ = [
    "ALPHA",
    "INTERCEPT",
    "Z95",
    "Analysis",
    "CoefComparison",
    "Coefficient",
    "Comparison",
    "CorrelationComparison",
    "FidelityResult",
    "KMComparison",
    "ModelFit",
    "ModelNotConverged",
    "ModelSpec",
    "Rule",
    "ci_overlap",
    "combine_synthetic_copies",
    "compare_fits",
    "correlation_difference",
    "fidelity_report",
    "fit_model",
    "json_safe",
    "km_comparison",
    "marginal_fidelity",
    "small_terms",
    "withhold_terms",
]
