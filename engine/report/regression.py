"""The regression comparison of the utility section: the same model on the real and the
synthetic table, term by term (estimate and 95 % CI on the printed scale, standardized
difference, CI overlap, same sign and significance), and its forest plot.

References: Karr, Kohnen, Oganian, Reiter & Sanil (2006) Am Stat 60:224 (CI overlap).

Example:
    >>> on_scale(0.1, 10.0, "hazard ratio") == math.exp(1.0), on_scale(None, 1.0, None)
    (True, None)
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import pandas as pd

from engine.disclosure import NOT_SHOWN_GROUP
from engine.report.data import NOT_AVAILABLE, THRESHOLD, decimals, finite, safe_count
from engine.report.forest import forest_png
from engine.report.layout import figure_or_note, paragraph, table, text
from engine.stats.fits import withheld_note

if TYPE_CHECKING:
    from engine.pipeline.results import Fidelity
    from engine.stats.models import CoefComparison, Comparison

RATIO_WORDS = {"cox": "hazard ratio", "logistic": "odds ratio"}
MODEL_WORDS = {"cox": "Cox proportional hazards", "ols": "linear (OLS)", "logistic": "logistic"}
HEADER = [
    "term",
    "real (95 % CI)",
    "synthetic (95 % CI)",
    "diff. (real SEs)",
    "overlap",
    "same sign / signif.",
]
ForestRow = tuple[str, float, float, float, float, float, float]


def regression_block(
    fidelity: Fidelity, real: pd.DataFrame, sheet: dict[str, Any], width: float
) -> list[Any]:
    """Heading, what was fitted, the term table and the forest plot (or why none is shown)."""
    result = fidelity.result
    comparison = result.comparison if result is not None else None
    if comparison is None or not comparison.rows:
        return [paragraph("Regression", sheet, "h2"), paragraph(_why_no_model(fidelity), sheet)]
    ratio = RATIO_WORDS.get(comparison.analysis)
    out = _model_heading(comparison, ratio, sheet)
    events = comparison.real.n_events
    if events is not None and finite(events) is not None and float(events) < THRESHOLD:
        return out + [
            paragraph(
                f"Coefficients not shown: fewer than {THRESHOLD} events in the real table.",
                sheet,
                "warn",
            )
        ]
    rows, forest = term_rows(comparison, real, ratio)
    widths = [0.22, 0.19, 0.19, 0.13, 0.1, 0.17]
    out.append(table([HEADER, *rows], [f * width for f in widths]))
    if forest:
        out += _forest(forest, ratio, sheet, width)
    return out


def _why_no_model(fidelity: Fidelity) -> str:
    error = fidelity.result.model_error if fidelity.result is not None else None
    if error is not None and error.startswith("did not converge"):
        return (
            f"The regression model {text(error)}. The synthetic table was still exported; "
            "compare a simpler model (fewer covariates) on both tables yourself."
        )
    return (
        "No regression model was compared in this run (choose an analysis with its outcome, "
        "or the time and event columns, to compare one)."
    )


def _model_heading(comparison: Comparison, ratio: str | None, sheet: dict[str, Any]) -> list[Any]:
    analysis = comparison.analysis
    events = comparison.real.n_events
    scale = (
        "Estimates are " + ratio + "s (exp of the coefficient, per the stated units)."
        if ratio
        else "Estimates are coefficients on the outcome's scale."
    )
    return [
        paragraph(f"Regression: {text(MODEL_WORDS.get(analysis, analysis))}", sheet, "h2"),
        paragraph(
            f"Fitted on the real table (n = {safe_count(comparison.real.n)}"
            + (f", events = {safe_count(events)}" if events is not None else "")
            + f") and on the synthetic table (n = {safe_count(comparison.synthetic.n)}). "
            + scale
            + " Overlap: the confidence-interval overlap of Karr et al. (2006), 1 = identical "
            "intervals.",
            sheet,
        ),
    ]


def term_rows(
    comparison: Comparison, real: pd.DataFrame, ratio: str | None
) -> tuple[list[list[Any]], list[ForestRow]]:
    """One table row per term (withheld terms and levels of fewer than 10 rows: name only),
    and the forest plot's rows."""
    rows: list[list[Any]] = []
    forest: list[ForestRow] = []
    withheld = set(comparison.real.withheld)
    for c in comparison.rows:
        if c.name in withheld or small_level(c.name, real):
            note = withheld_words(c.name, real, comparison.analysis)
            rows.append([text(c.name), text(note), "", "", "", ""])
            continue
        per = finite(c.per) or 1.0
        real_ci = [
            on_scale(v, per, ratio) for v in (c.real_estimate, c.real_ci_low, c.real_ci_high)
        ]
        synth_ci = [
            on_scale(v, per, ratio) for v in (c.synth_estimate, c.synth_ci_low, c.synth_ci_high)
        ]
        label = c.name + (f" (per {per:g})" if per != 1.0 else "")
        rows.append([text(label), _ci(real_ci), _ci(synth_ci), *_agreement(c)])
        if all(v is not None for v in real_ci):
            synth_values = [math.nan if v is None else v for v in synth_ci]
            forest.append((label, *real_ci, *synth_values))  # type: ignore[arg-type]
    return rows, forest


def _agreement(c: CoefComparison) -> list[str]:
    """Standardized difference, CI overlap, and whether sign and significance agree."""
    return [
        decimals(c.std_difference, 2),
        decimals(c.ci_overlap, 2),
        f"{_agrees(c.sign_agrees)} / {_agrees(c.significance_agrees)}",
    ]


def _forest(
    forest: list[ForestRow], ratio: str | None, sheet: dict[str, Any], width: float
) -> list[Any]:
    from reportlab.platypus import Spacer

    xlabel = f"{ratio} (log scale)" if ratio else "coefficient"
    return [
        Spacer(1, 8),
        figure_or_note(lambda: forest_png(forest, xlabel, bool(ratio)), width, sheet),
        paragraph(
            "Forest plot: real (blue circles) and synthetic (orange squares) estimates with 95 % "
            "confidence intervals.",
            sheet,
            "caption",
        ),
    ]


def withheld_words(name: str, real: pd.DataFrame | None, analysis: str) -> str:
    """Why a withheld term shows no numbers, in the rule that withheld it (issue 33): "fewer
    than 10 people" where a group of the column has fewer than 10 rows, else (Cox, logistic)
    "fewer than 10 events" (logistic: "or non-events"), since the rule counts events there.

    Example:
        >>> real = pd.DataFrame({"arm": ["a"] * 40 + ["b"] * 35})
        >>> withheld_words("arm=b", real, "cox")
        'not shown: fewer than 10 events in this group'
        >>> withheld_words("arm=b", real.iloc[:45], "cox")
        'not shown: fewer than 10 people in this group'
    """
    note = withheld_note(name)
    col = name.split("=", 1)[0]
    if analysis not in RATIO_WORDS or real is None or col not in real.columns:
        return note
    if note != NOT_SHOWN_GROUP or ("=" not in name and real[col].nunique(dropna=True) != 2):
        return note  # a merged level says so; a continuous term is withheld for other reasons
    if int(real[col].value_counts().min()) < THRESHOLD:
        return note
    both = " or non-events" if analysis == "logistic" else ""
    return f"not shown: fewer than {THRESHOLD} events{both} in this group"


def small_level(name: str, real: pd.DataFrame | None) -> bool:
    """A dummy term ``col=level`` whose level has fewer than 10 real rows.

    Example:
        >>> small_level("site=C", pd.DataFrame({"site": ["A"] * 20 + ["C"] * 3}))
        True
    """
    if "=" not in name or real is None:
        return False
    col, level = name.split("=", 1)
    if col not in real.columns:
        return False
    return int((real[col].astype(str) == level).sum()) < THRESHOLD


def on_scale(value: Any, per: float, ratio: str | None) -> float | None:
    """A coefficient on the printed scale: exp(value * per) for a ratio, else value * per."""
    x = finite(value)
    if x is None:
        return None
    return math.exp(x * per) if ratio else x * per


def _ci(values: list[float | None]) -> str:
    if values[0] is None:
        return NOT_AVAILABLE
    return f"{values[0]:.3f} ({decimals(values[1])} to {decimals(values[2])})"


def _agrees(value: bool | None) -> str:
    return NOT_AVAILABLE if value is None else ("yes" if bool(value) else "<b>no</b>")
