"""The report's paragraph on multiple synthetic copies (``--copies M``): which combining rule
gives the reported standard errors, why it fits Latent Noise Injection, and the combined
estimates beside the real-data fit.

References: Reiter (2003) Surv Methodol 29:181 (partially synthetic data); Raghunathan, Reiter
& Rubin (2003) J Off Stat 19:1 (fully synthetic data); Raab, Nowok & Dibben (2016).
"""

from __future__ import annotations

from typing import Any

RULE_WHY = (
    "Each synthetic row is the noised latent code of one observed record and the model is fitted "
    "once, so the copies differ only by the synthesis noise given the observed data. That is the "
    "setting of partially synthetic data, so the standard errors use Reiter's (2003) rule "
    "T = ū + b/M (ū: mean within-copy variance, b: between-copy variance, M copies). The "
    "fully-synthetic rule of Raghunathan, Reiter & Rubin (2003) presumes a fresh population draw "
    "per copy and goes negative when the copies are close (w near 1)."
)


def copies_section(result: Any, st: dict[str, Any], width: float) -> list[Any]:
    """Heading, the rule in words and a table of combined vs real estimates; empty for M = 1."""
    from reportlab.platypus import Paragraph

    from engine.report.layout import table

    combined = (getattr(result, "fidelity", None) or {}).get("combined_copies")
    if not combined:
        return []
    info = combined.get("combined") or {}
    copies = info.get("copies", "several")
    real = {
        c["name"]: c
        for c in ((result.fidelity.get("model") or {}).get("real") or {}).get("coefficients", [])
    }
    rows = [["coefficient", "real data (95 % CI)", f"{copies} synthetic copies combined (95 % CI)"]]
    for coef in combined.get("coefficients", []):
        key = "hr" if "hr" in coef else "or" if "or" in coef else "estimate"
        rows.append([_label(coef, key), _fmt(real.get(coef["name"], {}), key), _fmt(coef, key)])
    return [
        Paragraph(f"Several synthetic copies ({copies})", st["h2"]),
        Paragraph(RULE_WHY, st["body"]),
        table(rows, [width * f for f in (0.34, 0.33, 0.33)]),
    ]


def _label(coef: dict[str, Any], key: str) -> str:
    per = coef.get("per") or 1.0
    name = {"hr": "HR", "or": "OR"}.get(key, "coef")
    return f"{name} {coef['name']}" + (f" per {per:g}" if per != 1.0 else "")


def _fmt(coef: dict[str, Any], key: str) -> str:
    if coef.get(key) is None:
        return "not available"
    lo = coef.get(f"{key}_ci_low", coef.get("ci_low"))
    hi = coef.get(f"{key}_ci_high", coef.get("ci_high"))
    return (
        f"{coef[key]:.3f}" if lo is None or hi is None else f"{coef[key]:.3f} ({lo:.3f}–{hi:.3f})"
    )
