"""Section 1, the data: columns used and dropped (and why), rows dropped, values clipped to the
allowed range and rows drawn again. Every count goes through :func:`safe_count`.

References: ACRO output rules; docs/method.md section 10.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.disclosure import THRESHOLD, safe_total_text, suppressed_levels
from engine.report.data import safe_count
from engine.report.layout import paragraph, table, text

if TYPE_CHECKING:
    from engine.pipeline.results import RunResult

CLIPPING = (
    "A synthetic value drawn outside a column's allowed range (from its 10th smallest to "
    "its 10th largest real value unless given, so no real extreme held by fewer than "
    "10 people is reproduced) is moved inside it: such values and those just inside the "
    "bound are spread together, in their order, over the values just inside the bound, "
    "so none lies beyond it and none piles up at it. Counts of synthetic values moved "
    "per column:"
)
DEFAULT_DROP_REASON = (
    "rows with a missing value in a used column are left out (complete cases, as in the paper)"
)


def data_page(result: RunResult, sheet: dict[str, Any], width: float) -> list[Any]:
    """Columns used and dropped (and why), rows dropped, clipping counts, rows drawn again."""
    columns = list(result.prepared.schema.columns)
    used = [c for c in columns if c.action == "synthesize"]
    dropped = [c for c in columns if c.action != "synthesize"]
    out: list[Any] = [
        paragraph("1. The data", sheet, "h1"),
        paragraph("Columns used (modelled and exported)", sheet, "h2"),
        _column_table(used, "how it was recognised", width)
        if used
        else paragraph("The column list is not available.", sheet),
        paragraph("Columns dropped (never modelled, never exported)", sheet, "h2"),
    ]
    if not columns:
        out.append(paragraph("Not available.", sheet))
    elif dropped:
        out.append(_column_table(dropped, "why it was dropped", width))
    else:
        out.append(paragraph("None: every column of the input was used.", sheet))
    plan = getattr(result.fidelity, "plan", None)
    if plan is not None:  # the model the comparison rests on, each choice in one line
        out.append(paragraph("The model compared (real vs synthetic)", sheet, "h2"))
        out += [paragraph(text(line), sheet) for line in plan.lines()]
    out += [
        paragraph("Rows", sheet, "h2"),
        table(row_rows(result), [0.6 * width, 0.4 * width], header=False),
        paragraph("Values moved inside the allowed range", sheet, "h2"),
    ]
    release = result.released
    clipped = release.clipped if release is not None else {}
    if clipped:
        rows = [["column", "values moved inside"]] + [
            [text(k), safe_count(v)] for k, v in sorted(clipped.items())
        ]
        out += [paragraph(CLIPPING, sheet), table(rows, [0.4 * width, 0.25 * width])]
    else:
        out.append(
            paragraph("No clipping was recorded (no synthetic table, or no bounded column).", sheet)
        )
    return out + non_finite_paragraphs(result, sheet) + rules_paragraphs(result, sheet, width)


def rules_paragraphs(result: RunResult, sheet: dict[str, Any], width: float) -> list[Any]:
    """The rules between columns: each kept rule, where it came from and the synthetic rows
    that break it (0: the decoder repairs every row, in the audit and the release alike); the
    rules not kept, and why."""
    # the record audit.json holds (engine.pipeline.record): counted once, the same numbers
    record = (getattr(result, "audit_json", None) or {}).get("rules") or []
    if not record:
        return []
    origin = {"found": "found in the real data", "yours": "written by the user"}
    rows = [["rule", "where it came from", "synthetic rows breaking it"]]
    for r in record:
        broken = r["synthetic_rows_breaking"]
        rows.append(
            [
                text(r["rule"]),
                origin.get(r["source"], r["source"]),
                ("not kept: " + r["why_not"])
                if not r["kept"]
                else ("no file released" if broken is None else f"{broken:,}"),
            ]
        )
    intro = (
        "A rule holds in every real row and, when kept, in every synthetic row, in the audit "
        "and in the released file alike. An order between two number columns with no empty "
        "cell is built into the model (the later column is modelled as its distance from the "
        "earlier one, never negative); any other row the model draws against a rule is "
        "repaired (an order by making the two values equal where real rows have ties and by "
        "swapping them where they have none, the survival time never moved; a fixed pair by "
        "the level that goes with it; a value present only when another column says so by "
        "removing it or taking one from another synthetic row). A rule is proposed only when "
        f"at least {THRESHOLD} real rows support each side of it."
    )
    return [
        paragraph("Rules between columns", sheet, "h2"),
        paragraph(intro, sheet),
        table(rows, [0.4 * width, 0.3 * width, 0.3 * width]),
    ]


def non_finite_paragraphs(result: RunResult, sheet: dict[str, Any]) -> list[Any]:
    """What happened to synthetic rows the model decoded to an infinite or undefined value."""
    release = result.released
    if release is None or not release.non_finite:
        return []
    redrawn = int(release.non_finite.get("rows_redrawn", 0))
    dropped = int(release.non_finite.get("rows_dropped", 0))
    if not redrawn and not dropped:
        line = "Every synthetic row decoded to finite values; none had to be drawn again."
    else:
        line = (
            f"{redrawn} synthetic rows decoded to an infinite or undefined value and were drawn "
            f"again with fresh noise; {dropped} still failed after five draws and were left out "
            "of the synthetic table (never replaced by an average)."
        )
    return [paragraph("Rows drawn again", sheet, "h2"), paragraph(line, sheet)]


def _column_table(columns: list[Any], why: str, width: float) -> Any:
    """Name, kind and the plain-words reason of each column."""
    rows: list[list[Any]] = [["column", "kind", why]]
    rows += [[text(c.name), text(c.kind), text(c.reason or "")] for c in columns]
    return table(rows, [0.25 * width, 0.13 * width, 0.62 * width])


SECONDARY = f"not shown (with the others it would reveal a count under {THRESHOLD})"


def row_rows(result: RunResult) -> list[list[Any]]:
    """Rows in the file, selected, dropped (by reason) and used; every count via safe_count."""
    prep = result.prepared
    in_file, selected, used = prep.table.rows, len(prep.table.frame), len(prep.real)
    rows = [["Rows in the input file", safe_total_text(in_file, used)]]
    if selected != in_file:
        rows.append(["Rows selected (one sub-study)", safe_total_text(selected, used)])
    dropped = prep.rows_dropped or {}
    if "rows_dropped" in dropped:
        rows.append(
            ["Rows dropped (a missing value in a used column)", dropped_text(selected, used)]
        )
    # a count of 1-9 hides, and so does the smallest count beside it while the hidden ones add
    # up to 1-9, since the total minus the shown counts would reveal them
    missing = {str(k): int(v) for k, v in (dropped.get("missing_by_column") or {}).items()}
    hide = suppressed_levels(missing)
    for column, count in missing.items():
        shown = SECONDARY if column in hide and count >= THRESHOLD else safe_count(count)
        rows.append([f"Missing values in {text(column)}", shown])
    reasons = {
        str(key): int(value)
        for key, value in dropped.items()
        if key not in ("rows_in", "rows_used", "rows_dropped", "missing_by_column", "reason")
        and isinstance(value, (int, float))
        and not isinstance(value, bool)
    }
    hide = suppressed_levels(reasons)
    for key, count in reasons.items():
        shown = SECONDARY if key in hide and count >= THRESHOLD else safe_count(count)
        rows.append([f"Rows dropped: {text(key.replace('_', ' '))}", shown])
    rows.append([f"Rows used to train and audit{used_note(dropped)}", safe_count(used)])
    reason = str(dropped.get("reason") or DEFAULT_DROP_REASON)
    rows.append(
        [
            "Why rows are dropped",
            text(reason[:1].upper() + reason[1:]) + "; a missing value "
            "in a dropped column (e.g. an identifier) does not count.",
        ]
    )
    return rows


def used_note(rows_dropped: dict[str, Any] | None) -> str:
    """How the used rows were chosen, for the label beside their count.

    Example:
        >>> used_note({"missing_modelled": True}), used_note({"missing_modelled": False})
        (' (empty cells modelled)', ' (complete cases)')
    """
    return (
        " (empty cells modelled)"
        if (rows_dropped or {}).get("missing_modelled")
        else (" (complete cases)")
    )


def dropped_text(selected: int, used: int) -> str:
    """Rows dropped as shown beside the selected and used counts, consistent with them.

    1-9 dropped rows print as "< 10" and the selected count beside it is coarsened too
    (:func:`engine.disclosure.safe_total_text`), so no subtraction of two shown counts gives
    the hidden number; none dropped prints as "none", since the two equal counts beside it say so
    anyway and "< 10" would hide what they show.

    Example:
        >>> dropped_text(400, 397), dropped_text(400, 400), dropped_text(420, 400)
        ('< 10', 'none', '20')
    """
    n = int(selected) - int(used)
    return "none" if n == 0 else safe_count(n)
