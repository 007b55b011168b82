"""The report's section on the formal differential-privacy release (issue 8), shown only when
the run used ``--dp-epsilon``: the guarantee in words, its parameters and caveats, and the DP
release's membership audit and model results beside the Latent Noise Injection release's.

The accountant that states epsilon (PLD, Google's dp-accounting) is named in the text and in a
table of the guarantee's parameters.

References: Dwork & Roth 2014; Doroshenko et al. 2022 (PLD); Dong, Roth & Su 2022 (Gaussian DP); the DP-NF paper
(seeds/dp-normalizing-flows-paper.md).
"""

from __future__ import annotations

from typing import Any


def dp_section(result: Any, st: dict[str, Any], width: float) -> list[Any]:
    """Heading, guarantee, caveats and an LNI-vs-DP comparison table; empty without DP mode."""
    from reportlab.platypus import Paragraph

    from engine.report.layout import table, text

    dp = (getattr(result, "release", None) or {}).get("dp")
    if not dp:
        return []
    g = dp.get("guarantee", {})
    flow = [
        Paragraph("5. Formal differential-privacy release (DP-SGD)", st["h1"]),
        Paragraph(
            f"A second synthetic table, <b>{text(dp.get('file', 'synthetic_dp'))}</b>, was drawn from a "
            "flow trained with differentially private stochastic gradient descent. It carries a formal "
            f"guarantee: {text(g.get('statement', 'not available'))}. "
            "The main synthetic table (Latent Noise Injection) does <b>not</b> carry this guarantee: "
            "it perturbs each real record, and its protection is the membership audit above.",
            st["body"],
        ),
    ]
    flow.append(Paragraph("Privacy accounting", st["h2"]))
    flow.append(table(accounting_rows(g), [width * f for f in (0.45, 0.55)]))
    notes = list(g.get("notes", []))
    if notes:
        flow.append(Paragraph("Caveats: " + " ".join(text(n) for n in notes), st["small"]))
    flow.append(Paragraph("DP release next to the Latent Noise Injection release", st["h2"]))
    flow.append(table(_comparison_rows(result, dp), [width * f for f in (0.40, 0.20, 0.20, 0.20)]))
    return flow


def accounting_rows(g: dict[str, Any]) -> list[list[str]]:
    """The accountant and every parameter of the guarantee, one row each (report table).

    Example:
        >>> rows = accounting_rows({"accountant": "PLD", "epsilon": 3.996, "sigma": 0.62})
        >>> rows[1], rows[2][1]
        (['accountant (states epsilon)', 'PLD'], '3.996')
    """

    def num(key: str, fmt: str) -> str:
        value = g.get(key)
        return "not available" if value is None else format(value, fmt)

    return [
        ["quantity", "value"],
        ["accountant (states epsilon)", str(g.get("accountant", "not available"))],
        ["epsilon (stated)", num("epsilon", ".3f")],
        ["epsilon asked for", num("epsilon_target", ".3g")],
        ["delta", num("delta", ".3g")],
        ["noise multiplier (sigma)", num("sigma", ".4g")],
        ["Poisson sampling rate", num("sampling_rate", ".4g")],
        ["steps", num("steps", "d")],
        ["clipping norm", num("clip", "g")],
        ["epsilon, RDP upper bound", num("epsilon_rdp_bound", ".3f")],
        ["epsilon, mu-GDP approximation (comparison only)", num("epsilon_gdp", ".3f")],
    ]


def _comparison_rows(result: Any, dp: dict[str, Any]) -> list[list[str]]:
    audit = dp.get("audit", {})
    lni_point = min(result.audit.curve, key=lambda p: abs(p.w - result.release["w"]))
    rows = [
        ["measure", "real data", f"LNI (w = {result.release['w']:.2f})", "DP-SGD flow"],
        [
            "distance attack AUC",
            "",
            f"{lni_point.auc:.3f}",
            f"{audit.get('auc', float('nan')):.3f}",
        ],
        [
            "density attack AUC",
            "",
            f"{lni_point.density_auc:.3f}",
            f"{audit.get('density_auc', float('nan')):.3f}",
        ],
    ]
    real_fit = _coefs(result.fidelity, "real")
    lni_fit = _coefs(result.fidelity, "synthetic")
    dp_fit = _coefs(dp.get("fidelity", {}), "synthetic")
    for name, real in real_fit.items():
        label, key = (
            ("HR", "hr") if "hr" in real else ("OR", "or") if "or" in real else ("coef", "estimate")
        )
        per = real.get("per", 1.0) or 1.0
        suffix = f" per {per:g}" if per != 1.0 else ""
        rows.append(
            [
                f"{label} {name}{suffix} (95 % CI)",
                _fmt(real, key),
                _fmt(lni_fit.get(name, {}), key),
                _fmt(dp_fit.get(name, {}), key),
            ]
        )
    return rows


def _coefs(fidelity: dict[str, Any], which: str) -> dict[str, dict[str, Any]]:
    model = (fidelity or {}).get("model") or {}
    fit = model.get(which) or {}
    return {c["name"]: c for c in fit.get("coefficients", []) if c.get("name") != "(intercept)"}


def _fmt(coef: dict[str, Any], key: str) -> str:
    if key not in coef or coef[key] is None:
        return "not available"
    lo, hi = (
        coef.get(f"{key}_ci_low", coef.get("ci_low")),
        coef.get(f"{key}_ci_high", coef.get("ci_high")),
    )
    if lo is None or hi is None:
        return f"{coef[key]:.3f}"
    return f"{coef[key]:.3f} ({lo:.3f}–{hi:.3f})"
