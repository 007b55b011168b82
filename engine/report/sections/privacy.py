"""Section 2, the privacy audit: how the audit ran and which attack decided, AUC against w, the
table of attack success at every tested w, ROC curves, distances, per-record risk, the formal ε
statement and the threat model.

References: Shen & Tian (2025) sections 2.3.3, 3.1.1 and 4.3, Figure 11; van Breugel et al.
(2023) (density attack); METHOD.md sections 5 and 6.

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
from engine.report.wording import epsilon_paragraphs, risk_sentence, threat_model

if TYPE_CHECKING:
    from engine.pipeline.results import RunResult
    from engine.privacy.audit import AuditResult, CurvePoint

ONE_REPEAT = "one repeat; does not affect the choice"
DEFAULT_RULE = (
    "the largest w for which it and every smaller w keep both attacks below the limit "
    "(mean + one standard error)"
)
AUC_CAPTION = (
    "Membership AUC against w (mean ± one SE; the SE counts the spread between the audit's fresh "
    "splits as well as between repeats). Red dashed: the limit. Green: "
    "the released w. Higher w keeps more of each real record and so leaks more."
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


def audited_rows(result: RunResult) -> int:
    """Rows the audit ran on: all rows used, or the random subsample for a large table."""
    return min(len(result.prepared.real), int(result.config.audit_max_rows))


def non_members(result: RunResult) -> int:
    """Size of the audit's holdout (non-member) part: its share of the rows audited."""
    fraction = result.audit.holdout_fraction if result.audit is not None else 0.2
    return int(round(float(fraction) * audited_rows(result)))


def scored_non_members(result: RunResult) -> int:
    """Non-members the distance attack scored per repeat: the holdout, or the random sample of
    it that a large table's audit scores (issue 31)."""
    scored = getattr(result.audit, "rows_scored", None)
    return int(scored[1]) if scored else non_members(result)


def one_repeat_sentence(audit: AuditResult) -> str:
    """Which tested w were scored with one repeat, in words ("" when none).

    Example:
        >>> from types import SimpleNamespace as NS
        >>> one_repeat_sentence(NS(curve=[NS(w=0.5, decides=True), NS(w=0.6, decides=False),
        ...                               NS(w=0.7, decides=False)]))[:60]
        'At w = 0.60 to 0.70 (above the first w that failed the limit'
    """
    ws = sorted(float(p.w) for p in audit.curve if not getattr(p, "decides", True))
    if not ws:
        return ""
    where = f"w = {ws[0]:.2f}" if len(ws) == 1 else f"w = {ws[0]:.2f} to {ws[-1]:.2f}"
    return (
        f"At {where} (above the first w that failed the limit) the attacks were run once: "
        "one repeat; does not affect the choice, since the rule stops at the first failure."
    )


def curve_rows(audit: AuditResult) -> list[tuple[float, float, float, float, float]]:
    """(w, distance AUC, SE, density AUC, SE) per curve point, by w (NaN where not finite)."""
    nan = float("nan")
    out = []
    for p in audit.curve:
        values = (p.w, p.auc, p.auc_se, p.density_auc, p.density_auc_se)
        w, auc, auc_se, density, density_se = (
            nan if finite(v) is None else float(v) for v in values
        )
        out.append((w, auc, auc_se, density, density_se))
    return sorted(out, key=lambda r: r[0])


def tested_w_count(audit: AuditResult) -> int:
    """How many different w the audit tested (the grid and any added near the limit)."""
    return len({round(float(p.w), 9) for p in audit.curve})


def audit_precision_sentences(
    audit: AuditResult | None, w: float | None, chosen_by: str = ""
) -> list[str]:
    """Which attack decided (mean ± SE), or the disclosure rule where it lowered w, whether the
    audit covered every copy, and whether the AUCs' standard error reached the 0.01 target."""
    if audit is None:
        return []
    out = []
    if chosen_by.startswith("the disclosure rule"):  # issue 29: it, not an attack, decided w
        out.append(
            f"The released w was decided by {text(chosen_by)} (section 2b). The membership "
            "attacks allowed more; at the released w:"
            if w is not None
            else "Nothing was released because of the disclosure rule (section 2b), not a "
            "membership attack; the membership audit itself found:"
        )
    binding = audit.binding(w)
    if binding is not None:
        where = "At the released w" if w is not None else "At the smallest w that failed the limit"
        out.append(
            f"{where} (w = {binding.w:.2f}) the deciding attack was the {text(binding.quote(audit.threshold))}; "
            "the other attack scored lower."
        )
    copies = int(audit.copies or 1)
    if copies > 1:
        out.append(
            f"Each record is released {copies} times. The audit attacked the union of all {copies} "
            "copies (the distance attack took the closest of all of them, the density attack saw all "
            f"of them), so the chosen w is the one that is safe for {copies} copies."
        )
    deciding = [p for p in audit.curve if getattr(p, "decides", True)]
    short = [p for p in deciding if not p.se_target_met]
    if not short:
        return out + [
            "Precision: at every tested w that decides the choice both attacks' AUC has a "
            "standard error below 0.01."
        ]
    worst = max(max(p.auc_se, p.density_auc_se) for p in short)
    return out + [
        f"Precision: the target standard error of 0.01 was not reached at {len(short)} of "
        f"{len(deciding)} tested w that decide the choice within the repeat limit (largest standard error "
        f"{worst:.3f}; on a small table the spread between fresh splits sets a floor that "
        "more repeats cannot lower); the selection rule adds one standard error, so a wider "
        "margin only makes it stricter."
    ]


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
    out += _how_the_audit_ran(result, audit, sheet)
    rows = curve_rows(audit)
    limit = float(audit.threshold)
    chosen = finite(w) if w is not None else None
    out += [
        figure_or_note(lambda: figs.auc_curve_png(rows, limit, chosen), width, sheet),
        paragraph(f"{AUC_CAPTION} {one_repeat_sentence(audit)}".strip(), sheet, "caption"),
        # a long table may split across pages (header repeated); start it on a new page only
        # when fewer than about eight rows would fit here
        CondPageBreak(150),
        paragraph("Attack success at every tested w", sheet, "h2split"),
        *_curve_table(result, scored_non_members(result), width, sheet),
        _roc_block(result, sheet, width),
    ]
    return out + _release_paragraphs(result, sheet, width)


def _over_splits(splits: int | None) -> str:
    """ ", over 4 different random splits (a model trained for each)" when there were several.

    Example:
        >>> _over_splits(4), _over_splits(1)
        (', over 4 different random splits (a model trained for each)', '')
    """
    if not splits or splits < 2:
        return ""
    return f", over {splits} different random splits (a model trained for each)"


def _how_the_audit_ran(result: RunResult, audit: AuditResult, sheet: dict[str, Any]) -> list[Any]:
    """The split, the repeats, the rule, the deciding attack, precision and subsampling."""
    repeats = (
        safe_count(audit.repeats) if (audit.repeats or 0) >= THRESHOLD else text(audit.repeats)
    )
    out = [
        paragraph(
            f"The audit split the rows used at random into members (about 80 %, used to train a model) and "
            f"non-members (about 20 %: {safe_count(non_members(result))} records), made synthetic rows from the members at "
            f"each of {tested_w_count(audit)} candidate w, and let two attackers try to tell members from non-members. It was repeated "
            f"{repeats} "
            f"times with fresh noise{_over_splits(audit.splits)}. "
            f"Selection rule: {text(audit.rule or DEFAULT_RULE)}.",
            sheet,
        )
    ]
    w0_splits = getattr(audit, "smallest_w_splits", 0) or 0
    if w0_splits > (audit.splits or 0):  # a refusal confirmed (issue 27)
        out.append(paragraph(
            f"The copula did not meet the limit at w = 0 on the first {text(audit.splits)} splits, so that point was "
            f"measured again over {text(w0_splits)} different random splits (a copula fitted for each) before "
            "deciding; the figures at w = 0 are over all of them.", sheet))  # fmt: skip
    refused_by_rule = result.released is None and getattr(result.release, "disclosure", None)
    chosen_by = (
        "the disclosure rule" if refused_by_rule else str(getattr(result.release, "chosen_by", ""))
    )
    out += [
        paragraph(t, sheet) for t in audit_precision_sentences(audit, result.release.w, chosen_by)
    ]
    scored = getattr(audit, "rows_scored", None)
    if scored and scored[1] < non_members(result):
        out.append(
            paragraph(
                f"Each repeat's distance attack scored a fresh random sample of "
                f"{safe_count(scored[0])} members and {safe_count(scored[1])} non-members (the "
                "synthetic rows searched were all of them); the repeats continued until the "
                "AUC's standard error was below 0.01 at every w that decides the choice.",
                sheet,
            )
        )
    audited, used = audited_rows(result), result.release.rows
    if result.released is not None and audited < used:
        out.append(
            paragraph(
                f"This table is large, so the audit ran on a random subsample of {audited:,} of its "
                f"{used:,} rows. That errs on the safe side: on fewer rows each person's synthetic row "
                "stands out more, so the attacks score higher and the chosen w is lower than a full "
                "audit would allow.",
                sheet,
            )
        )
    return out


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
    out += [paragraph(par, sheet) for par in epsilon_paragraphs(epsilon, result.release.w)]
    out.append(paragraph("Threat model in plain words", sheet, "h2"))
    return out + [paragraph(par, sheet) for par in threat_model(result.verdict)]


TPR_LEVELS = (("TPR at 1 % FPR", 0.01, "1 %"), ("TPR at 0.1 % FPR", 0.001, "0.1 %"))


def _curve_table(result: RunResult, holdout: int, width: float, sheet: dict[str, Any]) -> list[Any]:
    """Both attacks' AUC (mean ± SE, as on page 1 and in the figure) and the TPR at low FPR at
    every tested w, the released w highlighted, then the caption. A TPR column that would read
    "n < 10" on every row is left out and said in one sentence instead (issue 33)."""
    points = _by_w(result.audit)
    kept = [
        (label, level)
        for label, level, _ in TPR_LEVELS
        if any(
            not low_fpr_tpr(getattr(p, _TPR_FIELD[level]), level, holdout).startswith("n <")
            for p in points
        )
    ]
    rows: list[list[Any]] = [
        ["w", "distance AUC (mean ± SE)", "density AUC (mean ± SE)", *[k[0] for k in kept]]
    ]
    highlight = None
    for p in points:
        if result.is_released_w(p.w):
            highlight = len(rows)
        once = not getattr(p, "decides", True)
        rows.append(
            [
                decimals(p.w, 2),
                f"{decimals(p.auc)} ({ONE_REPEAT})" if once else mean_and_se(p.auc, p.auc_se),
                decimals(p.density_auc) if once else mean_and_se(p.density_auc, p.density_auc_se),
                *[low_fpr_tpr(getattr(p, _TPR_FIELD[lv]), lv, holdout) for _, lv in kept],
            ]
        )
    widths = [0.1, 0.25, 0.25] + [0.2] * len(kept)
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
        "± is one standard error (SE) of the mean over the audit's repeats and splits, as on "
        "page 1 and in the figure above."
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
    """``"0.512 ± 0.003"`` (mean ± SE); the mean alone without an SE; "not available" without a mean.

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
