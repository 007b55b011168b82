"""Page 1: the verdict and what the output checker needs to sign (chosen w, both attacks against
the limit, rows, closeness in words, the formal bound, provenance).

References: Shen & Tian (2025) section 4.3; docs/method.md sections 5 and 6.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.disclosure import safe_total_text
from engine.report.data import NOT_AVAILABLE, decimals, finite, plain, safe_count
from engine.report.layout import CHECK, CROSS, GREEN, RED, paragraph, table, text
from engine.report.sections.data import used_note
from engine.report.wording import (
    closer_sentence,
    header_words,
    override_sentence,
    rank_sentence,
    risk_sentence,
    verdict_words,
)

if TYPE_CHECKING:
    from engine.pipeline.results import RunResult

HOW_TO_READ = (
    "How to read this: the <b>membership AUC</b> measures how well an attacker who holds real "
    "records can tell whether a person's record was used to make the synthetic table; 0.5 means no "
    "better than a coin toss, 1.0 means certain. <b>w</b> is the share of the real record kept in "
    "the model's hidden space (0 = pure noise, 1 = the real record unchanged). Counts below 10 are "
    "shown as “&lt; 10”. Later pages give the data handling, the full audit, the formal ε "
    "statement, the threat model and the fidelity checks."
)


def header_info(result: RunResult) -> dict[str, str]:
    """Input name, hash, day, version and verdict for the first page, header and footer."""
    from engine import __version__

    started, table_info = result.started or "", result.prepared.table
    name = result.config.input_label or Path(table_info.path).name or NOT_AVAILABLE
    return {
        "input": str(name),
        "sha256": str(table_info.sha256 or NOT_AVAILABLE),
        "date": started[:10] if len(started) >= 10 else NOT_AVAILABLE,
        "version": str(__version__),
        "verdict": header_words(result.verdict),
        "colour": verdict_words(result.verdict)[1],
    }


def attack_line(
    mean: float | None, se: float | None, limit: float | None, upper: float | None = None
) -> str:
    """``"0.512 ± 0.004, upper bound 0.519 (limit 0.55) ✓"``: the fitted AUC ± SE and the upper
    bound the rule compares with the limit (``upper``; mean + 1.645 SE when not given), green
    tick or red cross.

    Example:
        >>> "below the limit" in attack_line(0.51, 0.004, 0.55), attack_line(None, None, 0.55)
        (True, 'not available')
        >>> "upper bound 0.552" in attack_line(0.54, 0.004, 0.55, 0.552)
        True
        >>> "upper bound 0.5497 (limit 0.55)" in attack_line(0.54, 0.004, 0.55, 0.5497)
        True
    """
    if mean is None or finite(mean) is None:
        return NOT_AVAILABLE
    if upper is None or finite(upper) is None:
        upper = float(mean) + 1.6449 * float(se or 0.0)
    ok = limit is not None and upper < float(limit)
    mark = (
        f'<font color="{GREEN}"><b>{CHECK} below the limit</b></font>'
        if ok
        else f'<font color="{RED}"><b>{CROSS} not below the limit</b></font>'
    )
    spread = f" ± {decimals(se)}" if finite(se) is not None else ""
    # four decimals where three would print the limit itself (0.5497 is not 0.550; issue 44)
    near = limit is not None and round(float(upper), 3) == round(float(limit), 3)
    shown = f"{float(upper):.4f}" if near else decimals(upper)
    bound = f", upper bound {shown}" if se is not None else ""
    return f"<b>{decimals(mean)}</b>{spread}{bound} (limit {decimals(limit, 2)}) {mark}"


FEW_ROWS = 200  # below this, answers from the synthetic table are noisy (issue 27)


def few_rows_warning(rows: int) -> str:
    """The plain warning for a table of fewer than :data:`FEW_ROWS` rows (empty otherwise):
    released, not refused for its size alone, but every answer from so few rows is noisy.

    Example:
        >>> few_rows_warning(150)[:40]
        'This table has only 150 rows. The synthe'
        >>> few_rows_warning(200)
        ''
    """
    if rows >= FEW_ROWS:
        return ""
    return (
        f"This table has only {rows} rows. The synthetic copy is released, but answers from so "
        "few rows are noisy: estimates and their confidence intervals can differ from the real "
        "table's by more than on a larger table, and the privacy audit's own figures are less "
        "certain. Check any result that matters against the real data."
    )


def summary_page(result: RunResult, sheet: dict[str, Any], width: float) -> list[Any]:
    """Page 1: the verdict banner, why (override or refusal), key numbers and provenance."""
    from reportlab.platypus import Spacer

    info = header_info(result)
    out: list[Any] = [
        paragraph("Synthetic data release: privacy report", sheet, "title"),
        paragraph(f"Input: {text(info['input'])}", sheet, "subtitle"),
        Spacer(1, 8),
        _banner(result, sheet, width),
        Spacer(1, 6),
    ]
    if result.verdict == "released with override":
        override = override_sentence(result.config, result.audit, result.release.w)
        out.append(paragraph(text(override), sheet, "warn"))
    if result.refusal is not None:
        out.append(paragraph(f"<b>Reason:</b> {text(result.refusal.reason)}", sheet, "warn"))
    few = few_rows_warning(len(result.prepared.real)) if result.refusal is None else ""
    if few:
        out.append(paragraph(text(few), sheet, "warn"))
    out += [
        paragraph("Key numbers", sheet, "h2"),
        table(key_rows(result), [0.34 * width, 0.66 * width], header=False),
        paragraph("Provenance", sheet, "h2"),
        table(provenance_rows(result, info, sheet), [0.34 * width, 0.66 * width], header=False),
        *released_files_block(result, sheet, width),
        Spacer(1, 6),
        paragraph(HOW_TO_READ, sheet, "small"),
    ]
    return out


def _banner(result: RunResult, sheet: dict[str, Any], width: float) -> Any:
    """The coloured verdict box with its one-line meaning."""
    from reportlab.lib import colors
    from reportlab.platypus import Paragraph, Table, TableStyle

    headline, colour, meaning = verdict_words(result.verdict)
    banner = Table(
        [[Paragraph(headline, sheet["verdict"])], [Paragraph(text(meaning), sheet["meaning"])]],
        colWidths=[width],
    )
    banner.setStyle(
        TableStyle(
            [
                ("BACKGROUND", (0, 0), (-1, -1), colors.HexColor(colour)),
                ("TOPPADDING", (0, 0), (-1, -1), 6),
                ("BOTTOMPADDING", (0, 0), (-1, -1), 7),
            ]
        )
    )
    return banner


def key_rows(result: RunResult) -> list[list[Any]]:
    """Chosen w, both attacks vs the limit, columns, rows, closeness in words, risk and ε."""
    rows = _attack_rows(result)
    columns = list(result.prepared.schema.columns)
    if columns:
        used = [c for c in columns if c.action == "synthesize"]
        dropped = [text(c.name) for c in columns if c.action != "synthesize"]
        listed = (
            f" ({', '.join(dropped[:8])}{', …' if len(dropped) > 8 else ''})" if dropped else ""
        )
        rows.append(
            [
                "Columns",
                f"{len(used)} synthesized; {len(dropped)} dropped and never exported{listed}",
            ]
        )
    prep, release = result.prepared, result.released
    used_rows = len(prep.real)
    rows.append(
        [
            "Rows",
            f"in the file: {safe_total_text(prep.table.rows, used_rows)}; "
            f"used{used_note(prep.rows_dropped)}: "
            f"{safe_count(used_rows)}; released: "
            f"{safe_count(release.rows) if release is not None else 'none'}",
        ]
    )
    if release is None:
        return rows
    metrics, eps = release.metrics, release.epsilon
    verdict = result.fidelity.verdict
    if verdict is not None:
        colour = GREEN if verdict.same_conclusions else RED
        rows.append(
            [
                "Same answers as the real table? (fidelity)",
                f'<font color="{colour}"><b>{text(verdict.headline)}</b></font>'
                + text(verdict.after_headline)
                + " Details in section 3.",
            ]
        )
    rows.append(
        [
            "How close is a synthetic row to its own real record?",
            text(closer_sentence(metrics.closer_probability))
            + "<br/>"
            + text(rank_sentence(metrics.median_rank, metrics.exact)),
        ]
    )
    rows.append(["Per-record risk", text(risk_sentence(release))])
    found = getattr(release, "disclosure", None)
    if found is not None:  # issue 29: identity and attribute disclosure against a fresh sample
        verdict_words = (
            "no more than a fresh sample of real patients"
            if found.holds
            else "more than a fresh sample of real patients (exported with the risk acknowledged)"
        )
        rows.append(
            [
                "What knowing a patient's details reveals",
                f"Knowing {text(', '.join(found.keys))}, the synthetic file discloses "
                f"{verdict_words}. Details in section 2b.",
            ]
        )
    rows.append(
        [
            "Formal privacy bound (ε)",
            f"local ε = {plain(eps.value)} at δ = {plain(eps.delta)}; an estimate under "
            "assumptions, weak when large; the audit above is the operational control (see the "
            "privacy section).",
        ]
    )
    return rows


def _attack_rows(result: RunResult) -> list[list[Any]]:
    """The released w (or why none) and both attacks' AUC at the nearest audited point."""
    audit, w = result.audit, result.release.w
    limit = audit.threshold if audit is not None else result.config.auc_max
    point = result.curve_point(w)
    if w is None:
        w_text = (
            "none: no perturbation weight met the limit" if audit is not None else NOT_AVAILABLE
        )
        at = f"at the lowest tested w ({decimals(point.w, 2)})" if point is not None else ""
    else:
        how = (
            "the user chose this w"
            if result.config.forced_w is not None
            else "the largest w that met the limit"
        )
        if str(getattr(result.release, "chosen_by", "")).startswith("the disclosure rule"):
            how = "lowered by the disclosure rule, section 2b"  # issue 29
        w_text = f"<b>{decimals(w, 2)}</b> ({how})"
        at = f"at w = {decimals(point.w, 2)}" if point is not None else ""
    rows = [["Perturbation weight w", w_text]]
    for name, (raw, fit, se, upper) in ATTACK_FIELDS.items():
        if point is None:
            if name != "Released-columns attack":
                rows.append(
                    [f"{name} AUC (fitted ± SE, upper bound)", attack_line(None, None, limit)]
                )
            continue
        if finite(getattr(point, fit, None)) is not None:
            line = attack_line(
                getattr(point, fit), getattr(point, se), limit, getattr(point, upper)
            )
        elif finite(getattr(point, raw, None)) is not None:  # no fit recorded: the raw mean
            line = attack_line(getattr(point, raw), getattr(point, raw + "_se", None), limit)
        else:
            continue  # an attack that did not run (the released columns of a large table)
        rows.append([f"{name} AUC {at} (fitted ± SE, upper bound)", line])
    return rows


ATTACK_FIELDS = {
    "Distance attack": ("auc", "auc_fit", "auc_fit_se", "upper_distance"),
    "Density attack": ("density_auc", "density_fit", "density_fit_se", "upper_density"),
    "Released-columns attack": (
        "released_auc",
        "released_fit",
        "released_fit_se",
        "upper_released",
    ),
}


def provenance_rows(
    result: RunResult, info: dict[str, str], sheet: dict[str, Any]
) -> list[list[Any]]:
    """Input, hash, date, tool version, seeded yes/no, output format."""
    seeded = (
        "yes (reproducible audit; the seed is not shown)"
        if result.config.seed is not None
        else "no (noise from the operating system's secure randomness)"
    )
    return [
        ["Input", text(info["input"])],
        ["Input SHA-256", paragraph(text(info["sha256"]), sheet, "mono")],
        ["Date of the run", text(info["date"])],
        ["Tool", f"latent-synth {text(info['version'])}"],
        ["Seeded", seeded],
        ["Synthetic file format", text(result.config.file_format)],
    ]


FILES_NOTE = (
    "The SHA-256 of every file written with this report, so the checker can match each file "
    "reviewed to this page. The report itself is not listed (a file cannot hold its own hash); "
    "audit.json and results.json, written after it, record the report's SHA-256 beside these."
)


def released_files_block(result: RunResult, sheet: dict[str, Any], width: float) -> list[Any]:
    """The files written with the report and their SHA-256 (all but the report itself and the
    two records written after it); nothing when no file was written yet."""
    files = [
        (name, digest)
        for name, digest in (result.outputs or {}).items()
        if name not in ("report.pdf", "audit.json", "results.json")
    ]
    if not files:
        return []
    rows: list[list[Any]] = [["file", "SHA-256"]]
    rows += [[text(name), paragraph(text(digest), sheet, "mono")] for name, digest in files]
    return [
        paragraph("Files written with this report", sheet, "h2"),
        table(rows, [0.25 * width, 0.75 * width]),
        paragraph(FILES_NOTE, sheet, "small"),
    ]
