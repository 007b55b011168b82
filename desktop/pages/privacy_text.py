"""What the Privacy page says: how to read the curves, the acknowledgement for a w above the
audit's choice, the summary of the audit and the release, and the disclosure check's lines."""

from __future__ import annotations

import math
from html import escape
from typing import Any

from desktop.pages.base import number
from desktop.summary_text import refusal_advice

EXPLAIN_HTML = (
    "<p><b>How w is chosen.</b> The audit trains models on parts of your data and attacks the "
    "rows they make at every w, many times. Each attack's score is fitted as one curve that "
    "rises with w, and the program adds a margin for the audit's own uncertainty (the top of "
    "the shaded band, a 95 % upper bound). It takes the largest w at which that bound stays "
    "under your limit for every attack, the most faithful safe w.</p>"
    "<p><b>The attacks.</b> The <i>distance attack</i> guesses that a person was in your data "
    "when a synthetic row lies unusually close to their record (also on the columns exactly as "
    "released); the <i>density attack</i> guesses so when the synthetic data are denser around "
    "their record than around people who were not in it. Each is scored by its AUC: 0.5 is a "
    "coin toss, 1 always right.</p>"
    "<p><b>ε (epsilon).</b> A worst-case bound on how much one person's record can change what is "
    "released: smaller is safer. Here every synthetic row starts from one real record, so the "
    "bound is large (often in the hundreds) even when the attacks fail; treat it as a ceiling, "
    "and the attacks as the practical check.</p>"
)


def ack_text(result: Any, w: float) -> str:
    """The sentence beside the acknowledgement box, true for this result and this w."""
    selected = result.audit.selected_w
    red = "<span style='color:#a00'>{}</span>"
    released_here = result.synthetic is not None and result.is_released_w(w)
    if released_here and result.config.risk_acknowledged:
        return red.format(
            f"Released at w = {w:.2f} with your acceptance of the higher risk; the report "
            "records it."
        )
    if selected is None:
        return red.format(
            f"No w passed the audit, so releasing at any w, w = {w:.2f} included, goes beyond "
            "your limit. Tick the box only if you accept that; the report records it."
        )
    if result.above_choice(w):
        return red.format(
            f"w = {w:.2f} is above the audited choice (w = {selected:.2f}): it makes it easier "
            "to tell who was in the data. Tick the box to use it; the report records that you "
            "accepted the risk."
        )
    return "Lowering w adds noise: always allowed."


def summary_html(result: Any) -> str:
    """Plain-language summary of the audit and the release, true in each state."""
    rel = result.released
    audit = result.audit
    lines = []
    limit = result.config.auc_max
    decision = getattr(audit, "decision", None)
    if audit.selected_w is None:
        lines.append(
            f"<b>No w</b> kept the membership AUC safely under your limit of {number(limit)}."
        )
        failed = audit.binding(None) if hasattr(audit, "binding") else None
        if failed is not None:
            lines.append(f"Already at w = {failed.w:.2f} the {failed.quote(limit)} failed it.")
            if failed.auc < limit:
                lines.append(
                    "Its estimate is under the limit; the margin the audit adds for its own "
                    "uncertainty (the upper bound) is what goes over it."
                )
    else:
        lines.append(
            f"The program chose <b>w = {audit.selected_w:.2f}</b>, the largest w whose upper "
            f"bound stays under your limit of {number(limit)}."
        )
        if decision is not None and decision.uncertain:
            lines.append(
                f"The table is small: the estimate ({decision.fit:.3f}) is under the limit but "
                f"its upper bound ({decision.upper:.3f}) is not, so the copy has the most noise "
                "(w = 0, rows drawn from the model alone)."
            )
    if result.synthetic is None or rel is None:
        lines.append(
            f"Nothing can be exported yet. {refusal_advice(result)} You may also accept the "
            "risk below; the report records it."
            if audit.selected_w is None
            else "Nothing can be exported yet."
        )
        return "<br>".join(lines + disclosure_lines(result))
    binding = audit.binding(rel.w)
    lines.append(f"Released: <b>w = {rel.w:.2f}</b>, {rel.rows:,} rows ({result.verdict}).")
    lines.append(
        f"Deciding attack there: {binding.quote(limit)} (0.5 = attacker guesses at random)."
    )
    checker = getattr(audit, "checker", None)
    if checker is not None and result.is_released_w(checker.w):
        lines.append(checker.words())
    copies = getattr(audit, "copies", 1)
    if copies > 1:
        lines.append(f"The audit attacked all {copies} copies of every record together.")
    metrics = rel.metrics
    lines.append(
        f"Chance a synthetic row is closer to its own real row than another real row "
        f"is: {metrics.closer_probability:.3f}."
    )
    lines.append(
        f"Median rank of the own real row among the nearest: {number(metrics.median_rank)}."
    )
    rows = max(int(rel.rows), 1)
    share = (
        f" of {rel.rows} ({100.0 * metrics.at_risk / rows:.1f} %)" if metrics.at_risk >= 10 else ""
    )
    shown = metrics.at_risk if metrics.at_risk >= 10 else "fewer than 10"
    lines.append(
        f"Records at risk (own row among the {metrics.k_risk} nearest): <b>{shown}</b>{share}."
    )
    protect = rel.protect_outliers
    if protect is not None:
        lines.append(
            f"Outlier protection: at risk {protect.at_risk_before} → {protect.at_risk_after}."
        )
    eps = rel.epsilon
    if audit.selected_w is None:  # an override past a failed audit: no ε beside it
        lines.append(
            "No ε is shown: the audit found that the model itself gives members away, which "
            "no ε for the added noise covers."
        )
    elif math.isfinite(eps.value):
        lines.append(
            f"Estimated ε = {number(eps.value)} (δ = {number(eps.delta)}); a "
            "worst-case estimate, not a proof."
        )
    if result.config.risk_acknowledged:
        lines.append(
            "<span style='color:#a00'>You acknowledged the higher risk of this w; the "
            "report records it.</span>"
        )
    return "<br>".join(lines + disclosure_lines(result))


def disclosure_lines(result: Any, most: int = 3) -> list[str]:
    """Identity and attribute disclosure (issues 29, 44) in the engine's words: the columns,
    each target's attack beside the baseline (the first ``most``), the margin and the rule."""
    found = getattr(result.release, "disclosure", None)
    if found is None:
        return []
    lines = [f"<b>Disclosure check.</b> {escape(found.coverage_words())}"]
    for t in found.targets[:most]:
        flag = "" if t.holds else " <span style='color:#a00'>(more than allowed)</span>"
        lines.append(f"{escape(found.guess_words(t))}{flag}.")
    extra = len(found.targets) - most
    more = f" ({extra} more in the report.)" if extra > 0 else ""
    lines.append(escape(found.margin_words()) + more)
    chosen = str(getattr(result.release, "chosen_by", ""))
    if result.released is None:
        lines.append(
            "<span style='color:#a00'>The synthetic file would disclose more than a fresh sample "
            "of real patients even at w = 0. Coarsen a key column (for example age in 5-year "
            "bands) or leave it out.</span>"
        )
    elif chosen.startswith("the disclosure rule"):
        lines.append(f"w was lowered by {chosen}.")
    elif found.holds:
        lines.append("It discloses no more than a fresh sample of real patients would.")
    return lines
