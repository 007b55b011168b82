"""Section 2b, identity and attribute disclosure (after the membership audit): what someone
who knows a patient's age, sex and the like learns from the synthetic file, beside what a fresh
sample of real patients would tell them, and the rule that joins the two to the choice of w
(issue 29). Which columns the check covers, what its margin is and what its figures mean are
said in the engine's words (:mod:`engine.disclosure.words`, issue 44).

The page lays out :class:`engine.disclosure.check.DisclosureResult` (read by attribute:
the report does not import ``privacy``): one sentence and one table row per target, the
identity figures, the rule and how the reference was drawn. Percentages that stand for fewer
than 10 real patients are shown as "fewer than 10 patients", as every count of the report.

References: Raab, Nowok & Dibben (2024) arXiv:2406.16826 (UiO, repU, DiO, DiSCO); synthpop 1.9
``disclosure()``; Giomi et al. (2023) PoPETs 2023(2) (anonymeter's inference risk).

Example:
    >>> names(("age", "sex", "ethnicity"))
    'age, sex and ethnicity'
    >>> percent(31.24, 800), percent(0.5, 800)
    ('31 %', 'fewer than 10 patients')
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.report.data import THRESHOLD
from engine.report.layout import paragraph, table, text

if TYPE_CHECKING:
    from engine.disclosure.check import DisclosureResult, TargetDisclosure
    from engine.pipeline.results import RunResult

HEADING = "2b. Identity and attribute disclosure"
QUESTION = (
    "The membership audit asks whether an attacker can tell who was in the table. An output "
    "checker also asks: if someone knows a patient's {keys}, can the synthetic file tell them "
    "that patient's outcome (attribute disclosure), and does a combination that is unique among "
    "the real patients stand alone in the synthetic file too (identity disclosure)?"
)
REFERENCE = (
    "What the figures are compared with: a fresh sample of real patients of the same size. The "
    "real table was split at random into two halves; the synthetic rows made from the first "
    "half's patients were scored against them, and the second half, real patients who are not "
    "in the first, was scored in the same way, as if it were the synthetic file. Both files then "
    "hold {m} rows and face the same {m} patients. This was repeated with the halves swapped and "
    "over {k} random splits; the figures are the means. For the attack, the second half's "
    "patients are also the control group (their rows are not in the file attacked)."
)


def names(columns: tuple[str, ...] | list[str]) -> str:
    """Column names joined in words."""
    cols = [str(c) for c in columns]
    return cols[0] if len(cols) == 1 else ", ".join(cols[:-1]) + " and " + cols[-1]


def percent(value: float, rows: int) -> str:
    """A percentage of real patients as the report may show it (under 10 patients withheld)."""
    if value / 100.0 * rows < THRESHOLD - 1e-9:
        return f"fewer than {THRESHOLD} patients"
    return f"{value:.0f} %"


def of_patients(value: float, rows: int) -> str:
    """ "31 % of real patients", or "fewer than 10 real patients".

    Example:
        >>> of_patients(31.2, 800), of_patients(0.5, 800)
        ('31 % of real patients', 'fewer than 10 real patients')
    """
    shown = percent(value, rows)
    return (
        f"fewer than {THRESHOLD} real patients"
        if shown.endswith("patients")
        else f"{shown} of real patients"
    )


def disclosure_section(result: RunResult, sheet: dict[str, Any], width: float) -> list[Any]:
    """The page; empty when no key column was chosen or recognised."""
    found: DisclosureResult | None = getattr(result.release, "disclosure", None)
    if found is None:
        return _no_keys(result, sheet)
    keys = text(names(found.keys))
    m = found.half_rows
    out: list[Any] = [
        paragraph(HEADING, sheet, "h1"),
        paragraph(QUESTION.format(keys=keys), sheet),
        paragraph(text(found.coverage_words()), sheet),
        paragraph(_verdict(result, found), sheet),
        paragraph(text(found.margin_words()), sheet),
        paragraph("What the synthetic file tells about each column", sheet, "h2"),
    ]
    out += [paragraph(_target_sentence(found, t), sheet) for t in found.targets]
    out.append(_target_table(found, width))
    out.append(
        paragraph(
            "Guessed right: the share of real patients whose hidden value of the column is "
            f"the one held by every record matching their {keys} (synthpop's DiSCO), with the "
            "synthetic file and with a fresh sample of real patients in its place (the baseline; "
            "in the real table itself: DiO). Nearest record: the share guessed right by taking "
            "the value of the record closest on those columns (anonymeter's inference attack; a "
            "number counts as right within 5 %). Excess risk: how much better that guess works on "
            "the patients whose rows the file was made from than on others, 0 = no better (95 % "
            "interval).",
            sheet,
            "caption",
        )
    )
    out += [
        paragraph("Patients who stand alone", sheet, "h2"),
        paragraph(_identity(keys, found), sheet),
        paragraph("The fresh sample", sheet, "h2"),
        paragraph(REFERENCE.format(m=f"{m:,}", k=found.halvings), sheet),
        paragraph(_groups(found), sheet, "small"),
    ]
    return out


def _no_keys(result: RunResult, sheet: dict[str, Any]) -> list[Any]:
    if result.released is None or getattr(result.release, "disclosure", None) is not None:
        return []
    return [
        paragraph(HEADING, sheet, "h1"),
        paragraph(
            "No column of this table reads as something an attacker may know about a patient "
            "(age, sex, ethnicity, where they live, dates), and none was chosen on the Columns "
            "page, so identity and attribute disclosure were not measured.",
            sheet,
        ),
    ]


def _verdict(result: RunResult, found: DisclosureResult) -> str:
    """Whether the rule held, lowered w or refused, in words."""
    rule = (
        "The rule: guessing a patient's hidden value from the synthetic file may succeed no more "
        "often than from a fresh sample of real patients (the baseline), plus the margin below"
    )
    chosen = str(getattr(result.release, "chosen_by", ""))
    if result.released is None:
        reason = text(result.release.reason)  # type: ignore[union-attr]
        return f"{rule}. It was not met even at w = 0: nothing was exported. {reason}."
    if chosen.startswith("the disclosure rule"):
        return f"{rule}. It decided the released w: {text(chosen[len('the disclosure rule: ') :])}."
    if not found.holds:
        return f"{rule}. It is not met; the file was exported with the risk acknowledged."
    return f"{rule}. It holds for the released file (w = {result.release.w:.2f})."


def _target_sentence(found: DisclosureResult, t: TargetDisclosure) -> str:
    """The attack's success on one target beside the baseline's, and whether it is allowed."""
    held = (
        f"within the allowed {t.margin:.0f} points"
        if t.holds
        else f"<b>more than allowed</b> ({t.margin:.0f} points)"
    )
    return f"{text(found.guess_words(t))}: {held}."


def _target_table(found: DisclosureResult, width: float) -> Any:
    m, n = found.half_rows, found.rows
    rows = [
        [
            "column",
            "real table alone",
            "guessed right: synthetic",
            "guessed right: baseline",
            "allowed above baseline",
            "nearest record: synthetic / fresh",
            "excess risk (95 %)",
        ]
    ]
    for t in found.targets:
        inf = t.inference
        rows.append(
            [
                text(t.target),
                percent(t.dio, n),
                percent(t.disco_release, m),
                percent(t.disco_fresh, m),
                f"{t.margin:.0f} points",
                f"{percent(t.inference_release, m)} / {percent(t.inference_fresh, m)}",
                f"{inf.risk:.2f} ({inf.ci_low:.2f}-{inf.ci_high:.2f})",
            ]
        )
    fractions = (0.16, 0.12, 0.14, 0.14, 0.12, 0.17, 0.15)
    return table(rows, [width * f for f in fractions])


def _identity(keys: str, found: DisclosureResult) -> str:
    m, n = found.half_rows, found.rows
    held = "" if found.identity_holds else " This is <b>more than allowed</b>."
    return (
        f"Knowing {keys}, {of_patients(found.uio, n)} are the only one with their combination in "
        f"the real table (synthpop's UiO). In the synthetic file, "
        f"{of_patients(found.repu_release, m)} are unique in both the real table and the "
        f"synthetic file with the same combination (repU); a fresh sample of real patients "
        f"gives {percent(found.repu_fresh, m)}.{held} Over the whole synthetic file against the "
        f"whole table, as synthpop prints it: repU "
        f"{percent(found.repu_whole, n)}."
    )


def _groups(found: DisclosureResult) -> str:
    parts = [f"{text(c)}: {text(d)}" for c, d in found.bands.items()]
    notes = " ".join(text(n) for n in found.notes)
    return (
        "Numbers are compared in groups the way synthpop's numtocat groups them (five groups at "
        "the quantiles of the real values) unless they are whole numbers with at most 100 "
        "values, such as age in years, which are compared value by value. "
        + "; ".join(parts)
        + ". "
        + notes
    )
