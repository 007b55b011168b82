"""Combining rules: one estimate with an honest standard error from M synthetic copies.

Reiter's (2003) rule for partially synthetic data (the default, and the one that fits Latent Noise
Injection; see :func:`combine_synthetic_copies`) and Raghunathan, Reiter & Rubin's (2003) rule for
fully synthetic data. A module of its own because the rules are pure arithmetic on fitted
coefficients: they need no table and no fitting library.

References: Reiter (2003) Surv Methodol 29:181; Raghunathan, Reiter & Rubin (2003) J Off Stat
19:1; Reiter (2002) J Off Stat 18:531; Raab, Nowok & Dibben (2016) J Priv Confid 7(3):67.

Example:
    >>> fits = [ModelFit("ols", 100, 0, None, (Coefficient("x", q, 0.1, q - 1, q + 1, 0.5),))
    ...         for q in (1.0, 1.4)]
    >>> combine_synthetic_copies(fits).combined["rule"]
    'partial'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from scipy import stats as sps

from engine.errors import InputError
from engine.stats.fits import ALPHA, Z95, Coefficient, ModelFit, Rule


def combine_synthetic_copies(fits: Sequence[ModelFit], rule: Rule = "partial") -> ModelFit:
    """Combine one model fitted on each of M synthetic copies into one estimate with an honest SE.

    With q_m, u_m = estimate and squared SE of copy m: q̄ = mean q_m, b = sample variance of q_m
    (ddof 1), ū = mean u_m.

    * ``"partial"`` (Reiter 2003): T_p = ū + b/M, t CI with ν = (M-1)(1 + ū/(b/M))².
    * ``"full"`` (Raghunathan, Reiter & Rubin 2003): T_f = (1 + 1/M) b − ū,
      ν = (M-1)(1 − Mū/((M+1)b))²;
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
            "combining synthetic copies needs at least 2 copies: set the number of copies to "
            "2 or more"
        )
    names = [c.name for c in fits[0].coefficients]
    if any([c.name for c in f.coefficients] != names for f in fits[1:]):
        raise InputError(
            "the synthetic copies gave different coefficients (a category level is missing in one "
            "copy): merge rare levels"
        )
    m = len(fits)
    coefs, detail = [], {}
    for i, name in enumerate(names):
        coef, detail[name] = _combine_term([f.coefficients[i] for f in fits], rule)
        coefs.append(coef)
    first = fits[0]
    combined = {
        "rule": rule,
        "copies": m,
        "coefficients": detail,
        "reference": "Reiter (2003)" if rule == "partial" else "Raghunathan, Reiter & Rubin (2003)",
    }
    withheld = tuple(dict.fromkeys(t for f in fits for t in f.withheld))
    return replace(first, coefficients=tuple(coefs), combined=combined, withheld=withheld)


def _combine_term(copies: Sequence[Coefficient], rule: Rule) -> tuple[Coefficient, dict[str, Any]]:
    """One coefficient over the M copies: the combined estimate with its t (or normal) CI, and
    the variance components recorded in ``audit.json``."""
    m = len(copies)
    q = np.array([c.estimate for c in copies])
    u = np.array([c.se**2 for c in copies])
    qbar, b, ubar = float(q.mean()), float(q.var(ddof=1)), float(u.mean())
    total, dof, adjusted = _combined_variance(b, ubar, m, rule)
    t_dof = dof if dof is not None and math.isfinite(dof) else None  # None: normal reference
    se = math.sqrt(total)
    crit = Z95 if t_dof is None else float(sps.t.ppf(1 - ALPHA / 2, t_dof))
    stat = abs(qbar) / se
    p = float(2 * (sps.norm.sf(stat) if t_dof is None else sps.t.sf(stat, t_dof)))
    first = copies[0]
    coef = Coefficient(
        first.name, qbar, se, qbar - crit * se, qbar + crit * se, p, first.per, t_dof
    )
    detail = {
        "between_variance": b,
        "within_variance": ubar,
        "total_variance": total,
        "df": dof,
        "adjusted": adjusted,
    }
    return coef, detail


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
