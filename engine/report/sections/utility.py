"""Section 3, does the synthetic table give the same answers: box plots, level shares, means
and spreads, Kaplan-Meier, correlations and the regression comparison with its forest plot.

References: Shen & Tian (2025) Figure 14; Karr et al. (2006) (CI overlap); Kaplan & Meier (1958).

Example:
    >>> "No synthetic table" in nothing_to_compare("refused")
    True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from engine.report import figures as figs
from engine.report.data import (
    NOT_AVAILABLE,
    THRESHOLD,
    KMCurves,
    box_stats,
    decimals,
    finite,
    km_curves,
    level_shares,
)
from engine.report.layout import figure_or_note, paragraph, side_by_side, table, text
from engine.report.regression import regression_block

if TYPE_CHECKING:
    from engine.pipeline.results import RunResult
    from engine.stats.models import FidelityResult
    from engine.stats.topcoded import RuleCost

NUMERIC_KINDS = ("continuous", "integer", "time")
LEVEL_KINDS = ("binary", "categorical", "event")
BOX_CAPTION = (
    "Blue: real; orange: synthetic. Boxes span the 25th to 75th "
    "percentile with the median; whiskers reach the 5th and 95th percentiles (or the 10th "
    "smallest and largest value, where fewer than 10 rows lie beyond a percentile). Drawn "
    "from these percentiles only: no individual value is plotted."
)


def nothing_to_compare(verdict: str) -> str:
    """The sentence printed when no synthetic table was made."""
    refused = " (the release was refused)" if verdict == "refused" else ""
    return f"No synthetic table was made{refused}, so there is nothing to compare."


def utility_section(result: RunResult, sheet: dict[str, Any], width: float) -> list[Any]:
    """Box plots, level shares, marginals, Kaplan-Meier, correlations, regression + forest plot."""
    out: list[Any] = [paragraph("3. Does the synthetic table give the same answers?", sheet, "h1")]
    real, synth = result.prepared.real, result.synthetic
    if synth is None:
        return out + [paragraph(nothing_to_compare(result.verdict), sheet)]
    kinds = _kinds(result) or {str(c): "continuous" for c in real.columns}
    numeric = [c for c, k in kinds.items() if k in NUMERIC_KINDS and c in real.columns]
    levels = [c for c, k in kinds.items() if k in LEVEL_KINDS and c in real.columns]
    fidelity = result.fidelity.result
    out += _box_block(real, synth, numeric, sheet, width)
    out += _level_block(real, synth, levels, sheet, width)
    if fidelity is not None:
        out += _marginal_block(fidelity, sheet, width)
    out += _km_block(result, fidelity, sheet, width)
    if fidelity is not None:
        out += _correlation_block(fidelity, sheet, width)
    out += regression_block(result.fidelity, real, sheet, width)
    return out + rule_cost_block(getattr(result.fidelity, "rule_cost", None), sheet, width)


def rule_cost_block(cost: RuleCost | None, sheet: dict[str, Any], width: float) -> list[Any]:
    """What the range rule costs (:mod:`engine.stats.topcoded`): the Fidelity page's sentences
    and, with a model, each term on the real, the limited real and the synthetic table."""
    from engine.stats.topcoded import EFFECT, INTRO, TITLE

    lines = cost.lines() if cost is not None else []
    if cost is None or not lines:
        return []
    out = [paragraph(TITLE, sheet, "h2"), paragraph(INTRO, sheet)]
    out += [paragraph(text(line), sheet) for line in lines]
    if cost.terms and cost.analysis is not None:
        effect = EFFECT.get(cost.analysis, "estimate")
        ratio = cost.analysis in ("cox", "logistic")
        rows = [["term", f"real {effect}", "real, limited to the ranges", "synthetic"]]
        for t in cost.terms:
            per = "" if t.per == 1.0 else f" (per {t.per:g})"
            values = (t.real, t.limited, t.synthetic)
            rows.append([text(t.name + per), *(_effect(v * t.per, ratio) for v in values)])
        out.append(table(rows, [0.34 * width, 0.22 * width, 0.24 * width, 0.2 * width]))
    return out


def _effect(value: float, ratio: bool) -> str:
    """A hazard / odds ratio (exp) or a coefficient, three decimals."""
    x = finite((np.exp(value) if value < 700 else np.inf) if ratio else value)
    return NOT_AVAILABLE if x is None else f"{x:.3f}"


def _kinds(result: RunResult) -> dict[str, str]:
    """Kind of each synthesized column, by name."""
    columns = result.prepared.schema.columns
    return {str(c.name): str(c.kind) for c in columns if c.action == "synthesize"}


def _box_block(
    real: pd.DataFrame, synth: pd.DataFrame, numeric: list[str], sheet: dict[str, Any], width: float
) -> list[Any]:
    if not numeric:
        return []
    boxes = [
        (c, box_stats(real[c], "real"), box_stats(synth[c] if c in synth.columns else [], "synth"))
        for c in numeric
    ]
    return [
        paragraph("Distributions, real vs synthetic", sheet, "h2"),
        figure_or_note(lambda: figs.boxplots_png(boxes), width, sheet),
        paragraph(BOX_CAPTION, sheet, "caption"),
    ]


def _level_block(
    real: pd.DataFrame, synth: pd.DataFrame, levels: list[str], sheet: dict[str, Any], width: float
) -> list[Any]:
    if not levels:
        return []
    rows = [["column", "level", "real", "synthetic"]]
    for c in levels:
        shares = level_shares(real[c], synth[c] if c in synth.columns else None)
        rows += [[text(c), text(level), r_share, s_share] for level, r_share, s_share in shares]
    return [
        paragraph("Categories: share of rows per level", sheet, "h2"),
        table(rows, [0.3 * width, 0.3 * width, 0.2 * width, 0.2 * width]),
    ]


def _marginal_block(fidelity: FidelityResult, sheet: dict[str, Any], width: float) -> list[Any]:
    if not fidelity.marginal:
        return []
    rows = [["column", "real mean (SD)", "synthetic mean (SD)", "difference in real SDs"]]
    for m in fidelity.marginal:
        rows.append(
            [
                text(m.get("column")),
                f"{_short(m.get('real_mean'))} ({_short(m.get('real_sd'))})",
                f"{_short(m.get('synth_mean'))} ({_short(m.get('synth_sd'))})",
                decimals(m.get("std_mean_difference"), 3),
            ]
        )
    return [
        paragraph("Means and spreads", sheet, "h2"),
        table(rows, [0.28 * width, 0.26 * width, 0.26 * width, 0.2 * width]),
    ]


def _short(value: Any) -> str:
    """Three significant digits, or thousands with separators."""
    x = finite(value)
    if x is None:
        return NOT_AVAILABLE
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:,.0f}"


def _km_block(
    result: RunResult, fidelity: FidelityResult | None, sheet: dict[str, Any], width: float
) -> list[Any]:
    schema, real, synth = result.prepared.schema, result.prepared.real, result.synthetic
    time_col, event_col = schema.time, schema.event
    if not time_col or not event_col:
        return []
    # the curves, grid and gap of the run's fidelity result, as the wizard shows them
    km = km_from_fidelity(fidelity) or km_curves(real, synth, time_col, event_col)
    heading = paragraph("Survival (Kaplan-Meier)", sheet, "h2")
    if km is None:
        return [
            heading,
            paragraph(
                f"Not shown: too few records or events to draw steps of at least {THRESHOLD}.",
                sheet,
            ),
        ]
    gap = (
        f"Largest gap between the curves at the plotted times: {decimals(km_gap(km, fidelity), 3)}."
    )
    logrank = finite(fidelity.km.logrank_p) if fidelity is not None and fidelity.km else None
    if logrank is not None:
        gap += (
            f" Log-rank p-value real vs synthetic (whole follow-up), descriptive only: "
            f"{decimals(logrank, 3)}. The synthetic rows are derived from the real ones, not an "
            "independent sample, so this is a measure of the gap, not a test."
        )
    words = [
        heading,
        paragraph(
            f"Share of people still without the event ({text(event_col)}) over follow-up time "
            f"({text(time_col)}), real (solid) and synthetic (dashed).",
            sheet,
        ),
        paragraph(text(km.note), sheet, "small"),
        paragraph(gap, sheet),
    ]
    figure = figure_or_note(lambda: figs.km_png(km, str(time_col)), 0.52 * width - 10, sheet)
    return [side_by_side(figure, words, width)]


def _correlation_block(fidelity: FidelityResult, sheet: dict[str, Any], width: float) -> list[Any]:
    corr = fidelity.correlation
    columns, diff = list(corr.columns), corr.difference
    if len(columns) < 2:
        return []
    explain = [
        paragraph("Correlations", sheet, "h2"),
        paragraph(
            "Each cell is the synthetic table's Pearson correlation minus the real table's for "
            "that pair of columns. White means the same; the stronger the colour, the larger the "
            "difference.",
            sheet,
        ),
        paragraph(f"Largest absolute difference: {decimals(corr.max_abs_difference, 3)}.", sheet),
    ]
    if fidelity.utility is not None:
        u = fidelity.utility
        explain.append(
            paragraph(
                "Can the synthetic rows be told from the real ones? A logistic model of all the "
                f"columns together: {u.words} (standardized propensity score error "
                f"{decimals(u.s_pmse, 2)}; 1 is what two samples of the same data give, "
                "synthpop's S_pMSE).",
                sheet,
            )
        )
    figure = figure_or_note(lambda: figs.corr_diff_png(columns, diff), 0.52 * width - 10, sheet)
    return [side_by_side(figure, explain, width)]


def km_from_fidelity(fidelity: FidelityResult | None) -> KMCurves | None:
    """The run's Kaplan-Meier comparison (:class:`engine.stats.fidelity.KMComparison`: the
    coarse disclosure-safe grid) as the figure draws it; None without one."""
    km = fidelity.km if fidelity is not None else None
    if km is None or len(km.grid) < 2:
        return None
    note = (
        f"Survival read at {len(km.grid)} times from 0 to {km.grid[-1]:g} (where at least "
        f"{THRESHOLD} real records are still followed up); every drop of the real curve "
        f"reflects no event or at least {THRESHOLD} events."
    )
    return KMCurves(tuple(km.grid), tuple(km.real_survival), tuple(km.synth_survival), note)


def km_gap(km: KMCurves, fidelity: FidelityResult | None) -> float:
    """The largest gap between the curves: the fidelity result's (the number the wizard shows),
    else read from the drawn curves."""
    if fidelity is not None and fidelity.km is not None:
        return float(fidelity.km.max_abs_difference)
    gaps = np.abs(np.asarray(km.real, dtype=float) - np.asarray(km.synthetic, dtype=float))
    return float(np.nanmax(gaps))
