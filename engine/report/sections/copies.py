"""The report's paragraph on multiple synthetic copies (``--copies M``): which combining rule
gives the reported standard errors, why it fits Latent Noise Injection, and the combined
estimates beside the real-data fit.

References: Reiter (2003) Surv Methodol 29:181 (partially synthetic data); Raghunathan, Reiter
& Rubin (2003) J Off Stat 19:1 (fully synthetic data); Raab, Nowok & Dibben (2016).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.report.estimates import estimates, shown
from engine.report.layout import paragraph, table

if TYPE_CHECKING:
    from engine.pipeline.results import RunResult

RULE_WHY = (
    "Each synthetic row is the noised latent code of one observed record and the model is fitted "
    "once, so the copies differ only by the synthesis noise given the observed data. That is the "
    "setting of partially synthetic data, so the standard errors use Reiter's (2003) rule "
    "T = ū + b/M (ū: mean within-copy variance, b: between-copy variance, M copies). The "
    "fully-synthetic rule of Raghunathan, Reiter & Rubin (2003) presumes a fresh population draw "
    "per copy and goes negative when the copies are close (w near 1)."
)


def copies_section(result: RunResult, sheet: dict[str, Any], width: float) -> list[Any]:
    """Heading, the rule in words and a table of combined vs real estimates; empty for M = 1."""
    fidelity = result.fidelity
    combined = fidelity.combined_copies
    if combined is None and fidelity.combined_error is None:
        return []
    copies = (combined.combined or {}).get("copies", "several") if combined else "several"
    comparison = fidelity.result.comparison if fidelity.result is not None else None
    real = estimates(comparison.real if comparison is not None else None)
    rows = [["coefficient", "real data (95 % CI)", f"{copies} synthetic copies combined (95 % CI)"]]
    for name, estimate in estimates(combined).items():
        rows.append([estimate.label, shown(real.get(name)), shown(estimate)])
    return [
        paragraph(f"Several synthetic copies ({copies})", sheet, "h2"),
        paragraph(RULE_WHY, sheet),
        table(rows, [width * f for f in (0.34, 0.33, 0.33)]),
    ]
