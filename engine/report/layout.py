"""Layout primitives every report section uses: fonts, paragraph styles, tables, images, text
escaping and the guard that turns a failing section into a sentence.

The sections (:mod:`engine.report.sections`, one module each) and the document
(:mod:`engine.report.build`) import from here, never from each other's modules, so the report
has no import cycle.

References:
    reportlab user guide (platypus, TTF embedding).

Example:
    >>> text("a < b")
    'a &lt; b'
"""

from __future__ import annotations

import io
import traceback
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

FONT = "DejaVuSans"
FONT_BOLD = "DejaVuSans-Bold"
FONT_MONO = "DejaVuSansMono"
_FONT_FILES = {
    FONT: "DejaVuSans.ttf",
    FONT_BOLD: "DejaVuSans-Bold.ttf",
    "DejaVuSans-Oblique": "DejaVuSans-Oblique.ttf",
    "DejaVuSans-BoldOblique": "DejaVuSans-BoldOblique.ttf",
    FONT_MONO: "DejaVuSansMono.ttf",
}
CHECK, CROSS = "✓", "✗"
GREEN, RED, GREY = "#1a7f37", "#c00000", "#555555"


def guarded(section: Any, result: Any, sheet: dict[str, Any], width: float) -> list[Any]:
    """Run one section builder; a failure becomes a sentence in the report, not a crash."""
    from reportlab.platypus import Paragraph

    try:
        return list(section(result, sheet, width))
    except Exception as err:  # noqa: BLE001 - the report must still be written
        where = traceback.extract_tb(err.__traceback__)[-1]
        return [
            Paragraph(
                f"This part of the report could not be drawn ({escape(type(err).__name__)} in "
                f"{escape(Path(where.filename).name)}:{where.lineno}); the numbers are in "
                "audit.json.",
                sheet["warn"],
            )
        ]


# ------------------------------------------------------------------------------ fonts and styles


def register_fonts() -> None:
    """Register DejaVu Sans (regular, bold, oblique) and DejaVu Sans Mono from matplotlib's copy."""
    import matplotlib
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont

    if FONT in pdfmetrics.getRegisteredFontNames():
        return
    folder = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
    for name, file in _FONT_FILES.items():
        pdfmetrics.registerFont(TTFont(name, str(folder / file)))
    pdfmetrics.registerFontFamily(
        FONT,
        normal=FONT,
        bold=FONT_BOLD,
        italic="DejaVuSans-Oblique",
        boldItalic="DejaVuSans-BoldOblique",
    )


def styles() -> dict[str, Any]:
    """Paragraph styles, all in the embedded TTF."""
    from reportlab.lib import colors
    from reportlab.lib.styles import ParagraphStyle

    base = ParagraphStyle("body", fontName=FONT, fontSize=9.2, leading=12.4, spaceAfter=4)
    return {
        "body": base,
        "small": ParagraphStyle(
            "small", parent=base, fontSize=7.8, leading=10, textColor=colors.HexColor(GREY)
        ),
        "cell": ParagraphStyle("cell", parent=base, fontSize=8.2, leading=10.2, spaceAfter=0),
        "cellb": ParagraphStyle(
            "cellb", parent=base, fontName=FONT_BOLD, fontSize=8.2, leading=10.2, spaceAfter=0
        ),
        "mono": ParagraphStyle(
            "mono", parent=base, fontName=FONT_MONO, fontSize=7.6, leading=10, spaceAfter=0
        ),
        "title": ParagraphStyle(
            "title", parent=base, fontName=FONT_BOLD, fontSize=16, leading=20, spaceAfter=2
        ),
        "subtitle": ParagraphStyle(
            "subtitle", parent=base, fontSize=10, leading=13, textColor=colors.HexColor(GREY)
        ),
        "h1": ParagraphStyle(
            "h1",
            parent=base,
            fontName=FONT_BOLD,
            fontSize=13.5,
            leading=17,
            spaceBefore=2,
            spaceAfter=6,
            keepWithNext=1,
        ),
        "h2": ParagraphStyle(
            "h2",
            parent=base,
            fontName=FONT_BOLD,
            fontSize=10.5,
            leading=14,
            spaceBefore=8,
            spaceAfter=4,
            keepWithNext=1,
        ),
        "h2split": ParagraphStyle(
            "h2split",
            parent=base,
            fontName=FONT_BOLD,
            fontSize=10.5,
            leading=14,
            spaceBefore=8,
            spaceAfter=4,
        ),
        "verdict": ParagraphStyle(
            "verdict",
            parent=base,
            fontName=FONT_BOLD,
            fontSize=17,
            leading=21,
            textColor=colors.white,
            alignment=1,
        ),
        "meaning": ParagraphStyle(
            "meaning",
            parent=base,
            fontSize=10,
            leading=13,
            alignment=1,
            spaceAfter=0,
            textColor=colors.white,
        ),
        "warn": ParagraphStyle(
            "warn", parent=base, textColor=colors.HexColor(RED), fontName=FONT_BOLD
        ),
        "caption": ParagraphStyle(
            "caption",
            parent=base,
            fontSize=7.8,
            leading=10,
            textColor=colors.HexColor(GREY),
            spaceAfter=8,
        ),
    }


def table(
    rows: list[list[Any]], widths: list[float], *, header: bool = True, highlight: int | None = None
) -> Any:
    """A light grid table; strings are wrapped into cell paragraphs."""
    from reportlab.lib import colors
    from reportlab.platypus import Paragraph, Table, TableStyle

    sheet = styles()
    cells = [
        [
            c
            if not isinstance(c, str)
            else Paragraph(c, sheet["cellb" if header and r == 0 else "cell"])
            for c in row
        ]
        for r, row in enumerate(rows)
    ]
    t = Table(cells, colWidths=widths, repeatRows=1 if header else 0, hAlign="LEFT")
    style = [
        ("VALIGN", (0, 0), (-1, -1), "TOP"),
        ("LINEBELOW", (0, 0), (-1, -1), 0.3, colors.HexColor("#bbbbbb")),
        ("TOPPADDING", (0, 0), (-1, -1), 2.2),
        ("BOTTOMPADDING", (0, 0), (-1, -1), 2.2),
        ("LEFTPADDING", (0, 0), (-1, -1), 3),
        ("RIGHTPADDING", (0, 0), (-1, -1), 3),
    ]
    if header:
        style += [
            ("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#e8eef5")),
            ("LINEBELOW", (0, 0), (-1, 0), 0.8, colors.HexColor("#1f4e79")),
        ]
    if highlight is not None:
        style.append(("BACKGROUND", (0, highlight), (-1, highlight), colors.HexColor("#fff2cc")))
    t.setStyle(TableStyle(style))
    return t


MAX_IMAGE_HEIGHT = 640.0  # points: below the text frame of an A4 page (about 736) with a caption


def image(png: bytes, width: float) -> Any:
    """A raster image flowable scaled to ``width`` points (aspect kept), and shrunk further when
    it would be taller than ``MAX_IMAGE_HEIGHT`` (a frame-sized image stops reportlab's layout)."""
    from reportlab.lib.utils import ImageReader
    from reportlab.platypus import Image

    w, h = ImageReader(io.BytesIO(png)).getSize()
    scale = min(width / w, MAX_IMAGE_HEIGHT / h)
    return Image(io.BytesIO(png), width=w * scale, height=h * scale)


def text(value: Any) -> str:
    """Escape any value for a Paragraph."""
    return escape(str(value))


def paragraph(body: str, sheet: dict[str, Any], style: str = "body") -> Any:
    """A Paragraph of ``body`` (already escaped markup) in style ``style``."""
    from reportlab.platypus import Paragraph

    return Paragraph(body, sheet[style])


def side_by_side(left: Any, right: list[Any], width: float, split: float = 0.52) -> Any:
    """A figure on the left, explanatory paragraphs on the right."""
    from reportlab.platypus import Table, TableStyle

    t = Table([[left, right]], colWidths=[split * width, (1 - split) * width], hAlign="LEFT")
    t.setStyle(
        TableStyle(
            [
                ("VALIGN", (0, 0), (-1, -1), "TOP"),
                ("LEFTPADDING", (0, 0), (0, 0), 0),
                ("RIGHTPADDING", (0, 0), (0, 0), 10),
                ("LEFTPADDING", (1, 0), (1, 0), 4),
            ]
        )
    )
    return t


def figure_or_note(make: Any, width: float, sheet: dict[str, Any]) -> Any:
    """A figure flowable from ``make()`` (PNG bytes), or a sentence saying why it is missing."""
    try:
        return image(make(), width)
    except Exception as err:  # noqa: BLE001 - one missing figure must not sink the report
        return paragraph(f"(figure not available: {text(type(err).__name__)})", sheet, "small")
