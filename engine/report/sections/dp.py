"""The report's section on the formal differential-privacy release (issue 8), shown only when
the run used ``--dp-epsilon``: the guarantee in words, its parameters and caveats, and the DP
release's membership audit and model results beside the Latent Noise Injection release's.

The accountant that states epsilon (PLD, Google's dp-accounting) is named in the text and in a
table of the guarantee's parameters.

References: Dwork & Roth 2014; Doroshenko et al. 2022 (PLD); Dong, Roth & Su 2022 (Gaussian DP); the
DP-NF paper (seeds/dp-normalizing-flows-paper.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.report.estimates import Estimate, estimates, shown
from engine.report.layout import paragraph, table, text

if TYPE_CHECKING:
    from engine.pipeline.results import DPResult, Fidelity, Release, RunResult


def dp_section(result: RunResult, sheet: dict[str, Any], width: float) -> list[Any]:
    """Heading, guarantee, caveats and an LNI-vs-DP comparison table; empty without DP mode."""
    dp = result.release.dp
    if dp is None:
        return []
    g = dp.guarantee
    flow = [
        paragraph("5. Formal differential-privacy release (DP-SGD)", sheet, "h1"),
        paragraph(
            f"A second synthetic table, <b>{text(dp.file)}</b>, was drawn from a flow trained with "
            "differentially private stochastic gradient descent. It carries a formal guarantee: "
            f"{text(g.get('statement', 'not available'))}. The main synthetic table (Latent Noise "
            "Injection) does <b>not</b> carry this guarantee: it perturbs each real record, and "
            "its protection is the membership audit above.",
            sheet,
        ),
        paragraph("Privacy accounting", sheet, "h2"),
        table(accounting_rows(g), [width * f for f in (0.45, 0.55)]),
    ]
    notes = list(g.get("notes", []))
    encoder = getattr(getattr(result, "prepared", None), "encoder", None)
    found = [
        r.text for r in getattr(getattr(encoder, "rules", None), "kept", []) if r.source == "found"
    ]
    if found:  # issue 30: the rules were read from the real rows, outside the accountant
        notes.append(
            "The rules between columns found in the real data (section 1: "
            + "; ".join(found)
            + ") are kept in this table's rows too. Finding them looked at the real rows and "
            "is not covered by epsilon; for a table that rests on epsilon alone, remove them "
            "on the Columns page."
        )
    if notes:
        flow.append(paragraph("Caveats: " + " ".join(text(n) for n in notes), sheet, "small"))
    if result.released is not None:
        flow.append(paragraph("DP release next to the Latent Noise Injection release", sheet, "h2"))
        rows = _comparison_rows(result, result.released, dp)
        flow.append(table(rows, [width * f for f in (0.40, 0.20, 0.20, 0.20)]))
    return flow


def accounting_rows(g: dict[str, Any]) -> list[list[str]]:
    """The accountant and every parameter of the guarantee, one row each (report table).

    Example:
        >>> rows = accounting_rows({"accountant": "PLD", "epsilon": 3.996, "sigma": 0.62})
        >>> rows[1], rows[2][1]
        (['accountant (states epsilon)', 'PLD'], '3.996')
    """

    def num(key: str, spec: str) -> str:
        value = g.get(key)
        return "not available" if value is None else format(value, spec)

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


def _comparison_rows(result: RunResult, release: Release, dp: DPResult) -> list[list[str]]:
    """Both attacks' AUC and every model term for the LNI release beside the DP release."""
    lni_point = result.curve_point(release.w)
    lni = ("not available", "not available")
    if lni_point is not None:
        lni = (f"{lni_point.auc:.3f}", f"{lni_point.density_auc:.3f}")
    rows = [
        ["measure", "real data", f"LNI (w = {release.w:.2f})", "DP-SGD flow"],
        ["distance attack AUC", "", lni[0], f"{dp.audit.auc:.3f}"],
        ["density attack AUC", "", lni[1], f"{dp.audit.density_auc:.3f}"],
    ]
    real_fit, lni_fit, dp_fit = (
        _fits(result.fidelity, "real"),
        _fits(result.fidelity, "synthetic"),
        _fits(dp.fidelity, "synthetic"),
    )
    for name, real in real_fit.items():
        rows.append(
            [
                f"{real.label} (95 % CI)",
                shown(real),
                shown(lni_fit.get(name)),
                shown(dp_fit.get(name)),
            ]
        )
    return rows


def _fits(fidelity: Fidelity, which: str) -> dict[str, Estimate]:
    """The terms (intercept left out) of the real or synthetic fit of a fidelity comparison."""
    comparison = fidelity.result.comparison if fidelity.result is not None else None
    if comparison is None:
        return {}
    fit = comparison.real if which == "real" else comparison.synthetic
    return {k: v for k, v in estimates(fit).items() if k != "(intercept)"}
