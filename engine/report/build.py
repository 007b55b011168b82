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
    output rules; Shen & Tian (2025) for the method; docs/method.md sections 5, 6 and 10.

Sections: :mod:`engine.report.sections` (one module each); layout primitives:
:mod:`engine.report.layout`; figures: :mod:`engine.report.figures` and :mod:`engine.report.forest`;
wording: :mod:`engine.report.wording`; disclosure rules: :mod:`engine.report.data`.
"""

from __future__ import annotations

import io
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.report import warm
from engine.report.layout import FONT, FONT_BOLD, GREY, RED, guarded, register_fonts, styles
from engine.report.sections.summary import header_info

if TYPE_CHECKING:
    from collections.abc import Callable

    from engine.pipeline.results import RunResult


# ------------------------------------------------------------------------------ public API


def build_report(result: RunResult, path: Path | str) -> Path:
    """Render the report for ``result`` (a ``RunResult``) and write it atomically to ``path``.

    The PDF is produced in memory first, so an error leaves no partial file; the input table's
    path is refused as a target.

    References: :func:`engine.files.write.atomic_write_bytes`.
    """
    from engine.files.write import atomic_write_bytes

    data = render_report(result)
    return atomic_write_bytes(Path(path), data, forbid=result.config.input)


def render_report(result: RunResult) -> bytes:
    """The whole report as PDF bytes (deterministic for a given result and day)."""
    from reportlab import rl_config
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.units import cm
    from reportlab.platypus import PageBreak, SimpleDocTemplate

    # images as binary Flate streams, not ASCII85 text: reportlab's pure-Python ASCII85 encoder
    # was 0.2 s of a small report, and the file is a quarter smaller
    rl_config.useA85 = 0
    warm.wait()  # a warm-up of the same libraries still running (engine.report.warm)
    register_fonts()
    paragraph_styles = styles()
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
    for section in sections():
        part = guarded(section, result, paragraph_styles, doc.width)
        if part and story:
            story.append(PageBreak())
        story.extend(part)
    doc.build(story, canvasmaker=numbered_canvas(info))
    return buf.getvalue()


def sections() -> tuple[Callable[[RunResult, dict[str, Any], float], list[Any]], ...]:
    """The section builders in print order (:mod:`engine.report.sections`)."""
    from engine.report.sections.copies import copies_section
    from engine.report.sections.data import data_page
    from engine.report.sections.disclosure_risk import disclosure_section
    from engine.report.sections.dp import dp_section
    from engine.report.sections.method import method_section
    from engine.report.sections.privacy import privacy_section
    from engine.report.sections.summary import summary_page
    from engine.report.sections.utility import utility_section

    return (
        summary_page,
        data_page,
        privacy_section,
        disclosure_section,
        utility_section,
        copies_section,
        method_section,
        dp_section,
    )


# ------------------------------------------------------------------------------ page furniture


class _DayStamp:
    """reportlab's TimeStamp fixed to 00:00 UTC of the run's day (the PDF CreationDate)."""

    def __init__(self, day: str) -> None:
        try:
            t = datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC).timestamp()
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
            colour = info.get("colour") or RED
            self.setFont(FONT, 7.5)
            self.setFillColor(colors.HexColor(GREY))
            self.drawString(
                1.8 * cm,
                height - 1.1 * cm,
                f"latent-synth {info['version']} · privacy report · {info['input']}",
            )
            self.setFont(FONT_BOLD, 7.5)
            self.setFillColor(colors.HexColor(colour))
            self.drawRightString(width - 1.8 * cm, height - 1.1 * cm, info["verdict"])
            self.setFont(FONT, 7.5)
            self.setFillColor(colors.HexColor(GREY))
            digest = info["sha256"][:16] + "…" if len(info["sha256"]) > 16 else info["sha256"]
            self.drawString(1.8 * cm, 0.9 * cm, f"Input SHA-256 {digest} · {info['date']}")
            self.drawRightString(width - 1.8 * cm, 0.9 * cm, f"page {self._pageNumber} of {total}")

    return NumberedCanvas
