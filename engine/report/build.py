"""The PDF privacy and fidelity report an output checker can sign from its first page.

::

    build_report(result, path)
      └── render_report(result) -> bytes        (in memory; then one atomic write)
            page 1   verdict, w, attack AUCs vs the limit, plain-words risk, provenance
            data     columns used / dropped and why, rows dropped, clipping counts
            privacy  AUC vs w, ROC, TPR at low FPR, distances, per-record risk, ε, threat model
            utility  box plots, level shares, Kaplan-Meier, correlations, regression + forest
            method   method, model, settings (seed: yes/no only), software, references

Why reportlab: BSD licence (bundles into a closed installer without copyleft duties), the
platypus layout engine (flowing tables and paragraphs), TrueType embedding with subsetting so
≥ ± µ ε τ² print, and an *invariant* mode (fixed document ID and timestamp) so the same run gives
the same bytes. fpdf2 (LGPL) would also do; reportlab was already a dependency.

Output rules for the report itself (ACRO defaults, see :mod:`engine.report.data`): counts below
10 (zero included) print as "< 10"; no statistic of fewer than 10 records; figures of real data
are aggregates embedded as raster images (:mod:`engine.report.figures`); no individual record; the
seed is never printed, only whether one was set. The date is the run's day (no clock time), so
two runs with the same seed on the same day give byte-identical files.

References:
    reportlab user guide (platypus, ``rl_config.invariant``, TTF embedding); ACRO (AI-SDC/ACRO)
    output rules; Shen & Tian (2025) for the method; METHOD.md sections 5, 6 and 10.

Example:
    >>> from types import SimpleNamespace
    >>> pdf = render_report(SimpleNamespace(verdict="refused", release={"refused": "no w met 0.55"}))
    >>> pdf[:5], pdf.rstrip()[-5:]
    (b'%PDF-', b'%%EOF')
"""

from __future__ import annotations

import io
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from engine.disclosure import safe_total_text
from engine.report.data import NOT_AVAILABLE, fmt, pick, safe_count, sci
from engine.report.layout import (
    CHECK,
    CROSS,
    FONT,
    FONT_BOLD,
    GREEN,
    GREY,
    RED,
    guarded,
    register_fonts,
    styles,
    table,
    text,
)
from engine.report.wording import (
    closer_sentence,
    override_sentence,
    rank_sentence,
    risk_sentence,
    verdict_words,
)

# ------------------------------------------------------------------------------ public API


def build_report(result: Any, path: Path | str) -> Path:
    """Render the report for ``result`` (a ``RunResult``) and write it atomically to ``path``.

    The PDF is produced in memory first, so an error leaves no partial file; the input table's
    path is refused as a target.

    References: :func:`engine.tables.write.atomic_write_bytes`.
    """
    from engine.tables.write import atomic_write_bytes

    data = render_report(result)
    forbid = pick(result, "config", "input")
    return atomic_write_bytes(Path(path), data, forbid=forbid)


def render_report(result: Any) -> bytes:
    """The whole report as PDF bytes (deterministic for a given result and day)."""
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.units import cm
    from reportlab.platypus import PageBreak, SimpleDocTemplate

    from engine.report import pages
    from engine.report.copies import copies_section
    from engine.report.dp import dp_section

    register_fonts()
    st = styles()
    info = header_info(result)
    buf = io.BytesIO()
    doc = SimpleDocTemplate(
        buf,
        pagesize=A4,
        leftMargin=1.8 * cm,
        rightMargin=1.8 * cm,
        topMargin=1.7 * cm,
        bottomMargin=1.6 * cm,
        title=f"Privacy report: {info['input']}",
        author="latent-synth",
        subject="Synthetic data release: privacy audit and fidelity",
        creator=f"latent-synth {info['version']}",
        producer="latent-synth (reportlab)",
        invariant=1,
        initialFontName=FONT,
    )
    story: list[Any] = []
    sections = (
        summary_page,
        data_page,
        pages.privacy_section,
        pages.utility_section,
        copies_section,
        pages.method_section,
        dp_section,
    )
    for section in sections:
        part = guarded(section, result, st, doc.width)
        if part and story:
            story.append(PageBreak())
        story.extend(part)
    doc.build(story, canvasmaker=numbered_canvas(info))
    return buf.getvalue()


# ------------------------------------------------------------------------------ page furniture


def header_info(result: Any) -> dict[str, str]:
    """Input name, hash, day, version and verdict for the first page, header and footer."""
    from engine import __version__

    started = str(pick(result, "started", default=""))
    return {
        "input": str(
            pick(result, "config", "input_label")
            or getattr(pick(result, "prepared", "table", "path"), "name", None)
            or getattr(pick(result, "config", "input"), "name", None)
            or NOT_AVAILABLE
        ),
        "sha256": str(pick(result, "prepared", "table", "sha256", default=NOT_AVAILABLE)),
        "date": started[:10] if len(started) >= 10 else NOT_AVAILABLE,
        "version": str(__version__),
        "verdict": verdict_words(pick(result, "verdict"))[0],
    }


class _DayStamp:
    """reportlab's TimeStamp fixed to 00:00 UTC of the run's day (the PDF CreationDate)."""

    def __init__(self, day: str) -> None:
        try:
            t = datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=timezone.utc).timestamp()
        except ValueError:
            t = 946684800.0  # reportlab's invariant date, 2000-01-01
        lt = time.gmtime(t)
        self.t, self.lt, self.YMDhms = t, lt, tuple(lt)[:6]
        self.dhh = self.dmm = 0
        self.tzname = "UTC"


def numbered_canvas(info: dict[str, str]) -> Any:
    """A canvas class that writes the header and "page i of n" footer on every page."""
    from reportlab.lib import colors
    from reportlab.lib.units import cm
    from reportlab.pdfgen.canvas import Canvas

    class NumberedCanvas(Canvas):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._doc._timeStamp = _DayStamp(info["date"])
            self._saved: list[dict[str, Any]] = []

        def showPage(self) -> None:  # noqa: N802 - reportlab API
            self._saved.append(dict(self.__dict__))
            self._startPage()

        def save(self) -> None:
            total = len(self._saved)
            for state in self._saved:
                self.__dict__.update(state)
                self._furniture(total)
                Canvas.showPage(self)
            Canvas.save(self)

        def _furniture(self, total: int) -> None:
            width, height = self._pagesize
            colour = GREEN if info["verdict"] == "RELEASED" else RED
            self.setFont(FONT, 7.5)
            self.setFillColor(colors.HexColor(GREY))
            self.drawString(
                1.8 * cm,
                height - 1.1 * cm,
                f"latent-synth {info['version']} · privacy report · {info['input']}",
            )
            self.setFont(FONT_BOLD, 7.5)
            self.setFillColor(colors.HexColor(colour))
            self.drawRightString(width - 1.8 * cm, height - 1.1 * cm, f"Verdict: {info['verdict']}")
            self.setFont(FONT, 7.5)
            self.setFillColor(colors.HexColor(GREY))
            digest = info["sha256"][:16] + "…" if len(info["sha256"]) > 16 else info["sha256"]
            self.drawString(1.8 * cm, 0.9 * cm, f"Input SHA-256 {digest} · {info['date']}")
            self.drawRightString(width - 1.8 * cm, 0.9 * cm, f"page {self._pageNumber} of {total}")

    return NumberedCanvas


# ------------------------------------------------------------------------------ page 1


def curve_point(audit: Any, w: Any) -> Any:
    """The audit's curve point nearest to ``w`` (None when there is no curve)."""
    curve = list(pick(audit, "curve", default=()) or ())
    if not curve:
        return None
    if w is None:
        return min(curve, key=lambda p: float(pick(p, "w", default=0.0)))
    return min(curve, key=lambda p: abs(float(pick(p, "w", default=0.0)) - float(w)))


def attack_line(mean: Any, se: Any, limit: Any) -> str:
    """``"0.512 ± 0.004 (limit 0.55) ✓"``: mean ± SE against the limit, green tick or red cross."""
    if mean is None:
        return NOT_AVAILABLE
    upper = float(mean) + float(se or 0.0)
    ok = limit is not None and upper < float(limit)
    mark = (
        f'<font color="{GREEN}"><b>{CHECK} below the limit</b></font>'
        if ok
        else f'<font color="{RED}"><b>{CROSS} not below the limit</b></font>'
    )
    spread = f" ± {fmt(se)}" if se is not None else ""
    return f"<b>{fmt(mean)}</b>{spread} (limit {fmt(limit, 2)}) {mark}"


def summary_page(result: Any, st: dict[str, Any], width: float) -> list[Any]:
    """Page 1: the verdict and what the checker needs to sign."""
    from reportlab.lib import colors
    from reportlab.platypus import Paragraph, Spacer, Table, TableStyle

    info = header_info(result)
    cfg, audit, release = (
        pick(result, "config"),
        pick(result, "audit"),
        pick(result, "release", default={}),
    )
    headline, colour, meaning = verdict_words(pick(result, "verdict"))
    out: list[Any] = [
        Paragraph("Synthetic data release: privacy report", st["title"]),
        Paragraph(f"Input: {text(info['input'])}", st["subtitle"]),
        Spacer(1, 8),
    ]
    banner = Table(
        [[Paragraph(headline, st["verdict"])], [Paragraph(text(meaning), st["meaning"])]],
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
    out += [banner, Spacer(1, 6)]
    verdict = str(pick(result, "verdict", default=""))
    w = pick(release, "w")
    if verdict == "released with override":
        out.append(Paragraph(text(override_sentence(cfg, audit, w)), st["warn"]))
    if verdict == "refused":
        reason = pick(release, "refused", default="the audit found no safe perturbation weight")
        out.append(Paragraph(f"<b>Reason:</b> {text(reason)}", st["warn"]))
    out += [
        Paragraph("Key numbers", st["h2"]),
        table(key_rows(result), [0.34 * width, 0.66 * width], header=False),
    ]
    out += [
        Paragraph("Provenance", st["h2"]),
        table(provenance_rows(result, info, st), [0.34 * width, 0.66 * width], header=False),
    ]
    out.append(Spacer(1, 6))
    out.append(
        Paragraph(
            "How to read this: the <b>membership AUC</b> measures how well an attacker who holds real records can "
            "tell whether a person's record was used to make the synthetic table; 0.5 means no better than a coin "
            "toss, 1.0 means certain. <b>w</b> is the share of the real record kept in the model's hidden space "
            "(0 = pure noise, 1 = the real record unchanged). Counts below 10 are shown as “&lt; 10”. Later pages give "
            "the data handling, the full audit, the formal ε statement, the threat model and the fidelity checks.",
            st["small"],
        )
    )
    return out


def key_rows(result: Any) -> list[list[Any]]:
    """Chosen w, both attacks vs the limit, rows, closer probability and rank in words."""
    cfg, audit, release = (
        pick(result, "config"),
        pick(result, "audit"),
        pick(result, "release", default={}),
    )
    limit = (
        pick(audit, "threshold") if pick(audit, "threshold") is not None else pick(cfg, "auc_max")
    )
    w = pick(release, "w")
    point = curve_point(audit, w)
    if w is None:
        w_text = (
            "none: no perturbation weight met the limit" if audit is not None else NOT_AVAILABLE
        )
        at = f"at the lowest tested w ({fmt(pick(point, 'w'), 2)})" if point is not None else ""
    else:
        how = (
            "the user chose this w"
            if pick(cfg, "w") is not None
            else "the largest w that met the limit"
        )
        w_text = f"<b>{fmt(w, 2)}</b> ({how})"
        at = f"at w = {fmt(pick(point, 'w'), 2)}" if point is not None else ""
    rows: list[list[Any]] = [["Perturbation weight w", w_text]]
    rows.append(
        [f"Distance attack AUC {at}", attack_line(pick(point, "auc"), pick(point, "auc_se"), limit)]
    )
    rows.append(
        [
            f"Density attack AUC {at}",
            attack_line(pick(point, "density_auc"), _se(point, "density"), limit),
        ]
    )
    prep = pick(result, "prepared")
    cols = list(pick(prep, "schema", "columns", default=()) or ())
    if cols:
        used = [c for c in cols if pick(c, "action") == "synthesize"]
        dropped = [text(pick(c, "name")) for c in cols if pick(c, "action") != "synthesize"]
        rows.append(
            [
                "Columns",
                f"{len(used)} synthesized; {len(dropped)} dropped and never exported"
                + (
                    f" ({', '.join(dropped[:8])}{', …' if len(dropped) > 8 else ''})"
                    if dropped
                    else ""
                ),
            ]
        )
    rows.append(
        [
            "Rows",
            f"in the file: {safe_total_text(pick(prep, 'table', 'rows'), _len(pick(prep, 'real')))}; "
            "used (complete cases): "
            f"{safe_count(_len(pick(prep, 'real')))}; released: "
            f"{safe_count(pick(release, 'rows')) if w is not None else 'none'}",
        ]
    )
    if w is not None:
        rows.append(
            [
                "How close is a synthetic row to its own real record?",
                text(closer_sentence(pick(release, "closer_probability")))
                + "<br/>"
                + text(rank_sentence(pick(release, "median_rank"), pick(release, "exact"))),
            ]
        )
        rows.append(["Per-record risk", text(risk_sentence(release))])
        eps = pick(release, "epsilon", default={})
        rows.append(
            [
                "Formal bound (Theorem 2)",
                f"local ε = {sci(pick(eps, 'value'))} at δ = {sci(pick(eps, 'delta'))}; an estimate under "
                "assumptions, weak when large; the audit above is the operational control (see the "
                "privacy section).",
            ]
        )
    return rows


def _se(point: Any, prefix: str) -> Any:
    """The attack's standard error of the mean AUC (None when the audit did not store it)."""
    return pick(point, f"{prefix}_auc_se")


def _len(frame: Any) -> int | None:
    try:
        return len(frame)
    except TypeError:
        return None


def provenance_rows(result: Any, info: dict[str, str], st: dict[str, Any]) -> list[list[Any]]:
    """Input, hash, date, tool version, seeded yes/no, output format."""
    from reportlab.platypus import Paragraph

    cfg = pick(result, "config")
    seeded = (
        "yes (reproducible audit; the seed is not shown)"
        if pick(cfg, "seed") is not None
        else "no (noise from the operating system's secure randomness)"
    )
    return [
        ["Input", text(info["input"])],
        ["Input SHA-256", Paragraph(text(info["sha256"]), st["mono"])],
        ["Date of the run", text(info["date"])],
        ["Tool", f"latent-synth {text(info['version'])}"],
        ["Seeded", seeded],
        ["Synthetic file format", text(pick(cfg, "fmt", default=NOT_AVAILABLE))],
    ]


# ------------------------------------------------------------------------------ data page


def data_page(result: Any, st: dict[str, Any], width: float) -> list[Any]:
    """Columns used and dropped (and why), rows dropped, clipping counts."""
    from reportlab.platypus import Paragraph

    schema = pick(result, "prepared", "schema")
    out: list[Any] = [Paragraph("1. The data", st["h1"])]
    cols = list(pick(schema, "columns", default=()) or ())
    used = [c for c in cols if pick(c, "action") == "synthesize"]
    dropped = [c for c in cols if pick(c, "action") != "synthesize"]
    out.append(Paragraph("Columns used (modelled and exported)", st["h2"]))
    if used:
        out.append(_column_table(used, "how it was recognised", width))
    else:
        out.append(Paragraph("The column list is not available.", st["body"]))
    out.append(Paragraph("Columns dropped (never modelled, never exported)", st["h2"]))
    if not cols:
        out.append(Paragraph("Not available.", st["body"]))
    elif dropped:
        out.append(_column_table(dropped, "why it was dropped", width))
    else:
        out.append(Paragraph("None: every column of the input was used.", st["body"]))
    out += [
        Paragraph("Rows", st["h2"]),
        table(row_rows(result), [0.6 * width, 0.4 * width], header=False),
    ]
    out += [Paragraph("Values clipped to the allowed range", st["h2"])]
    clipped = pick(result, "release", "clipped", default={}) or {}
    if clipped:
        out.append(
            Paragraph(
                "A synthetic value outside a column's allowed range (from its 10th smallest to "
                "its 10th largest real value unless given, so no real extreme held by fewer than "
                "10 people is reproduced) is set to the nearest bound. Counts of synthetic values "
                "per column:",
                st["body"],
            )
        )
        rows = [["column", "values clipped"]] + [
            [text(k), safe_count(v)] for k, v in sorted(clipped.items())
        ]
        out.append(table(rows, [0.4 * width, 0.25 * width]))
    else:
        out.append(
            Paragraph(
                "No clipping was recorded (no synthetic table, or no bounded column).", st["body"]
            )
        )
    out += non_finite_paragraphs(result, st)
    return out


def non_finite_paragraphs(result: Any, st: dict[str, Any]) -> list[Any]:
    """What happened to synthetic rows the model decoded to an infinite or undefined value."""
    from reportlab.platypus import Paragraph

    info = pick(result, "release", "non_finite", default=None) or {}
    redrawn, dropped = int(info.get("rows_redrawn", 0)), int(info.get("rows_dropped", 0))
    if not info:
        return []
    if not redrawn and not dropped:
        line = "Every synthetic row decoded to finite values; none had to be drawn again."
    else:
        line = (
            f"{redrawn} synthetic rows decoded to an infinite or undefined value and were drawn "
            f"again with fresh noise; {dropped} still failed after five draws and were left out "
            "of the synthetic table (never replaced by an average)."
        )
    return [Paragraph("Rows drawn again", st["h2"]), Paragraph(line, st["body"])]


def _column_table(columns: list[Any], why: str, width: float) -> Any:
    """Name, kind and the plain-words reason of each column."""
    rows: list[list[Any]] = [["column", "kind", why]]
    rows += [
        [text(pick(c, "name")), text(pick(c, "kind")), text(pick(c, "reason", default=""))]
        for c in columns
    ]
    return table(rows, [0.25 * width, 0.13 * width, 0.62 * width])


def row_rows(result: Any) -> list[list[Any]]:
    """Rows in the file, selected, dropped (by reason) and used; every count via safe_count."""
    prep = pick(result, "prepared")
    table_rows, selected = pick(prep, "table", "rows"), _len(pick(prep, "table", "frame"))
    used = _len(pick(prep, "real"))
    rows = [["Rows in the input file", safe_total_text(table_rows, used)]]
    if selected is not None and table_rows is not None and selected != table_rows:
        rows.append(["Rows selected (one sub-study)", safe_total_text(selected, used)])
    dropped = pick(prep, "rows_dropped", default={}) or {}
    if isinstance(dropped, dict):
        if "rows_dropped" in dropped:
            rows.append(
                [
                    "Rows dropped (a missing value in a used column)",
                    safe_count(dropped["rows_dropped"]),
                ]
            )
        by_column = dropped.get("missing_by_column") or {}
        for col, n in by_column.items() if isinstance(by_column, dict) else ():
            rows.append([f"Missing values in {text(col)}", safe_count(n)])
        for key, value in dropped.items():
            if key in ("rows_in", "rows_used", "rows_dropped", "missing_by_column", "reason"):
                continue
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                rows.append(
                    [f"Rows dropped: {text(str(key).replace('_', ' '))}", safe_count(value)]
                )
    rows.append(
        ["Rows used to train and audit (complete cases)", safe_count(_len(pick(prep, "real")))]
    )
    reason = pick(
        dropped,
        "reason",
        default="rows with a missing value in a used column are left out "
        "(complete cases, as in the paper)",
    )
    rows.append(
        [
            "Why rows are dropped",
            text(str(reason)[:1].upper() + str(reason)[1:]) + "; a missing value "
            "in a dropped column (e.g. an identifier) does not count.",
        ]
    )
    return rows
