"""Section 2, the privacy audit: how the audit ran and which attack decided, AUC against w, the
table of attack success at every tested w, ROC curves, distances, per-record risk, the formal ε
statement and the threat model.

References: Shen & Tian (2025) sections 2.3.3, 3.1.1 and 4.3, Figure 11; van Breugel et al.
(2023) (density attack); docs/method.md sections 5 and 6.

Example:
    >>> audit_precision_sentences(None, 0.5)
    []
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.report import figures as figs
from engine.report.data import (
    NOT_AVAILABLE,
    THRESHOLD,
    decimals,
    finite,
    low_fpr_tpr,
    roc_on_grid,
    safe_count,
)
from engine.report.layout import figure_or_note, paragraph, side_by_side, table, text
from engine.report.sections.audit_method import (  # noqa: F401  (re-exported)
    DEFAULT_RULE,
    audit_precision_sentences,
    audited_rows,
    design_words,
    how_the_audit_ran,
    non_members,
    one_repeat_sentence,
    scored_non_members,
    tested_w_count,
)
from engine.report.wording import epsilon_paragraphs, risk_sentence, threat_model

if TYPE_CHECKING:
    from engine.pipeline.results import RunResult
    from engine.privacy.audit import AuditResult, CurvePoint

AUC_CAPTION = (
    "Membership AUC against w. Dots: each attack's measured mean; lines: each attack's AUC "
    "fitted as one curve that rises with w; shaded: the 95 % band of the attack that decides "
    "(its top is the upper bound the rule compares with the limit). Red dashed: the limit. "
    "Green: the released w, with a marker where the band's top meets it. Higher w keeps more of "
    "each real record and so leaks more."
)
TPR_CAPTION = (
    "TPR at a false-positive rate: the share of members caught when the attacker wrongly accuses "
    "only 1 % (0.1 %) of non-members. Shown as “n &lt; {t}” where fewer than {t} "
    "non-members make up that rate (not a reliable statistic)."
)
DISTANCE_CAPTION = (
    "Drawn from binned counts (every bin holds at least 10 records). If the "
    "orange curve sits well to the right of the blue one, a synthetic row is usually farther "
    "from its own real record than that record's nearest real neighbour is."
)
ROC_WORDS = (
    "Each curve shows, for the distance attack, how many members are caught (up) for how many "
    "non-members wrongly accused (right). The dashed diagonal is guessing; a curve close to it "
    "means the attack does not work. Curves are read on a coarse grid so that every step "
    "reflects at least {t} non-members, and every rise no member or at least {t}."
)


def privacy_section(result: RunResult, sheet: dict[str, Any], width: float) -> list[Any]:
    """AUC vs w, TPR at low FPR, ROC, distances, per-record risk, ε and the threat model."""
    from reportlab.platypus import CondPageBreak

    audit, w = result.audit, result.release.w
    out: list[Any] = [paragraph("2. Privacy audit", sheet, "h1")]
    if audit is None:
        return out + [
            paragraph(
                "The membership audit did not run; no privacy claim can be made.", sheet, "warn"
            )
        ]
    out += how_the_audit_ran(result, audit, sheet)
    limit = float(audit.threshold)
    chosen = finite(w) if w is not None else None
    out += [
        figure_or_note(lambda: figs.auc_curve_png(audit, limit, chosen), width, sheet),
        paragraph(f"{AUC_CAPTION} {one_repeat_sentence(audit)}".strip(), sheet, "caption"),
        # a long table may split across pages (header repeated); start it on a new page only
        # when fewer than about eight rows would fit here
        CondPageBreak(150),
        paragraph("Attack success at every tested w", sheet, "h2split"),
        *_curve_table(result, scored_non_members(result), width, sheet),
        _roc_block(result, sheet, width),
    ]
    return out + _release_paragraphs(result, sheet, width)


def _release_paragraphs(result: RunResult, sheet: dict[str, Any], width: float) -> list[Any]:
    """Distances, per-record risk, the ε statement and the threat model."""
    release = result.released
    out = [paragraph("Distances between real and synthetic rows", sheet, "h2")]
    if release is not None:
        own = release.metrics.own_distance_histogram
        near = release.metrics.nearest_real_histogram
        out += [
            figure_or_note(lambda: figs.distance_hist_png(own, near), width, sheet),
            paragraph(DISTANCE_CAPTION, sheet, "caption"),
        ]
    else:
        out.append(paragraph("Not available (no synthetic table was released).", sheet))
    risk = (
        text(risk_sentence(release))
        if release is not None
        else "Not applicable: nothing was released."
    )
    out += [paragraph("Per-record risk", sheet, "h2"), paragraph(risk, sheet)]
    out.append(paragraph("Formal privacy statement (ε)", sheet, "h2"))
    epsilon = release.epsilon if release is not None else None
    failed = result.audit is not None and result.audit.selected_w is None
    out += [paragraph(par, sheet) for par in epsilon_paragraphs(epsilon, result.release.w, failed)]
    out.append(paragraph("Threat model in plain words", sheet, "h2"))
    return out + [paragraph(par, sheet) for par in threat_model(result.verdict)]


TPR_LEVELS = (("TPR at 1 % FPR", 0.01, "1 %"), ("TPR at 0.1 % FPR", 0.001, "0.1 %"))


def _curve_table(result: RunResult, holdout: int, width: float, sheet: dict[str, Any]) -> list[Any]:
    """Each attack's fitted AUC ± its SE, the highest upper bound (what the rule compares with
    the limit) and the TPR at low FPR at every tested w, the released w highlighted, then the
    caption. A TPR column that would read "n < 10" on every row is left out and said in one
    sentence instead (issue 33)."""
    points = _by_w(result.audit)
    kept = [
        (label, level)
        for label, level, _ in TPR_LEVELS
        if any(
            not low_fpr_tpr(getattr(p, _TPR_FIELD[level]), level, holdout).startswith("n <")
            for p in points
        )
    ]
    attacks = [
        (name, fit, se)
        for name, fit, se in (
            ("distance", "auc_fit", "auc_fit_se"),
            ("density", "density_fit", "density_fit_se"),
            ("released columns", "released_fit", "released_fit_se"),
        )
        if any(finite(getattr(p, fit, None)) is not None for p in points)
    ]
    rows: list[list[Any]] = [
        [
            "w",
            *[f"{name} AUC (fitted ± SE)" for name, _, _ in attacks],
            "upper bound",
            *[k[0] for k in kept],
        ]
    ]
    highlight = None
    for p in points:
        if result.is_released_w(p.w):
            highlight = len(rows)
        once = "" if getattr(p, "decides", True) else " *"
        rows.append(
            [
                decimals(p.w, 2) + once,
                *[
                    mean_and_se(getattr(p, fit, None), getattr(p, se, None))
                    for _, fit, se in attacks
                ],
                decimals(p.upper()) if hasattr(p, "upper") else NOT_AVAILABLE,
                *[low_fpr_tpr(getattr(p, _TPR_FIELD[lv]), lv, holdout) for _, lv in kept],
            ]
        )
    widths = [0.1] + [0.22] * len(attacks) + [0.14] + [0.16] * len(kept)
    widths = [f / sum(widths) for f in widths]  # the full width, with or without TPR columns
    return [
        table(rows, [f * width for f in widths], highlight=highlight),
        *[paragraph(c, sheet, "caption") for c in tpr_captions([lv for _, lv in kept], holdout)],
    ]


_TPR_FIELD = {0.01: "tpr_at_1pct_fpr", 0.001: "tpr_at_01pct_fpr"}


def tpr_captions(kept: list[float], holdout: int) -> list[str]:
    """The caption under the attack table: the TPR columns shown, and one sentence for those
    left out because every row would be "n < 10".

    Example:
        >>> tpr_captions([], 60)[1][:60]
        'The share of members caught when the attacker wrongly accuse'
    """
    out = [
        "Each attack's AUC as fitted rising with w, ± one standard error (SE) over the audit's "
        "split models; the upper bound is the highest attack's fit + 1.645 SE (+ the release "
        "gap on the released-columns attack above the smallest w), what the rule compares with "
        "the limit. * measured on the first round only (above the decision's reach)."
    ]
    if kept:
        out.append(TPR_CAPTION.format(t=THRESHOLD))
    left = [words for _, lv, words in TPR_LEVELS if lv not in kept]
    if left:
        rates = " or ".join(left)
        out.append(
            "The share of members caught when the attacker wrongly accuses only "
            f"{rates} of non-members is not shown: the audit held {safe_count(holdout)} "
            f"non-members, so {'such a rate stands' if len(left) > 1 else 'that rate stands'} "
            f"for fewer than {THRESHOLD} of them at every w (not a reliable statistic)."
        )
    return out


def _by_w(audit: AuditResult | None) -> list[CurvePoint]:
    return sorted(audit.curve, key=lambda p: float(p.w)) if audit is not None else []


def mean_and_se(mean: float | None, se: float | None) -> str:
    """``"0.512 ± 0.003"`` (mean ± SE); the mean alone without an SE; "not available" without a
    mean.

    Example:
        >>> mean_and_se(0.5123, 0.0031), mean_and_se(float("nan"), 0.01)
        ('0.512 ± 0.003', 'not available')
    """
    if finite(mean) is None:
        return NOT_AVAILABLE
    return decimals(mean) + (f" ± {decimals(se)}" if finite(se) is not None else "")


def _roc_block(result: RunResult, sheet: dict[str, Any], width: float) -> Any:
    """ROC curves of the distance attack at the lowest, the released and the highest w."""
    holdout = non_members(result)
    members = audited_rows(result) - holdout
    points = _by_w(result.audit)
    w = result.release.w
    chosen = [points[0], points[-1]] if points else []
    nearest = result.curve_point(w) if w is not None else None
    if nearest is not None:
        chosen.insert(1, nearest)
    curves, seen = [], set()
    for p in chosen:
        grid = roc_on_grid(p.roc_fpr, p.roc_tpr, holdout, members=members)
        if grid is not None and p.w not in seen:
            seen.add(p.w)
            released = " (released)" if result.is_released_w(p.w) else ""
            curves.append((f"w = {p.w:.2f}{released}", *grid))
    explain = [
        paragraph("ROC curves", sheet, "h2"),
        paragraph(ROC_WORDS.format(t=THRESHOLD), sheet),
    ]
    if not curves:
        return side_by_side(
            paragraph("ROC curves were not stored by the audit.", sheet), explain, width
        )
    figure = figure_or_note(lambda: figs.roc_png(curves), 0.52 * width - 10, sheet)
    return side_by_side(figure, explain, width)
