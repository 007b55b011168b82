"""The first line of the fidelity verdict: what happened to the effect the user asked about.

A clinician compares a synthetic copy to ask one question: does my analysis give the same
answer? The answer leads when the exposure's (the first covariate's) direction or significance
changes between the real table and the copy, in words: "In the real data treatment lowers the
hazard (HR 0.51, 95 % CI 0.34-0.78); in the synthetic copy the effect is weaker and not
significant (HR 0.74, 0.49-1.12)." Any coefficient whose sign or significance at the 5 % level
changes is flagged (issue 33 item 1): "same conclusions" is said only when none does.

References: Karr et al. (2006) (validity of conclusions drawn from synthetic data); issue 33.

Example:
    >>> from types import SimpleNamespace as R
    >>> row = R(name="treat", real_estimate=-0.667, real_ci_low=-1.091, real_ci_high=-0.244,
    ...         real_p=0.002, synth_estimate=-0.298, synth_ci_low=-0.705, synth_ci_high=0.109,
    ...         synth_p=0.15, per=1.0, sign_agrees=True, significance_agrees=False)
    >>> exposure_sentence(row, "cox")  # doctest: +NORMALIZE_WHITESPACE
    'In the real data treat lowers the hazard (HR 0.51, 95 % CI 0.34-0.78); in the synthetic copy
    the effect is weaker and not significant (HR 0.74, 95 % CI 0.49-1.12).'
    >>> changes(row)
    ('significance changes',)
"""

from __future__ import annotations

import math
from typing import Any

SIGNIFICANCE = 0.05
_RATIO = {"cox": ("HR", "the hazard"), "logistic": ("OR", "the odds of the outcome")}


def changes(row: Any) -> tuple[str, ...]:
    """What changed between the real and the synthetic fit of one coefficient: its direction
    (sign) and/or its significance at the 5 % level."""
    out = []
    if not getattr(row, "sign_agrees", True):
        out.append("direction changes")
    if not getattr(row, "significance_agrees", True):
        out.append("significance changes")
    return tuple(out)


def exposure_sentence(row: Any, analysis: str) -> str | None:
    """The lead sentence for the exposure's coefficient when its direction or significance
    changed; None when neither did (or a number is missing)."""
    if not changes(row):
        return None
    values = [row.real_estimate, row.real_ci_low, row.real_ci_high, row.synth_estimate]
    if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in values):
        return None
    per = float(getattr(row, "per", 1.0) or 1.0)
    real_sig, synth_sig = row.real_p < SIGNIFICANCE, row.synth_p < SIGNIFICANCE
    verb = _verb(row.real_estimate, analysis, real_sig)
    real_part = f"In the real data {row.name} {verb} ({_effect(row, 'real', analysis, per)})"
    if (row.real_estimate > 0) != (row.synth_estimate > 0):
        how = "goes the other way"
    elif abs(row.synth_estimate) < abs(row.real_estimate):
        how = "is weaker"
    else:
        how = "is stronger"
    sig = "significant" if synth_sig else "not significant"
    synth_effect = _effect(row, "synth", analysis, per)
    return f"{real_part}; in the synthetic copy the effect {how} and {sig} ({synth_effect})."


def _verb(estimate: float, analysis: str, significant: bool) -> str:
    target = _RATIO.get(analysis, ("", "the outcome"))[1]
    direction = "raises" if estimate > 0 else "lowers"
    return f"{direction} {target}" if significant else f"is not significantly linked to {target}"


def _effect(row: Any, which: str, analysis: str, per: float) -> str:
    est = getattr(row, f"{which}_estimate")
    low, high = getattr(row, f"{which}_ci_low"), getattr(row, f"{which}_ci_high")
    label = _RATIO.get(analysis, ("",))[0]
    if label:
        return f"{label} {_num(math.exp(est * per))}, 95 % CI {_num(math.exp(low * per))}-" + _num(
            math.exp(high * per)
        )
    return f"{_num(est * per)} per unit, 95 % CI {_num(low * per)} to {_num(high * per)}"


def _num(x: float) -> str:
    """Two decimals for ratios near 1, three significant digits otherwise; never scientific."""
    if abs(x) >= 100:
        return f"{x:,.0f}".replace(",", "")
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"
