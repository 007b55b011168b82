"""Section 2's account of how the audit ran: its design (cross-fitted folds, rounds), the rule
in words, the attack that decided, the precision at the decision, the checker's view of one
released file, and what a large table's subsample means (:mod:`engine.report.sections.privacy`
lays the section out).

References: docs/method.md section 5; Shen & Tian (2025) section 4.3.

Example:
    >>> from types import SimpleNamespace as NS
    >>> tested_w_count(NS(curve=[NS(w=0.0), NS(w=0.5), NS(w=0.5)]))
    2
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.report.data import safe_count
from engine.report.layout import paragraph, text

if TYPE_CHECKING:
    from engine.pipeline.results import RunResult
    from engine.privacy.audit import AuditResult

DEFAULT_RULE = (
    "the largest w at which, for it and every smaller w, the 95 % upper confidence bound of each "
    "attack's expected AUC stays below the limit"
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
    """Which tested w were measured on the first round only, in words ("" when none).

    Example:
        >>> from types import SimpleNamespace as NS
        >>> one_repeat_sentence(NS(curve=[NS(w=0.5, decides=True), NS(w=0.6, decides=False),
        ...                               NS(w=0.7, decides=False)]))[:60]
        'At w = 0.60 to 0.70 (more than two steps above the chosen w)'
    """
    ws = sorted(float(p.w) for p in audit.curve if not getattr(p, "decides", True))
    if not ws:
        return ""
    where = f"w = {ws[0]:.2f}" if len(ws) == 1 else f"w = {ws[0]:.2f} to {ws[-1]:.2f}"
    return (
        f"At {where} (more than two steps above the chosen w) the attacks were measured on "
        "the first round only: the fitted curve rises with w, so they cannot change the choice."
    )


def tested_w_count(audit: AuditResult) -> int:
    """How many different w the audit tested (the grid and any added near the limit)."""
    return len({round(float(p.w), 9) for p in audit.curve})


def audit_precision_sentences(
    audit: AuditResult | None, w: float | None, chosen_by: str = ""
) -> list[str]:
    """Which attack decided (its fitted AUC, SE and upper bound), or the disclosure rule where
    it lowered w, whether the audit covered every copy, an uncertain release at the smallest w,
    and the SE at the decision against its 0.005 target."""
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
        where = (
            "At the released w" if w is not None else "At the smallest w, which failed the limit"
        )
        out.append(
            f"{where} (w = {binding.w:.2f}) the deciding attack was the "
            f"{text(binding.quote(audit.threshold))}; the other attacks' bounds were lower."
        )
    decision = getattr(audit, "decision", None)
    if decision is not None and decision.uncertain and w is not None:
        out.append(
            f"The estimate at w = {decision.w:.2f} ({decision.fit:.3f}) is under the limit, but "
            f"too uncertain to show that it stays under it (upper bound {decision.upper:.3f}): "
            "the table is small. It is released there, the w that adds the most noise (rows drawn "
            "from the model alone), with this spread stated."
        )
    copies = int(audit.copies or 1)
    if copies > 1:
        out.append(
            f"Each record is released {copies} times. The audit attacked the union of all {copies} "
            "copies (the distance attack took the closest of all of them, the density attack saw "
            f"all of them), so the chosen w is the one that is safe for {copies} copies."
        )
    se = getattr(audit, "se_at_decision", None)
    if se is None:
        return out
    target = float(getattr(audit, "se_target", 0.005))
    if se <= target:
        return out + [
            f"Precision: the standard error of the deciding attack's fitted AUC at the decision is "
            f"{se:.4f}, within the target of {target:g}."
        ]
    why = (
        "the time allowed ran out"
        if audit.budget_exhausted
        else "the rounds allowed for a table of this size were used"
    )
    return out + [
        f"Precision: the standard error of the deciding attack's fitted AUC at the decision is "
        f"{se:.4f}, above the target of {target:g} ({why}); the rule adds it to its upper bound, "
        "so a wider margin only makes the choice stricter."
    ]


def design_words(audit: AuditResult) -> str:
    """How the audit's split models were made, in words.

    Example:
        >>> from types import SimpleNamespace as NS
        >>> design_words(NS(crossfit=True, splits=15, rounds=3))[:62]
        'In each of 3 rounds the rows were split at random into 5 parts'
        >>> design_words(NS(crossfit=False, splits=1, rounds=1))[:40]
        'The rows were split once at random into '
    """
    if getattr(audit, "crossfit", False):
        rounds = int(getattr(audit, "rounds", 1) or 1)
        folds = int(audit.splits) // max(rounds, 1)
        return (
            f"In each of {rounds} round{'s' if rounds > 1 else ''} the rows were split at random "
            f"into {folds} parts, and a model was trained with each part held out ({audit.splits} "
            "models in all): every record was scored once per round as a non-member (by the model "
            "that did not see it) and otherwise as a member"
        )
    return (
        "The rows were split once at random into members (about 80 %, used to train a model) "
        "and non-members (about 20 %)"
        if int(audit.splits) <= 1
        else f"The rows were split at random {audit.splits} times into members (about 80 %) "
        "and non-members (about 20 %), a model trained for each"
    )


def how_the_audit_ran(result: RunResult, audit: AuditResult, sheet: dict[str, Any]) -> list[Any]:
    """The design, the repeats, the rule, the deciding attack, precision, the checker's view."""
    out = [
        paragraph(
            f"{design_words(audit)}. Synthetic rows were made from the members at each of "
            f"{tested_w_count(audit)} candidate w, with the same noise at every w (so the points "
            "differ by the effect of w alone), and three attackers tried to tell members from "
            f"non-members. Selection rule: {text(audit.rule or DEFAULT_RULE)}.",
            sheet,
        )
    ]
    w0_splits = getattr(audit, "smallest_w_splits", 0) or 0
    if w0_splits > (audit.splits or 0):  # a refusal confirmed on more rounds
        out.append(
            paragraph(
                f"The copula did not meet the limit at w = 0 on the first round, so that point was "
                f"measured again over {text(w0_splits)} models (a copula fitted for each) before "
                "deciding; the figures at w = 0 are over all of them.",
                sheet,
            )
        )
    refused_by_rule = result.released is None and getattr(result.release, "disclosure", None)
    chosen_by = (
        "the disclosure rule" if refused_by_rule else str(getattr(result.release, "chosen_by", ""))
    )
    out += [
        paragraph(t, sheet) for t in audit_precision_sentences(audit, result.release.w, chosen_by)
    ]
    checker = getattr(audit, "checker", None)
    if checker is not None and result.released is not None and result.is_released_w(checker.w):
        out.append(paragraph(text(checker.words()), sheet))
    scored = getattr(audit, "rows_scored", None)
    if scored and scored[1] < non_members(result):
        out.append(
            paragraph(
                f"Each repeat's distance attack scored a fresh random sample of "
                f"{safe_count(scored[0])} members and {safe_count(scored[1])} non-members (the "
                "synthetic rows searched were all of them); repeats were added until the standard "
                "error at the decision reached its target or the time allowed ran out.",
                sheet,
            )
        )
    audited, used = audited_rows(result), result.release.rows
    if result.released is not None and audited < used:
        out.append(
            paragraph(
                f"This table is large, so the audit ran on a random subsample of {audited:,} of "
                f"its {used:,} rows. That errs on the safe side: on fewer rows each person's "
                "synthetic row stands out more, so the attacks score higher and the chosen w is "
                "lower than a full audit would allow.",
                sheet,
            )
        )
    return out
