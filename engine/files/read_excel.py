"""Excel workbooks (.xlsx, .xlsm) through openpyxl.

The first sheet (or the chosen one, by name or 0-based index) is read with its saved values:
numbers, booleans and dates keep their type, any column holding text follows the text-cell rule
of :mod:`engine.files.read_text`. A formula cell that was never saved in Excel has no cached value
and reads as missing; a note says how many. A module of its own because the workbook, its sheets
and its formula cache are Excel's alone.

References: docs/pitfalls.md "Data import" (Excel formula cells never opened in Excel come
back NaN).

Example:
    >>> import tempfile, pathlib, openpyxl
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.xlsx"
    >>> book = openpyxl.Workbook()
    >>> book.active.append(["id", "x"]); book.active.append(["007", 1.5])
    >>> book.save(p)
    >>> frame, sheet = read_excel(p, None, (), [])
    >>> frame["id"].tolist(), frame["x"].tolist()
    (['007'], [1.5])
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from engine.errors import InputError
from engine.files.names import name_columns
from engine.files.read_text import (
    integers_if_whole,
    mask_numeric_codes,
    one_line,
    type_text_column,
)


def read_excel(
    path: Path, sheet: str | int | None, codes: Sequence[str | float], notes: list[str]
) -> tuple[pd.DataFrame, str]:
    """First sheet (or the chosen one) via openpyxl; text cells follow the text rule."""
    import openpyxl

    try:
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # noqa: BLE001 - any reader failure is a bad file for the user
        raise InputError(
            f"{path.name}: cannot be read as an Excel workbook ({one_line(exc)}); "
            "check that it is a .xlsx file and not damaged."
        ) from None
    try:
        names = list(book.sheetnames)
        name = _pick_sheet(path, names, sheet)
        rows = list(book[name].iter_rows(values_only=True))
    finally:
        book.close()
    _note_formulas(path, name, rows, notes)
    if not rows or all(v is None for v in rows[0]):
        raise InputError(f"{path.name}: sheet '{name}' is empty; choose the sheet with the table.")
    header = ["" if v is None else str(v).strip() for v in rows[0]]
    width = max(i + 1 for i, v in enumerate(rows[0]) if v is not None)
    header = name_columns(path, header[:width], notes)
    body = [
        list(r[:width]) + [None] * (width - len(r))
        for r in rows[1:]
        if any(v is not None for v in r)
    ]
    if not body:
        raise InputError(
            f"{path.name}: sheet '{name}' has a header but no data rows; choose the sheet with the "
            "table."
        )
    raw = pd.DataFrame(body, columns=header, dtype=object)
    frame = pd.DataFrame({c: _type_excel_column(c, raw[c], codes, notes) for c in header})
    return frame, name


def _pick_sheet(path: Path, names: list[str], sheet: str | int | None) -> str:
    """Resolve ``sheet`` (name or 0-based index) or raise listing the sheets."""
    listed = ", ".join(f"'{n}'" for n in names)
    if sheet is None:
        return names[0]
    if isinstance(sheet, int) and not isinstance(sheet, bool):
        if 0 <= sheet < len(names):
            return names[sheet]
    elif str(sheet) in names:
        return str(sheet)
    raise InputError(f"{path.name}: has no sheet {sheet!r}; its sheets are {listed}.")


def _note_formulas(path: Path, sheet: str, cached: list[tuple[Any, ...]], notes: list[str]) -> None:
    """Formula cells whose saved (cached) value is empty read as missing: say so."""
    import openpyxl

    book = openpyxl.load_workbook(path, read_only=True, data_only=False)
    try:
        count = 0
        for r, row in enumerate(book[sheet].iter_rows(values_only=True)):
            for c, value in enumerate(row):
                if isinstance(value, str) and value.startswith("="):
                    saved = cached[r][c] if r < len(cached) and c < len(cached[r]) else None
                    count += saved is None
    finally:
        book.close()
    if count:
        notes.append(
            f"sheet '{sheet}': {count} formula cells have no saved value and read as missing; "
            "open and save the file in Excel (or paste values) first"
        )


def _type_excel_column(
    name: str, raw: pd.Series, codes: Sequence[str | float], notes: list[str]
) -> pd.Series:
    """Excel cells: all numbers/dates keep their type; anything with text follows the text rule."""
    present = raw.dropna()
    kinds = {type(v) for v in present}
    if present.empty:
        return pd.Series(np.nan, index=raw.index, dtype="float64")
    if kinds <= {int, float} or kinds <= {bool}:
        s = pd.Series(raw.tolist(), index=raw.index)
        s = s.astype("float64") if kinds <= {int, float} else s
        s = mask_numeric_codes(name, s, codes, notes)
        return integers_if_whole(s) if s.dtype.kind == "f" else s
    if all(hasattr(v, "year") for v in present):
        return pd.to_datetime(raw, errors="coerce")
    text = raw.map(lambda v: "" if v is None else _cell_text(v))
    return type_text_column(name, text, False, codes, notes)


def _cell_text(value: Any) -> str:
    """Text of one Excel cell (whole floats without '.0')."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
