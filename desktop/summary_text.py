"""What the summary says after a one-click run: the recommendation, the spread of w, the
records at risk, the advice after a refusal, fidelity and the analysis, each in plain words.

The Summary and Privacy pages show these texts; they read the engine's result
(:class:`engine.pipeline.RunResult`) by attribute only, so this module imports no engine room.
"""

from __future__ import annotations

from typing import Any


def recommendation_text(result: Any) -> str:
    """The tool's recommendation in a sentence a clinician understands."""
    limit = _plain(float(result.config.auc_max))
    if result.verdict == "refused":
        # the most noise is the SMALLEST w (w = 0: new rows drawn from the model alone)
        least = min(result.audit.curve, key=lambda p: p.w)
        binding = result.audit.binding(least.w)
        margin = (
            f" The estimate itself ({binding.auc:.3f}) is under the limit, but the audit adds a "
            "margin for its own uncertainty (upper bound "
            f"{bound_text(binding.upper, limit)}), and with so few rows that margin goes over "
            "it: the audit cannot show the copy is safe."
            if binding.auc < float(result.config.auc_max)
            else ""
        )
        return (
            f"Do not release. Even with the most noise tried (w = {least.w:.2f}, rows drawn "
            "from the model alone), an attacker holding the copy could tell whether a given "
            f"patient was in your file too well: the attack's expected score is "
            f"{binding.auc:.3f} (upper bound {bound_text(binding.upper, limit)}) where the privacy "
            f"limit is {limit} (0.5 is a coin toss).{margin} Nothing was written."
        )
    w = float(result.release.w)
    binding = result.audit.binding(w)
    decision = getattr(result.audit, "decision", None)
    uncertain = (
        " The table is small: the estimate is under the limit but too uncertain to show it "
        "stays there, so the copy was made with the most noise (w = 0, rows drawn from the "
        "model alone)."
        if decision is not None and decision.uncertain
        else ""
    )
    return (
        "Meets the privacy limit the checker set. An attacker holding the copy cannot tell "
        "whether a given patient was in your file much better than a coin toss: the attack's "
        f"expected score is {binding.auc:.3f} (upper bound {bound_text(binding.upper, limit)}), "
        f"under the limit of {limit}. The privacy audit chose the noise level w = {w:.2f}"
        f"{w_spread(result.audit, w)}.{uncertain}{at_risk_text(result)}"
    )


def w_spread(audit: Any, chosen: float) -> str:
    """How far another run's w may land, from the audit's own standard errors: the grid w up
    to which every point passes even at mean + 2 SE, and the one up to which every point's mean
    alone passes. Empty when both equal the chosen w.

    Example:
        >>> from types import SimpleNamespace as P
        >>> points = [(0.0, 0.5), (0.3, 0.52), (0.6, 0.535), (0.9, 0.6)]
        >>> curve = [P(w=w, auc=a, se=0.01) for w, a in points]
        >>> at = {p.w: p for p in curve}
        >>> audit = P(curve=curve, threshold=0.55, binding=at.get)
        >>> w_spread(audit, 0.3)
        '; another run may choose a w between 0.30 and 0.60 (the audit is a random test)'
    """
    low = high = None
    sure = likely = True
    for point in sorted(audit.curve, key=lambda p: p.w):
        b = audit.binding(point.w)
        if b is None:
            break
        sure = sure and b.auc + 2 * b.se < audit.threshold
        likely = likely and b.auc < audit.threshold
        low = point.w if sure else low
        high = point.w if likely else high
    low = chosen if low is None else min(low, chosen)
    high = chosen if high is None else max(high, chosen)
    if abs(high - low) < 1e-9:
        return ""
    return (
        f"; another run may choose a w between {low:.2f} and {high:.2f} "
        "(the audit is a random test)"
    )


def at_risk_text(result: Any) -> str:
    """The share of records at risk (own synthetic row among their k nearest), as a
    percentage with a plain judgement (a count under 10 withheld)."""
    release = getattr(result, "released", None)
    metrics = getattr(release, "metrics", None)
    at_risk, rows = getattr(metrics, "at_risk", None), getattr(release, "rows", None)
    if at_risk is None or not rows:
        return ""
    k = getattr(metrics, "k_risk", 5)
    if at_risk < 10:
        return f" Fewer than 10 patients have their synthetic row among their {k} closest records."
    share = 100.0 * at_risk / rows
    judgement = (
        "very few" if share < 1 else "few" if share < 5 else "a notable share: the report says more"
    )
    return (
        f" {share:.1f} % of patients ({at_risk} of {rows}) have their synthetic row among their "
        f"{k} closest records: {judgement}."
    )


def _plain(value: float) -> str:
    """A limit as a person writes it.

    Example:
        >>> _plain(0.55), _plain(0.501), _plain(0.6)
        ('0.55', '0.501', '0.6')
    """
    return f"{value:.3f}".rstrip("0").rstrip(".")


# The one piece of advice after a refusal, said by the summary, the Privacy page and (in the
# same words) the user guide's "What to do after a refusal" (issue 33: they contradicted).
RAISING_THE_LIMIT = (
    "Raising the limit is not the answer: it is the level of risk agreed with your output "
    "checker, and the report would show the change."
)
REFUSAL_ADVICE = (
    "What to try: use more patients if you have them; drop or coarsen columns that single "
    "people out (exact dates, rare categories, free text); or switch on Protect outliers "
    "(Settings step, Advanced settings). " + RAISING_THE_LIMIT
)


def refusal_advice(result: Any) -> str:
    """The advice after a refusal: first what was measured on this table (whether more rows
    would help, which columns single people out; it changes once followed, since the next run
    measures again), then the general suggestions (:data:`REFUSAL_ADVICE`)."""
    from engine import refusal_findings

    found = refusal_findings(getattr(result, "audit", None))
    if not found:
        return REFUSAL_ADVICE
    return (
        "What to try, as measured on your table: "
        + " ".join(found)
        + " "
        + (REFUSAL_ADVICE.replace("What to try:", "Also possible:", 1))
    )


def fidelity_text(result: Any) -> str:
    """How close the copy is to the real table, in one line: the run's fidelity verdict
    (:mod:`engine.stats.verdict`), the same line the report's first page and the Fidelity page
    show."""
    fidelity = getattr(result, "fidelity", None)
    verdict = getattr(fidelity, "verdict", None)
    if verdict is None:
        return "Not measured: no synthetic copy was compared with the real table."
    if not verdict.model_compared or not verdict.coefficients:
        scope = "each column's distribution and the correlations"
        if getattr(verdict, "utility", None) is not None:
            scope = "each column's distribution, the correlations and a propensity score"
    else:
        config = getattr(result, "config", None)
        cox = getattr(config, "analysis", None) in (None, "cox")
        scope = f"the {'survival model' if cox else 'regression'} and each column's distribution"
    return f"{verdict.line} Compared: {scope}."


def analysis_text(result: Any) -> str:
    """The model the comparison rests on, one choice a line (the exposure, the adjustments,
    what was left out and why, the rows), as the PDF's section 1 and ``audit.json`` say it."""
    plan = getattr(getattr(result, "fidelity", None), "plan", None)
    if plan is None:
        return ""
    return "\n".join(plan.lines())


def outcome_note(choice: Any) -> str:
    """What the summary says about the survival outcome the one-click job used."""
    if choice is None:
        return ""
    if choice.time is None or choice.event is None:
        return (
            "No survival outcome was used (none was recognised or chosen), so fidelity compares "
            "distributions and correlations only."
        )
    exposure = (
        ""
        if choice.exposure is None
        else " No treatment or exposure column."
        if not choice.exposure
        else f" Treatment or exposure: “{choice.exposure}”."
    )
    return (
        f"Survival outcome used: follow-up time “{choice.time}”, event “{choice.event}”." + exposure
    )


def bound_text(upper: float, limit: float | str) -> str:
    """An upper bound as a person reads it beside the limit: four decimals where three would
    print the limit itself (0.5497 is not 0.550; issue 44).

    Example:
        >>> bound_text(0.5497, 0.55), bound_text(0.5381, "0.55")
        ('0.5497', '0.538')
    """
    near = round(float(upper), 3) == round(float(limit), 3)
    return f"{upper:.4f}" if near else f"{upper:.3f}"
